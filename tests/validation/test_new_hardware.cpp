// The training-step model on the published runs of new hardware (data/reference/new-hardware),
// with the targets; the same numbers are docs/validation.md's "New hardware".
#include "hardware/hardware_loader.h"
#include "validation/accuracy_new_hardware.h"
#include "validation/targets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace clustersim::validation;

namespace {
const std::vector<NewHardwareRun>& runs() {
    static const auto r = new_hardware_runs(CLUSTERSIM_SOURCE_DIR "/data/reference");
    return r;
}

/// The value of `key` among a row's experiment settings, the last one set ("" when none).
std::string setting(const NewHardwareRun& r, const std::string& key) {
    std::string value;
    for (const auto& [k, v] : r.settings)
        if (k == key)
            value = v;
    return value;
}

/// The row of id `id` (nullptr when none).
const NewHardwareRun* run_by_id(const std::string& id) {
    for (const auto& r : runs())
        if (r.id == id)
            return &r;
    return nullptr;
}
} // namespace

TEST_CASE("new hardware: every row is predicted or says what it needs", "[validation][blackwell]") {
    REQUIRE(runs().size() == 74);
    int predicted = 0;
    for (const auto& r : runs()) {
        INFO(r.id << ": " << r.not_modelled);
        if (r.ran()) {
            ++predicted;
            CHECK(!r.preset.empty());
            CHECK(r.predicted_s > 0);
            CHECK(r.measured_s > 0);
        } else {
            CHECK(r.not_modelled.rfind("needs ", 0) == 0);
        }
        // Only TPU rows lack a preset; AMD Instinct rows run on mi300x, mi325x and mi355x.
        if (r.accelerator.rfind("MI", 0) == 0)
            CHECK(r.preset == "mi" + r.accelerator.substr(2, 3) + "x");
        if (r.preset.empty())
            CHECK((r.accelerator.rfind("MI", 0) == 0 || r.accelerator.rfind("TPU", 0) == 0));
    }
    CHECK(predicted >= 20);
}

namespace {
/// The dense (Llama) rows.
std::vector<NewHardwareRun> dense_rows() {
    std::vector<NewHardwareRun> dense;
    for (const auto& r : runs())
        if (r.model.find("Llama") != std::string::npos)
            dense.push_back(r);
    return dense;
}
} // namespace

// The dense Llama rows of GB200 meet the target; the mixtures of experts do not yet
// (gpt-oss, below).
TEST_CASE("new hardware: GB200 dense rows within the issue's 8% mean, none above 20%",
          "[validation][blackwell]") {
    const auto s = new_hardware_errors(dense_rows(), "GB200");
    REQUIRE(s.points >= 2);
    CHECK(s.mean_abs <= targets::kNewHardwareStepMean);
    CHECK(s.max_abs <= targets::kNewHardwareStepWorst);
}

// Not met since dgx-b200's sustained clock follows the power law from gb200-nvl72's (1,066 MHz
// at 1,000 W against 1,270 at 1,200 W; hardware/power_clock.h): the Llama 3 8B FP8-CS row runs
// 15% slow, where its measured step is within 3% of GB200's on the same recipe (4.280 against
// 4.160 s), which no clock law carried from the GB200's measured GEMM gives. A B200's own
// sustained GEMM (`calibrate sustained`) is what is missing.
TEST_CASE("new hardware: B200 dense rows within the issue's 8% mean, none above 20%",
          "[validation][blackwell][!shouldfail]") {
    const auto s = new_hardware_errors(dense_rows(), "B200");
    REQUIRE(s.points >= 2);
    CHECK(s.mean_abs <= targets::kNewHardwareStepMean);
    CHECK(s.max_abs <= targets::kNewHardwareStepWorst);
}

