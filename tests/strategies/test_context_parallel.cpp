#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "layer_work_test_util.h"
#include "strategies/models/context_parallel.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/memory_formulas.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/context_parallel_comm.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/straggler.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <memory>

using namespace clustersim;
using namespace clustersim::strategies::models;
using hardware::ComputeModel;
using hardware::Dtype;
using layer_work_test::op_named;
namespace parallel = clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

const ComputeModel& h100() {
    static const ComputeModel cm(hardware::load_hardware("dgx-h100"));
    return cm;
}

LayerConfig layer_cfg(int tp, bool sp, int cp, Dtype d = Dtype::bf16) {
    LayerConfig c;
    c.tp = tp;
    c.sequence_parallel = sp;
    c.cp = cp;
    c.dtype = d;
    return c;
}

double gemm_flops(const PassWork& p) {
    double f = 0;
    for (const Op& op : p.ops) {
        if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm)
            f += op.flops;
    }
    return f;
}

Settings llama8b(int gpus_cp, int tp, int cp) {
    (void)gpus_cp;
    return {{"model", "llama3-8B"},
            {"model.layers", "4"},
            {"training.global_batch", "8"},
            {"training.micro_batch", "1"},
            {"training.dtype", "bf16"},
            {"parallel.tp", std::to_string(tp)},
            {"parallel.cp", std::to_string(cp)},
            {"parallel.sequence_parallel", tp > 1 ? "true" : "false"}};
}

} // namespace

TEST_CASE("context parallelism: per-GPU attention FLOPs are the causal total over cp, balanced",
          "[strategies][context_parallel]") {
    // Llama 3 8B heads at tp 1: 32 heads of 128, one sample of 8192 tokens.
    const std::int64_t bh = 32, s = 8192, d = 128;
    for (bool backward : {false, true}) {
        // cp = 1 is the plain causal kernel.
        const CpAttention one = cp_attention(bh, s, d, 1, Dtype::bf16, backward, h100());
        CHECK(one.flops == ComputeModel::fused_attention_flops(bh, s, d, true, backward));
        CHECK(one.seconds(1) ==
              h100().fused_attention_seconds(bh, s, d, Dtype::bf16, true, backward));
        for (int cp : {2, 4, 8, 16}) {
            const CpAttention a = cp_attention(bh, s, d, cp, Dtype::bf16, backward, h100());
            // Step 0: the local 2 chunks, causal; cp - 1 steps of half a local block each:
            // 4 s_l^2 d / 2 per head forward (s_l = s / cp), 2.5x backward.
            const double sl = static_cast<double>(s / cp);
            const double half_block = 4.0 * bh * sl * sl * d / 2 * (backward ? 2.5 : 1.0);
            CHECK(a.flops ==
                  Approx(ComputeModel::fused_attention_flops(bh, s / cp, d, true, backward) +
                         (cp - 1) * half_block)
                      .epsilon(1e-12));
            // Balanced: the whole sequence's causal FLOPs (2 b a s^2 d forward) over cp; the
            // executed count exceeds it by step 0's diagonal blocks only (128-query blocks:
            // a fraction 128 / s_l of step 0).
            const double ideal = cp_attention_flops_closed_form(bh, s, d, cp, backward);
            CHECK(ideal == Approx(2.0 * bh * s * s * d / cp * (backward ? 2.5 : 1.0)));
            CHECK(a.flops > ideal);
            CHECK(a.flops / ideal - 1 == Approx(128.0 / sl / cp).epsilon(1e-9));
            // Every rank's steps add to the same: the total over cp ranks is the whole
            // sequence's (within the diagonal blocks).
            CHECK(a.flops * cp ==
                  Approx(ComputeModel::fused_attention_flops(bh, s, d, true, backward))
                      .epsilon(128.0 / sl));
            // Every later step is as long as a causal local kernel's work without its mask.
            CHECK(a.step_seconds > 0);
            CHECK(a.seconds(cp) < one.seconds(1));
        }
    }
}

