#pragma once
/// \file
/// The per-pass clock of a step plan: runs one layer's kernels (a forward, or a recompute then
/// a backward) on the clocks of one rank, the host issuing kernels, the compute stream and the
/// streams of tensor-parallel collectives and of parameter all-gathers, and adds up what the
/// pass spent where (PassSeconds, rounded once to a PassCost). The collectives' times come from
/// the communicators (collective_times.h), the kernels' from the layer work; what the
/// communication kernels take from the compute beside them from overlap_interference.h.
/// Internal to the step model (stage_cost.h runs it for each virtual stage).

#include "hardware/compute_model.h"
#include "strategies/models/layer_work.h"
#include "strategies/parallel/collective_times.h"
#include "strategies/parallel/ep_overlap.h"
#include "strategies/parallel/framework_spec.h"
#include "strategies/parallel/overlap_interference.h"
#include "strategies/parallel/step_plan.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace clustersim::strategies::parallel::detail {

/// The clocks of one rank while a pass runs: the host issuing kernels, the compute stream, the
/// stream of tensor-parallel collectives and that of parameter all-gathers (ZeRO-3, or the
/// distributed optimizer's gather overlapped with the forward), with the time the host issues
/// the next layer's gather (one layer ahead: the prefetch).
struct Clock {
    double host = 0;
    double gpu = 0;
    double comm = 0;
    double gather = 0;
    double prefetch = 0;
};

/// A pass's components while its closed form is evaluated, in seconds: the per-kernel
/// arithmetic and the steady-state extrapolation stay in floating point and the pass is
/// rounded to picoseconds once, in finish().
struct PassSeconds {
    double compute = 0;
    double recompute = 0;
    double tp_wait = 0;
    double ep_wait = 0;
    double host_wait = 0;
    double dp_wait = 0;
    double param_gather = 0;
    double ep_comm = 0;
    double tp_comm = 0;
    double overlap_slowdown = 0;
    int kernels = 0;

    PassSeconds& operator+=(const PassSeconds& o) {
        compute += o.compute;
        recompute += o.recompute;
        tp_wait += o.tp_wait;
        ep_wait += o.ep_wait;
        host_wait += o.host_wait;
        dp_wait += o.dp_wait;
        param_gather += o.param_gather;
        ep_comm += o.ep_comm;
        tp_comm += o.tp_comm;
        overlap_slowdown += o.overlap_slowdown;
        kernels += o.kernels;
        return *this;
    }
    friend PassSeconds operator-(PassSeconds a, const PassSeconds& b) {
        a.compute -= b.compute;
        a.recompute -= b.recompute;
        a.tp_wait -= b.tp_wait;
        a.ep_wait -= b.ep_wait;
        a.host_wait -= b.host_wait;
        a.dp_wait -= b.dp_wait;
        a.param_gather -= b.param_gather;
        a.ep_comm -= b.ep_comm;
        a.tp_comm -= b.tp_comm;
        a.overlap_slowdown -= b.overlap_slowdown;
        a.kernels -= b.kernels;
        return a;
    }
    friend PassSeconds operator*(PassSeconds a, double k) {
        a.compute *= k;
        a.recompute *= k;
        a.tp_wait *= k;
        a.ep_wait *= k;
        a.host_wait *= k;
        a.dp_wait *= k;
        a.param_gather *= k;
        a.ep_comm *= k;
        a.tp_comm *= k;
        a.overlap_slowdown *= k;
        a.kernels = static_cast<int>(std::lround(a.kernels * k));
        return a;
    }
};

/// A piece of a pass: consecutive kernels of one layer with the collectives they issue and wait
/// for (indices as in LayerWork: `after` an op, `needed_by` an op; -1 and op count at the ends).
struct Unit {
    const models::PassWork* work = nullptr;
    models::Pass pass = models::Pass::forward;
    bool recompute = false;
};

/// Transformer Engine's defaults for the pipelined reduce-scatter overlap ("pipeline": proj
/// and fc2 forward): the GEMM in 4 chunks, the reduce-scatter of each chunk run by 16 SMs taken
/// from the GEMM (transformer_engine/pytorch/module/base.py, initialize_ub: num_splits 4,
/// num_sm 16; the ring exchange of the all-gathers runs tp steps on 1 SM).
constexpr int kPipelinedRsChunks = 4;
constexpr int kPipelinedRsSms = kTeOverlapSms;