// Blackwell Ultra against Blackwell on the same container, model and layout (Llama 3 8B FP8-CS
// in 25.11, Llama 3 70B FP8 Megatron-FSDP in 26.04.01): the predicted GB300 gain takes at least
// 90% of what the presets' sustained clocks give (1,416 / 1,270 MHz at 1,400 / 1,200 W: the
// memory-bound kernels and the exposed communication, on HBM and NVLink alike on both, are under
// a tenth of these steps; the SFU's doubled exponential rate speeds the attention kernels), and
// stays below the measured gain (1.19 and 1.24): what else makes a GB300 faster is not
// modelled yet.
TEST_CASE("new hardware: GB300 against GB200 on the same recipe", "[validation][blackwell]") {
    auto find = [](const std::string& id) -> const NewHardwareRun& {
        const NewHardwareRun* r = run_by_id(id);
        INFO("row " << id);
        REQUIRE(r != nullptr);
        return *r;
    };
    for (const auto& [ultra, base] :
         {std::pair{"mb2511-llama3_8b-gb300-8-fp8cs", "mb2511-llama3_8b-gb200-8-fp8cs"},
          std::pair{"mb260401-llama3_70b-gb300-64-fp8", "mb260401-llama3_70b-gb200-64-fp8"}}) {
        const NewHardwareRun& u = find(ultra);
        const NewHardwareRun& b = find(base);
        INFO(ultra);
        REQUIRE(u.layout == b.layout);
        const double predicted = b.predicted_s / u.predicted_s;
        const double measured = b.measured_s / u.measured_s;
        auto sustained = [](const char* preset) {
            return clustersim::hardware::load_hardware(preset).node.gpu.sustained_clock();
        };
        const double clocks = sustained("gb300-nvl72") / sustained("gb200-nvl72");
        CHECK(predicted > 1 + 0.9 * (clocks - 1));
        CHECK(predicted < measured);
    }
}

// Not met yet. The gpt-oss 120B rows ran 28-36% faster than measured on every accelerator
// until Megatron-Core's eager expert path was modelled (the activation's clamp and fc2's bias
// as kernels of their own, YaRN's unfused RoPE, the host syncs of the clamp's blocking copy
// and of the alltoall dispatcher) with each container's gpt-oss recipe; GB200's two rows
// (its expert-parallel overlap, which the host model does not reach) stay 22-29% fast, H100's
// micro-batch-1 row is host-bound and 13% slow.
TEST_CASE("new hardware: gpt-oss 120B rows within 20%", "[validation][blackwell][!shouldfail]") {
    int rows = 0;
    for (const auto& r : runs()) {
        if (r.model.find("GPT-OSS") == std::string::npos || !r.ran())
            continue;
        ++rows;
        INFO(r.id);
        CHECK(std::abs(r.error()) <= targets::kNewHardwareStepWorst);
    }
    CHECK(rows >= 5);
}

// Not met yet: GB300 runs 4-18% slower than measured on most dense rows (its attention kernels
// are cuDNN's measured rates, its sustained clock carried from a B300's measured GEMM by the
// power law; see the test above), and most rows need MXFP8 / NVFP4, model features or AMD
// presets.
TEST_CASE("new hardware: every GPU row predicted, mean <= 8%, none above 20%, bias within 3%",
          "[validation][blackwell][!shouldfail]") {
    for (const auto& r : runs()) {
        if (r.accelerator.rfind("TPU", 0) != 0) {
            INFO(r.id << ": " << r.not_modelled);
            CHECK(r.ran());
        }
    }
    const auto s = new_hardware_errors(runs(), "");
    CHECK(s.mean_abs <= targets::kNewHardwareStepMean);
    CHECK(s.max_abs <= targets::kNewHardwareStepWorst);
    CHECK(std::abs(s.mean) <= targets::kNewHardwareStepBias);
}

// MaxText's TPU rows run through the mesh keys (device_mesh.h): every row that states its batch
// and mesh is predicted, on its generation's preset.
TEST_CASE("new hardware: MaxText's TPU rows run through the mesh keys", "[validation][tpu]") {
    int predicted = 0;
    for (const auto& r : runs()) {
        if (r.accelerator.rfind("TPU", 0) != 0)
            continue;
        INFO(r.id << ": " << r.not_modelled);
        CHECK(!r.preset.empty());
        CHECK(r.ran());
        predicted += r.ran() ? 1 : 0;
    }
    CHECK(predicted == 16);
}

// The target on the 16 rows (docs/validation.md): mean |error| 7.2%, signed -2.9%,
// worst 15.7% (v4 -8.7% both; v5p's full-remat 512B and 1024B rows +3 to +10%, its other dense
// rows -2 to -10%, Llama 2 70B -6.7%, Mixtral 8x7B -15.7%; v5e +3% and +10% on one slice, -8%
// and -9% on 32). The TPU presets' compute rates are labelled assumptions, not fitted to a TPU.
TEST_CASE("new hardware: TPU rows within 8% mean, none above 20%, bias within 3%",
          "[validation][tpu]") {
    std::vector<NewHardwareRun> tpu;
    for (const auto& r : runs())
        if (r.accelerator.rfind("TPU", 0) == 0 && r.ran())
            tpu.push_back(r);
    const auto s = new_hardware_errors(tpu, "");
    CHECK(s.points == 16);
    CHECK(s.mean_abs <= targets::kNewHardwareStepMean);
    CHECK(s.max_abs <= targets::kNewHardwareStepWorst);
    CHECK(std::abs(s.mean) <= targets::kNewHardwareStepBias);
}

