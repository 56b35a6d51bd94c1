#include "strategies/parallel/param_gathers.h"

#include "strategies/parallel/precision.h"

#include <algorithm>
#include <vector>

namespace clustersim::strategies::parallel::detail {

std::int64_t float8_gathered_weights(const models::ModelSpec& m, int tp, bool moe_layer) {
    if (!m.is_transformer())
        return 0;
    const std::int64_t h = m.hidden;
    const std::int64_t t = std::max(1, tp);
    // Attention: wq, wk, wv (or latent attention's projections, its down projections
    // replicated) and wo.
    std::int64_t attention = 0;
    if (m.is_mla()) {
        const std::int64_t q_in = m.q_lora_rank > 0 ? m.q_lora_rank : h;
        const std::int64_t a = m.heads;
        attention = h * m.q_lora_rank + h * (std::int64_t{m.kv_lora_rank} + m.qk_pos_emb_head_dim) +
                    (q_in * a * m.mla_qk_dim() +
                     std::int64_t{m.kv_lora_rank} * a * (m.qk_head_dim + m.v_head_dim) +
                     a * m.v_head_dim * h) /
                        t;
    } else {
        attention = (h * m.qkv_out() + m.q_dim() * h) / t;
    }
    if (!moe_layer)
        return attention + (h * m.fc1_out() + std::int64_t{m.ffn} * h) / t;
    // A layer with experts: the shared experts' linears; not the routed experts, nor the
    // router's gate, which torchtitan's mixture-of-experts configs filter out.
    const std::int64_t shared =
        m.moe_shared_expert_intermediate_size > 0
            ? h * m.shared_fc1_out() + std::int64_t{m.moe_shared_expert_intermediate_size} * h
            : 0;
    return attention + shared / t;
}

std::int64_t gathered_bytes(const ExperimentSpec& e, std::int64_t params,
                            std::int64_t float8_params) {
    const std::int64_t elt = hardware::bytes_per_element(comm_dtype(e.training.dtype));
    const std::int64_t fp8 =
        e.training.fp8_fsdp_all_gather ? std::clamp<std::int64_t>(float8_params, 0, params) : 0;
    return params * elt - fp8 * (elt - 1);
}

Gather parameter_gather(PlanContext& ctx, std::int64_t params, std::int64_t expert_params,
                        std::int64_t float8_params) {
    collectives::Collective c;
    c.op = collectives::Op::all_gather;
    c.dtype = comm_dtype(ctx.e.training.dtype);
    const std::int64_t elt = hardware::bytes_per_element(c.dtype);
    if (params <= 0)
        return {};
    // The routed experts' share over their own group, where the context has one (experts
    // laid out apart, more than one rank to gather from); a group of one gathers nothing.
    const bool apart = experts_sharded_apart(ctx.e.parallel, ctx.e.model);
    const std::int64_t experts = apart ? std::clamp<std::int64_t>(expert_params, 0, params) : 0;
    // torchao's FSDP float8 all-gather: the Float8Linear weights travel as FP8 (fsdp_pre_
    // all_gather casts the shard, torchao/float8/fsdp_utils.py at pytorch/ao@eab345c), one byte
    // each, in the same flat all-gather as the rest (FSDP2's foreach_all_gather). Counted as
    // those bytes of the collective's 16-bit type (rounded up to whole elements).
    const std::int64_t dense_bytes = gathered_bytes(ctx.e, params - experts, float8_params);
    c.bytes = (dense_bytes + elt - 1) / elt * elt;
    Gather g{ctx.dp_times.time(c).seconds(), ctx.dp_times.load(c)};
    if (experts > 0) {
        collectives::Collective x = c;
        x.bytes = experts * elt;
        const double seconds = ctx.edp_times.time(x).seconds();
        const CommLoad load = ctx.edp_times.load(x);
        // One stream, one after the other: the pair's load averaged over its time.
        const double total = g.seconds + seconds;
        if (total > 0) {
            g.load.sm_share = (g.load.sm_share * g.seconds + load.sm_share * seconds) / total;
            g.load.hbm_share = (g.load.hbm_share * g.seconds + load.hbm_share * seconds) / total;
        }
        g.seconds = total;
    }
    if (ctx.e.parallel.fsdp2)
        fsdp2_copies(ctx, params, dense_bytes + experts * elt, g);
    return g;
}

void fsdp2_copies(const PlanContext& ctx, std::int64_t params, std::int64_t bytes, Gather& g) {
    // FSDP2 (torch/distributed/_composable/fsdp/_fsdp_collectives.py, PyTorch 2.5-2.6,
    // torchtitan's at its December 2024 benchmark): foreach_all_gather_copy_out waits for the
    // all-gather on the current stream and splits the flat output into the parameters there
    // (split_with_sizes_copy: the gathered bytes read and written); foreach_reduce copies the
    // unsharded gradients into the reduce-scatter input in its reduce dtype (torchtitan's
    // mixed_precision_reduce, float32) and the current stream waits for that copy-in before it
    // frees them.
    const auto dtype = comm_dtype(ctx.e.training.dtype);
    g.copy_out = ctx.env.copy_seconds(2 * bytes);
    g.copy_in =
        ctx.env.copy_seconds(params * (hardware::bytes_per_element(dtype) +
                                       hardware::bytes_per_element(grad_reduce_dtype(ctx.e))));
}

bool fsdp2_root_unit(const PlanContext& ctx) {
    // FSDP2's root unit as torchtitan wraps it without a pipeline (the embedding, the final
    // norm and the output layer, under fully_shard(model); memory_accounting.h has the
    // sources): one all-gather in the root's pre-forward, before the embedding runs, and none
    // in the backward, the root never being resharded after forward.
    return ctx.zero3 && ctx.e.parallel.fsdp2 && ctx.e.parallel.pp == 1;
}

bool fsdp2_last_block_kept(const PlanContext& ctx) {
    // torchtitan does not reshard the last transformer block after its forward without a
    // pipeline (apply_fsdp: reshard_after_forward = int(layer_id) < len(model.layers) - 1,
    // "the last transformer block's parameters will be all-gathered again at the start of
    // backward anyway", torchtitan/parallelisms/parallelize_llama.py at 9dec370): the
    // backward's first block gathers nothing; its gradients are still copied in for the
    // reduce-scatter. DeepSpeed's ZeRO-3 re-gathers it.
    return fsdp2_root_unit(ctx);
}

bool fsdp2_gathered_per_step(const PlanContext& ctx) {
    // FSDP2 under a pipeline keeps each chunk's parameters gathered for the whole step:
    // torchtitan's apply_fsdp sets reshard_after_forward = False when pipelining ("to avoid
    // per-microbatch all-gathers", torchtitan/parallelisms/parallelize_llama.py at 9dec370), and
    // PyTorch's pipelining stage (torch/distributed/pipelining/stage.py,
    // backward_maybe_with_nosync) skips resharding and the gradient reduce-scatter on every
    // backward but the last. So the gathers and their copy-out run on a chunk's first forward
    // only, and no backward re-gathers. The gradients' copy-in, once per step on a chunk's last
    // backward, is not charged: the plan has one backward cost for every micro-batch, and the
    // copy is one memory pass over a chunk's gradients (a Llama 3.1 405B chunk at tp 8, pp 8:
    // ~16 ms of a step of tens of seconds).
    return ctx.zero3 && ctx.e.parallel.fsdp2 && ctx.e.parallel.pp > 1;
}

bool first_forward_gathers(const PlanContext& ctx) {
    const ParallelSpec& par = ctx.e.parallel;
    return (par.overlap_param_gather &&
            (par.dp_cp() > 1 || experts_sharded_apart(par, ctx.e.model)) &&
            !ctx.e.training.forward_only) ||
           fsdp2_gathered_per_step(ctx);
}

namespace {

/// Megatron-Core up to 0.8 (distributed optimizer, overlap_param_gather): the first chunk on a
/// rank after the first has its first bucket issued by zero_grad at the step's start, the
/// previous ranks' first forwards before its own (overlap_param_gathers).
void megatron_first_bucket_leads(PlanContext& ctx, StepPlan& plan) {
    sim::Time lead;
    for (int p = 1; p < ctx.e.parallel.pp; ++p) {
        lead += plan.stage(virtual_stage(0, p - 1, plan.shape)).first_forward.time;
        VirtualStagePlan& st =
            plan.stages[static_cast<std::size_t>(virtual_stage(0, p, plan.shape))];
        st.gather_lead = lead;
        cost_stage(ctx, st, st.recompute);
    }
}

/// Megatron-Core up to 0.8: a model chunk after the first is one bucket, whose whole gather the
/// previous chunk's first forward issues; the rank's passes in between hide it.
void megatron_chained_chunks(PlanContext& ctx, StepPlan& plan) {
    for (int p = 0; p < ctx.e.parallel.pp; ++p) {
        const auto& order = plan.orders()[static_cast<std::size_t>(p)];
        // Where each chunk's first forward stands in the rank's order (order.size(): none).
        std::vector<std::size_t> first_forward_at(
            static_cast<std::size_t>(plan.shape.virtual_stages), order.size());
        for (std::size_t i = 0; i < order.size(); ++i)
            if (order[i].kind == PassKind::forward && order[i].micro_batch == 0)
                first_forward_at[static_cast<std::size_t>(order[i].chunk)] = i;
        for (int c = 1; c < plan.shape.virtual_stages; ++c) {
            const std::size_t from = first_forward_at[static_cast<std::size_t>(c - 1)];
            const std::size_t to = first_forward_at[static_cast<std::size_t>(c)];
            if (from >= to || to == order.size())
                continue;
            sim::Time lead;
            for (std::size_t i = from + 1; i < to; ++i)
                lead +=
                    pass_cost(plan.stage(virtual_stage(order[i].chunk, p, plan.shape)), order[i])
                        .time;
            VirtualStagePlan& st =
                plan.stages[static_cast<std::size_t>(virtual_stage(c, p, plan.shape))];
            st.gathered_ahead = true;
            st.gather_lead = lead;
            st.gather_beside = lead; // the rank's passes, all of it
            cost_stage(ctx, st, st.recompute);
        }
    }
}

/// The times one rank's passes start at, from the step's start, extended as its chunks are
/// costed (megatron_aligned_gathers).
class PassStarts {
public:
    PassStarts(const StepPlan& plan, int rank, sim::Time first)
        : plan_(plan)
        , rank_(rank)
        , order_(plan.orders()[static_cast<std::size_t>(rank)])
        , start_at_{first} {}
    sim::Time operator()(std::size_t i) {
        while (start_at_.size() <= i) {
            const std::size_t j = start_at_.size() - 1;
            start_at_.push_back(
                start_at_.back() +
                pass_cost(plan_.stage(virtual_stage(order_[j].chunk, rank_, plan_.shape)),
                          order_[j])
                    .time);
        }
        return start_at_[i];
    }

private:
    const StepPlan& plan_;
    int rank_;
    const std::vector<PipePass>& order_;
    std::vector<sim::Time> start_at_;
};

/// The distributed optimizer's overlapped parameter gathers as Megatron-Core >= 0.9 issues them
/// under align_param_gather (FrameworkSpec::align_param_gather; megatron/core/pipeline_parallel/
/// schedules.py, forward_backward_pipelining_with_interleaving, at NVIDIA/Megatron-LM
/// core_v0.9.0 through core_v0.16.0): config.param_sync_func, DistributedDataParallel.
/// start_param_sync, issues all of a model chunk's buckets at once; chunks 0 and 1 before the
/// first forward ("Synchronize params for first two model chunks"), chunk c + 1 for c >= 1 at
/// the forward whose virtual micro-batch id plus the pipeline rank is chunk c's first
/// micro-batch (is_first_microbatch_for_model_chunk), p forwards before chunk c's first
/// forward on rank p. The forward pre-hooks only wait (finish_param_sync with
/// skip_next_bucket_dispatch, distributed_data_parallel.py), and the gathers run one after
/// another on the data-parallel communicator in the order issued. Times on rank p's clock of
/// passes, from the step's start: its first pass starts once the previous ranks' first forwards
/// have run (their durations, a lower bound of the wait: sends only add to it), each later pass
/// when the passes before it on the rank have run (their durations: idle time only adds); so
/// each gather's lead before its chunk's first forward is a lower bound too.
void megatron_aligned_gathers(PlanContext& ctx, StepPlan& plan) {
    const int pp = ctx.e.parallel.pp;
    const int v = plan.shape.virtual_stages;
    sim::Time waited; // rank p's first pass starts at least this late
    for (int p = 0; p < pp; ++p) {
        if (p > 0)
            waited += plan.stage(virtual_stage(0, p - 1, plan.shape)).first_forward.time;
        auto stage_of = [&plan, p](int c) -> VirtualStagePlan& {
            return plan.stages[static_cast<std::size_t>(virtual_stage(c, p, plan.shape))];
        };
        // Chunk 0: all its buckets issued at the step's start, `waited` before its first
        // forward (the rank idle meanwhile), and its first module waits for all of them: the
        // buffer holds the parameters in reverse order (ParamAndGradBuffer, "params[::-1]",
        // for the gradients' sake), start_param_sync issues the bucket groups in that order on
        // one communicator, so the first layer's bucket ends last. The whole chunk, gathered
        // ahead, as the later chunks are.
        VirtualStagePlan& first = stage_of(0);
        first.gathered_ahead = true;
        first.gather_lead = waited;
        first.gather_beside = sim::Time::zero();
        cost_stage(ctx, first, first.recompute);
        // The queue's end: chunk 0's gather from the step's start.
        sim::Time queue_end = first.first_forward.param_gather;

        const auto& order = plan.orders()[static_cast<std::size_t>(p)];
        const auto vs = static_cast<std::size_t>(v);
        std::vector<std::size_t> forward_at;                 // the k-th forward's position
        std::vector<std::size_t> first_at(vs, order.size()); // each chunk's first forward's
        std::vector<std::size_t> first_k(vs, order.size());  // ... and its forward count
        for (std::size_t i = 0; i < order.size(); ++i) {
            if (order[i].kind != PassKind::forward)
                continue;
            if (order[i].micro_batch == 0) {
                first_at[static_cast<std::size_t>(order[i].chunk)] = i;
                first_k[static_cast<std::size_t>(order[i].chunk)] = forward_at.size();
            }
            forward_at.push_back(i);
        }
        // Start of the pass at each position: the passes before chunk c's first forward are
        // final once chunk c - 1 is.
        PassStarts start(plan, p, waited);
        for (int c = 1; c < v; ++c) {
            const auto cs = static_cast<std::size_t>(c);
            if (first_at[cs] == order.size())
                continue;
            // Issued: chunk 1 at the step's start; chunk c >= 2 at the forward p before chunk
            // c - 1's first, or, where the schedule does not reach it, by its own pre-hook
            // (finish_param_sync: "If current bucket's param AG has not been dispatched,
            // dispatch it now").
            sim::Time issued = start(first_at[cs]);
            if (c == 1) {
                issued = sim::Time::zero();
            } else if (first_k[cs - 1] != order.size() &&
                       first_k[cs - 1] >= static_cast<std::size_t>(p)) {
                issued = start(forward_at[first_k[cs - 1] - static_cast<std::size_t>(p)]);
            }
            const sim::Time begins = std::max(issued, queue_end);
            const sim::Time needed = start(first_at[cs]);
            VirtualStagePlan& st = stage_of(c);
            st.gathered_ahead = true;
            st.gather_lead = needed - begins;
            st.gather_beside = std::max(sim::Time::zero(), needed - std::max(begins, waited));
            cost_stage(ctx, st, st.recompute);
            queue_end = begins + st.first_forward.param_gather;
        }
    }
}

} // namespace

void overlap_param_gathers(PlanContext& ctx, StepPlan& plan) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    // Megatron-Core's distributed optimizer with overlap_param_gather (megatron/core/optimizer/
    // distrib_optimizer.py at core_v0.8.0, _finish_param_sync_helper): one bucket's all-gather
    // in flight at a time, in forward order across the rank's model chunks, the next one
    // issued when a forward pre-hook waits for the one before. A model chunk after the first is
    // one bucket (megatron/training/training.py, get_model: disable_bucketing=(model_chunk_idx >
    // 0); NeMo 24.07's megatron_gpt_model.py likewise), so the previous chunk's first forward
    // issues this chunk's whole gather, and the passes the rank's order runs between the two
    // first forwards hide it (their durations: a lower bound of the lead; idle time only adds
    // to it). The first chunk's buckets chain from the step's start through its own first
    // forward: DistributedOptimizer.zero_grad issues the first ("launch all-gather for first
    // accessed bucket here before forward compute is initiated", distrib_optimizer.py at
    // core_v0.8.0), and Megatron's train_step calls it before forward_backward_func. A rank
    // after the first starts its first forward only when the previous ranks' first forwards
    // have run (their durations: a lower bound of the time it waits, sends only add to it), so
    // that bucket had that long to run beside no compute (VirtualStagePlan::gather_lead of the
    // first chunk).
    const bool overlapped =
        par.overlap_param_gather && par.dp_cp() > 1 && !ctx.zero3 && !e.training.forward_only;
    if (!overlapped)
        return;
    // Megatron-Core >= 0.9 with align_param_gather (FrameworkSpec::align_param_gather): the
    // interleaved schedule issues the gathers (megatron_aligned_gathers), not the chain.
    if (e.framework.align_param_gather && par.schedule == PipelineSchedule::interleaved_1f1b &&
        plan.shape.virtual_stages > 1) {
        megatron_aligned_gathers(ctx, plan);
        return;
    }
    if (par.pp > 1)
        megatron_first_bucket_leads(ctx, plan);
    if (plan.shape.virtual_stages > 1)
        megatron_chained_chunks(ctx, plan);
}

} // namespace clustersim::strategies::parallel::detail
