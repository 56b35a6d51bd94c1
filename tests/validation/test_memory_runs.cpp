// The memory model against measured peaks (validation/accuracy_memory.h,
// data/reference/memory/measured-peak-memory.yaml): each row compared on the statistic its
// source printed, the rows the model cannot run listed with why, and the target (mean
// |error| within 5%) asserted in a [!shouldfail] test that fails the day the model reaches it,
// when the tag must go.
#include "validation/accuracy_memory.h"
#include "validation/targets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>

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
    CHECK(ran == 32); // every row but torchtune's unpacked one
    CHECK_THAT(row("torchtune-llama3.2-3b-baseline").not_modelled,
               Catch::Contains("a sequence length"));
    // torchtune's rows with the features each adds (cumulative, as its README's table).
    const auto has_feature = [](const MemoryRun& r, const char* f) {
        return std::find(r.features.begin(), r.features.end(), f) != r.features.end();
    };
    CHECK(has_feature(row("torchtune-llama3.2-3b-packed"), "pure bf16"));
    CHECK(has_feature(row("torchtune-llama3.2-3b-chunked-ce"), "chunked loss"));
    CHECK(has_feature(row("torchtune-llama3.2-3b-opt-in-bwd"), "optimizer in backward"));
    CHECK(has_feature(row("torchtune-llama3.2-3b-act-offload"), "activation offloading"));
    CHECK(has_feature(row("torchtune-llama3.2-3b-adamw8bit"), "8-bit AdamW"));
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

TEST_CASE("memory runs: torchtune's rows where the mechanism is complete, within 5%",
          "[validation][memory][accuracy]") {
    // Eager, no recompute: pure bf16 state (8 bytes per parameter but the gradients, allocated
    // by the backward), eager PyTorch's saved tensors, the fp32 logits' eager loss at the
    // backward's start. Full recompute: the peak at the backward's end (every gradient and the
    // tied matrix's second one), then optimizer_in_bwd and activation offloading below it.
    for (const char* id :
         {"torchtune-llama3.2-3b-packed", "torchtune-llama3.2-3b-ac",
          "torchtune-llama3.2-3b-opt-in-bwd", "torchtune-llama3.2-3b-act-offload"}) {
        INFO(id);
        CHECK(std::abs(row(id).error()) < 0.05);
    }
    // Each technique lowers the predicted peak as it lowered the measured one.
    const char* order[] = {"torchtune-llama3.2-3b-packed",     "torchtune-llama3.2-3b-compile",
                           "torchtune-llama3.2-3b-chunked-ce", "torchtune-llama3.2-3b-ac",
                           "torchtune-llama3.2-3b-opt-in-bwd", "torchtune-llama3.2-3b-act-offload",
                           "torchtune-llama3.2-3b-adamw8bit"};
    for (std::size_t i = 1; i < std::size(order); ++i) {
        INFO(order[i]);
        CHECK(row(order[i]).predicted_gib < row(order[i - 1]).predicted_gib);
    }
}

TEST_CASE("memory runs: Hugging Face's BERT-large rows on the guide's V100",
          "[validation][memory][accuracy]") {
    // Each row an encoder with a classification head on one V100-SXM2-16GB, its device total
    // the reserved bytes plus the CUDA context the guide measured.
    const char* ids[] = {"hf-bert-large-v100-vanilla-bs4-fp32", "hf-bert-large-v100-bs4-fp16",
                         "hf-bert-large-v100-bs1-ga4-fp32", "hf-bert-large-v100-bs1-ga4-gc-fp16",
                         "hf-bert-large-v100-bs1-ga4-gc-fp32"};
    for (const char* id : ids) {
        INFO(id);
        const auto& r = row(id);
        REQUIRE(r.ran());
        CHECK(r.preset == "v100-sxm2-16gb");
        CHECK(r.step.memory[0].runtime_bytes == 1343 * (std::int64_t{1} << 20));
        CHECK(std::find(r.features.begin(), r.features.end(), "classification head") !=
              r.features.end());
    }
    // The guide's order, largest first: batch 4 in fp32, in fp16 (autocast), batch 1 of 4
    // accumulated, then with gradient checkpointing in fp16 (the weights' casts held through
    // the forward) and in fp32.
    for (std::size_t i = 1; i < std::size(ids); ++i) {
        INFO(ids[i]);
        CHECK(row(ids[i]).measured_gib < row(ids[i - 1]).measured_gib);
        CHECK(row(ids[i]).predicted_gib < row(ids[i - 1]).predicted_gib);
    }
    // With checkpointing the peak is the model states, the casts and the layer inputs: within
    // 5%. Without, every layer's saved tensors: under by what the caching allocator reserves
    // beyond them, which the model leaves at its segment floor (allocator_fragmentation 0).
    CHECK(std::abs(row("hf-bert-large-v100-bs1-ga4-gc-fp32").error()) < 0.05);
    CHECK(std::abs(row("hf-bert-large-v100-bs1-ga4-gc-fp16").error()) < 0.05);
    CHECK(row("hf-bert-large-v100-vanilla-bs4-fp32").error() < 0);
}