// What XLA overlaps follows the row's script (its LIBTPU_INIT_ARGS): MaxText's v4 scripts make
// only the all-gathers asynchronous, so the gradients' reduce-scatters run in line; the v5e
// and v5p scripts' async collective fusion overlaps them.
TEST_CASE("new hardware: MaxText's v4 rows reduce gradients in line, v5e and v5p overlapped",
          "[validation][tpu]") {
    int v4 = 0;
    for (const auto& r : runs()) {
        if (r.accelerator.rfind("TPU", 0) != 0 || !r.ran())
            continue;
        INFO(r.id);
        bool in_line = false;
        for (const auto& [key, value] : r.settings)
            in_line = in_line || (key == "parallel.overlap_grad_reduce" && value == "false");
        CHECK(in_line == (r.accelerator == "TPU v4"));
        v4 += in_line ? 1 : 0;
    }
    CHECK(v4 == 2);
}

// The tiering table's Mixtral 8x7B row states neither batch nor mesh; the tpu-recipes script it
// cites does (per_device_batch_size 36, no mesh key, base.yml's remat_policy full).
TEST_CASE("new hardware: the Mixtral row runs its cited script's batch on its preset",
          "[validation][tpu]") {
    const NewHardwareRun* mixtral = run_by_id("v5p-mixtral8x7b-256-tier");
    REQUIRE(mixtral != nullptr);
    REQUIRE(mixtral->ran());
    const auto has = [&](const std::string& key, const std::string& value) {
        return setting(*mixtral, key) == value;
    };
    CHECK(has("model", "mixtral-8x7B"));
    CHECK(has("model.seq", "4096"));
    CHECK(has("training.per_device_batch_size", "36"));
    CHECK(has("training.remat_policy", "full"));
    // Measured: 36 sequences of 4096 tokens per device at 2,909 tokens per second per device.
    CHECK(mixtral->measured_s == Approx(36.0 * 4096 / 2909));
}

// The mixtures run what their container's Megatron-Bridge performance recipe turns on
// (accuracy_new_hardware.cpp, kMoeRecipes): 26.08's MXFP8 recipes HybridEP, the expert-parallel
// overlap and a full-iteration graph; 26.04.01's DGX B200 DeepSeek-V3 DeepEP, the overlap and
// Transformer Engine's graphs of attention, router and preprocessing; 26.04.01's Qwen3-235B on
// DGX B200 the alltoall dispatcher alone; GPT-OSS its gpt_oss configs (26.08's MXFP8 the
// fused grouped MLP with the rest, 26.04.01's GB300 and B300 Transformer Engine's graphs, B300
// HybridEP, GB200 the overlap, GB200, B200 and H100 recompute of the norm and moe_act).
TEST_CASE("new hardware: FP8 as the container's scripts run it, DeepSeek-V3's MTP as the table "
          "says",
          "[validation][blackwell]") {
    int fp8 = 0, mtp = 0, without = 0;
    for (const auto& r : runs()) {
        if (!r.ran() || r.accelerator.rfind("TPU", 0) == 0)
            continue;
        INFO(r.id);
        // Megatron-Bridge 25.11 and later run FP8 as per-tensor current scaling (no delayed
        // recipe in their scripts); MXFP8 and NVFP4 as their block-scaled recipes.
        if (r.precision == "FP8" || r.precision.rfind("FP8-CS", 0) == 0) {
            CHECK(setting(r, "training.fp8_recipe") == "current");
            ++fp8;
        }
        if (r.precision.find("MX") != std::string::npos)
            CHECK(setting(r, "training.fp8_recipe") == "mxfp8");
        // DeepSeek-V3 with its one MTP block, but the 25.11 rows, whose table says "w/o MTP".
        if (r.id.find("dsv3") != std::string::npos) {
            const bool v25_11 = r.id.rfind("mb2511-", 0) == 0;
            CHECK(setting(r, "model.mtp_num_layers") == (v25_11 ? "" : "1"));
            ++(v25_11 ? without : mtp);
        }
    }
    CHECK(fp8 >= 10);
    CHECK(without == 3);
    CHECK(mtp >= 4);
}