TEST_CASE("context parallelism: a layer runs s/cp tokens, its attention the ring's steps",
          "[strategies][context_parallel]") {
    const ModelSpec m = load_model("llama3-8B");
    for (auto [tp, sp] : {std::pair{1, false}, std::pair{8, true}}) {
        const LayerWork one = layer_work(m, layer_cfg(tp, sp, 1), h100());
        for (int cp : {2, 4, 8}) {
            INFO("tp " << tp << " cp " << cp);
            const LayerWork w = layer_work(m, layer_cfg(tp, sp, cp), h100());
            // Every GEMM runs on s/cp tokens: 1/cp of the FLOPs, exactly.
            CHECK(gemm_flops(w.forward) * cp == Approx(gemm_flops(one.forward)).epsilon(1e-12));
            CHECK(gemm_flops(w.backward) * cp == Approx(gemm_flops(one.backward)).epsilon(1e-12));
            // The attention: the ring's steps over this rank's heads.
            const std::int64_t bh = m.heads / tp;
            CHECK(op_named(w.forward, "attention.flash").flops ==
                  cp_attention(bh, m.seq, m.head_dim(), cp, Dtype::bf16, false, h100()).flops);
            CHECK(op_named(w.backward, "attention.flash.bwd").flops ==
                  cp_attention(bh, m.seq, m.head_dim(), cp, Dtype::bf16, true, h100()).flops);
            // Activations per GPU: divided by cp, exactly (every term is per token).
            CHECK(w.activation_bytes * cp == one.activation_bytes);
            // The TP collectives carry s/cp tokens.
            CHECK(w.collective_bytes(Pass::forward) * cp == one.collective_bytes(Pass::forward));
            // The weights are whole on every CP rank.
            CHECK(w.parameters == one.parameters);
        }
    }
}

TEST_CASE("context parallelism: activations per GPU match Korthikanti's closed form at s/cp",
          "[strategies][context_parallel]") {
    // GPT-3 175B with FlashAttention (context parallelism needs a fused attention): the
    // closed form s b h / t (34) with sequence parallelism, at s / cp tokens per GPU.
    ModelSpec g = load_model("gpt3-175B");
    g.attention = AttentionKind::flash;
    const double s = g.seq, h = g.hidden, a = g.heads;
    for (int cp : {1, 2, 4}) {
        for (bool sp : {false, true}) {
            const LayerWork w = layer_work(g, layer_cfg(8, sp, cp, Dtype::fp16), h100());
            const double expected =
                context_parallel_activation_bytes(s, 1, h, a, 8, sp, Recompute::none, cp);
            CHECK(expected ==
                  Approx(korthikanti_activation_bytes(s, 1, h, a, 8, sp, Recompute::none, true) /
                         cp));
            CHECK(static_cast<double>(w.activation_bytes) == Approx(expected).epsilon(0.01));
        }
    }
}

TEST_CASE("context parallelism: the ring's exposed communication, as Transformer Engine orders "
          "it",
          "[strategies][context_parallel]") {
    // Forward: cp - 1 exchanges, each beside one step; backward: cp exchanges, the middle ones
    // carrying dK and dV as well.
    const CpRingExposure hidden = cp_ring_exposure(4, 1.0, 2.0, 5.0, 5.0, 9.0, 9.0);
    CHECK(hidden.forward == 0);
    CHECK(hidden.backward == 0);
    const CpRingExposure x = cp_ring_exposure(4, 3.0, 6.0, 1.0, 2.0, 2.5, 4.0);
    CHECK(x.forward == Approx((3 - 1) + 2 * (3 - 2)));
    CHECK(x.backward == Approx((3 - 2.5) + 2 * (6 - 4) + 0));
    CHECK(cp_ring_exposure(1, 3, 6, 0, 0, 0, 0).forward == 0);
    const CpRingExposure two = cp_ring_exposure(2, 3.0, 6.0, 1.0, 2.0, 1.0, 2.0);
    CHECK(two.forward == Approx(2));      // one exchange, beside step 0
    CHECK(two.backward == Approx(2 + 1)); // K/V beside step 0, dK/dV beside step 1
    // What one step sends: K and V of s/cp tokens, the rank's kv heads (GQA: 8 / tp).
    const ModelSpec m = load_model("llama3-8B");
    CHECK(cp_kv_bytes(m, 1, 2, 1, Dtype::bf16) == 2 * 4096 * 8 * 128 * 2);
    CHECK(cp_kv_bytes(m, 8, 4, 2, Dtype::bf16) == 2 * (2 * 2048) * 1 * 128 * 2);
}