TEST_CASE("memory runs: torchtitan's 405B pipelines in the measured order",
          "[validation][memory]") {
    // 1F1B above interleaved 1F1B (82.5 against 72.7 GiB measured): PyTorch's interleaved
    // schedule starts the last stage's one-forward-one-backward after (v - 1) P forwards, and a
    // rank holds one chunk's unsharded fp32 gradients at a time.
    CHECK(row("torchtitan-2412-t5-1").predicted_gib > row("torchtitan-2412-t5-2").predicted_gib);
    // The long-context rows: the same tokens per rank at cp 1-4, and at cp 8 (dp 1) torchtitan
    // leaves FSDP's FP8 all-gather off, so the layers' weights are held in bf16 (measured 75.3,
    // 75.9, 77.1, 84.9 GiB).
    const auto& cp8 = row("torchtitan-2412-t6-fsdp1-cp8");
    CHECK(std::find(cp8.features.begin(), cp8.features.end(), "FP8 all-gather") ==
          cp8.features.end());
    for (const char* id : {"torchtitan-2412-t6-fsdp8-cp1", "torchtitan-2412-t6-fsdp4-cp2",
                           "torchtitan-2412-t6-fsdp2-cp4"}) {
        INFO(id);
        CHECK(cp8.predicted_gib > row(id).predicted_gib + 5);
    }
}

TEST_CASE("memory runs: the accuracy reached (a guard, rounded up a little)",
          "[validation][memory][accuracy]") {
    const auto s = memory_errors(runs());
    INFO("mean |error| " << s.mean_abs << ", signed " << s.mean << ", worst " << s.max_abs);
    // Measured 2026-12-07: mean 7.6%, signed -6.9%, worst 25.5% over 32 rows (torchtitan's
    // 20, torchtune's 7, Hugging Face's 5). torchao's FP8 all-gather (the layers' weights
    // gathered and held in one byte) lowered the 405B pipeline rows by 5.7 GiB each, which the
    // pipelining's buffers had brought to -12..-22%: what they still miss is larger (the test
    // above). Before: 7.3%, -5.7%, 24.7% over 32 rows; 7.2%, -5.3% over 27; 7.6%, -5.1%, 24.7%
    // over the 20 torchtitan rows; before the cross-entropy's fp32 gradients and the op-level
    // policy's saved set: 28.9%, -7.3%, 49.9%.
    CHECK(s.points == 32);
    CHECK(s.mean_abs < 0.08);
    CHECK(s.max_abs < 0.26);
}

TEST_CASE("memory runs: issue 35's target, mean |error| within 5% on the printed statistic",
          "[validation][memory][accuracy][!shouldfail]") {
    // Not met: mean 7.6% (signed -6.9%) over 32 rows. Hugging Face's BERT-large rows: the
    // checkpointed ones within 3%, the others 6-16% under (every layer's saved tensors are
    // counted; what the caching allocator reserves beyond them is not). torchtune's: within 5% but
    // the compiled row without recompute (-8%: what Inductor's partition saves of a compiled
    // layer and loss beyond SDPA's grouped-query copies is not modelled) and 8-bit AdamW (-15%:
    // the optimizer's class and its step's
    // temporaries not stated). The Llama 3.1 8B rows
    // (selective and full recompute, 8-128 H100s, 32-64 H200s) are within 5%; the 70B rows
    // (tp 8) 6-12% under; the 405B rows with a pipeline 20-27% under, in the measured order
    // (1F1B above interleaved, the cp 8 row above cp 1-4) once torch.distributed.pipelining's
    // schedule and buffers and FSDP's FP8 all-gather are modelled: their allocated peak is
    // some 15-22 GiB below the reserved one torchtitan printed, more than any buffer the code
    // holds (the caching allocator's blocks left unused between the step's differently sized
    // requests are not modelled).
    const auto s = memory_errors(runs());
    CHECK(s.mean_abs <= targets::kMemoryMean);
}
