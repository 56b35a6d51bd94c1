#pragma once
/// \file
/// The plan of one training step: what each pipeline rank runs and how long each piece takes,
/// before the pieces are put on a timeline.
///
/// Built once per experiment from the model's layer work (strategies/models), the kernel cost
/// model and the collectives' closed forms, it holds for every virtual stage the duration of a
/// forward and of a backward pass (compute, recompute, exposed tensor-parallel communication and
/// host dispatch, see PassCost), the activations a micro-batch keeps, the gradients it produces
/// and when they are ready for data-parallel buckets; for every pipeline rank its model state,
/// its data-parallel communication and its optimizer step. training_step.h lays the plan out in
/// time, analytically (a DAG pass) or on the flow network.
///
/// The host: a framework such as Megatron issues kernels from one Python thread. Each kernel
/// (collectives included) costs the host `host_overhead` to issue; the GPU runs a kernel when it
/// has been issued, its stream is free and the collectives it needs are done. Small models are
/// host-bound this way, large ones GPU-bound, and the pass time says which.

#include "hardware/compute_model.h"
#include "hardware/topology.h"
#include "sim/time.h"
#include "strategies/collectives/communicator.h"
#include "strategies/collectives/communicator_cache.h"
#include "strategies/models/layer_work.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/overlap_interference.h"
#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/recompute_plan.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::strategies::parallel {

/// Components of one pass on the compute stream. Each is rounded to the picosecond from the
/// pass's closed form and time = compute + recompute + tp_wait + ep_wait + host_wait + dp_wait
/// exactly,
/// so the breakdown of a step sums to its passes.
struct PassCost {
    sim::Time time;
    sim::Time compute;   ///< forward (or backward) kernels
    sim::Time recompute; ///< recompute kernels run before a backward
    sim::Time tp_wait;   ///< waiting for tensor-parallel collectives
    /// Waiting for expert-parallel collectives: the dispatch and combine all-to-alls and the
    /// expert tensor-parallel gathers around the experts.
    sim::Time ep_wait;
    sim::Time host_wait; ///< waiting for the host to issue kernels
    /// Waiting for parameter all-gathers: ZeRO-3's per layer (every pass), or the distributed
    /// optimizer's overlapped with the first forward of a chunk (overlap_param_gather).
    sim::Time dp_wait;
    /// Time the pass's parameter all-gathers take on their stream (hidden or not): for traces.
    sim::Time param_gather;
    /// Time the pass's expert-parallel collectives take (all-to-alls and the expert
    /// tensor-parallel gathers, waited for or not): for traces.
    sim::Time ep_comm;
    /// Time the pass's tensor-parallel collectives take on their stream (waited for or not; a
    /// pipelined reduce-scatter's chunks, a ring exchange's steps): for traces.
    sim::Time tp_comm;
    /// Of compute and recompute: what the communication kernels running beside the pass's
    /// kernels cost them (overlap_interference.h: their SMs and HBM traffic).
    sim::Time overlap_slowdown;
    int kernels = 0; ///< kernels issued, collectives included
};

/// A run of alike units of a pass (the embedding, `count` transformer layers of one kind, the
/// head) and where it sits in the pass as the pass clock ran it, as shares of the pass's time;
/// with the work of one unit. For traces: a slice per layer, its FLOPs and bytes as args, and
/// its tensor-parallel communication on its own lane.
struct UnitSpan {
    std::string_view name;     ///< "embedding", "layer" or "head"
    int first_layer = 0;       ///< of the span's first layer: its index within the stage
    int count = 0;             ///< units in the span, each an equal share of it
    double begin = 0;          ///< share of the pass's time before the span starts
    double end = 0;            ///< ... and before it ends
    double tp = 0;             ///< share of the pass's time one unit's TP collectives take
    double flops = 0;          ///< one unit's kernels (a backward's: with its recompute)
    std::int64_t bytes = 0;    ///< one unit's HBM bytes read and written
    std::int64_t tp_bytes = 0; ///< one unit's tensor-parallel collectives (nccl-tests sizes)
};

/// The unit spans of one pass, in the order they ran (at most the embedding, six layer groups
/// and the head). Recorded only for a timeline (build_step_plan's `unit_spans`); empty
/// otherwise, so that a stage stays small and copies without allocating (the plans of a sweep
/// copy stages often: PlanContext::stage_costs).
struct PassSpans {
    std::vector<UnitSpan> spans;
};

