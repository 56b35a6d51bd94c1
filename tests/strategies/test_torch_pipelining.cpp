// torch.distributed.pipelining as torchtitan runs it (strategies/parallel/torch_pipelining.h):
// ScheduleInterleaved1F1B's order against Megatron's, and what each stage holds beside its
// layers' activations (its outputs to the step's end, a receive buffer per micro-batch, the input
// gradients left on them), checked in closed form on the first and the last pipeline rank.
#include "hardware/hardware_loader.h"
#include "strategies/models/model_spec.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/torch_pipelining.h"
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

/// A Llama-like model of `layers` layers on one DGX H100 node, bf16, FSDP2 over 2 ranks and a
/// 4-rank pipeline of 4 micro-batches (torchtitan's default: as many as pipeline ranks).
ExperimentSpec llama(int layers, Settings extra) {
    Settings s = test::llama_model_settings(layers);
    s.insert(s.end(), {{"model.tied_embeddings", "false"},
                       {"training.dtype", "bf16"},
                       {"training.optimizer", "adamw"},
                       {"training.compile", "true"},
                       {"training.global_batch", "8"},
                       {"training.micro_batch", "1"},
                       {"parallel.pp", "4"},
                       {"parallel.dp", "2"},
                       {"parallel.recompute", "full"}});
    for (auto& kv : extra)
        s.push_back(kv);
    return make_experiment(load_platform("dgx-h100"), 8, s, "torch-pipelining-test");
}

/// How many passes of `kind` come before position `i` of `order`.
int count(const std::vector<PipePass>& order, std::size_t i, PassKind kind) {
    int n = 0;
    for (std::size_t k = 0; k < i; ++k)
        n += order[k].kind == kind;
    return n;
}

/// Whether two orders run the same passes in the same order.
bool same(const std::vector<PipePass>& a, const std::vector<PipePass>& b) {
    return std::equal(
        a.begin(), a.end(), b.begin(), b.end(), [](const PipePass& x, const PipePass& y) {
            return x.kind == y.kind && x.micro_batch == y.micro_batch && x.chunk == y.chunk;
        });
}

} // namespace

TEST_CASE("torch pipelining: ScheduleInterleaved1F1B's order, Megatron's but where m == P",
          "[strategies][pipeline][torch_pipelining]") {
    for (int P : {2, 4, 8}) {
        for (int v : {2, 3}) {
            for (int m : {P, 2 * P, 3 * P}) {
                INFO("P " << P << ", v " << v << ", m " << m);
                const PipelineShape shape{P, m, v, false};
                const auto torch = torch_interleaved_order(shape);
                const auto megatron = pipeline_order(PipelineSchedule::interleaved_1f1b, shape);
                REQUIRE(torch.size() == std::size_t(P));
                for (int p = 0; p < P; ++p) {
                    INFO("rank " << p);
                    const auto& order = torch[std::size_t(p)];
                    REQUIRE(order.size() == std::size_t(2 * m * v));
                    // Warm-up: min((v - 1) P + 2 (P - 1 - p), m v) forwards before the first
                    // backward (_calculate_single_rank_operations, get_rank_warmup_ops).
                    std::size_t first_backward = 0;
                    while (order[first_backward].kind != PassKind::backward)
                        ++first_backward;
                    const int warmup = std::min((v - 1) * P + 2 * (P - 1 - p), m * v);
                    // The first backward follows the warm-up and one more forward, unless the
                    // warm-up ran every forward.
                    CHECK(count(order, first_backward, PassKind::forward) ==
                          std::min(warmup + 1, m * v));
                    // Micro-batches run in order on each chunk, a backward after its forward.
                    std::vector<int> fwd(std::size_t(v), 0), bwd(std::size_t(v), 0);
                    for (const PipePass& pass : order) {
                        auto& next = pass.kind == PassKind::forward ? fwd : bwd;
                        CHECK(pass.micro_batch == next[std::size_t(pass.chunk)]++);
                        if (pass.kind == PassKind::backward)
                            CHECK(pass.micro_batch < fwd[std::size_t(pass.chunk)]);
                    }
                    // Megatron's order is the same but where m == P, where it runs every
                    // forward first on every rank.
                    if (m != P)
                        CHECK(same(order, megatron[std::size_t(p)]));
                    else
                        CHECK(count(megatron[std::size_t(p)], std::size_t(m * v),
                                    PassKind::forward) == m * v);
                }
                // With m == P the last rank holds (v - 1) P + 1 chunk-passes' activations at
                // most, not all m v of them.
                if (m == P)
                    CHECK(max_in_flight(torch.back()) == (v - 1) * P + 1);
            }
        }
    }
}