TEST_CASE("new hardware: each mixture runs what its container's recipe turns on",
          "[validation][blackwell][moe]") {
    const NewHardwareRun* q30_2608 = nullptr;
    const NewHardwareRun* q30_260401 = nullptr;
    int full_iteration = 0;
    for (const auto& r : runs()) {
        if (!r.ran() || r.accelerator.rfind("TPU", 0) == 0)
            continue;
        INFO(r.id);
        const bool moe =
            r.id.find("dsv3") != std::string::npos || r.id.find("qwen3") != std::string::npos;
        if (r.id.rfind("mb2608-", 0) == 0 && moe) {
            CHECK(setting(r, "parallel.moe_token_dispatcher") == "flex");
            CHECK(setting(r, "parallel.overlap_moe_expert_parallel_comm") == "true");
            CHECK(setting(r, "parallel.delay_wgrad_compute") == "true");
            CHECK(setting(r, "training.cuda_graph_impl") == "full_iteration");
            ++full_iteration;
        }
        // Every flex recipe names HybridEP but this one (its V2 config: deepep).
        if (setting(r, "parallel.moe_token_dispatcher") == "flex")
            CHECK(setting(r, "parallel.moe_flex_dispatcher_backend") ==
                  (r.id == "mb260401-dsv3-b200-256-mxfp8" ? "deepep" : "hybridep"));
        // Every HybridEP recipe gives its kernels 32 SMs (the common performance overrides);
        // DeepEP's keeps Megatron-Core's default.
        if (setting(r, "parallel.moe_flex_dispatcher_backend") == "hybridep")
            CHECK(setting(r, "parallel.moe_hybridep_num_sms") == "32");
        else
            CHECK(setting(r, "parallel.moe_hybridep_num_sms").empty());
        CHECK(setting(r, "parallel.moe_deepep_num_sms").empty());
        if (r.id == "mb260401-dsv3-b200-256-mxfp8") {
            CHECK(setting(r, "parallel.moe_token_dispatcher") == "flex");
            CHECK(setting(r, "parallel.overlap_moe_expert_parallel_comm") == "true");
            CHECK(setting(r, "training.cuda_graph_impl") == "transformer_engine");
            CHECK(setting(r, "training.cuda_graph_scope") == "[attn, moe_router, moe_preprocess]");
            CHECK(setting(r, "parallel.recompute_modules") == "[mla_up_proj, mlp]");
        }
        if (r.id == "mb260401-qwen3_235b-b200-256-mxfp8") {
            CHECK(setting(r, "parallel.moe_token_dispatcher").empty());
            CHECK(setting(r, "parallel.overlap_moe_expert_parallel_comm").empty());
            CHECK(setting(r, "training.cuda_graph_impl").empty());
        }
        if (r.id.find("gptoss") != std::string::npos) {
            const bool v26_08 = r.id.rfind("mb2608-", 0) == 0;
            const bool graphs = !v26_08 && (r.accelerator == "GB300" || r.accelerator == "B300");
            CHECK(setting(r, "training.fused_grouped_mlp") == (v26_08 ? "true" : ""));
            CHECK(setting(r, "parallel.moe_token_dispatcher") ==
                  (v26_08 || r.accelerator == "B300" ? "flex" : ""));
            CHECK(setting(r, "parallel.overlap_moe_expert_parallel_comm") ==
                  (v26_08 || r.accelerator == "GB200" ? "true" : ""));
            CHECK(setting(r, "training.cuda_graph_impl") == (v26_08   ? "full_iteration"
                                                             : graphs ? "transformer_engine"
                                                                      : ""));
            const bool recompute = !v26_08 && (r.accelerator == "GB200" ||
                                               r.accelerator == "B200" || r.accelerator == "H100");
            CHECK(setting(r, "parallel.recompute_modules") ==
                  (recompute ? "[layernorm, moe_act]" : ""));
        }
        if (r.id == "mb2608-qwen3_30b-gb200-8-mxfp8")
            q30_2608 = &r;
        if (r.id == "mb260401-qwen3_30b-b200-8-mxfp8")
            q30_260401 = &r;
    }
    CHECK(full_iteration == 6);
    // The same B200 die and micro-batch: the 26.08 recipe's overlap and graphs make the GB200
    // run faster than 26.04.01's DGX B200 one, as measured (6.56 s against 9.66 s).
    REQUIRE(q30_2608 != nullptr);
    REQUIRE(q30_260401 != nullptr);
    CHECK(q30_2608->measured_s < q30_260401->measured_s);
    CHECK(q30_2608->predicted_s < q30_260401->predicted_s);
}

