#pragma once
/// \file
/// One training step of an experiment, simulated: step time, where it goes, memory per GPU.
///
///     const ExperimentSpec e = load_experiment("configs/experiments/gpt3-175B-64xA100.yaml");
///     StepOptions o;
///     o.fidelity = Fidelity::analytic;
///     const StepResult r = simulate_step(e, o);
///     // r.step_time_s, r.breakdown.pp_bubble_s, r.memory[0].peak_bytes, r.oom ...
///
/// Symmetry: data-parallel replicas and tensor-parallel peers do the same work at the same
/// time, so the simulation runs one representative GPU per pipeline rank (tensor-parallel rank
/// 0 of data-parallel replica 0) and lists them in `simulated_gpus`. Collectives still span their
/// whole groups (a data-parallel all-reduce is timed over all dp GPUs).
///
/// Fidelities (one interface, tests hold them together):
/// - analytic: pass durations from the step plan, transfers and collectives from their closed
///   forms, the pipeline timed as a DAG (schedule_timing.h). Fast enough for sweeps.
/// - flow: the same passes as tasks on in-order streams (compute, pipeline sends, data-parallel
///   collectives) executed by the event engine, with every pipeline transfer and data-parallel
///   collective played on the flow network of the cluster graph, so that they contend for NICs
///   and links. Tensor-parallel collectives stay inside the passes (analytic): they are serial
///   with the compute stream and, within a node, on links nothing else uses.
///
/// The breakdown is that of the rank whose step ends last (the critical rank) and sums to the
/// step time: compute + recompute + host + tp_comm_exposed + ep_comm_exposed + pp_bubble +
/// pp_comm_exposed + dp_comm_exposed + optimizer.
///
/// The result holds numbers and enums only; the app words them (app/run_report.h). Where the
/// work is done: step_plan.h (the plan), analytic_executor.h and flow_executor.h (the two
/// fidelities), memory_accounting.h, step_timeline.h and oom_advice.h; this file's
/// implementation runs them in order and computes the breakdown.

#include "hardware/topology.h"
#include "sim/time.h"
#include "strategies/collectives/collective.h"
#include "strategies/collectives/communicator_cache.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/recompute_plan.h"
#include "strategies/parallel/straggler.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clustersim::strategies::parallel {

using collectives::Fidelity;

struct Breakdown {
    double compute_s = 0;         ///< forward and backward kernels
    double recompute_s = 0;       ///< recompute kernels
    double host_s = 0;            ///< the GPU idle while the host issues kernels
    double tp_comm_exposed_s = 0; ///< waiting for tensor-parallel collectives
    /// Waiting for expert-parallel collectives: the dispatch and combine all-to-alls (and the
    /// expert tensor-parallel gathers around the experts); 0 without experts laid out apart.
    double ep_comm_exposed_s = 0;
    double pp_bubble_s = 0;       ///< pipeline idle: warm-up, cool-down, unequal stages
    double pp_comm_exposed_s = 0; ///< idle while a pipeline transfer it waits for is in flight
    /// Waiting for data-parallel collectives: gradient reductions, parameter all-gathers after
    /// the optimizer, and those inside the passes (ZeRO-3, overlap_param_gather).
    double dp_comm_exposed_s = 0;
    double optimizer_s = 0;
    /// Of compute_s and recompute_s: what the communication running beside the kernels cost
    /// them (its SMs and HBM traffic; strategies/parallel/overlap_interference.h).
    double overlap_slowdown_s = 0;

    bool operator==(const Breakdown&) const = default;
};