TEST_CASE("torch pipelining: stages keep their outputs, a receive buffer per micro-batch and the "
          "input gradients left on them, to the step's end",
          "[strategies][pipeline][torch_pipelining][memory]") {
    const ExperimentSpec e = llama(8, {{"parallel.fsdp", "true"}});
    REQUIRE(torch_pipelining(e));
    const StepPlan plan = build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
    const int P = 4;
    const std::int64_t m = plan.shape.micro_batches;
    REQUIRE(m == 4);
    REQUIRE(plan.shape.virtual_stages == 1);
    // A stage sends [b, s, h] of bf16 (no tensor parallelism); the last stage's output is its
    // logits, [b s, V] in bf16.
    const std::int64_t x = std::int64_t{e.model.seq} * e.model.hidden * 2;
    const std::int64_t logits =
        std::int64_t{e.model.seq} * strategies::models::padded_vocab(e.model, 1) * 2;
    for (int vs = 0; vs + 1 < P; ++vs)
        REQUIRE(plan.stage(vs).send_bytes == x);

    // Rank 0 (the first stage, 1F1B: all m forwards before its first backward): its m outputs
    // and the m gradient receive buffers beside its layers' activations.
    const VirtualStagePlan& first = plan.stage(0);
    const TorchStageBuffers b0 = torch_stage_buffers(plan, 0);
    CHECK(b0.held == m * x);
    CHECK(b0.per_forward == x);
    CHECK(b0.per_backward == 0);
    CHECK(peak_activation_bytes(plan, 0) ==
          m * first.activation_bytes + first.transient_bytes + 2 * m * x);

    // The last rank (one forward and one backward in turn): m receive buffers (the current
    // one counted in its first layer's activations, m - 1 beside them), and at its last
    // backward the m logits and the m - 1 earlier input gradients.
    const VirtualStagePlan& last = plan.stage(P - 1);
    const TorchStageBuffers bl = torch_stage_buffers(plan, P - 1);
    CHECK(bl.held == m * x);
    CHECK(bl.per_forward == logits - x);
    CHECK(bl.per_backward == 2 * x);
    CHECK(peak_activation_bytes(plan, P - 1) ==
          last.activation_bytes + last.transient_bytes + m * logits + 2 * (m - 1) * x);

    // The logits are held, not freed and cached: reserved is allocated plus the slack alone.
    const StepResult r = simulate_step(e);
    const auto& ml = r.memory.back();
    CHECK(ml.reserved_bytes - ml.peak_bytes ==
          detail::allocator_slack_bytes(plan.allocator_fragmentation,
                                        ml.activations_bytes + ml.gathered_bytes,
                                        ml.gathered_bytes > 0));

    // Megatron's pipeline (ZeRO-1, its own schedules) holds none of these.
    const ExperimentSpec z1 = llama(8, {{"parallel.zero", "1"}});
    REQUIRE_FALSE(torch_pipelining(z1));
    const StepPlan zp = build_step_plan(z1, std::make_shared<hardware::Topology>(z1.cluster));
    const TorchStageBuffers none = torch_stage_buffers(zp, 0);
    CHECK(none.held == 0);
    CHECK(none.per_forward == 0);
    CHECK(none.per_backward == 0);
    CHECK(peak_activation_bytes(zp, 0) ==
          m * zp.stage(0).activation_bytes + zp.stage(0).transient_bytes);
}

