// The step model against recent published H100 runs (validation/accuracy_recent.h,
// data/reference/large-scale/h100-published-runs.yaml): how each row becomes an experiment,
// which rows say what they need instead of a number, and the level of accuracy reached on the
// dense bf16 rows (a guard rounded up a little; the 10% target is asserted in a
// [!shouldfail] test that fails the day the model reaches it, when the tag must go).
#include "base/error.h"
#include "tests/app/cli_run.h"
#include "validation/accuracy_recent.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

using namespace clustersim;
using namespace clustersim::calibrate;
using namespace clustersim::validation;
using namespace clustersim::test;

namespace {

const std::string kData = CLUSTERSIM_SOURCE_DIR "/data/reference";

const std::vector<RecentRun>& runs() {
    static const std::vector<RecentRun> r = recent_runs(kData);
    return r;
}

const RecentRun& row(const std::string& id) {
    const auto& all = runs();
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.id == id; });
    REQUIRE(it != all.end());
    return *it;
}

std::string setting(const RecentRun& r, const std::string& key) {
    for (const auto& [k, v] : r.settings) {
        if (k == key)
            return v;
    }
    return "";
}

} // namespace

TEST_CASE("recent runs: every row is read, and the iteration time is the file's derived one",
          "[app][recent]") {
    REQUIRE(runs().size() == 19);
    const auto dense_bf16 =
        std::count_if(runs().begin(), runs().end(), [](const auto& r) { return r.dense_bf16; });
    CHECK(dense_bf16 == 4);
    // 256 x 8192 tokens / (5605 tokens/s/GPU x 128 GPUs), as the file's formula says.
    const auto& r = row("torchtitan-llama31-8b-128gpu-fsdp");
    CHECK(r.measured_s == Approx(256.0 * 8192 / (5605.0 * 128)).epsilon(0.001));
}

TEST_CASE("recent runs: a row's experiment comes from its own fields and its framework's rule",
          "[app][recent]") {
    const auto& tt = row("torchtitan-llama31-70b-256gpu-2d-asynctp-bf16");
    CHECK(tt.preset == "grand-teton-h100");
    CHECK(tt.tp == 8);
    CHECK(tt.dp == 32);
    CHECK(tt.micro_batch == 16); // local batch 512 / 32, no pipeline: one micro-batch
    CHECK(setting(tt, "model.kv_heads") == "8");
    CHECK(setting(tt, "model.activation") == "swiglu");
    CHECK(setting(tt, "parallel.fsdp") == "true");                         // FSDP2
    CHECK(setting(tt, "parallel.enable_async_tensor_parallel") == "true"); // async TP
    CHECK(setting(tt, "parallel.recompute") == "full");
    const auto& vanilla = row("torchtitan-llama31-70b-256gpu-2d-bf16");
    CHECK(setting(vanilla, "parallel.enable_async_tensor_parallel").empty());
    // Async TP hides TP communication the vanilla run exposes: the same model predicts it
    // faster, as measured (25.1 s against 27.4 s).
    REQUIRE(tt.ran());
    REQUIRE(vanilla.ran());
    CHECK(tt.predicted_s < vanilla.predicted_s);
    CHECK(tt.step.breakdown.tp_comm_exposed_s < vanilla.step.breakdown.tp_comm_exposed_s);

    const auto& nemo = row("nemo2407-gpt3-175b-128gpu");
    CHECK(nemo.preset == "dgx-superpod-h100");
    CHECK(nemo.virtual_stages == 6);
    CHECK(setting(nemo, "parallel.schedule") == "interleaved-1f1b");
    CHECK(setting(nemo, "parallel.zero") == "1");
    CHECK(setting(nemo, "model.tied_embeddings") == "true");
    CHECK(nemo.fp8);
    // FP8's scaling as each stack ran it: NeMo 24.07 and Megatron-Bridge 25.09 delayed (their
    // scripts' default), the row's FP8-CS and Megatron-Bridge 25.11 on current scaling (its
    // scripts have no delayed recipe), torchao's tensorwise under torchtitan.
    CHECK(setting(nemo, "training.fp8_recipe").empty());
    CHECK(setting(row("mbridge2509-llama31-405b-1024gpu"), "training.fp8_recipe").empty());
    for (const char* id : {"mbridge2511-llama31-405b-1024gpu", "mbridge2602-llama31-405b-1024gpu",
                           "mbridge2511-llama3-70b-64gpu"}) {
        INFO(id);
        CHECK(row(id).fp8_current);
        CHECK(setting(row(id), "training.fp8_recipe") == "current");
    }
    CHECK(setting(row("torchtitan-llama31-70b-256gpu-2d-fp8"), "training.fp8_recipe") ==
          "tensorwise");
}

