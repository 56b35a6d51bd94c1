// torchtitan's PyTorch mechanisms in the step model (strategies/parallel/param_gathers.cpp,
// pass_clock.cpp, strategies/models/layer_work_*.cpp): FSDP2's copies on the compute stream (the
// gathered buffer split into the parameters, the gradients copied into the reduce-scatter buffer in
// the reduce dtype), async TP as PyTorch's symmetric memory runs it (the local shard copied into
// the symmetric buffer before an all-gather's first GEMM chunk, the partial sums of a
// reduce-scatter added after the last) and DTensor's tensor-parallel backward (no re-gather, the
// input gradient's reduce-scatter after the weight gradient). FSDP2's copies are checked per layer
// against their closed form, async TP's against its bound: the difference between a 4-layer and
// a 2-layer model, whose other costs (embedding, head, the first gather) cancel.
#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/dtype.h"
#include "hardware/hardware_loader.h"
#include "strategies/collectives/communicator.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include "support/llama_settings.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// A Llama-like model of `layers` layers on one DGX H100 node, bf16, one micro-batch.
ExperimentSpec llama(int layers, Settings extra) {
    Settings s = test::llama_model_settings(layers);
    s.insert(s.end(), {{"training.dtype", "bf16"},
                       {"training.optimizer", "adamw"},
                       {"training.compile", "true"}});
    for (auto& kv : extra)
        s.push_back(kv);
    return make_experiment(load_platform("dgx-h100"), 8, s, "fsdp2-async-tp-test");
}

const VirtualStagePlan& stage(const ExperimentSpec& e) {
    static thread_local StepPlan plan;
    plan = build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
    REQUIRE(plan.stages.size() == 1);
    return plan.stages.front();
}

/// Pipeline rank 0's first chunk, as a copy.
VirtualStagePlan stage_of(const ExperimentSpec& e) {
    const StepPlan plan = build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
    REQUIRE_FALSE(plan.stages.empty());
    return plan.stages.front();
}

/// A pass component of the 4-layer model less the 2-layer one's, per layer (seconds).
template <typename Get>
double per_layer(const Settings& s, Get get) {
    const double four = get(stage(llama(4, s)));
    const double two = get(stage(llama(2, s)));
    return (four - two) / 2;
}

} // namespace

TEST_CASE("FSDP2: its copy-out before each layer and its copy-in after each backward, on the "
          "compute stream",
          "[strategies][training][zero][fsdp2]") {
    const Settings fsdp2{{"training.global_batch", "8"},
                         {"training.micro_batch", "1"},
                         {"parallel.dp", "8"},
                         {"parallel.fsdp", "true"}};
    Settings zero3 = fsdp2;
    zero3.back() = {"parallel.zero", "3"};
    const auto e = llama(4, fsdp2);
    REQUIRE(e.parallel.fsdp2);
    REQUIRE_FALSE(llama(4, zero3).parallel.fsdp2);
    const VirtualStagePlan& st = stage(e);
    const std::int64_t params = st.layer_parameters / st.layers;
    const hardware::ComputeModel cm(e.cluster);
    const double eff = e.framework.memory_efficiency;
    const std::int64_t grad_bytes = e.framework.fp32_grad_reduce ? 4 : 2;
    // Copy-out: the gathered bf16 parameters read and written. Copy-in: the bf16 gradients read,
    // the reduce dtype's written.
    const double copy_out = cm.memory_bound_seconds(2 * 2 * params) / eff;
    const double copy_in = cm.memory_bound_seconds((2 + grad_bytes) * params) / eff;
    REQUIRE(copy_out > 0);
    auto forward_wait = [](const VirtualStagePlan& s) { return s.forward.dp_wait.seconds(); };
    auto backward_wait = [](const VirtualStagePlan& s) { return s.backward.dp_wait.seconds(); };
    auto forward = [](const VirtualStagePlan& s) { return s.forward.compute.seconds(); };
    auto backward = [](const VirtualStagePlan& s) { return s.backward.compute.seconds(); };
    // The gathers themselves are hidden behind a layer's compute on NVLink: neither DeepSpeed's
    // ZeRO-3 (no copies) nor FSDP2 waits for them. FSDP2's copies are memory-bound kernels on
    // the compute stream: compute, per layer exactly their closed form more than ZeRO-3's.
    for (const Settings* s : std::vector<const Settings*>{&zero3, &fsdp2}) {
        CHECK(per_layer(*s, forward_wait) == Approx(0).margin(1e-9));
        CHECK(per_layer(*s, backward_wait) == Approx(0).margin(1e-9));
    }
    CHECK(per_layer(fsdp2, forward) - per_layer(zero3, forward) == Approx(copy_out).epsilon(1e-6));
    CHECK(per_layer(fsdp2, backward) - per_layer(zero3, backward) ==
          Approx(copy_out + copy_in).epsilon(1e-6));
}

