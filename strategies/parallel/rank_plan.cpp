#include "strategies/parallel/rank_plan.h"

#include "strategies/models/fp8.h"
#include "strategies/parallel/collective_times.h"
#include "strategies/parallel/executed_step.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/precision.h"

#include <algorithm>
#include <memory>
#include <optional>

namespace clustersim::strategies::parallel::detail {

namespace {

/// Whether the routed experts are laid out apart: their weights, gradients and optimizer state
/// are sharded (ZeRO, the distributed optimizer) and reduced over the expert-data-parallel
/// group, whose size this returns (the data-parallel x context-parallel group's otherwise).
int expert_dp_size(const ExperimentSpec& e) {
    const ParallelSpec& par = e.parallel;
    return par.expert_layout() && e.model.is_moe() ? par.expert_dp() : par.dp_cp();
}

/// Rank `p`'s groups, model state and optimizer step.
RankPlan rank_state(const PlanContext& ctx, const StepPlan& plan, int p) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    const bool experts_apart = par.expert_layout() && e.model.is_moe();
    const int edp = expert_dp_size(e);
    RankPlan r;
    r.rank = p;
    r.gpu = gpu_of(par, 0, 0, p);
    for (int t = 0; t < par.tp; ++t)
        r.tp_group.push_back(gpu_of(par, t, 0, p));
    // torchtitan's mesh (pp, dp_replicate, dp_shard, cp, tp): the shard dimension inside the
    // replicate one, so data-parallel rank d is replica d / shard, shard d % shard.
    const int shard = par.dp_shard_size();
    for (int d = 0; d < shard; ++d)
        for (int c = 0; c < par.cp; ++c)
            r.dp_group.push_back(gpu_of(par, 0, d, p, c));
    if (par.dp_replicate > 1)
        for (int x = 0; x < par.dp_replicate; ++x)
            r.replicate_group.push_back(gpu_of(par, 0, x * shard, p));
    std::int64_t layer_parameters = 0;
    for (int c = 0; c < plan.shape.virtual_stages; ++c) {
        const auto& st = plan.stage(virtual_stage(c, p, plan.shape));
        r.parameters += st.parameters;
        r.expert_parameters += st.expert_parameters;
        r.frozen_parameters += st.frozen_parameters;
        layer_parameters += st.layer_parameters;
    }
    if (experts_apart) {
        for (int x = 0; x < par.ep; ++x)
            r.ep_group.push_back(expert_gpu_of(par, 0, x, 0, p));
        for (int d = 0; d < edp; ++d)
            r.expert_dp_group.push_back(expert_gpu_of(par, 0, 0, d, p));
    }
    // Trained dense parameters: LoRA's frozen base weights have no gradient or optimizer state.
    const std::int64_t dense = r.parameters - r.expert_parameters - r.frozen_parameters;
    const auto state =
        state_bytes(e, dense, r.expert_parameters, edp, layer_parameters, r.frozen_parameters);
    r.weights_bytes = state.weights;
    r.grads_bytes = state.gradients;
    r.optimizer_bytes = state.optimizer;
    const int shards = par.shard_cp();
    // BF16_Optimizer steps on this rank's partition, as ZeRO-1 does (precision.h).
    const std::int64_t updated =
        par.zero < 1 && !bf16_optimizer(e)
            ? r.parameters - r.frozen_parameters
            : (dense + shards - 1) / shards + (r.expert_parameters + edp - 1) / std::max(edp, 1);
    if (!e.training.forward_only) {
        double seconds = models::optimizer_step(updated, hardware::weight_dtype(e.training.dtype),
                                                e.training.optimizer, par.zero, ctx.cm,
                                                e.training.master_weights)
                             .time.seconds();
        // BF16_Optimizer.step's passes over every fp32 gradient, not the partition: the global
        // norm (read), clipping by it (read, written; Megatron-DeepSpeed passes --clip-grad,
        // 1.0 by default, as gradient_clipping) and clear_hp_grads's zeroing (written):
        // 16 bytes a parameter (deepspeed/runtime/bf16_optimizer.py at v0.7.0, step).
        if (bf16_optimizer(e))
            seconds += ctx.cm.memory_bound_seconds(16 * (r.parameters - r.frozen_parameters));
        // FP8 and FP4: the layers' weights quantized once per step (fp8.h; tensorwise
        // scaling casts them in every forward instead, in the layers' GEMMs).
        if (hardware::is_quantized(e.training.dtype)) {
            const std::int64_t cast = models::weight_cast_bytes(
                layer_parameters, e.training.quant_recipe(), detail::fp8_casts_transpose(e));
            if (cast > 0)
                seconds += ctx.cm.memory_bound_seconds(cast);
        }
        // The step's last synchronisation: the host reads the gradient norm back, and the
        // next step starts when the latest of all the GPUs' hosts does (straggler.h).
        r.optimizer_time = sim::Time::from_seconds(seconds / ctx.fw.memory_efficiency +
                                                   sync_wait(ctx.fw.sync_jitter.seconds(), e.gpus));
    }
    return r;
}

/// The collectives of one rank's data-parallel phase, in issue order on its stream.
class DpPhase {
public:
    DpPhase(const PlanContext& ctx, const StepPlan& plan, RankPlan& r)
        : par_(ctx.e.parallel)
        , r_(r)
        , edp_(expert_dp_size(ctx.e))
        , times_(par_.shard_cp() > 1 ? communicator(plan, r.dp_group, dp_comm_) : nullptr, ctx.fw,
                 ctx.e.gpus)
        , replicate_times_(par_.dp_replicate > 1
                               ? communicator(plan, r.replicate_group, replicate_comm_)
                               : nullptr,
                           ctx.fw, ctx.e.gpus)
        , expert_times_(par_.expert_layout() && ctx.e.model.is_moe() && edp_ > 1
                            ? communicator(plan, r.expert_dp_group, edp_comm_)
                            : nullptr,
                        ctx.fw, ctx.e.gpus) {
        r_.dp_crosses_nodes = times_.crosses_nodes() || replicate_times_.crosses_nodes() ||
                              expert_times_.crosses_nodes();
    }

