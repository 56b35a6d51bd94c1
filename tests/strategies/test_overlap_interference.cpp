// What overlapped communication costs the compute it overlaps
// (strategies/parallel/overlap_interference.h): the closed forms, NCCL's channel counts, and the
// invariants of the step model that uses them.
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"
#include "strategies/parallel/overlap_interference.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <memory>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using clustersim::strategies::models::OpKind;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

hardware::GpuSpec gpu(int sms, double hbm) {
    hardware::GpuSpec g;
    g.sm_count = sms;
    g.hbm_bandwidth = hbm;
    return g;
}

/// A small GPT on `gpus` A100s (two nodes for 16).
ExperimentSpec gpt(int gpus, Settings extra) {
    Platform p = load_platform("dgx-a100");
    Settings s{{"model.kind", "transformer"}, {"model.layers", "8"},
               {"model.hidden", "2048"},      {"model.heads", "16"},
               {"model.seq", "1024"},         {"model.vocab", "51200"},
               {"training.dtype", "bf16"},    {"training.micro_batch", "1"}};
    for (auto& kv : extra)
        s.push_back(kv);
    return make_experiment(p, gpus, s, "interference-test");
}

} // namespace

TEST_CASE("overlap interference: a GEMM under a collective of C CTAs on S SMs takes t S / (S - C)",
          "[strategies][overlap]") {
    for (auto [sms, ctas] : {std::pair{108, 24}, std::pair{132, 16}, std::pair{80, 12}}) {
        const CommLoad load = comm_load(gpu(sms, 2e12), ctas, 0, 1.0);
        CHECK(load.sm_share == Approx(static_cast<double>(ctas) / sms));
        const double t = 3e-3;
        // The collective outlasts the GEMM.
        const CommSpan span{0, 1.0, load};
        CHECK(stretched_end(0, t, OpKind::gemm, {&span, 1}) ==
              Approx(t * sms / (sms - ctas)).epsilon(1e-12));
        CHECK(overlap_slowdown(1.0, t, load.sm_share) ==
              Approx(t * sms / (sms - ctas) - t).epsilon(1e-12));
        // The GEMM outlasts the collective (T < t (1 - s)): it loses T s.
        const double T = 1e-3;
        const CommSpan short_span{0, T, load};
        CHECK(stretched_end(0, t, OpKind::gemm, {&short_span, 1}) ==
              Approx(t + T * ctas / sms).epsilon(1e-12));
        CHECK(overlap_slowdown(T, t, load.sm_share) == Approx(T * ctas / sms).epsilon(1e-12));
        // A collective that starts after the GEMM ends costs it nothing.
        const CommSpan later{t, t + 1, load};
        CHECK(stretched_end(0, t, OpKind::gemm, {&later, 1}) == Approx(t).epsilon(1e-15));
    }
}

TEST_CASE("overlap interference: memory-bound kernels lose the collective's HBM bytes per second",
          "[strategies][overlap]") {
    // 400 GB/s of collective traffic on a 2 TB/s HBM: a 1 ms memory-bound kernel under it
    // takes 1 / (1 - 0.2) ms; a GEMM under it loses the SMs only.
    const CommLoad load = comm_load(gpu(108, 2e12), 24, 400e9, 1.0);
    CHECK(load.hbm_share == Approx(0.2));
    const CommSpan span{0, 1.0, load};
    CHECK(stretched_end(0, 1e-3, OpKind::memory_bound, {&span, 1}) == Approx(1e-3 / 0.8));
    CHECK(stretched_end(0, 1e-3, OpKind::gemm, {&span, 1}) == Approx(1e-3 * 108 / 84));
}