TEST_CASE("FSDP2 under a pipeline: parameters gathered on a chunk's first forward only, no "
          "per-micro-batch gather or copy",
          "[strategies][training][zero][fsdp2][pp]") {
    // torchtitan keeps the parameters unsharded through the step when pipelining
    // (reshard_after_forward = False) and reduce-scatters on the last backward only; every
    // backward adds its gradients into the fp32 unsharded_accumulated_grad, as Megatron-LM's
    // unfused accumulation adds into its fp32 main gradients.
    const Settings fsdp2{{"training.global_batch", "8"},
                         {"training.micro_batch", "1"},
                         {"parallel.pp", "2"},
                         {"parallel.dp", "4"},
                         {"parallel.fsdp", "true"}};
    Settings zero1 = fsdp2;
    zero1.back() = {"parallel.zero", "1"};
    Settings zero3 = fsdp2;
    zero3.back() = {"parallel.zero", "3"};
    const VirtualStagePlan with_fsdp2 = stage_of(llama(4, fsdp2));
    const VirtualStagePlan with_zero1 = stage_of(llama(4, zero1));
    const VirtualStagePlan with_zero3 = stage_of(llama(4, zero3));
    ExperimentSpec unfused = llama(4, zero1);
    REQUIRE(unfused.framework.grad_accumulation == GradAccumulation::fused);
    unfused.framework.grad_accumulation = GradAccumulation::unfused;
    const VirtualStagePlan with_zero1_unfused = stage_of(unfused);
    // Every micro-batch but a chunk's first runs as without any gather; the first pays the
    // gathers' copy-out at least (one per layer); the backward accumulates as unfused.
    CHECK(with_fsdp2.forward.time == with_zero1.forward.time);
    CHECK(with_fsdp2.backward.time == with_zero1_unfused.backward.time);
    CHECK(with_fsdp2.backward.time > with_zero1.backward.time);
    CHECK(with_fsdp2.first_forward.time > with_fsdp2.forward.time);
    // DeepSpeed's ZeRO-3 gathers again in every pass.
    CHECK(with_zero3.forward.time == with_zero3.first_forward.time);
    CHECK(with_zero3.backward.time >= with_zero1.backward.time);
}