    int expert_dp() const { return edp_; }

    void add(collectives::Op op, std::int64_t bytes, hardware::Dtype dtype,
             std::optional<int> chunk, std::optional<int> bucket, DpRole role,
             bool expert = false) {
        DpCollective d;
        d.collective.op = op;
        d.collective.dtype = dtype;
        d.collective.bytes = bytes;
        d.time = (expert ? expert_times_ : times_).time(d.collective);
        d.load = (expert ? expert_times_ : times_).load(d.collective);
        d.role = role;
        d.chunk = chunk;
        d.bucket = bucket;
        d.expert = expert;
        r_.dp.push_back(d);
    }

    /// A gradient reduction. Hybrid sharding: each gradient reduce-scatter over the shard group
    /// is followed by the all-reduce of its shard over the replicate group (FSDP2's
    /// foreach_reduce, torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py: reduce_scatter
    /// on the reduce-scatter group, then all_reduce of the reduce-scatter output on the
    /// all-reduce group). Here both run in order on the data-parallel stream; without a shard
    /// group (shard x cp = 1) the all-reduce is the whole reduction.
    void add_grad(collectives::Op op, std::int64_t bytes, hardware::Dtype dtype,
                  std::optional<int> chunk, std::optional<int> bucket, DpRole role,
                  bool expert = false) {
        if (expert || par_.dp_replicate <= 1) {
            add(op, bytes, dtype, chunk, bucket, role, expert);
            return;
        }
        const int shard = par_.shard_cp();
        if (shard > 1)
            add(op, bytes, dtype, chunk, bucket, role);
        DpCollective d;
        d.collective.op = collectives::Op::all_reduce;
        d.collective.dtype = dtype;
        d.collective.bytes = (bytes + shard - 1) / shard;
        d.time = replicate_times_.time(d.collective);
        d.load = replicate_times_.load(d.collective);
        d.role = DpRole::grad_all_reduce;
        d.chunk = chunk;
        d.bucket = bucket;
        d.replicate = true;
        r_.dp.push_back(d);
    }

private:
    const ParallelSpec& par_;
    RankPlan& r_;
    int edp_;
    std::unique_ptr<collectives::Communicator> dp_comm_;
    std::unique_ptr<collectives::Communicator> edp_comm_;
    std::unique_ptr<collectives::Communicator> replicate_comm_;
    CollectiveTimes times_;
    CollectiveTimes replicate_times_;
    CollectiveTimes expert_times_;
};

/// The chunks of rank `r` in the order their gradients complete, as Megatron-Core launches
/// their reductions (its interleaved schedule starts a chunk's gradient sync after the chunk's
/// last backward: chunk v-1's first, chunk 0's last); in chunk order, chunk 0's reduce would
/// hold back all the others.
std::vector<int> chunks_by_last_backward(const StepPlan& plan, const RankPlan& r) {
    const auto last_b = last_backward_of_chunk(plan.orders()[static_cast<std::size_t>(r.rank)],
                                               plan.shape.virtual_stages);
    std::vector<int> chunks(static_cast<std::size_t>(plan.shape.virtual_stages));
    for (int c = 0; c < plan.shape.virtual_stages; ++c)
        chunks[static_cast<std::size_t>(c)] = c;
    std::stable_sort(chunks.begin(), chunks.end(), [&](int a, int b) {
        return last_b[static_cast<std::size_t>(a)] < last_b[static_cast<std::size_t>(b)];
    });
    return chunks;
}

/// Rank `r`'s data-parallel phase: gradient reductions (overlapped bucket by bucket, or after
/// the backward) and ZeRO-1/2's parameter all-gather after the optimizer.
void plan_dp_phase(const PlanContext& ctx, const StepPlan& plan, RankPlan& r) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    const auto grad_dtype = grad_reduce_dtype(e);
    DpPhase phase(ctx, plan, r);
    const int edp = phase.expert_dp();
    const auto grad_op =
        par.zero >= 1 ? collectives::Op::reduce_scatter : collectives::Op::all_reduce;
    const DpRole grad_role = par.zero >= 1 ? DpRole::grad_reduce_scatter : DpRole::grad_all_reduce;
    const std::int64_t dense = r.parameters - r.expert_parameters - r.frozen_parameters;
    // Dense gradients over the data-parallel (x context-parallel) group, the routed experts'
    // over the expert-data-parallel group (when it has more than one GPU).
    const bool dense_dp = par.dp_cp() > 1;
    const bool expert_dp = r.expert_parameters > 0 && edp > 1;
    if (!dense_dp && !expert_dp)
        return;
    if (par.dp_overlap) {
        for (const int c : chunks_by_last_backward(plan, r)) {
            const auto& st = plan.stage(virtual_stage(c, r.rank, plan.shape));
            for (std::size_t k = 0; k < st.buckets.size(); ++k) {
                const bool expert = st.buckets[k].expert;
                if (expert ? expert_dp : dense_dp)
                    phase.add_grad(grad_op, st.buckets[k].bytes, grad_dtype, c, static_cast<int>(k),
                                   grad_role, expert);
            }
        }
    } else {
        if (dense_dp)
            phase.add_grad(grad_op, dense * hardware::bytes_per_element(grad_dtype), grad_dtype,
                           std::nullopt, std::nullopt, grad_role);
        if (expert_dp)
            phase.add(grad_op, r.expert_parameters * hardware::bytes_per_element(grad_dtype),
                      grad_dtype, std::nullopt, std::nullopt, grad_role, true);
    }
    // ZeRO-3 gathers per layer inside the passes (stage_cost.h); the distributed optimizer's
    // gather, when overlapped, inside the next step's first forward (param_gathers.h).
    // BF16_Optimizer gathers its bf16 partitions after the step, as ZeRO-1 does (precision.h).
    if (((par.zero >= 1 && par.zero < 3) || bf16_optimizer(e)) && !par.overlap_param_gather) {
        const auto wdtype = hardware::weight_dtype(e.training.dtype);
        const std::int64_t elem = hardware::bytes_per_element(wdtype);
        if (dense_dp)
            phase.add(collectives::Op::all_gather, dense * elem, wdtype, std::nullopt, std::nullopt,
                      DpRole::param_all_gather);
        if (expert_dp)
            phase.add(collectives::Op::all_gather, r.expert_parameters * elem, wdtype, std::nullopt,
                      std::nullopt, DpRole::param_all_gather, true);
    }
}