/// A data-parallel gradient bucket of one virtual stage.
struct GradBucket {
    std::int64_t bytes = 0; ///< gradient bytes (as reduced)
    sim::Time ready;        ///< after the start of the chunk's last backward pass
    /// Routed experts' gradients (experts laid out apart): reduced over the
    /// expert-data-parallel group, the others over the data-parallel group.
    bool expert = false;
};

/// One model chunk: a virtual stage of the pipeline.
struct VirtualStagePlan {
    int index = 0; ///< virtual stage: chunk * pp + rank
    int rank = 0;  ///< pipeline rank that runs it
    int chunk = 0;
    int first_layer = 0;
    int layers = 0;
    bool embedding = false; ///< holds the embedding (first virtual stage)
    bool head = false;      ///< holds the LM head and loss (last virtual stage)
    RecomputePlan recompute;
    PassCost forward;
    /// The forward of the step's first micro-batch: `forward` plus the distributed optimizer's
    /// parameter all-gather when overlap_param_gather (else equal to `forward`).
    PassCost first_forward;
    /// Megatron-Core's distributed optimizer (overlap_param_gather) chains its all-gathers in
    /// forward order across a rank's model chunks, and a chunk after the first is one bucket:
    /// the previous chunk's first forward issues this chunk's whole gather. When it did
    /// (`gathered_ahead`), how long before this chunk's first forward starts, at least
    /// (`gather_lead`: the passes the rank's order runs in between, whose compute the gather
    /// slows, charged to this first forward). The first chunk on a rank after the first:
    /// `gather_lead` is how long before its first forward zero_grad issued its first bucket
    /// (the previous ranks' first forwards, at least; no compute beside it).
    /// With FrameworkSpec::align_param_gather the schedule issues each chunk's whole gather, so
    /// every chunk is gathered ahead: `gather_lead` from when its gather started (issued, or
    /// queued behind the gathers issued before it) to its first forward, at least; never
    /// negative (the queue's end is the previous chunk's gather, which that chunk's first
    /// forward, earlier in the rank's order, waited for); the first chunk's at the step's start.
    bool gathered_ahead = false;
    sim::Time gather_lead;
    /// Of `gather_lead`, the time the rank's own passes ran beside the gather (the rest the
    /// rank waited for its first activation): the compute it slowed.
    sim::Time gather_beside;
    PassCost backward;
    /// Where the units of a forward and of a backward sit (traces; empty unless recorded).
    PassSpans forward_spans;
    PassSpans backward_spans;
    /// The backward split as zero-bubble schedules run it (Qi et al. 2023): the weight-gradient
    /// pass W (the wgrad GEMMs and the embedding's gradient kernels, nothing the previous stage
    /// waits for) and the input-gradient pass B (everything else: recompute, dgrad GEMMs,
    /// elementwise backward, the tensor-parallel waits). backward_input + weight = backward.
    PassCost backward_input;
    PassCost weight;
    std::int64_t activation_bytes = 0; ///< kept per micro-batch from forward to backward
    /// Of a split backward: what B leaves for W, per micro-batch: the inputs of the wgrad GEMMs
    /// and the gradients of their outputs (the paper's M_W, 32 s b h for a GPT layer).
    std::int64_t weight_activation_bytes = 0;
    std::int64_t transient_bytes = 0; ///< extra held while its backward runs (recomputed)
    /// Blocks the caching allocator holds unused at its backward's peak (LayerWork::
    /// cached_bytes): reserved beyond the allocated bytes.
    std::int64_t cached_bytes = 0;
    std::int64_t parameters = 0;        ///< held by one tensor-parallel rank
    std::int64_t expert_parameters = 0; ///< of which routed experts' (experts laid out apart)
    std::int64_t frozen_parameters = 0; ///< of which frozen (LoRA's base weights)
    /// Of them, those of its transformer layers (the GEMM weights FP8 training keeps FP8
    /// copies of; the embedding excluded, and the head but under fp8_output_proj).
    std::int64_t layer_parameters = 0;
    std::vector<GradBucket> buckets; ///< in the order the backward produces them
    /// Parameter bytes one GPU gathers per pass (ZeRO-3; 0 otherwise), per (tp) rank.
    std::int64_t gathered_bytes = 0;
    /// ZeRO-3's gathered parameters beside the sharded state (memory_accounting.h,
    /// peak_gathered_bytes). Gathered per
    /// pass: what a forward holds (the unit it runs and the one prefetched: the two largest of
    /// the chunk's layers, embedding and head) and what a backward holds (the same, and the
    /// largest unit's unsharded gradients and its reduce-scatter input). 0 otherwise.
    std::int64_t forward_gather_bytes = 0;
    std::int64_t backward_gather_bytes = 0;
    /// FSDP2 under a pipeline (gathered once per step): the chunk's parameters, held gathered
    /// from its first forward, and its unsharded gradients in the reduce dtype, accumulated from
    /// its first backward; both until its last backward. 0 otherwise.
    std::int64_t step_gathered_bytes = 0;
    std::int64_t step_grad_bytes = 0;
    sim::Time send_forward;      ///< activation transfer to the next virtual stage
    sim::Time send_backward;     ///< gradient transfer from the next virtual stage
    std::int64_t send_bytes = 0; ///< bytes of one such transfer, per tensor-parallel rank
};