TEST_CASE("ZeRO-3 memory: FSDP2 under a pipeline holds its chunks gathered and their unsharded "
          "gradients in the reduce dtype, gathered per pass the two largest units",
          "[strategies][training][zero][fsdp2][pp][memory]") {
    Settings fsdp2_pp{{"training.global_batch", "8"},
                      {"training.micro_batch", "1"},
                      {"parallel.pp", "2"},
                      {"parallel.dp", "4"},
                      {"parallel.fsdp", "true"}};
    Settings zero3_pp = fsdp2_pp;
    zero3_pp.back() = {"parallel.zero", "3"};
    Settings zero1_pp = fsdp2_pp;
    zero1_pp.back() = {"parallel.zero", "1"};
    const Settings fsdp2{{"training.global_batch", "8"},
                         {"training.micro_batch", "1"},
                         {"parallel.dp", "8"},
                         {"parallel.fsdp", "true"}};
    const auto e = llama(4, fsdp2_pp);
    // The reduce dtype's bytes: torchtitan's float32 (the preset's fp32 gradient reduction).
    const std::int64_t g = e.framework.fp32_grad_reduce ? 4 : 2;
    const auto topo = std::make_shared<hardware::Topology>(e.cluster);
    const StepPlan plan = build_step_plan(e, topo);
    const StepResult r = simulate_step(e);
    REQUIRE(r.memory.size() == 2);
    for (int p = 0; p < 2; ++p) {
        INFO("pipeline rank " << p);
        const auto& m = r.memory[static_cast<std::size_t>(p)];
        // One chunk per rank (1F1B): its bf16 parameters from its first forward and its fp32
        // unsharded gradients from its first backward, both held at once until its last.
        const std::int64_t params = plan.ranks[static_cast<std::size_t>(p)].parameters;
        CHECK(m.gathered_bytes == (2 + g) * params);
        CHECK(peak_gathered_bytes(plan, p) == m.gathered_bytes);
        CHECK(m.peak_bytes == m.weights_bytes + m.grads_bytes + m.optimizer_bytes +
                                  m.activations_bytes + m.gathered_bytes);
    }
    // Interleaved (2 chunks per rank): at least one chunk's, at most both chunks' worth.
    Settings interleaved = fsdp2_pp;
    interleaved.push_back({"parallel.schedule", "interleaved-1f1b"});
    interleaved.push_back({"parallel.virtual_stages", "2"});
    const auto ei = llama(8, interleaved);
    const StepPlan iplan = build_step_plan(ei, std::make_shared<hardware::Topology>(ei.cluster));
    REQUIRE(iplan.shape.virtual_stages == 2);
    for (int p = 0; p < 2; ++p) {
        INFO("interleaved, pipeline rank " << p);
        std::int64_t largest = 0;
        for (int c = 0; c < 2; ++c)
            largest = std::max(largest, iplan.stage(virtual_stage(c, p, iplan.shape)).parameters);
        const std::int64_t held = peak_gathered_bytes(iplan, p);
        CHECK(held >= (2 + g) * largest);
        CHECK(held <= (2 + g) * iplan.ranks[static_cast<std::size_t>(p)].parameters);
    }

    // Gathered per pass, DeepSpeed's ZeRO-3 (here with a pipeline): two units' bf16
    // parameters (here two layers: each is larger than the embedding or the head), and in the
    // backward one layer's bf16 gradients and its reduce-scatter input in the reduce dtype.
    {
        const auto x = llama(4, zero3_pp);
        const StepPlan xp = build_step_plan(x, std::make_shared<hardware::Topology>(x.cluster));
        const VirtualStagePlan& st = xp.stage(0);
        const std::int64_t layer = st.layer_parameters / st.layers;
        REQUIRE(layer > x.model.vocab * std::int64_t{x.model.hidden});
        CHECK(st.forward_gather_bytes == 2 * 2 * layer);
        CHECK(st.backward_gather_bytes == 2 * 2 * layer + (2 + g) * layer);
        CHECK(peak_gathered_bytes(xp, 0) == st.backward_gather_bytes);
        CHECK(st.step_gathered_bytes == 0);
    }
    // FSDP2 without a pipeline, as torchtitan wraps it: a unit per layer and the root unit
    // (embedding, final norm, output layer), which FSDP2 never reshards after forward
    // (FSDPState._lazy_init): the root's bf16 parameters beside the two layers' all through,
    // and in the backward the output layer's bf16 gradient, held from the backward's start
    // until the root's post-backward at its end, beside one layer's gradients and its
    // reduce-scatter input.
    {
        Settings untied = fsdp2; // as Llama 3 is
        untied.push_back({"model.tied_embeddings", "false"});
        const auto x = llama(4, untied);
        const StepPlan xp = build_step_plan(x, std::make_shared<hardware::Topology>(x.cluster));
        const VirtualStagePlan& st = xp.stage(0);
        const auto pc = strategies::models::parameter_counts(x.model);
        REQUIRE(pc.head > 0);
        const std::int64_t head = pc.head + pc.final_norm;
        const std::int64_t root = pc.embedding + head;
        REQUIRE(st.parameters == root + st.layer_parameters);
        const std::int64_t layer = st.layer_parameters / st.layers;
        CHECK(st.forward_gather_bytes == 2 * (root + 2 * layer));
        CHECK(st.backward_gather_bytes == 2 * (root + 2 * layer) + 2 * head + (2 + g) * layer);
        CHECK(peak_gathered_bytes(xp, 0) == st.backward_gather_bytes);
        CHECK(st.step_gathered_bytes == 0);
        // The root is gathered once, in the forward, and the last block stays gathered from
        // its forward into the backward (torchtitan's apply_fsdp: reshard_after_forward false
        // for it): the backward gathers 3 of the 4 layers, the forward all 4 and the root.
        // With a fifth layer the backward gathers one layer more, a third of what it gathered
        // (the same closed form per layer).
        CHECK(st.backward.param_gather > sim::Time::zero());
        CHECK(st.forward.param_gather > st.backward.param_gather);
        {
            const auto x5 = llama(5, untied);
            const StepPlan p5 =
                build_step_plan(x5, std::make_shared<hardware::Topology>(x5.cluster));
            const double one_layer =
                p5.stage(0).backward.param_gather.seconds() - st.backward.param_gather.seconds();
            CHECK(one_layer == Approx(st.backward.param_gather.seconds() / 3).epsilon(1e-6));
            CHECK(p5.stage(0).forward.param_gather.seconds() - st.forward.param_gather.seconds() ==
                  Approx(one_layer).epsilon(1e-6));
        }
        // DeepSpeed's ZeRO-3 (same model, no pipeline) gathers every unit in both passes.
        Settings ds = untied;
        ds[ds.size() - 2] = {"parallel.zero", "3"};
        const auto y = llama(4, ds);
        const StepPlan yp = build_step_plan(y, std::make_shared<hardware::Topology>(y.cluster));
        const VirtualStagePlan& dst = yp.stage(0);
        CHECK(dst.backward.param_gather.seconds() ==
              Approx(dst.forward.param_gather.seconds()).epsilon(1e-9));
        CHECK(dst.backward.param_gather > st.backward.param_gather);
    }
    // Nothing gathered without ZeRO-3.
    const auto z1 = llama(4, zero1_pp);
    const StepPlan z1p = build_step_plan(z1, std::make_shared<hardware::Topology>(z1.cluster));
    CHECK(peak_gathered_bytes(z1p, 0) == 0);
    CHECK(peak_gathered_bytes(z1p, 1) == 0);
}