TEST_CASE("torch pipelining: a compiled loss's saved logits are the last stage's kept output, "
          "counted once",
          "[strategies][pipeline][torch_pipelining][memory]") {
    // The compiled cross-entropy saves the 16-bit logits for its backward (the head's
    // activations) and output_chunks keeps the same tensor to the step's end: in flight it is
    // one tensor, and after its backward output_chunks still holds it.
    const ExperimentSpec e =
        llama(8, {{"parallel.fsdp", "true"}, {"training.cross_entropy", "compiled"}});
    const StepPlan plan = build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
    const int P = 4;
    const std::int64_t m = plan.shape.micro_batches;
    REQUIRE(m == 4);
    const std::int64_t x = std::int64_t{e.model.seq} * e.model.hidden * 2;
    const std::int64_t logits =
        std::int64_t{e.model.seq} * strategies::models::padded_vocab(e.model, 1) * 2;
    const VirtualStagePlan& last = plan.stage(P - 1);
    const TorchStageBuffers bl = torch_stage_buffers(plan, P - 1);
    CHECK(bl.held == m * x);
    CHECK(bl.per_forward == -x);
    CHECK(bl.per_backward == 2 * x + logits);
    // One forward and one backward in turn: at the last backward the in-flight micro-batch's
    // activations (its logits among them), the m - 1 earlier logits and the m - 1 earlier
    // input gradients beside the m receive buffers; at the step's end the m logits.
    const std::int64_t at_last_backward =
        last.activation_bytes + last.transient_bytes + (m - 1) * logits + 2 * (m - 1) * x;
    REQUIRE(at_last_backward >= 2 * m * x + m * logits);
    CHECK(peak_activation_bytes(plan, P - 1) == at_last_backward);
    // The other stages are as under an eager loss.
    const ExperimentSpec eager =
        llama(8, {{"parallel.fsdp", "true"}, {"training.cross_entropy", "eager"}});
    const StepPlan ep = build_step_plan(eager, std::make_shared<hardware::Topology>(eager.cluster));
    for (int vs = 0; vs + 1 < P; ++vs) {
        const TorchStageBuffers a = torch_stage_buffers(ep, vs);
        const TorchStageBuffers b = torch_stage_buffers(plan, vs);
        CHECK(a.held == b.held);
        CHECK(a.per_forward == b.per_forward);
        CHECK(a.per_backward == b.per_backward);
    }
}

TEST_CASE("torch pipelining with FSDP2: the gradients reduce-scattered after the chunk's last "
          "backward, accumulated in every backward",
          "[strategies][pipeline][torch_pipelining][fsdp2]") {
    // run_post_backward calls each group's post_backward once the last backward has returned:
    // every bucket is ready at the pass's end, none during it.
    ExperimentSpec e = llama(8, {{"parallel.fsdp", "true"}});
    const StepPlan plan = build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
    for (int vs = 0; vs < 4; ++vs) {
        INFO("stage " << vs);
        const VirtualStagePlan& st = plan.stage(vs);
        REQUIRE(st.buckets.size() >= 2);
        for (const GradBucket& b : st.buckets)
            CHECK(b.ready == st.backward.time);
    }
    // FSDP2 adds each backward's gradients into unsharded_accumulated_grad whatever the
    // framework's fusion: the same backward under fused and unfused accumulation.
    REQUIRE(e.framework.grad_accumulation == GradAccumulation::fused);
    ExperimentSpec unfused = e;
    unfused.framework.grad_accumulation = GradAccumulation::unfused;
    const StepPlan up =
        build_step_plan(unfused, std::make_shared<hardware::Topology>(unfused.cluster));
    for (int vs = 0; vs < 4; ++vs)
        CHECK(up.stage(vs).backward.time == plan.stage(vs).backward.time);
    // Without a pipeline the fused preset accumulates nothing apart.
    ExperimentSpec flat =
        llama(8, {{"parallel.fsdp", "true"}, {"parallel.pp", "1"}, {"parallel.dp", "8"}});
    ExperimentSpec flat_unfused = flat;
    flat_unfused.framework.grad_accumulation = GradAccumulation::unfused;
    const StepPlan fp = build_step_plan(flat, std::make_shared<hardware::Topology>(flat.cluster));
    const StepPlan fu =
        build_step_plan(flat_unfused, std::make_shared<hardware::Topology>(flat_unfused.cluster));
    CHECK(fu.stage(0).backward.time > fp.stage(0).backward.time);
}