/// What a collective of the data-parallel phase is for. The executors schedule by it: gradient
/// reductions follow the backward, the embedding's waits for the first and the last pipeline
/// rank, ZeRO's parameter all-gather follows the optimizer.
enum class DpRole : std::uint8_t {
    grad_all_reduce,
    grad_reduce_scatter,       ///< ZeRO-1 and above
    param_all_gather,          ///< ZeRO-1/2's, after the optimizer (unless overlapped)
    embedding_grad_all_reduce, ///< tied embeddings: between the first and the last rank
};
/// "grad all-reduce", ...: the collective's name in traces and timelines.
std::string_view to_string(DpRole r);

/// A collective of the data-parallel phase of one rank.
struct DpCollective {
    collectives::Collective collective;
    sim::Time time; ///< analytic prediction
    DpRole role = DpRole::grad_all_reduce;
    /// Model chunk whose gradients it reduces, and the bucket of that chunk (overlapped with the
    /// backward); none: after the last backward (all gradients, the embedding, or ZeRO's
    /// all-gather).
    std::optional<int> chunk;
    std::optional<int> bucket;
    /// On the expert-data-parallel group (routed experts' gradients and parameters) instead of
    /// the data-parallel group.
    bool expert = false;
    /// On the replicate group of hybrid sharding (RankPlan::replicate_group): the all-reduce of
    /// a reduce-scattered gradient shard across the replicas.
    bool replicate = false;
    /// What it takes from the compute it overlaps (overlap_interference.h).
    CommLoad load;

    bool after_optimizer() const { return role == DpRole::param_all_gather; }
};

struct RankPlan {
    int rank = 0;
    int gpu = 0; ///< the representative GPU simulated for this rank
    std::int64_t parameters = 0;
    std::int64_t weights_bytes = 0;
    std::int64_t grads_bytes = 0;
    std::int64_t optimizer_bytes = 0;
    sim::Time optimizer_time;
    std::vector<DpCollective> dp; ///< in issue order on the data-parallel stream
    /// GPUs of the representative's data-parallel group (x context-parallel: the gradients'
    /// group); under hybrid sharding its shard group (torchtitan's dp_shard_cp).
    std::vector<int> dp_group;
    /// Hybrid sharding (ParallelSpec::dp_replicate > 1): the GPUs holding the same shard as the
    /// representative, one per replica (torchtitan's dp_replicate). Empty otherwise.
    std::vector<int> replicate_group;
    std::vector<int> tp_group; ///< GPUs of the representative's tensor-parallel group
    /// Experts laid out apart (ParallelSpec::expert_layout): the representative's
    /// expert-parallel and expert-data-parallel groups, and the routed experts' share of
    /// `parameters`. Empty and 0 otherwise.
    std::vector<int> ep_group;
    std::vector<int> expert_dp_group;
    std::int64_t expert_parameters = 0;
    /// Whether a collective of its data-parallel phase runs over a communicator spanning nodes
    /// (CollectiveTimes::crosses_nodes).
    bool dp_crosses_nodes = false;
    /// Of `parameters`, the frozen ones (LoRA's base weights: no gradient, no optimizer state,
    /// no data-parallel reduction). 0 otherwise.
    std::int64_t frozen_parameters = 0;
};