/// How the kernels of a pass run: the tensor-parallel collectives, the dtype, the framework's
/// costs, and the overlap of tensor-parallel communication with GEMMs (tp_comm_overlap).
struct PassEnv {
    CollectiveTimes* tp = nullptr;
    /// The expert-parallel and expert tensor-parallel groups (layers with experts laid out
    /// apart); null: none.
    CollectiveTimes* ep = nullptr;
    CollectiveTimes* etp = nullptr;
    CollectiveTimes* ep_rail = nullptr;
    hardware::Dtype dtype = hardware::Dtype::bf16;
    const FrameworkSpec* fw = nullptr;
    int tp_size = 1;
    bool tp_overlap = false;
    /// tp_comm_overlap as PyTorch's async TP runs it (ParallelSpec::async_tp), not as
    /// Transformer Engine's userbuffers.
    bool symm_mem = false;
    /// HBM seconds of a copy or reduction kernel moving `bytes` (the compute model's
    /// memory-bound time over the framework's memory efficiency).
    const hardware::ComputeModel* cm = nullptr;
    double copy_seconds(std::int64_t bytes) const {
        return cm == nullptr || bytes <= 0
                   ? 0.0
                   : cm->memory_bound_seconds(bytes) / fw->memory_efficiency;
    }
    /// Fraction of the SMs a GEMM keeps while a pipelined reduce-scatter runs beside it.
    double rs_gemm_share = 1;
    /// Exposed context-parallel communication after each attention kernel (seconds; 0
    /// without context parallelism): forward (recompute too) and backward.
    double cp_forward = 0;
    double cp_backward = 0;
    /// What the context-parallel ring's exchanges cost each attention kernel beside them
    /// (seconds, part of compute).
    double cp_forward_slowdown = 0;
    double cp_backward_slowdown = 0;
    /// The GPU (SMs and HBM bandwidth) the passes run on.
    const hardware::GpuSpec* gpu = nullptr;
    /// CUDA graphs (cuda_graphs.h): the whole forward-backward replayed as one graph (no
    /// kernel or collective waits for the host), or the layer scopes captured (GraphScope
    /// bits: a run of captured kernels costs the host one launch).
    bool graph_iteration = false;
    std::uint8_t graph_scopes = 0;
};

/// A layer's parameter all-gather (ZeRO-3, overlap_param_gather): its time and what it takes
/// from the compute it overlaps.
struct Gather {
    double seconds = 0;
    CommLoad load;
    /// FSDP2's copies on the compute stream (ParallelSpec::fsdp2): the gathered buffer copied
    /// out into the parameters before the layer's first kernel, and in the backward the
    /// gradients copied into the reduce-scatter buffer after its last (seconds; 0: none).
    double copy_out = 0;
    double copy_in = 0;
    /// Issued before the pass started, `lead` seconds before (VirtualStagePlan::gather_lead):
    /// not issued by the previous layer's pre-hook.
    bool ahead = false;
    double lead = 0;
    /// Of `lead`, the time the rank's compute ran beside it (VirtualStagePlan::gather_beside),
    /// which the gather slowed; the rest the rank waited with no compute.
    double beside = 0;
    /// The chunk's one bucket, all its parameters (VirtualStagePlan::gathered_ahead): the
    /// layers after the first gather nothing, and the lead is the rank's passes, compute the
    /// gather slows. Otherwise (zero_grad's first bucket of the first chunk) the lead is time
    /// the rank waits for its first activation, with no compute beside the gather.
    bool whole = false;
};

/// Runs the kernels of `units` (one layer's pass, or its recompute then backward) on `clock`.
/// `gather`: this layer's parameter all-gather (time 0: none), issued one layer ahead
/// and waited for by the layer's first kernel.
void run_units(const models::LayerWork& w, const std::vector<Unit>& units, const PassEnv& env,
               Clock& c, PassSeconds& cost, const Gather& gather = {});

/// The cost of `count` identical layers run back to back from `clock`: the first three are
/// simulated, the rest extrapolated from the steady per-layer increment (the pipeline of host,
/// compute stream and collectives repeats exactly once it has filled).
void run_layers(const models::LayerWork& w, const std::vector<Unit>& units, int count,
                const PassEnv& env, Clock& c, PassSeconds& cost, const Gather& gather = {});

/// A layer's forward as one unit; its backward as its recompute (if any) then its backward.
std::vector<Unit> forward_units(const models::LayerWork& w);
std::vector<Unit> backward_units(const models::LayerWork& w);

/// One layer with experts split as Megatron-Core's expert-parallel overlap schedules it
/// (ep_overlap.h): its kernels' GPU seconds before, between and after the dispatch and combine
/// all-to-alls of each pass (the framework's efficiencies applied; a recompute's kernels with
/// those before the combine's backward), the experts' weight gradients apart, and the
/// all-to-alls' seconds. nullopt: the layer has no expert-parallel all-to-all.
std::optional<EpOverlapLayer> ep_overlap_layer(const models::LayerWork& w, const PassEnv& env);

/// Ends a pass: the compute stream waits for the collectives still in flight. Returns the
/// pass's cost in picoseconds.
PassCost finish(Clock& c, const PassSeconds& cost);

} // namespace clustersim::strategies::parallel::detail
