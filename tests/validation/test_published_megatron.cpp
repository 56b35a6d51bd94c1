// The step model against published Megatron-LM runs (app/report_published.h): Narayanan et al.
// SC21 Table 1 and the Megatron-LM README of 2020, and the dgx2-v100 preset the README's DGX-2
// rows run on. The accuracy tests guard the level reached today (rounded up a little), so a
// change that makes the model worse on these tables fails; issue 4's targets, not reached yet,
// are asserted in tests tagged [!shouldfail] (as tests/calibrate/test_steps_accuracy.cpp does):
// they fail the day the model reaches them, and the tag must go.
#include "base/error.h"
#include "hardware/hardware_loader.h"
#include "tests/app/cli_run.h"
#include "validation/accuracy_published.h"

#include "strategies/models/layer_work.h"

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

const std::vector<PublishedRun>& narayanan() {
    static const std::vector<PublishedRun> runs = narayanan2021_runs(kData);
    return runs;
}
const std::vector<PublishedRun>& readme2020() {
    static const std::vector<PublishedRun> runs = megatron2020_runs(kData);
    return runs;
}

double mean_abs(const std::vector<PublishedRun>& runs) {
    return run_errors(runs).mean_abs;
}
double max_abs(const std::vector<PublishedRun>& runs) {
    return run_errors(runs).max_abs;
}

} // namespace

TEST_CASE("published: Eq. 3 reproduces the 2020 README's TFLOP/s from its iteration times",
          "[app][published]") {
    // The README prints both: FLOPs of 4 passes (recompute) over iteration time and GPUs.
    // 1.16B on one A100: 16 x 1024 tokens, 24 layers, hidden 1920, 1076 ms -> 149.8 TFLOP/s.
    const double f = megatron_eq3_flops(16, 1024, 24, 1920, 51200);
    CHECK(f / 1.076 / 1e12 == Approx(149.8).epsilon(0.001));
    // Every row, both systems: the published TFLOP/s to their printed precision (0.1 of ~50).
    for (const auto& r : readme2020()) {
        INFO(r.system << " " << r.model << " on " << r.gpus << " GPUs");
        const double flops = megatron_eq3_flops(r.global_batch, 1024, r.layers, r.hidden, 51200);
        const double tflops = flops / (1e-3 * r.measured * r.gpus) / 1e12;
        CHECK(tflops == Approx(r.published_tflops).epsilon(0.0015));
    }
    // The closed form term by term: with s = 6h and V = 16 l h, 1 + s/(6h) + V/(16 l h) = 3.
    CHECK(megatron_eq3_flops(1, 6, 1, 1, 16) == Approx(96.0 * 6 * 3));
}

TEST_CASE("published: Narayanan rows follow the stated rules and fit in memory",
          "[app][published]") {
    const auto& runs = narayanan();
    REQUIRE(runs.size() == 10);
    for (const auto& r : runs) {
        INFO(r.model);
        CHECK(r.tp * r.pp * r.dp == r.gpus);
        // The micro-batch: the smallest that lets Megatron's fused causal softmax run (the
        // paper's Sec. 4.2), b x heads per rank a multiple of 4 at sequence 2048.
        const int per_replica = r.global_batch / r.dp;
        CHECK(per_replica % r.micro_batch == 0);
        CHECK(r.fused_softmax);
        for (int b = 1; b < r.micro_batch; ++b)
            CHECK_FALSE(strategies::models::megatron_fused_softmax(
                std::int64_t{b} * r.heads / r.tp, 2048, 2048, hardware::Dtype::fp16));
        if (r.pp == 1) {
            CHECK(r.virtual_stages == 1);
        } else {
            // The largest divisor of layers / pp not above 4.
            const int per_stage = r.layers / r.pp;
            CHECK(per_stage % r.virtual_stages == 0);
            for (int v = r.virtual_stages + 1; v <= 4; ++v)
                CHECK(per_stage % v != 0);
        }
        CHECK(r.step.micro_batches == per_replica / r.micro_batch);
        // The published runs ran: the chosen settings must fit in the 80 GB.
        CHECK_FALSE(r.step.oom);
        // Eq. 3 on both sides: predicted TFLOP/s is F / (time x GPUs).
        const double f = megatron_eq3_flops(r.global_batch, 2048, r.layers, r.hidden, 51200);
        CHECK(r.predicted == Approx(f / (r.step.step_time_s * r.gpus) / 1e12));
    }
    CHECK(runs.back().virtual_stages == 2); // 1T: 128 layers / 64 stages = 2 per stage
    CHECK(runs[8].virtual_stages == 3);     // 530B: 105 / 35 = 3, as Megatron-Turing ran it
    CHECK(runs.front().step.micro_batches == 16);
    // 18.4B (48 heads) and 76.1B (80 heads) at tp 8: 6 and 10 heads per rank, so micro-batch
    // 2 (12 and 20 rows of scores); every other row has a multiple of 4 heads per rank.
    CHECK(runs[3].micro_batch == 2);
    CHECK(runs[5].micro_batch == 2);
    CHECK(runs[5].step.micro_batches == 28);
    for (int i : {0, 1, 2, 4, 6, 7, 8, 9})
        CHECK(runs[static_cast<std::size_t>(i)].micro_batch == 1);
}

TEST_CASE("published: 2020 README rows run one micro-batch per model-parallel group",
          "[app][published]") {
    const auto& runs = readme2020();
    REQUIRE(runs.size() == 12);
    for (const auto& r : runs) {
        INFO(r.system << " " << r.model << " on " << r.gpus << " GPUs");
        CHECK(r.micro_batch == (r.system == "dgx2-v100" ? 8 : 16));
        CHECK(r.step.micro_batches == 1);
        CHECK(r.pp == 1);
        CHECK_FALSE(r.step.oom);
    }
}