// Transformer Engine's FP8 attention where the row's recipe sets fp8_dot_product_attention
// (accuracy_new_hardware.cpp, kFp8Attention): 26.08's DeepSeek-V3 GB300 recipe (not its GB200
// one), its GPT-OSS and Qwen3 MXFP8 recipes on GB200 and GB300, and 26.06's Qwen3-30B-A3B on
// DGX B300; no other row.
TEST_CASE("new hardware: FP8 attention on the rows whose recipe turns it on",
          "[validation][blackwell][fp8]") {
    std::vector<std::string> on;
    for (const auto& r : runs()) {
        if (!r.ran() || setting(r, "training.fp8_dot_product_attention") != "true")
            continue;
        on.push_back(r.id);
        CHECK(setting(r, "training.fp8_recipe") == "mxfp8");
    }
    std::sort(on.begin(), on.end());
    const std::vector<std::string> expected{
        "mb2606-qwen3_30b-b300-8-mxfp8",     "mb2608-dsv3-gb300-256-mxfp8",
        "mb2608-gptoss120-gb200-64-mxfp8",   "mb2608-gptoss120-gb300-64-mxfp8",
        "mb2608-qwen3_235b-gb200-256-mxfp8", "mb2608-qwen3_235b-gb300-256-mxfp8",
        "mb2608-qwen3_30b-gb200-8-mxfp8",    "mb2608-qwen3_30b-gb300-8-mxfp8"};
    CHECK(on == expected);
}

// Primus's projection table prints no global batch for its MI355X Mixtral 8x22B row, but the
// projection's iteration time (10,052 ms) and tokens/s per GPU (3,260) on 64 GPUs of 8,192
// tokens, which Primus's projection.py relates by tokens_per_iter = global_batch * seq_len:
// 3,260 x 64 x 10.052 / 8,192 = 256.0 sequences. The measured step is that batch over the
// measured 3,534 tokens/s per GPU; the model is the mixtral-8x22B preset (its dimensions are
// the row's) on the printed layout.
TEST_CASE("new hardware: Primus's Mixtral 8x22B row runs the global batch of its projection",
          "[validation][amd]") {
    const NewHardwareRun* row = run_by_id("primus-mi355x-mixtral8x22b-64-bf16");
    REQUIRE(row != nullptr);
    INFO(row->not_modelled);
    REQUIRE(row->ran());
    CHECK(row->preset == "mi355x");
    CHECK(std::lround(3260.0 * 64 * 10.052 / 8192) == 256);
    CHECK(setting(*row, "training.global_batch") == "256");
    CHECK(setting(*row, "training.micro_batch") == "2");
    CHECK(setting(*row, "model") == "mixtral-8x22B");
    CHECK(setting(*row, "model.seq") == "8192");
    CHECK(setting(*row, "parallel.ep") == "8");
    CHECK(setting(*row, "parallel.pp") == "4");
    CHECK(setting(*row, "parallel.dp") == "16");
    CHECK(setting(*row, "parallel.virtual_stages") == "2");
    CHECK(setting(*row, "parallel.recompute") == "none");
    // Primus's mixtral_base.yaml: the alltoall dispatcher, Megatron-Core's default here.
    CHECK(setting(*row, "parallel.moe_token_dispatcher").empty());
    CHECK(row->measured_s == Approx(256.0 * 8192 / (3534.0 * 64)).epsilon(1e-12));
    CHECK(row->predicted_s > 0);
}

// The other AMD rows print tokens/s per GPU without the global batch (and the pipeline study's
// rows without sequence, micro-batch or precision): no step time, listed with what they lack.
TEST_CASE("new hardware: AMD rows without a global batch say so", "[validation][amd]") {
    int listed = 0;
    for (const auto& r : runs()) {
        if (r.accelerator.rfind("MI", 0) != 0 || r.ran())
            continue;
        INFO(r.id << ": " << r.not_modelled);
        CHECK(r.not_modelled.rfind("needs the run's ", 0) == 0);
        CHECK(r.not_modelled.find("global batch") != std::string::npos);
        ++listed;
    }
    CHECK(listed == 9);
}