TEST_CASE("recent runs: layers the stages do not divide split as each recipe split them",
          "[app][recent][uneven]") {
    // Megatron-Bridge's Llama 3.1 405B recipe: the embedding and the loss as layers, (126 + 2)
    // / 64 = 2 per chunk, one fewer on the first and the last.
    for (const char* id : {"mbridge2509-llama31-405b-1024gpu", "mbridge2511-llama31-405b-1024gpu",
                           "mbridge2602-llama31-405b-1024gpu"}) {
        const auto& r = row(id);
        INFO(id << ": " << r.not_modelled);
        CHECK(setting(r, "parallel.account_for_embedding_in_pipeline_split") == "true");
        CHECK(setting(r, "parallel.account_for_loss_in_pipeline_split") == "true");
        CHECK(r.ran());
    }
    // torchtitan at the page's commit: 8 micro-batches of 4 (the local batch 32 over pp 8),
    // generate_split_points' 15, 16 x 6, 15 for 1F1B and 7, 8 x 14, 7 over 2 chunks per rank
    // when interleaved.
    auto stages = [](const std::string& layout) {
        std::vector<int> n(1, 0);
        for (char c : layout) {
            if (c == '|')
                n.push_back(0);
            else if (c == 't')
                ++n.back();
        }
        return n;
    };
    const auto& f1b = row("torchtitan-llama31-405b-512gpu-3d-1f1b");
    CHECK(f1b.micro_batch == 4);
    CHECK(stages(setting(f1b, "parallel.pipeline_model_parallel_layout")) ==
          std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15});
    CHECK(f1b.ran());
    const auto& il = row("torchtitan-llama31-405b-512gpu-3d-interleaved1f1b");
    CHECK(il.virtual_stages == 2);
    std::vector<int> want(16, 8);
    want.front() = want.back() = 7;
    CHECK(stages(setting(il, "parallel.pipeline_model_parallel_layout")) == want);
    CHECK(il.ran());
    // Megatron-Bridge's DeepSeek-V3 H100 layout, its MTP layer left out.
    const auto& ds = row("mbridge2509-deepseekv3-1024gpu");
    CHECK(setting(ds, "parallel.pipeline_model_parallel_layout") == "Et|(tt|)*30L");
    CHECK(ds.ran());
}

TEST_CASE("recent runs: rows needing what the model lacks say what, instead of a number",
          "[app][recent]") {
    for (const auto& r : runs()) {
        INFO(r.id << ": " << r.not_modelled);
        if (!r.ran())
            CHECK(r.not_modelled.rfind("needs ", 0) == 0);
        // The step model has parallel.cp: a cp row that does not run is stopped by something
        // else, and says what.
        if (r.cp > 1 && !r.ran())
            CHECK(r.not_modelled.find("context parallelism") == std::string::npos);
        if (r.ran()) {
            CHECK(r.predicted_s > 0);
            CHECK(r.predicted_s == r.step.step_time_s);
        }
    }
    // Detected, not listed: whether FP8 rows run follows the model's FP8 (attention in bf16).
    for (const auto& r : runs()) {
        if (r.fp8 && !fp8_training_modelled())
            CHECK(r.not_modelled.find("FP8") != std::string::npos);
    }
}

TEST_CASE("recent runs: dense bf16 rows, the level reached (guard)", "[app][recent][accuracy]") {
    const ErrorStats s = recent_errors(runs(), true);
    CHECK(s.points == 4);
    CHECK(s.mean_abs < 0.25);
    CHECK(s.max_abs < 0.37);
}

// Issue 12's target, not reached: the rows are predicted too fast.
TEST_CASE("recent runs: dense bf16 rows within 10% mean and signed mean within 3% (issue 12 "
          "target)",
          "[app][recent][accuracy][!shouldfail]") {
    const ErrorStats s = recent_errors(runs(), true);
    CHECK(s.mean_abs <= 0.10);
    CHECK(std::abs(s.mean) <= 0.03);
}

TEST_CASE("recent runs: a malformed file is an input error naming file, line and key",
          "[app][recent]") {
    TempDir dir("recent");
    std::filesystem::create_directories(dir.path / "large-scale");
    CHECK_THROWS_WITH(recent_runs(dir.path.string()), Catch::Contains("h100-published-runs.yaml"));
    spit(dir.file("large-scale/h100-published-runs.yaml"),
         "rows:\n- id: x\n  model: {name: Llama, type: dense}\n  framework: NeMo\n"
         "  hardware: {gpu: H100-SXM5-80GB}\n");
    CHECK_THROWS_WITH(recent_runs(dir.path.string()),
                      Catch::Contains("h100-published-runs.yaml:5") && Catch::Contains("num_gpus"));
    spit(dir.file("large-scale/h100-published-runs.yaml"),
         "rows:\n- id: x\n  model: {name: Llama, type: dense}\n  framework: NeMo\n"
         "  hardware: {gpu: A100-SXM4-80GB, num_gpus: 8}\n");
    CHECK_THROWS_WITH(recent_runs(dir.path.string()), Catch::Contains("A100-SXM4-80GB"));
}