TEST_CASE("FSDP2's root unit: its gradients reduce-scattered together after the whole backward, "
          "exposed before the optimizer",
          "[strategies][training][zero][fsdp2]") {
    // torchtitan's wrapping without a pipeline: the root unit (embedding, final norm, output
    // layer) has no post-backward hook of its own; FSDP2's final callback reduce-scatters its
    // gradients after the backward and makes the compute stream wait for it (FSDPState.
    // _root_post_backward_final_callback). On one DGX H100 node, dp 8, the blocks' own
    // reduce-scatters run beside the backward (the first block's past its end): what stands
    // between them and the optimizer is the root's reduce-scatter, in the reduce dtype, alone.
    const Settings fsdp2{{"training.global_batch", "8"},
                         {"training.micro_batch", "1"},
                         {"parallel.dp", "8"},
                         {"parallel.fsdp", "true"},
                         {"parallel.overlap_grad_reduce", "true"},
                         {"model.tied_embeddings", "false"}};
    const auto e = llama(4, fsdp2);
    const auto topo = std::make_shared<hardware::Topology>(e.cluster);
    const StepPlan plan = build_step_plan(e, topo);
    const VirtualStagePlan& st = plan.stage(0);
    const auto pc = strategies::models::parameter_counts(e.model);
    const std::int64_t root = pc.embedding + pc.head + pc.final_norm;
    const std::int64_t g = e.framework.fp32_grad_reduce ? 4 : 2;
    // One bucket per block (each over the 25 MiB bucket size), then the root's, last, whole,
    // ready when the pass ends; every gradient reduced once.
    REQUIRE(st.buckets.size() == static_cast<std::size_t>(st.layers) + 1);
    CHECK(st.buckets.back().bytes == root * g);
    CHECK(st.buckets.back().ready == st.backward.time);
    std::int64_t reduced = 0;
    for (const GradBucket& b : st.buckets)
        reduced += b.bytes;
    CHECK(reduced == st.parameters * g);
    const DpCollective& last = plan.ranks.front().dp.back();
    REQUIRE(last.role == DpRole::grad_reduce_scatter);
    REQUIRE(last.bucket);
    CHECK(*last.bucket == st.layers);
    CHECK(last.collective.bytes == root * g);
    // Its time, from the communicator's closed form (NCCL's choice on 8 NVSwitch GPUs).
    const auto comm = strategies::collectives::Communicator::first(*topo, 8);
    strategies::collectives::Collective rs;
    rs.op = strategies::collectives::Op::reduce_scatter;
    rs.dtype = g == 4 ? hardware::Dtype::fp32 : hardware::Dtype::bf16;
    rs.bytes = root * g;
    const double root_rs = comm.predict(rs).seconds();
    CHECK(last.time.seconds() == Approx(root_rs).epsilon(1e-3));
    REQUIRE(root_rs > 1e-4);

    // Executed, in both fidelities: the root's reduce-scatter starts when the blocks' last
    // ends and the optimizer when it ends (on the flow network, where it runs alone: within 5%
    // of the closed form).
    for (const Fidelity f : {Fidelity::analytic, Fidelity::flow}) {
        INFO((f == Fidelity::analytic ? "analytic" : "flow"));
        StepOptions o;
        o.fidelity = f;
        o.timeline = true;
        const StepResult r = simulate_step(e, o);
        sim::Time backward_end, optimizer_start, root_start, root_end, blocks_end;
        int dp_bars = 0;
        for (const TimelineBar& b : r.bars) {
            if (b.rank != 0)
                continue;
            if (b.kind == "backward")
                backward_end = std::max(backward_end, b.end);
            if (b.kind == "optimizer")
                optimizer_start = b.start;
        }
        for (const TimelineBar& b : r.bars) {
            if (b.rank != 0 || b.stream != TimelineStream::dp || b.kind != "dp-comm" ||
                b.label.starts_with("param"))
                continue;
            ++dp_bars;
            if (b.end > root_end) {
                blocks_end = std::max(blocks_end, root_end);
                root_start = b.start;
                root_end = b.end;
            } else {
                blocks_end = std::max(blocks_end, b.end);
            }
        }
        REQUIRE(dp_bars == st.layers + 1);
        // Behind the first block's reduce-scatter (issued after its backward, so ending past
        // the pass's end), then alone until the optimizer.
        REQUIRE(blocks_end > backward_end);
        CHECK(root_start.seconds() == Approx(blocks_end.seconds()).epsilon(1e-9));
        CHECK(optimizer_start.seconds() == Approx(root_end.seconds()).epsilon(1e-9));
        const double exposed = (optimizer_start - blocks_end).seconds();
        if (f == Fidelity::analytic)
            CHECK(exposed == Approx(root_rs).epsilon(1e-3));
        else
            CHECK(exposed == Approx(root_rs).epsilon(0.05));
    }
}