TEST_CASE("overlap interference: the slowdown never exceeds the collective's duration x its share",
          "[strategies][overlap]") {
    for (double share : {0.0, 0.05, 0.15, 0.3})
        for (double comm : {1e-4, 1e-3, 1e-2})
            for (double compute : {0.0, 1e-4, 1e-3, 1e-1}) {
                const double s = overlap_slowdown(comm, compute, share);
                CHECK(s >= 0);
                CHECK(s <= comm * share * (1 + 1e-12));
                if (share < 1)
                    CHECK(s <= compute * share / (1 - share) * (1 + 1e-12));
            }
    CHECK(overlap_slowdown(1e-3, 1e-3, 0) == 0);
    CHECK(overlap_slowdown(0, 1e-3, 0.2) == 0);
}

TEST_CASE("overlap interference: NCCL's ring channels inside an NVSwitch node",
          "[strategies][overlap]") {
    // search.cc's ring search at NCCL's NVLink rates, ncclTopoDupChannels, ncclTopoPostset:
    // A100 12 x 20 = 240 GB/s: 6 channels at 40, duplicated to 12, doubled to 24; H100
    // 18 x 20.6 = 370.8 GB/s: 6 at 60, 12, 24; V100 6 x 20 = 120: 3 at 40, 6, 12.
    CHECK(nvswitch_ring_channels(hardware::load_hardware("dgx-a100").node) == 24);
    CHECK(nvswitch_ring_channels(hardware::load_hardware("dgx-h100").node) == 24);
    CHECK(nvswitch_ring_channels(hardware::load_hardware("dgx2-v100").node) == 12);

    const auto spec = hardware::load_hardware("dgx-a100");
    const hardware::Topology one(spec);
    const auto comm = strategies::collectives::Communicator::first(one, 8);
    strategies::collectives::Collective c;
    c.op = strategies::collectives::Op::all_reduce;
    c.dtype = hardware::Dtype::fp32;
    c.bytes = std::int64_t{256} << 20;
    CHECK(nccl_ctas(comm, c, strategies::collectives::Algorithm::ring) == 24);
    // Small buffers run on fewer channels: at least 512 threads x 64 bytes each.
    c.bytes = 5 * 512 * 64;
    CHECK(nccl_ctas(comm, c, strategies::collectives::Algorithm::ring) == 5);
    // Across two nodes of 8 NICs: a ring channel per NIC port, doubled.
    const hardware::Topology two(hardware::with_gpu_count(spec, 16));
    const auto wide = strategies::collectives::Communicator::first(two, 16);
    c.bytes = std::int64_t{256} << 20;
    CHECK(nccl_ctas(wide, c, strategies::collectives::Algorithm::ring) == 16);
    // One GPU per node: one channel at the port's speed; duplicated on H100's 400 Gb/s NICs
    // (48 GB/s, at most 4 channels), not on A100's 200 Gb/s (24 GB/s), then doubled.
    const strategies::collectives::Communicator a100_pair(two, {0, 8});
    CHECK(nccl_ctas(a100_pair, c, strategies::collectives::Algorithm::ring) == 2);
    const hardware::Topology h100(
        hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), 16));
    const strategies::collectives::Communicator h100_pair(h100, {0, 8});
    CHECK(nccl_ctas(h100_pair, c, strategies::collectives::Algorithm::ring) == 4);
}

TEST_CASE("overlap interference: XLA's collectives on a torus take no TensorCores, only HBM",
          "[strategies][overlap][torus]") {
    const hardware::Topology slice(hardware::load_hardware("tpu-v5p"));
    const auto comm = strategies::collectives::Communicator::first(slice, 4);
    strategies::collectives::Collective c;
    c.op = strategies::collectives::Op::all_gather;
    c.dtype = hardware::Dtype::bf16;
    c.bytes = std::int64_t{64} << 20;
    CHECK(nccl_ctas(comm, c, strategies::collectives::Algorithm::torus) == 0);
    const CommLoad load = nccl_load(comm, c, strategies::collectives::Algorithm::torus, 1e-3);
    CHECK(load.sm_share == 0);
    CHECK(load.hbm_share > 0);
}