TEST_CASE("context parallelism: placement tp-cp-dp-pp, gradients over dp x cp",
          "[strategies][context_parallel]") {
    const auto platform = parallel::load_platform("dgx-h100");
    const auto e = parallel::make_experiment(platform, 32, llama8b(32, 4, 2), "cp");
    CHECK(e.parallel.dp == 4);
    CHECK(e.parallel.dp_cp() == 8);
    // tp fastest, then cp: the CP peers of GPU 0 are 4 apart (inside a node as tp x cp = 8).
    CHECK(parallel::gpu_of(e.parallel, 0, 0, 0, 1) == 4);
    CHECK(parallel::gpu_of(e.parallel, 0, 1, 0, 0) == 8);
    CHECK(parallel::gpu_of(e.parallel, 3, 3, 0, 1) == 3 + 4 * (1 + 2 * 3));
    const auto plan =
        parallel::build_step_plan(e, std::make_shared<const hardware::Topology>(e.cluster));
    REQUIRE(plan.ranks.size() == 1);
    CHECK(plan.ranks[0].dp_group == std::vector<int>{0, 4, 8, 12, 16, 20, 24, 28});
    // cp = 1 places as before: t + tp (d + dp p).
    parallel::ParallelSpec p;
    p.tp = 2;
    p.dp = 3;
    CHECK(parallel::gpu_of(p, 1, 2, 1) == 1 + 2 * (2 + 3 * 1));
}

TEST_CASE("context parallelism: memory per GPU and the step's exposed ring",
          "[strategies][context_parallel]") {
    auto platform = parallel::load_platform("dgx-h100");
    platform.framework.host_overhead = sim::Time::zero();
    platform.framework.microbatch_overhead = sim::Time::zero();
    // tp 1: the only waits on the tensor-parallel line are the ring's.
    const auto one = parallel::make_experiment(platform, 8, llama8b(8, 1, 1), "cp1");
    const auto two = parallel::make_experiment(platform, 8, llama8b(8, 1, 2), "cp2");
    const auto r1 = parallel::simulate_step(one);
    const auto r2 = parallel::simulate_step(two);
    REQUIRE(r1.memory.size() == 1);
    REQUIRE(r2.memory.size() == 1);
    // Per micro-batch activations halve; the model state is the same (dp x cp = 8 shards).
    const auto topo = std::make_shared<const hardware::Topology>(one.cluster);
    const auto p1 = parallel::build_step_plan(one, topo);
    const auto p2 = parallel::build_step_plan(two, topo);
    CHECK(p2.stage(0).activation_bytes * 2 == p1.stage(0).activation_bytes);
    CHECK(r2.memory[0].weights_bytes == r1.memory[0].weights_bytes);
    CHECK(r2.memory[0].optimizer_bytes == r1.memory[0].optimizer_bytes);
    CHECK(r1.breakdown.tp_comm_exposed_s == 0);

    // A slow link exposes the ring: per layer and micro-batch, what cp_exposure says.
    auto slow = platform;
    slow.cluster.node.nvlink.bandwidth = 2e9;
    slow.cluster.node.pcie.bandwidth = 2e9; // no faster path between the two GPUs either
    slow.cluster.node.host_link.bandwidth = 2e9;
    const auto e = parallel::make_experiment(slow, 8, llama8b(8, 1, 2), "slow");
    const hardware::Topology t(e.cluster);
    const LayerWork layer = layer_work(e.model, layer_cfg(1, false, 2), ComputeModel(e.cluster));
    // At the pace of the step's slowest GPU, as the step plan costs it (straggler.h).
    const auto x = parallel::cp_exposure(
        e, layer, ComputeModel(e.cluster),
        parallel::at_slowest_gpu(e.framework, e.gpus).gemm_efficiency, t, nullptr);
    CHECK(x.forward > 0);
    CHECK(x.backward > x.forward);
    const auto r = parallel::simulate_step(e);
    CHECK(r.breakdown.tp_comm_exposed_s ==
          Approx((x.forward + x.backward) * e.model.layers * e.micro_batches()).epsilon(1e-6));
    // The all-gather variant exposes its collectives whole.
    auto ag = e;
    ag.parallel.cp_comm_type = CpCommType::all_gather;
    const auto xa = parallel::cp_exposure(ag, layer, ComputeModel(e.cluster),
                                          e.framework.gemm_efficiency, t, nullptr);
    CHECK(xa.forward > 0);
    CHECK(xa.backward > xa.forward);
}