TEST_CASE("Async TP as PyTorch's symmetric memory: a copy before each fused all-gather, a "
          "reduction after each fused reduce-scatter, no SMs taken",
          "[strategies][training][tp_overlap][async_tp]") {
    const Settings base{{"training.global_batch", "1"},
                        {"training.micro_batch", "1"},
                        {"parallel.tp", "8"},
                        {"parallel.sequence_parallel", "true"}};
    Settings async_tp = base;
    async_tp.emplace_back("parallel.enable_async_tensor_parallel", "true");
    Settings te = base;
    te.emplace_back("parallel.tp_comm_overlap", "true");
    const auto e = llama(4, async_tp);
    REQUIRE(e.parallel.async_tp);
    REQUIRE(e.parallel.tp_comm_overlap);
    const hardware::ComputeModel cm(e.cluster);
    const double eff = e.framework.memory_efficiency;
    // Every sequence-parallel collective carries the micro-batch's whole activation, s x h bf16.
    const std::int64_t bytes = std::int64_t{4096} * 4096 * 2;
    const double mv = cm.memory_bound_seconds(2 * bytes / 8) / eff;
    const double reduce = cm.memory_bound_seconds(bytes + bytes / 8) / eff;
    auto forward_tp = [](const VirtualStagePlan& s) { return s.forward.tp_wait.seconds(); };
    auto forward_compute = [](const VirtualStagePlan& s) { return s.forward.compute.seconds(); };
    // A layer's forward: two fused all-gathers (before qkv and fc1) and two fused
    // reduce-scatters (after proj and fc2). The copy and the reduction run on the compute stream
    // and are never hidden; the copy-engine steps add what the GEMM chunks do not hide (qkv's
    // and proj's narrow GEMMs here cannot).
    CHECK(per_layer(async_tp, forward_tp) >= (2 * mv + 2 * reduce) * (1 - 1e-9));
    // And it hides some of what no overlap exposes: at most the exposed collectives plus the
    // copies and reductions, and less than that (the GEMM chunks hide part of the steps).
    const double exposed = per_layer(base, forward_tp);
    CHECK(per_layer(async_tp, forward_tp) < exposed + 2 * mv + 2 * reduce);
    // Transformer Engine's pipelined reduce-scatter runs on SMs taken from the GEMM (counted
    // with the TP waits); the copy engines take none, so the GEMMs are those of no overlap.
    CHECK(per_layer(async_tp, forward_compute) ==
          Approx(per_layer(base, forward_compute)).epsilon(1e-9));
    CHECK(per_layer(async_tp, forward_tp) != Approx(per_layer(te, forward_tp)).epsilon(1e-3));
}