// Measured when the bounds were set: mean |error| 8.8%, max 18.6%, pipeline-free rows within
// 5.5%. With Megatron-LM of 2021's gradient accumulation (the megatron-lm framework profile:
// an add kernel per parameter tensor and micro-batch, 6 bytes a parameter), mean 4.9%, max
// 13.5%, the pipeline-free rows at -1.4% (1.7B), -6.1% (3.6B), -8.0% (7.5B), +1.6% (18.4B):
// their bound moved from 6% to 8.5%.
TEST_CASE("published: Narayanan Table 1 accuracy does not regress", "[app][published][accuracy]") {
    const auto& runs = narayanan();
    INFO("mean |error| " << 100 * mean_abs(runs) << "%, max " << 100 * max_abs(runs) << "%");
    CHECK(mean_abs(runs) <= 0.09);
    CHECK(max_abs(runs) <= 0.19);
    for (const auto& r : runs) {
        INFO(r.model << ": " << 100 * r.error() << "%");
        // Every row runs Megatron's fused softmax (the micro-batch rule); the rows without a
        // pipeline are 1.7B-18.4B (the 7.5B at -8.0% the farthest).
        CHECK(r.fused_softmax);
        if (r.pp == 1)
            CHECK(std::abs(r.error()) <= 0.085);
    }
}

// Issue 4's target, not reached: the pipelined 76B-1T rows are predicted 11-19% too fast.
TEST_CASE("published: Narayanan Table 1, every row within 10% (issue 4 target)",
          "[app][published][accuracy][!shouldfail]") {
    for (const auto& r : narayanan()) {
        INFO(r.model << ": " << 100 * r.error() << "%");
        CHECK(std::abs(r.error()) <= 0.10);
    }
}

// A regression guard a little above what the model reaches (docs/validation.md prints the
// figures of the day): the mean at most 8.5%, no row past 15%.
TEST_CASE("published: 2020 README accuracy does not regress", "[app][published][accuracy]") {
    const auto& runs = readme2020();
    INFO("mean |error| " << 100 * mean_abs(runs) << "%, max " << 100 * max_abs(runs) << "%");
    CHECK(mean_abs(runs) <= 0.085);
    CHECK(max_abs(runs) <= 0.15);
}

// Issue 4's target, not reached: four tensor-parallel 2-8 rows are predicted 10-14% too fast.
TEST_CASE("published: 2020 README, every row within 10% (issue 4 target)",
          "[app][published][accuracy][!shouldfail]") {
    for (const auto& r : readme2020()) {
        INFO(r.system << " " << r.model << " on " << r.gpus << " GPUs: " << 100 * r.error() << "%");
        CHECK(std::abs(r.error()) <= 0.10);
    }
}

TEST_CASE("published: a missing or malformed table is a one-line input error", "[app][published]") {
    TempDir dir("published");
    std::filesystem::create_directories(dir.path / "megatron");
    CHECK_THROWS_WITH(narayanan2021_runs(dir.path.string()),
                      Catch::Contains("narayanan2021-table1.csv: cannot open the file"));
    const std::string header = "params_b,heads,hidden,layers,tp,pp,gpus,global_batch,"
                               "tflops_per_gpu,percent_of_peak\n";
    spit(dir.file("megatron/narayanan2021-table1.csv"),
         "# comment\n" + header + "1.7,24,2304,24,1,1,32,512,fast,44\n");
    CHECK_THROWS_WITH(narayanan2021_runs(dir.path.string()),
                      Catch::Contains("narayanan2021-table1.csv:3: column 'tflops_per_gpu'") &&
                          Catch::Contains("got 'fast'"));
    spit(dir.file("megatron/narayanan2021-table1.csv"), header + "1.7,24,2304,24,1,1,32,512,137\n");
    CHECK_THROWS_WITH(
        narayanan2021_runs(dir.path.string()),
        Catch::Contains(":2: expected 10 fields as the header at line 1 says, got 9"));
    spit(dir.file("megatron/narayanan2021-table1.csv"),
         header + "1.7,24,2304,24,1,3,32,512,137,44\n");
    CHECK_THROWS_WITH(narayanan2021_runs(dir.path.string()),
                      Catch::Contains(":2: tp 1 x pp 3 does not divide 32 GPUs"));
    // Through the command: exit 2, one line, nothing on stdout.
    const Run r =
        run({"report", "validation", "--data", dir.path.string(), "--section", "published"});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("does not divide 32 GPUs"));
}

TEST_CASE("presets: dgx2-v100 datasheet numbers", "[hardware][presets]") {
    const hardware::ClusterSpec s = hardware::load_hardware("dgx2-v100");
    CHECK(s.node.gpus == 16);
    CHECK(s.node.gpu.sm_count == 80);
    CHECK(s.node.gpu.peak(hardware::Dtype::fp16) == Approx(125e12));
    CHECK(s.node.gpu.peak(hardware::Dtype::fp32) == Approx(15.7e12));
    CHECK_FALSE(s.node.gpu.supports(hardware::Dtype::bf16)); // Volta: no bf16, tf32 or fp8
    CHECK(s.node.gpu.hbm_bandwidth == Approx(900e9));
    CHECK(s.node.gpu.hbm_bytes == std::int64_t{32'000'000'000});
    CHECK(s.node.nvlink.bandwidth == Approx(150e9)); // 6 NVLink 2 links x 25 GB/s
    CHECK(s.node.nics == 8);
    CHECK(s.node.nic.bandwidth == Approx(12.5e9)); // EDR 100 Gb/s
    const Run r = run({"hardware", "show", "dgx2-v100", "--gpus", "32"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("32 x V100-SXM3-32GB") && Catch::Contains("2 nodes"));
}
