// The memory model against measured peaks (validation/accuracy_memory.h,
// data/reference/memory/measured-peak-memory.yaml): each row compared on the statistic its
// source printed, the rows the model cannot run listed with why, and the target (mean
// |error| within 5%) asserted in a [!shouldfail] test that fails the day the model reaches it,
// when the tag must go.
#include "validation/accuracy_memory.h"
#include "validation/targets.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace clustersim;
using namespace clustersim::validation;

namespace {

const std::string kData = CLUSTERSIM_SOURCE_DIR "/data/reference";

const std::vector<MemoryRun>& runs() {
    static const std::vector<MemoryRun> r = memory_runs(kData);
    return r;
}

const MemoryRun& row(const std::string& id) {
    const auto& all = runs();
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.id == id; });
    REQUIRE(it != all.end());
    return *it;
}

} // namespace

TEST_CASE("memory runs: every row read, each on the statistic its source printed",
          "[validation][memory]") {
    REQUIRE(runs().size() == 33);
    // torchtitan logs the reserved peak; torchtune the active one; Hugging Face's guide
    // nvidia-smi's used memory (14949 MiB as printed).
    const auto& tt = row("torchtitan-2412-t1-1");
    CHECK(tt.statistic == MemoryStatistic::reserved);
    CHECK(tt.measured_gib == Approx(82.4));
    CHECK(tt.predicted_gib == Approx(static_cast<double>(tt.step.peak_reserved_bytes_max) /
                                     (1024.0 * 1024.0 * 1024.0)));
    CHECK(tt.step.peak_reserved_bytes_max > tt.step.peak_bytes_max);
    CHECK(tt.preset == "grand-teton-h100");
    CHECK(row("torchtitan-trainy-h200-4node").statistic == MemoryStatistic::reserved);
    CHECK(row("torchtitan-trainy-h200-4node").preset == "hgx-h200");
    CHECK(row("torchtune-llama3.2-3b-packed").statistic == MemoryStatistic::active);
    const auto& bert = row("hf-bert-large-v100-vanilla-bs4-fp32");
    CHECK(bert.statistic == MemoryStatistic::device_used);
    CHECK(bert.measured_gib == Approx(14949.0 / 1024));
}

TEST_CASE("memory runs: the rows the model cannot run say what they need", "[validation][memory]") {
    const auto ran = std::count_if(runs().begin(), runs().end(), [](auto& r) { return r.ran(); });
    CHECK(ran == 20); // the torchtitan rows
    CHECK_THAT(row("torchtune-llama3.2-3b-packed").not_modelled,
               Catch::Contains("pure bf16 training"));
    CHECK_THAT(row("torchtune-llama3.2-3b-chunked-ce").not_modelled,
               Catch::Contains("chunked cross-entropy"));
    CHECK_THAT(row("torchtune-llama3.2-3b-adamw8bit").not_modelled, Catch::Contains("8-bit AdamW"));
    CHECK_THAT(row("hf-bert-large-v100-bs4-fp16").not_modelled,
               Catch::Contains("classification head"));
    // A torchtitan row with a pipeline: the local batch over as many micro-batches as stages,
    // 126 layers split as torchtitan splits them.
    const auto& pp = row("torchtitan-2412-t5-1");
    REQUIRE(pp.ran());
    CHECK(std::find(pp.features.begin(), pp.features.end(), "torchtitan's layer split") !=
          pp.features.end());
    CHECK(pp.step.pp == 8);
    // torchtitan's loss by its commit's date: eager at 9dec370 (2024-12-26) though compiled
    // models, compiled with the model at e7c0cae (2025-06-13).
    const auto has = [](const MemoryRun& r, const char* f) {
        return std::find(r.features.begin(), r.features.end(), f) != r.features.end();
    };
    CHECK(has(row("torchtitan-2412-t1-2"), "eager loss"));
    CHECK(has(row("torchtitan-trainy-h200-4node"), "compiled loss"));
}

TEST_CASE("memory runs: the accuracy reached (a guard, rounded up a little)",
          "[validation][memory][accuracy]") {
    const auto s = memory_errors(runs());
    INFO("mean |error| " << s.mean_abs << ", signed " << s.mean << ", worst " << s.max_abs);
    // Measured 2026-12-07: mean 7.6%, signed -5.1%, worst 24.7% over 20 rows (before the
    // cross-entropy's fp32 gradients and the op-level policy's saved set: 28.9%, -7.3%, 49.9%).
    CHECK(s.points == 20);
    CHECK(s.mean_abs < 0.08);
    CHECK(s.max_abs < 0.25);
}

TEST_CASE("memory runs: issue 35's target, mean |error| within 5% on the printed statistic",
          "[validation][memory][accuracy][!shouldfail]") {
    // Not met: mean 7.6% (signed -5.1%) over the 20 torchtitan rows. The Llama 3.1 8B rows
    // (selective and full recompute, 8-128 H100s, 32-64 H200s) are within 5%; the 70B rows
    // (tp 8) 6-12% under; the 405B rows with a pipeline 15-25% under but the interleaved one,
    // 12% over: what a pipeline rank of torch.distributed.pipelining holds is not modelled.
    const auto s = memory_errors(runs());
    CHECK(s.mean_abs <= targets::kMemoryMean);
}