struct StepPlan {
    const ExperimentSpec* experiment = nullptr;
    std::shared_ptr<const hardware::Topology> topology;
    /// Communicators shared with other plans on the same topology (StepSimulator); null: the
    /// plan builds its own.
    collectives::CommunicatorCache* communicators = nullptr;
    PipelineShape shape;
    /// Each rank's pass order (pipeline_order), shared with the other plans of the same
    /// schedule and shape (shared_pipeline_order).
    std::shared_ptr<const PassOrders> pass_orders;
    const PassOrders& orders() const { return *pass_orders; }
    std::vector<VirtualStagePlan> stages; ///< by virtual stage index
    std::vector<RankPlan> ranks;
    std::int64_t runtime_bytes = 0;     ///< CUDA context, NCCL's buffers per GPU (no allocator)
    std::int64_t capacity_bytes = 0;    ///< what the device reports (GpuSpec::usable_hbm_bytes)
    double allocator_fragmentation = 0; ///< FrameworkSpec::allocator_fragmentation
    bool automatic_recompute = false;
    /// The job's inter-node flows, one per GPU whose collectives cross nodes (straggler.h): every
    /// GPU where a pass's or the data-parallel phase's communicator spans nodes (each GPU is in
    /// one such group of every kind), else the first and last stages' GPUs where only the tied
    /// embedding's all-reduce does; 0 where none. The congestion stretches those collectives at
    /// the slowest of these flows, and the straggler band counts them.
    int inter_node_flows = 0;
    /// Recompute actually used on every layer when not automatic.
    models::Recompute uniform_recompute = models::Recompute::none;

    const VirtualStagePlan& stage(int vs) const { return stages[static_cast<std::size_t>(vs)]; }
};

/// Builds the plan of `e` on `topology` (which must be the cluster of `e`). `recompute_plan`
/// fixes the recompute of each virtual stage (tests and the automatic search use it); empty:
/// from the experiment (for `auto`, the cheapest plan per rank that fits in memory).
/// `communicators`, when given, is a cache on `topology` that the plan takes its communicators
/// from (same results, built once for many plans). `unit_spans`: record where the units of
/// each pass run (VirtualStagePlan::forward_spans, backward_spans), which a timeline draws;
/// they change no cost.
StepPlan build_step_plan(const ExperimentSpec& e,
                         std::shared_ptr<const hardware::Topology> topology,
                         collectives::CommunicatorCache* communicators = nullptr,
                         bool unit_spans = false);

/// The cost of a pass of `st`: forward (micro-batch 0's with the overlapped parameter gather),
/// backward, backward_input or weight.
inline const PassCost& pass_cost(const VirtualStagePlan& st, const PipePass& p) {
    switch (p.kind) {
    case PassKind::forward:
        return p.micro_batch == 0 ? st.first_forward : st.forward;
    case PassKind::backward:
        return st.backward;
    case PassKind::backward_input:
        return st.backward_input;
    case PassKind::weight:
        break;
    }
    return st.weight;
}

/// When bucket `k` of `st` is ready, from the start of the pass of kind `kind` that completes
/// the chunk's gradients: a whole backward's bucket time, or within a W pass the same share
/// of it (the weight gradients come out in the backward's layer order).
inline sim::Time bucket_ready(const VirtualStagePlan& st, PassKind kind, std::size_t k) {
    const sim::Time ready = st.buckets[k].ready;
    if (kind != PassKind::weight || st.backward.time <= sim::Time::zero())
        return ready;
    return st.weight.time.scaled(std::min(1.0, ready.seconds() / st.backward.time.seconds()));
}

/// A time `within` a pass planned to take `planned` that took `took`, slowed by the
/// collectives beside it (overlap interference): what it produces comes as much later.
inline sim::Time stretched(sim::Time within, sim::Time planned, sim::Time took) {
    if (took == planned || planned <= sim::Time::zero())
        return within;
    return within.scaled(took.seconds() / planned.seconds());
}

/// The GPU that runs tensor-parallel rank `t`, data-parallel rank `d`, pipeline rank `p` and
/// context-parallel rank `c` (Megatron-Core's order tp-cp-ep-dp-pp: tensor-parallel fastest,
/// then context-parallel, then data-parallel, then pipeline; context_parallel_comm.h).
/// A MaxText mesh may place the ranks on other devices (ParallelSpec::device_order).
inline int gpu_of(const ParallelSpec& p, int t, int d, int pp_rank, int c = 0) {
    const int rank = t + p.tp * (c + p.cp * (d + p.dp * pp_rank));
    return p.device_order.empty() ? rank : p.device_order[static_cast<std::size_t>(rank)];
}

/// The GPU that runs, in the expert layers, expert tensor-parallel rank `t`, expert-parallel
/// rank `x`, expert-data-parallel rank `d`, pipeline rank `p` (Megatron-Core's expert rank
/// generator, order tp-ep-dp-pp with tp = etp: parallel_state.py, initialize_model_parallel).
/// The pipeline stages hold the same GPUs as in gpu_of.
inline int expert_gpu_of(const ParallelSpec& p, int t, int x, int d, int pp_rank) {
    const int rank = t + p.expert_tp() * (x + p.ep * (d + p.expert_dp() * pp_rank));
    return p.device_order.empty() ? rank : p.device_order[static_cast<std::size_t>(rank)];
}

} // namespace clustersim::strategies::parallel