TEST_CASE("context parallelism: cp = 1 leaves every prediction as it was",
          "[strategies][context_parallel]") {
    const auto platform = parallel::load_platform("dgx-h100");
    Settings s = llama8b(16, 8, 1);
    const auto with_key = parallel::make_experiment(platform, 16, s, "cp1");
    s.erase(s.begin() + 6); // no parallel.cp key at all
    const auto without = parallel::make_experiment(platform, 16, s, "nocp");
    const auto a = parallel::simulate_step(with_key);
    const auto b = parallel::simulate_step(without);
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.peak_bytes_max == b.peak_bytes_max);
    // And cp = 1 attention is the plain causal kernel.
    const LayerWork w = layer_work(with_key.model, layer_cfg(8, true, 1), h100());
    CHECK(op_named(w.forward, "attention.flash").time ==
          h100().fused_attention(4, 8192, 128, Dtype::bf16, true, false));
}

TEST_CASE("context parallelism: bad input names the key and the fix",
          "[strategies][context_parallel]") {
    const auto platform = parallel::load_platform("dgx-h100");
    auto key_of = [](const InputError& e) { return e.where() ? e.where()->key : std::string(); };
    SECTION("seq not divisible by 2 cp") {
        Settings s = llama8b(24, 1, 3);
        s.push_back({"model.seq", "4100"});
        try {
            parallel::make_experiment(platform, 24, s, "bad");
            FAIL("accepted");
        } catch (const InputError& e) {
            CHECK_THAT(e.what(), Catch::Contains("2 x cp = 6") && Catch::Contains("cp=3"));
            CHECK(key_of(e) == "parallel.cp");
        }
    }
    SECTION("GPUs not divisible by tp x pp x cp") {
        try {
            parallel::make_experiment(platform, 12, llama8b(12, 1, 8), "bad");
            FAIL("accepted");
        } catch (const InputError& e) {
            CHECK_THAT(e.what(), Catch::Contains("x cp 8") && Catch::Contains("12 GPUs"));
            CHECK(key_of(e) == "parallel.cp");
        }
    }
    SECTION("unfused attention") {
        Settings s = llama8b(8, 1, 2);
        s.push_back({"model.attention", "unfused"});
        CHECK_THROWS_WITH(parallel::make_experiment(platform, 8, s, "bad"),
                          Catch::Contains("model.attention: flash"));
    }
    SECTION("an unknown cp_comm_type") {
        Settings s = llama8b(8, 1, 2);
        s.push_back({"parallel.cp_comm_type", "a2a"});
        CHECK_THROWS_WITH(parallel::make_experiment(platform, 8, s, "bad"),
                          Catch::Contains("p2p") && Catch::Contains("all_gather"));
    }
    SECTION("layer_work refuses what the experiment would") {
        CHECK_THROWS_AS(layer_work(load_model("llama3-8B"), layer_cfg(1, false, 3), h100()),
                        InputError);
    }
}