TEST_CASE("DTensor tensor parallelism: no re-gather, the input gradient reduce-scattered after "
          "the weight gradient",
          "[strategies][training][tp][dtensor]") {
    const auto m = strategies::models::load_model("llama3-8B");
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    strategies::models::LayerConfig cfg;
    cfg.tp = 8;
    cfg.sequence_parallel = true;
    const auto megatron = strategies::models::layer_work(m, cfg, cm);
    cfg.dtensor_tp = true;
    const auto dtensor = strategies::models::layer_work(m, cfg, cm);
    using strategies::models::Pass;
    using strategies::models::TpOp;
    auto backward_rs = [](const strategies::models::LayerWork& w) {
        std::vector<strategies::models::TpCollective> out;
        for (const auto& c : w.collectives)
            if (c.pass == Pass::backward && c.op == TpOp::reduce_scatter)
                out.push_back(c);
        return out;
    };
    auto regathers = [](const strategies::models::LayerWork& w) {
        int n = 0;
        for (const auto& c : w.collectives)
            n += c.regather ? 1 : 0;
        return n;
    };
    CHECK(regathers(megatron) == 2); // qkv's and fc1's input
    CHECK(regathers(dtensor) == 0);
    const auto rs_megatron = backward_rs(megatron);
    const auto rs_dtensor = backward_rs(dtensor);
    REQUIRE(rs_megatron.size() == 2);
    REQUIRE(rs_dtensor.size() == 2);
    const auto& ops_m = megatron.backward.ops;
    const auto& ops_d = dtensor.backward.ops;
    for (std::size_t k = 0; k < 2; ++k) {
        // Megatron issues it after the data gradient, beside the weight gradient; DTensor after
        // the weight gradient, and the next kernel waits for it.
        CHECK(ops_m[static_cast<std::size_t>(rs_megatron[k].after)].name.ends_with("dgrad"));
        const auto& after = ops_d[static_cast<std::size_t>(rs_dtensor[k].after)];
        CHECK(after.name.ends_with("wgrad"));
        CHECK(rs_dtensor[k].needed_by == rs_dtensor[k].after + 1);
    }
    // Memory: autograd keeps the gathered input of qkv and of fc1 (w1 and w3 share it) for the
    // weight gradients, where Megatron keeps the sequence shard and re-gathers it:
    // 2 x (T h - T h / t) bf16 elements more per layer; under full recompute the layer keeps
    // its input only and the difference moves to what its backward recomputes.
    const std::int64_t T = std::int64_t{m.seq} * cfg.micro_batch;
    const std::int64_t more =
        2 * (T * m.hidden - T * m.hidden / cfg.tp) * hardware::bytes_per_element(cfg.dtype);
    CHECK(dtensor.activation_bytes - megatron.activation_bytes == more);
    cfg.recompute = strategies::models::Recompute::full;
    const auto dtensor_full = strategies::models::layer_work(m, cfg, cm);
    cfg.dtensor_tp = false;
    const auto megatron_full = strategies::models::layer_work(m, cfg, cm);
    CHECK(dtensor_full.activation_bytes == megatron_full.activation_bytes);
    CHECK(dtensor_full.recomputed_activation_bytes - megatron_full.recomputed_activation_bytes ==
          more);
    // The preset of torchtitan's cluster runs it; a value that is neither is refused by key.
    CHECK(load_platform("grand-teton-h100").framework.dtensor_tp);
    CHECK_FALSE(load_platform("dgx-h100").framework.dtensor_tp);
    try {
        parse_platform_yaml("extends: dgx-h100\nframework: {tensor_parallel: deepspeed}\n",
                            "layer.yaml");
        FAIL("accepted tensor_parallel: deepspeed");
    } catch (const InputError& err) {
        CHECK_THAT(std::string(err.what()),
                   Catch::Contains("tensor_parallel") && Catch::Contains("layer.yaml"));
    }
}
