// The SMs the flex dispatcher's kernels (DeepEP's, HybridEP's) hold while they run, and what
// that takes from the kernels beside them (flex_dispatcher_sms in ep_overlap.h,
// CollectiveTimes::run_on_sms, kernel_load in overlap_interference.h).
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"
#include "strategies/parallel/ep_overlap.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/overlap_interference.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/training_step.h"

#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <string>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using clustersim::strategies::models::OpKind;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// Mixtral's 8 experts over 8 B200s (148 SMs), the flex dispatcher on `backend`, Megatron-Core's
/// expert-parallel overlap on, and `more`.
Settings flex_moe(const std::string& backend, const Settings& more) {
    Settings s{{"model", "mixtral-8x7B"},
               {"model.layers", "4"},
               {"model.seq", "2048"},
               {"training.global_batch", "64"},
               {"training.micro_batch", "1"},
               {"parallel.dp", "8"},
               {"parallel.ep", "8"},
               {"parallel.moe_token_dispatcher", "flex"},
               {"parallel.moe_flex_dispatcher_backend", backend},
               {"parallel.overlap_moe_expert_parallel_comm", "true"},
               {"parallel.delay_wgrad_compute", "true"}};
    s.insert(s.end(), more.begin(), more.end());
    return s;
}

StepResult step_of(const Platform& p, const Settings& s) {
    return simulate_step(make_experiment(p, 8, s, "flex-sms.yaml"));
}

} // namespace

TEST_CASE("flex dispatcher SMs: Megatron-Core's and HybridEP's defaults, the recipe's count wins",
          "[strategies][moe][flex]") {
    ParallelSpec p;
    // Megatron-Core's moe_deepep_num_sms default (20 at the commits kDeepEpDefaultSms cites),
    // whatever the group spans.
    CHECK(flex_dispatcher_sms(p, false) == 20);
    CHECK(flex_dispatcher_sms(p, true) == 20);
    p.deepep_sms = 24;
    CHECK(flex_dispatcher_sms(p, true) == 24);
    // HybridEP, given none: its Configurer's 24 in one NVLink domain, 8 across domains.
    p.hybridep = true;
    CHECK(flex_dispatcher_sms(p, false) == 24);
    CHECK(flex_dispatcher_sms(p, true) == 8);
    p.hybridep_sms = 32;
    CHECK(flex_dispatcher_sms(p, false) == 32);
    CHECK(flex_dispatcher_sms(p, true) == 32);
}

TEST_CASE("flex dispatcher SMs: a GEMM under HybridEP's 32 SMs on a B200 takes t x 148 / 116",
          "[strategies][moe][flex][overlap]") {
    const hardware::Topology b200(hardware::load_hardware("dgx-b200"));
    REQUIRE(b200.spec().node.gpu.sm_count == 148);
    const auto comm = strategies::collectives::Communicator::first(b200, 8);
    strategies::collectives::Collective c;
    c.op = strategies::collectives::Op::all_to_all;
    c.dtype = hardware::Dtype::bf16;
    c.bytes = std::int64_t{64} << 20;
    const double took = 1e-3;
    const CommLoad hybridep = kernel_load(comm, c, 32, took);
    const CommLoad nccl = nccl_load(comm, c, took);
    // Its SMs, not NCCL's CTAs; the same bytes through HBM. Inside a B200 node NCCL's ring
    // search finds 32 channels too (NVLink 5's 18 x 20.6 GB/s: 12 at 60, 16, doubled), so the
    // recipes' 32 take what NCCL's all-to-all took; across nodes NCCL's take fewer.
    CHECK(nccl_ctas(comm, c, strategies::collectives::Algorithm::ring) == 32);
    CHECK(hybridep.sm_share == Approx(32.0 / 148).epsilon(1e-12));
    CHECK(hybridep.sm_share == Approx(nccl.sm_share).epsilon(1e-12));
    CHECK(hybridep.hbm_share == Approx(nccl.hbm_share).epsilon(1e-12));
    CHECK(hybridep.hbm_share > 0);
    // A GEMM of t seconds entirely under the dispatch runs on the other 116 SMs.
    const double t = 0.25e-3;
    const CommSpan span{0, took, hybridep};
    CHECK(stretched_end(0, t, OpKind::gemm, {&span, 1}) ==
          Approx(t * 148 / (148 - 32)).epsilon(1e-12));
    // Across nodes (the flex dispatcher's rail: one GPU per node) NCCL's CTAs are fewer than
    // DeepEP's 20: the kernels beside a DeepEP dispatch lose more than NCCL's took.
    const hardware::Topology two(hardware::with_gpu_count(hardware::load_hardware("dgx-b200"), 32));
    const strategies::collectives::Communicator rail(two, {0, 8, 16, 24});
    CHECK(nccl_ctas(rail, c, strategies::collectives::Algorithm::ring) < kDeepEpDefaultSms);
    // DeepEP's default 20 on an H100's 132.
    const hardware::Topology h100(hardware::load_hardware("dgx-h100"));
    const auto h100_comm = strategies::collectives::Communicator::first(h100, 8);
    const CommLoad deepep = kernel_load(h100_comm, c, kDeepEpDefaultSms, took);
    const CommSpan deepep_span{0, took, deepep};
    CHECK(stretched_end(0, t, OpKind::gemm, {&deepep_span, 1}) ==
          Approx(t * 132 / (132 - 20)).epsilon(1e-12));
}