/// A pipeline rank's memory at its peak, in the three statistics a run can print:
/// allocated (torch.cuda.max_memory_allocated: the live tensors), reserved
/// (max_memory_reserved: what the caching allocator holds from the driver) and the device's
/// (nvidia-smi's "used": reserved plus the CUDA context and NCCL's buffers).
struct StageMemory {
    int stage = 0; ///< pipeline rank
    /// Allocated: weights + gradients + optimizer + activations + gathered; where the backward
    /// allocates the gradients (pure 16-bit training, optimizer_in_bwd: memory_accounting.cpp)
    /// the larger of the activations with the gradients alive at the backward's start and all
    /// the gradients.
    std::int64_t peak_bytes = 0;
    /// Reserved: peak_bytes plus the allocator's slack (memory_accounting.h,
    /// allocator_slack_bytes).
    std::int64_t reserved_bytes = 0;
    /// The device's: reserved_bytes + runtime_bytes; what must fit in the capacity.
    std::int64_t device_bytes = 0;
    std::int64_t weights_bytes = 0;
    std::int64_t grads_bytes = 0;
    std::int64_t optimizer_bytes = 0;
    std::int64_t activations_bytes = 0; ///< peak of kept + transient activations
    /// ZeRO-3's gathered parameters and unsharded gradients at their peak (step_plan.h,
    /// peak_gathered_bytes); 0 otherwise. peak_bytes adds it to the activations' peak: exact
    /// where both peak in the same pass, a bound otherwise.
    std::int64_t gathered_bytes = 0;
    std::int64_t runtime_bytes = 0; ///< CUDA context, NCCL's buffers (outside the allocator)
    /// The largest working set a backward of this rank allocates at once: a layer's input
    /// gradients (one layer's kept activations) and what its chunk recomputes; free blocks the
    /// allocator must find beside the peak.
    std::int64_t transient_bytes = 0;
    RecomputePlan recompute; ///< how its layers recompute (all its chunks)

    bool operator==(const StageMemory&) const = default;
};

/// A setting under which an experiment that does not fit in memory would (oom_advice.h): the
/// first that fits of recompute selective, recompute full, ZeRO stages above the current one.
/// Neither set: no recompute or ZeRO setting fits (more GPUs for tensor or pipeline
/// parallelism are what is left).
struct OomSuggestion {
    std::optional<RecomputePolicy> recompute;
    std::optional<int> zero;

    bool fits() const { return recompute || zero; }

    bool operator==(const OomSuggestion&) const = default;
};

/// Where a step runs out of memory: the pipeline rank furthest over the capacity, and by how much.
struct OutOfMemory {
    int stage = 0;
    std::int64_t excess_bytes = 0;

    bool operator==(const OutOfMemory&) const = default;
};

/// Streams of a simulated GPU, as the trace and the timeline show them.
enum class TimelineStream : int { compute = 0, tp = 1, pp = 2, dp = 3, ep = 4 };

/// One span of a stream. Times are sim::Time, as the trace writes them; charts take seconds.
struct TimelineBar {
    int rank = 0;
    TimelineStream stream = TimelineStream::compute;
    sim::Time start = sim::Time::zero();
    sim::Time end = sim::Time::zero();
    std::string kind;  ///< forward, backward, recompute, optimizer, layer, tp-comm, pp-comm, ...
    std::string label; ///< "F3", "B3", "F3.1" (micro-batch, chunk), "L12", "AR 25 MiB"
    double flops = 0;  ///< a layer's kernels' FLOPs (kind "layer"); 0 otherwise
    std::int64_t bytes = 0; ///< a layer's HBM bytes, or a TP slice's collective bytes

    bool operator==(const TimelineBar&) const = default;
};

/// A pipeline transfer from one rank to another, for a trace's flow arrows: it left the
/// sender's pipeline stream at `start` and the pass that needed it began at `needed`.
struct TimelineTransfer {
    int from_rank = 0;
    int to_rank = 0;
    sim::Time start = sim::Time::zero();
    sim::Time needed = sim::Time::zero();
    std::string label; ///< the receiving pass's ("F3", "B3.1")

    bool operator==(const TimelineTransfer&) const = default;
};

/// Activations held by a rank from `time` on.
struct MemoryPoint {
    int rank = 0;
    sim::Time time = sim::Time::zero();
    std::int64_t activations_bytes = 0;

    bool operator==(const MemoryPoint&) const = default;
};

struct StepResult {
    std::string experiment;
    Fidelity fidelity = Fidelity::analytic;
    int gpus = 0;
    int tp = 1, pp = 1, dp = 1, micro_batches = 1, virtual_stages = 1;
    int ep = 1, etp = 1, expert_dp = 1; ///< expert layers' sizes (etp = tp unless set)
    std::string schedule;