TEST_CASE("overlap interference: no overlapped communication, no slowdown",
          "[strategies][overlap][training]") {
    // Gradients all-reduced after the backward, no tensor parallelism, no ZeRO-3.
    const auto e = gpt(8, {{"training.global_batch", "16"}, {"parallel.dp_overlap", "false"}});
    const StepResult r = simulate_step(e);
    CHECK(r.breakdown.overlap_slowdown_s == 0);
    const StepPlan plan = build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
    for (const VirtualStagePlan& st : plan.stages) {
        CHECK(st.forward.overlap_slowdown == sim::Time::zero());
        CHECK(st.backward.overlap_slowdown == sim::Time::zero());
    }
}

TEST_CASE("overlap interference: ZeRO-3's gathers slow the compute by at most their time x share",
          "[strategies][overlap][training][zero]") {
    const auto e = gpt(16, {{"training.global_batch", "16"}, {"parallel.zero", "3"}});
    const auto topo = std::make_shared<hardware::Topology>(e.cluster);
    const StepPlan plan = build_step_plan(e, topo);
    // The share of one layer's gather: NCCL's CTAs or its HBM traffic, whichever is larger.
    strategies::collectives::Communicator dp(*topo, plan.ranks[0].dp_group);
    strategies::collectives::Collective c;
    c.op = strategies::collectives::Op::all_gather;
    c.dtype = hardware::Dtype::bf16;
    c.bytes = plan.stage(0).gathered_bytes;
    const CommLoad load = nccl_load(dp, c, dp.predict(c).seconds());
    const double share = std::max(load.sm_share, load.hbm_share);
    REQUIRE(share > 0);
    for (const VirtualStagePlan& st : plan.stages) {
        for (const PassCost* p : {&st.forward, &st.backward}) {
            CHECK(p->overlap_slowdown > sim::Time::zero());
            CHECK(p->overlap_slowdown.seconds() <= p->param_gather.seconds() * share * 1.001);
            // Folded into compute and recompute.
            CHECK(p->overlap_slowdown <= p->compute + p->recompute);
        }
    }
    const StepResult r = simulate_step(e);
    CHECK(r.breakdown.overlap_slowdown_s > 0);
    CHECK(r.breakdown.overlap_slowdown_s <= r.breakdown.compute_s + r.breakdown.recompute_s);
}

TEST_CASE("overlap interference: both fidelities lengthen the passes the bucket reductions overlap",
          "[strategies][overlap][training][dp]") {
    // One node, data parallel 8 with its gradient buckets reduced during the last backward.
    const auto e = gpt(8, {{"training.global_batch", "16"},
                           {"parallel.dp_overlap", "true"},
                           {"parallel.dp_bucket", "16MiB"}});
    StepOptions analytic, flow;
    flow.fidelity = Fidelity::flow;
    const StepResult a = simulate_step(e, analytic), f = simulate_step(e, flow);
    REQUIRE(a.breakdown.overlap_slowdown_s > 0);
    CHECK(f.breakdown.overlap_slowdown_s == Approx(a.breakdown.overlap_slowdown_s));
    CHECK(f.step_time_s == Approx(a.step_time_s).epsilon(0.02));
    // Never more than the reductions' time x their share of the SMs (NCCL's 24 CTAs of the
    // A100's 108 SMs inside a DGX A100).
    const StepPlan plan = build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
    double reductions = 0;
    for (const DpCollective& c : plan.ranks[0].dp)
        if (c.chunk)
            reductions += c.time.seconds();
    const double from_plan = [&] {
        double s = 0;
        for (const VirtualStagePlan& st : plan.stages)
            s += st.backward.overlap_slowdown.seconds() * e.micro_batches() +
                 st.forward.overlap_slowdown.seconds() * e.micro_batches();
        return s;
    }();
    CHECK(a.breakdown.overlap_slowdown_s - from_plan <= reductions * 24.0 / 108 * 1.0001);
}