/// Tied embeddings on separate stages: Megatron all-reduces the embedding gradient between the
/// first and the last pipeline rank after the backward.
void plan_embedding_all_reduce(const PlanContext& ctx, StepPlan& plan) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    if (par.pp <= 1 || !e.model.is_transformer() || !e.model.tied_embeddings)
        return;
    // BF16_Optimizer's tied weights reduce their fp32 gradient as it is
    // (PipelineEngine._exec_reduce_tied_grads: dist.all_reduce(weight._hp_grad)).
    const auto grad_dtype = bf16_optimizer(e) ? hardware::Dtype::fp32 : grad_reduce_dtype(e);
    const std::vector<int> pair{gpu_of(par, 0, 0, 0), gpu_of(par, 0, 0, par.pp - 1)};
    std::unique_ptr<collectives::Communicator> comm;
    // Its flows: the first and last stages' GPUs, which run it pair by pair (plan_ranks's
    // caller counts every GPU instead where other collectives cross nodes too; the band at
    // the same count, StepPlan::inter_node_flows).
    const int flows = 2 * ctx.e.gpus / par.pp;
    CollectiveTimes times(communicator(plan, pair, comm), ctx.fw, flows);
    DpCollective d;
    d.collective.op = collectives::Op::all_reduce;
    d.collective.dtype = grad_dtype;
    d.collective.bytes = ctx.embedding.parameters * hardware::bytes_per_element(grad_dtype);
    d.time = times.time(d.collective);
    d.role = DpRole::embedding_grad_all_reduce;
    if (times.crosses_nodes())
        plan.inter_node_flows = flows;
    plan.ranks.front().dp.push_back(d);
    plan.ranks.back().dp.push_back(d);
}

} // namespace

void plan_ranks(PlanContext& ctx, StepPlan& plan) {
    plan.ranks.clear();
    for (int p = 0; p < ctx.e.parallel.pp; ++p)
        plan.ranks.push_back(rank_state(ctx, plan, p));
    if (ctx.e.training.forward_only)
        return;
    for (RankPlan& r : plan.ranks)
        plan_dp_phase(ctx, plan, r);
    plan_embedding_all_reduce(ctx, plan);
}

} // namespace clustersim::strategies::parallel::detail