    double step_time_s = 0;
    double tokens_per_s = 0;
    double mfu = 0;         ///< model FLOPs / (step time x GPUs x dense peak)
    double model_flops = 0; ///< per iteration, without recompute
    /// mfu with causal attention's scores counted at half, MaxText's convention
    /// (models::causal_model_flops_per_iteration).
    double mfu_causal = 0;
    double bubble_fraction = 0;       ///< pp_bubble_s / step_time_s
    double ideal_bubble_fraction = 0; ///< the schedule's closed form with equal stages
    Breakdown breakdown;
    int critical_rank = 0; ///< the pipeline rank the breakdown describes
    /// The slowest GPU's slowdown folded into step_time_s and the band it implies
    /// (straggler.h); all zero slowdowns where the framework's gpu_speed_spread is 0.
    StragglerBand straggler;

    std::vector<StageMemory> memory;          ///< per pipeline rank
    std::int64_t peak_bytes_max = 0;          ///< allocated, the largest of the ranks
    std::int64_t peak_reserved_bytes_max = 0; ///< reserved, the largest of the ranks
    std::int64_t device_bytes_max = 0;        ///< the device's, the largest of the ranks
    /// What the device reports (GpuSpec::usable_hbm_bytes): what device_bytes must fit in.
    std::int64_t capacity_bytes = 0;
    std::optional<OutOfMemory> oom; ///< set when some rank's device total exceeds the capacity
    /// Fits, but some rank's headroom (capacity - device_bytes) is below its largest backward
    /// working set (StageMemory::transient_bytes): a cache fragmented into blocks smaller
    /// than the requests can fail an allocation there (the allocator then frees its cache and
    /// retries: torch.cuda.memory_stats' num_alloc_retries, or runs out of memory). The rank.
    std::optional<int> tight_headroom;
    /// When out of memory and StepOptions::oom_advice: what would fit.
    std::optional<OomSuggestion> oom_fix;
    /// Recompute was chosen per rank (`recompute: auto`); each rank's in memory[].recompute.
    bool automatic_recompute = false;

    /// The representative GPU simulated for each pipeline rank (tensor-parallel rank 0 of
    /// data-parallel replica 0); the other GPUs do the same work.
    std::vector<int> simulated_gpus;
    std::uint64_t events = 0; ///< engine events (flow fidelity)
    /// Flow fidelity: whether symmetry was on (StepOptions::flow_symmetry); the GPUs whose
    /// communication was simulated (the representatives' data-parallel peers among them), and
    /// the GPUs whose flows were all left to an identical representative; flows simulated and
    /// flows left to representatives.
    bool flow_symmetry = false;
    std::vector<int> flow_gpus, represented_gpus;
    std::uint64_t flows = 0, represented_flows = 0;

    std::vector<TimelineBar> bars; ///< filled when asked for a timeline
    std::vector<MemoryPoint> memory_points;
    std::vector<TimelineTransfer> transfers; ///< pipeline sends between ranks (with a timeline)

    /// Field by field: a sweep's result and a run's of the same configuration are equal.
    bool operator==(const StepResult&) const = default;
};

struct StepOptions {
    Fidelity fidelity = Fidelity::analytic;
    /// Flow fidelity: simulate one representative of each class of identical flows, where that
    /// is exact (collectives::FlowOptions::symmetry); false (`--fidelity flow-full`): every flow.
    bool flow_symmetry = true;
    /// Flow fidelity: refuse, before it runs, a step whose flows would take at least this many
    /// CPU seconds (collectives/flow_estimate.h; `run --max-seconds`); 0: no bound.
    double flow_max_seconds = collectives::kDefaultFlowMaxSeconds;
    bool timeline = false;  ///< record bars and memory points (traces, Gantt charts)
    bool oom_advice = true; ///< when out of memory, search a setting that fits
    /// Simulate the step twice more, with the slowest GPU at the 5th and 95th percentile of
    /// the slowest of N (StepResult::straggler's step times; straggler.h). `run` asks for it;
    /// sweeps do not.
    bool straggler_band = false;
};

/// Simulates one step of `e`. Throws InputError for configurations that cannot run (already
/// refused by validate_experiment when `e` came from load_experiment).
StepResult simulate_step(const ExperimentSpec& e, const StepOptions& options = {});

namespace detail {
/// simulate_step on `topology` (the graph of `e.cluster`), with communicators from
/// `communicators` when not null: what StepSimulator (step_simulator.h) shares between steps.
StepResult simulate_step_on(const ExperimentSpec& e, const StepOptions& options,
                            std::shared_ptr<const hardware::Topology> topology,
                            collectives::CommunicatorCache* communicators);
} // namespace detail

} // namespace clustersim::strategies::parallel