TEST_CASE("flex dispatcher SMs: the overlap's slowdown grows linearly with them",
          "[strategies][moe][flex][ep_overlap][training]") {
    const Platform p = load_platform("dgx-b200");
    const StepResult s16 =
        step_of(p, flex_moe("hybridep", {{"parallel.moe_hybridep_num_sms", "16"}}));
    const StepResult s32 =
        step_of(p, flex_moe("hybridep", {{"parallel.moe_hybridep_num_sms", "32"}}));
    const StepResult s64 =
        step_of(p, flex_moe("hybridep", {{"parallel.moe_hybridep_num_sms", "64"}}));
    const double d1 = s32.breakdown.overlap_slowdown_s - s16.breakdown.overlap_slowdown_s;
    const double d2 = s64.breakdown.overlap_slowdown_s - s32.breakdown.overlap_slowdown_s;
    REQUIRE(d1 > 0);
    // The kernels beside them lose (1 - f) x SMs / 148 of their rate, the HBM share f x h
    // fixed: the slowdown is affine in the SM count, 32 more SMs twice what 16 more cost.
    CHECK(d2 == Approx(2 * d1).epsilon(1e-6));
    // Nothing else of the step moves: the all-to-alls' own time does not depend on the SMs.
    CHECK(s64.breakdown.ep_comm_exposed_s == Approx(s16.breakdown.ep_comm_exposed_s).epsilon(1e-9));
    // The step takes the slowdown, less the gradient reduction the longer backward hides.
    const double dp_less = s16.breakdown.dp_comm_exposed_s - s64.breakdown.dp_comm_exposed_s;
    CHECK(s64.step_time_s - s16.step_time_s == Approx(d1 + d2 - dp_less).epsilon(1e-6));
    CHECK(s64.step_time_s > s16.step_time_s);
    CHECK(s64.step_time_s - s16.step_time_s <= d1 + d2 + 1e-12);
    // Unset, HybridEP's own 24 inside the node: between 16 and 32.
    const StepResult dflt = step_of(p, flex_moe("hybridep", {}));
    CHECK(dflt.breakdown.overlap_slowdown_s - s16.breakdown.overlap_slowdown_s ==
          Approx(d1 / 2).epsilon(1e-6));
    // Each backend reads its own key: DeepEP's kernels ignore HybridEP's count.
    const StepResult deepep = step_of(p, flex_moe("deepep", {}));
    const StepResult deepep_other =
        step_of(p, flex_moe("deepep", {{"parallel.moe_hybridep_num_sms", "64"}}));
    CHECK(deepep.step_time_s == deepep_other.step_time_s);
    const StepResult deepep_more =
        step_of(p, flex_moe("deepep", {{"parallel.moe_deepep_num_sms", "40"}}));
    CHECK(deepep_more.breakdown.overlap_slowdown_s > deepep.breakdown.overlap_slowdown_s);
}

TEST_CASE("flex dispatcher SMs: bad counts name the key and the fix", "[strategies][moe][input]") {
    const Platform p = load_platform("dgx-b200");
    auto error_of = [&](const Settings& s) {
        return test::input_error_of([&] { (void)make_experiment(p, 8, s, "moe.yaml"); });
    };
    CHECK_THAT(error_of(flex_moe("deepep", {{"parallel.moe_deepep_num_sms", "21"}})),
               Catch::Contains("moe_deepep_num_sms") && Catch::Contains("even"));
    CHECK_THAT(error_of(flex_moe("hybridep", {{"parallel.moe_hybridep_num_sms", "200"}})),
               Catch::Contains("moe_hybridep_num_sms") && Catch::Contains("148 SMs"));
    CHECK_THAT(error_of(flex_moe("hybridep", {{"parallel.moe_hybridep_num_sms", "0"}})),
               Catch::Contains("moe_hybridep_num_sms"));
}
