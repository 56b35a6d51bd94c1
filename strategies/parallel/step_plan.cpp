#include "strategies/parallel/step_plan.h"

#include "base/error.h"
#include "strategies/models/fp8.h"
#include "strategies/models/memory_formulas.h"
#include "strategies/parallel/context_parallel_comm.h"
#include "strategies/parallel/executed_step.h"
#include "strategies/parallel/overlap_interference.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>

namespace clustersim::strategies::parallel {

std::string_view to_string(DpRole r) {
    switch (r) {
    case DpRole::grad_all_reduce:
        return "grad all-reduce";
    case DpRole::grad_reduce_scatter:
        return "grad reduce-scatter";
    case DpRole::param_all_gather:
        return "param all-gather";
    case DpRole::embedding_grad_all_reduce:
        break;
    }
    return "embedding grad all-reduce";
}

namespace {

using models::LayerWork;
using models::Pass;
using models::Recompute;

collectives::Op to_collective(models::TpOp op) {
    switch (op) {
    case models::TpOp::all_reduce:
        return collectives::Op::all_reduce;
    case models::TpOp::all_gather:
        return collectives::Op::all_gather;
    case models::TpOp::reduce_scatter:
        return collectives::Op::reduce_scatter;
    case models::TpOp::all_to_all:
        return collectives::Op::all_to_all;
    }
    return collectives::Op::all_reduce;
}

/// A communicator over `gpus`: shared from the plan's cache when it has one, else built into
/// `owned` (which must outlive its use).
const collectives::Communicator* communicator(const StepPlan& plan, const std::vector<int>& gpus,
                                              std::unique_ptr<collectives::Communicator>& owned) {
    if (plan.communicators != nullptr)
        return &plan.communicators->get(gpus);
    owned = std::make_unique<collectives::Communicator>(*plan.topology, gpus);
    return owned.get();
}

/// Predicted times of collectives on one communicator, cached by (op, bytes, dtype).
class CollectiveTimes {
public:
    explicit CollectiveTimes(const collectives::Communicator* comm)
        : comm_(comm) {}
    sim::Time time(const collectives::Collective& c) { return entry(c).time; }
    /// What `c` takes from the compute beside it while it runs (overlap_interference.h).
    CommLoad load(const collectives::Collective& c) {
        Entry& e = entry(c);
        if (!e.has_load) {
            collectives::Collective rounded = c;
            rounded.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, comm_->size());
            e.load = nccl_load(*comm_, rounded, e.algorithm, e.time.seconds());
            e.has_load = true;
        }
        return e.load;
    }

private:
    /// A collective's time, the algorithm it runs with and (once asked for) its load.
    struct Entry {
        sim::Time time;
        collectives::Algorithm algorithm = collectives::Algorithm::ring;
        bool has_load = false;
        CommLoad load;
    };
    Entry& entry(const collectives::Collective& c) {
        if (comm_ == nullptr || comm_->size() < 2) {
            none_ = Entry{};
            none_.has_load = true;
            return none_;
        }
        const auto key =
            std::make_tuple(static_cast<int>(c.op), c.bytes, static_cast<int>(c.dtype));
        auto it = cache_.find(key);
        if (it != cache_.end())
            return it->second;
        collectives::Collective rounded = c;
        rounded.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, comm_->size());
        Entry e;
        if (rounded.bytes > 0) {
            const collectives::Choice choice = comm_->choose(rounded);
            e.time = choice.time;
            e.algorithm = choice.algorithm;
        } else {
            e.has_load = true;
        }
        return cache_.emplace(key, e).first->second;
    }
    const collectives::Communicator* comm_;
    std::map<std::tuple<int, std::int64_t, int>, Entry> cache_;
    Entry none_;
};

/// Collectives carry activations in 16-bit types as they are, everything else as fp32.
hardware::Dtype comm_dtype(hardware::Dtype d) {
    switch (d) {
    case hardware::Dtype::fp16:
        return hardware::Dtype::fp16;
    case hardware::Dtype::bf16:
    case hardware::Dtype::fp8:
        return hardware::Dtype::bf16;
    default:
        return hardware::Dtype::fp32;
    }
}

/// The dtype data-parallel gradients are reduced in: fp32 main gradients, or the 16-bit
/// training dtype when the framework reduces those (FrameworkSpec::fp32_grad_reduce).
hardware::Dtype grad_reduce_dtype(const ExperimentSpec& e) {
    const auto d = e.training.dtype;
    if (e.framework.fp32_grad_reduce || hardware::bytes_per_element(d) >= 4)
        return hardware::Dtype::fp32;
    return d == hardware::Dtype::fp8 ? hardware::Dtype::bf16 : d;
}

/// The dtype the weights are kept and gathered in: bf16 under FP8 training (fp8.h).
hardware::Dtype weight_dtype(hardware::Dtype d) {
    return d == hardware::Dtype::fp8 ? hardware::Dtype::bf16 : d;
}

/// Model state of a rank holding `dense` parameters sharded over the data-parallel (shard) x
/// context-parallel group and `experts` (routed experts laid out apart) sharded over the
/// expert-data-parallel group of `edp`, `layer_parameters` of them all in its transformer
/// layers; FP8 training adds the FP8 copies of the layers' weights (fp8.h) to the weights.
models::ModelStateBytes state_bytes(const ExperimentSpec& e, std::int64_t dense,
                                    std::int64_t experts, int edp, std::int64_t layer_parameters) {
    const ParallelSpec& par = e.parallel;
    const auto dtype = weight_dtype(e.training.dtype);
    models::ModelStateBytes m =
        models::model_state_bytes(dense, dtype, e.training.optimizer, par.zero, par.shard_cp());
    if (experts > 0) {
        const auto x =
            models::model_state_bytes(experts, dtype, e.training.optimizer, par.zero, edp);
        m.weights += x.weights;
        m.gradients += x.gradients;
        m.optimizer += x.optimizer;
    }
    // Transformer Engine's delayed scaling keeps FP8 copies of the weights across the step;
    // torchao's tensorwise casts them in every forward and keeps none (models::Fp8Recipe).
    if (e.training.dtype == hardware::Dtype::fp8 &&
        e.training.fp8_recipe == models::Fp8Recipe::delayed)
        m.weights += models::kFp8WeightCopyBytes * layer_parameters;
    return m;
}

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
        a.overlap_slowdown *= k;
        a.kernels = static_cast<int>(std::lround(a.kernels * k));
        return a;
    }
};

/// A piece of a pass: consecutive kernels of one layer with the collectives they issue and wait
/// for (indices as in LayerWork: `after` an op, `needed_by` an op; -1 and op count at the ends).
struct Unit {
    const models::PassWork* work = nullptr;
    Pass pass = Pass::forward;
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

/// How a tensor-parallel collective runs under tp_comm_overlap: on its own (`none`, also
/// Transformer Engine's "bulk" overlaps of the backward, which the plain schedule already
/// overlaps with the next GEMM), as a ring exchange feeding the GEMM that needs it (an
/// all-gather right before a GEMM) or pipelined behind the GEMM that produces it (a
/// reduce-scatter right after a forward GEMM).
enum class TpOverlap : std::uint8_t { none, ring, pipelined };

TpOverlap overlap_of(const models::TpCollective& tc, const models::PassWork& work) {
    if (tc.group != models::CommGroup::tp)
        return TpOverlap::none;
    const auto& ops = work.ops;
    auto gemm = [&](int i) {
        return i >= 0 && i < ops.count() &&
               ops[static_cast<std::size_t>(i)].kind == models::OpKind::gemm;
    };
    if (tc.op == models::TpOp::all_gather && !tc.regather && tc.needed_by == tc.after + 1 &&
        gemm(tc.needed_by))
        return TpOverlap::ring;
    if (tc.op == models::TpOp::reduce_scatter && tc.pass != Pass::backward &&
        tc.needed_by == tc.after + 1 && gemm(tc.after))
        return TpOverlap::pipelined;
    return TpOverlap::none;
}

/// Runs the kernels of `units` (one layer's pass, or its recompute then backward) on `clock`.
/// `gather`: this layer's parameter all-gather (time 0: none), issued one layer ahead
/// and waited for by the layer's first kernel.
void run_units(const LayerWork& w, const std::vector<Unit>& units, const PassEnv& env, Clock& c,
               PassSeconds& cost, const Gather& gather = {}) {
    const FrameworkSpec& fw = *env.fw;
    const double host_overhead = fw.host_overhead.seconds();
    const double collective_host = host_overhead + fw.collective_overhead.seconds();
    const double inv_gemm_eff = 1.0 / fw.gemm_efficiency;
    const double inv_memory_eff = 1.0 / fw.memory_efficiency;
    if (gather.seconds > 0) {
        // Issued by the previous layer's pre-hook (c.prefetch), after the gathers before it, or
        // before the pass (gather.ahead); this layer's pre-hook issues the next one now.
        const double start = gather.ahead ? -gather.lead : std::max(c.prefetch, c.gather);
        c.gather = start + gather.seconds;
        c.prefetch = c.host;
        cost.param_gather += gather.seconds;
        // It ran beside the compute of the previous layer (a layer like this one: its kernels'
        // mix of tensor-core and memory-bound time sets the share they lose), which it slowed.
        // A gather issued ahead (gather.ahead: a chunk's whole gather, or zero_grad's first
        // bucket) ran from -lead; of that lead, the last `beside` had the rank's own passes
        // beside it (the rest the rank waited for its first activation, or, for the first
        // chunk under align_param_gather, for nothing at all: beside 0), then beside nothing
        // (this pass's first kernel waits for it). What it overlapped of that compute is
        // charged by the same rule as any overlapped collective (overlap_slowdown: at most
        // seconds x share) to this pass, as the first pass that needs it. On one rank the
        // compute stream is serial, so the rank's passes end where they would with the charge
        // spread over the passes it overlapped; only their outputs leave a little earlier than
        // they would. The same PassCost serves the analytic and the flow executors. A negative
        // lead (not produced by the plans: see VirtualStagePlan::gathered_ahead) would be its
        // start.
        const double from =
            gather.ahead ? -std::min(gather.lead, gather.beside) : std::max(0.0, start);
        const double overlapped = std::max(0.0, std::min(c.gather, c.gpu) - from);
        if (overlapped > 0) {
            double all = 0, memory = 0;
            for (const Unit& u : units)
                for (const models::Op& op : u.work->ops) {
                    all += op.time.seconds();
                    if (op.kind == models::OpKind::memory_bound)
                        memory += op.time.seconds();
                }
            const double f = all > 0 ? memory / all : 0;
            const double share = (1 - f) * gather.load.sm_share + f * gather.load.hbm_share;
            const double slow = overlap_slowdown(gather.seconds, overlapped, share);
            c.gpu += slow;
            cost.compute += slow;
            cost.overlap_slowdown += slow;
        }
        if (c.gather > c.gpu) {
            cost.dp_wait += c.gather - c.gpu;
            c.gpu = c.gather;
        }
        // FSDP2's copy-out: a memory-bound kernel on the compute stream (compute, not a wait).
        c.gpu += gather.copy_out;
        cost.compute += gather.copy_out;
    }
    using Mask = std::uint32_t; // bit k: w.collectives[k]
    static_assert(models::kMaxLayerCollectives <= 32, "collective masks are 32 bits");
    const std::size_t nc = w.collectives.size();
    // Communication kernels in flight beside the compute stream (overlap_interference.h).
    // Per thread and reused (sweeps run this for every layer of every configuration): only
    // the first span_count entries are read.
    thread_local std::array<CommSpan, 2 * models::kMaxLayerCollectives> spans;
    std::size_t span_count = 0;
    for (const Unit& u : units) {
        const auto& ops = u.work->ops;
        const int n = ops.count();
        // Completion times of this unit's collectives, by index in w.collectives; for a ring
        // exchange, its start.
        std::array<double, models::kMaxLayerCollectives> done{};
        std::array<double, models::kMaxLayerCollectives> ring_end{};
        std::array<TpOverlap, models::kMaxLayerCollectives> how{};
        // This pass's collectives as bit masks, by the op they follow (slot 0: issued at the
        // pass's start, slot i + 1: after op i) and by the op that waits for them (slot n: the
        // pass's end), so that each op looks at its own collectives only; bits are visited in
        // index order, as the collectives were listed.
        std::array<Mask, models::kMaxOpsPerPass + 1> issued_after{};
        std::array<Mask, models::kMaxOpsPerPass + 1> waited_by{};
        std::array<Mask, models::kMaxOpsPerPass + 1> ring_feeds{};
        std::array<bool, models::kMaxOpsPerPass> pipelined_after{};
        for (std::size_t k = 0; k < nc; ++k) {
            const auto& tc = w.collectives[k];
            if (tc.pass != u.pass)
                continue;
            how[k] = env.tp_overlap ? overlap_of(tc, *u.work) : TpOverlap::none;
            const auto bit = static_cast<Mask>(Mask{1} << k);
            if (tc.after < n)
                issued_after[static_cast<std::size_t>(std::max(tc.after, -1) + 1)] |= bit;
            if (tc.needed_by >= 0 && tc.needed_by <= n) {
                auto& slot = how[k] == TpOverlap::ring ? ring_feeds : waited_by;
                slot[static_cast<std::size_t>(tc.needed_by)] |= bit;
            }
            if (how[k] == TpOverlap::pipelined && tc.after >= 0 && tc.after < n)
                pipelined_after[static_cast<std::size_t>(tc.after)] = true;
        }
        double gemm_start = 0;
        auto issue_collective = [&](std::size_t k) {
            const models::TpCollective& tc = w.collectives[k];
            const double issue = c.host;
            c.host += collective_host;
            ++cost.kernels;
            collectives::Collective coll;
            coll.op = to_collective(tc.op);
            coll.bytes = tc.bytes;
            coll.dtype = comm_dtype(env.dtype);
            CollectiveTimes* times = tc.group == models::CommGroup::ep        ? env.ep
                                     : tc.group == models::CommGroup::etp     ? env.etp
                                     : tc.group == models::CommGroup::ep_rail ? env.ep_rail
                                                                              : env.tp;
            if (how[k] == TpOverlap::pipelined && env.symm_mem) {
                // PyTorch's fused_matmul_reduce_scatter (_pipelined_produce_and_all2all): the
                // GEMM as one chunk per rank, the other ranks' chunks first, each pulled by its
                // rank with the copy engine while the next one computes (a ring step: the
                // collective's time over tp - 1), the own chunk last; then a reduction kernel
                // on the compute stream sums the tp partial chunks (reads the whole output,
                // writes its shard), which the next kernel waits for.
                const int parts = std::max(2, env.tp_size);
                const double step = env.tp->time(coll).seconds() / (parts - 1);
                const double g = (c.gpu - gemm_start) / parts;
                double t = std::max(issue, c.comm);
                for (int j = 1; j < parts; ++j)
                    t = std::max(t, gemm_start + j * g) + step;
                c.comm = t;
                done[k] = std::max(t, c.gpu) + env.copy_seconds(tc.bytes + tc.bytes / parts);
                return;
            }
            if (how[k] == TpOverlap::pipelined) {
                // The GEMM's output in chunks, each reduce-scattered as soon as it is done: the
                // last chunk's reduce-scatter and what the chunks' GEMMs cannot hide are exposed.
                coll.bytes = tc.bytes / kPipelinedRsChunks;
                const double r = env.tp->time(coll).seconds();
                const double g = (c.gpu - gemm_start) / kPipelinedRsChunks;
                double t = std::max(issue, c.comm);
                for (int j = 1; j <= kPipelinedRsChunks; ++j)
                    t = std::max(t, gemm_start + j * g) + r;
                done[k] = t;
                c.comm = t;
                return;
            }
            const double start = std::max({issue, c.gpu, c.comm});
            const double took = times != nullptr ? times->time(coll).seconds() : 0.0;
            done[k] = start + took;
            // What it takes from the kernels beside it: a ring exchange runs on the copy
            // engines (Transformer Engine's use_ce, no SM margin); a bulk overlap of Transformer
            // Engine (tp_comm_overlap's other tensor-parallel collectives) on its num_sm SMs;
            // the rest are NCCL kernels (async TP's unfused collectives too).
            if (took > 0 && how[k] != TpOverlap::ring && env.gpu != nullptr) {
                CommLoad load;
                if (env.tp_overlap && !env.symm_mem && tc.group == models::CommGroup::tp) {
                    const double each_way = collectives::bus_factor(coll.op, env.tp_size) *
                                            static_cast<double>(tc.bytes);
                    load = comm_load(*env.gpu, kTeOverlapSms, 2 * each_way, took);
                } else if (times != nullptr) {
                    load = times->load(coll);
                }
                if (span_count == spans.size()) {
                    // Drop the spans that ended before the compute stream's present.
                    std::size_t kept = 0;
                    for (std::size_t j = 0; j < span_count; ++j)
                        if (spans[j].end > c.gpu)
                            spans[kept++] = spans[j];
                    span_count = kept;
                }
                if (span_count < spans.size())
                    spans[span_count++] = CommSpan{start, start + took, load};
            }
            if (tc.group != models::CommGroup::tp)
                cost.ep_comm += took;
            // A ring exchange starts now; the GEMM that needs it reads `done` as its start.
            c.comm = done[k];
            ring_end[k] = done[k];
            if (how[k] == TpOverlap::ring)
                done[k] = start;
        };
        auto issue_all = [&](Mask mask) {
            for (; mask != 0; mask &= mask - 1)
                issue_collective(static_cast<std::size_t>(std::countr_zero(mask)));
        };
        // The latest of the collectives op `needed_by` waits for; `expert`: whether that one
        // is an expert-parallel collective (its wait is counted apart).
        auto wait_for = [&](int needed_by, bool& expert) {
            double need = 0;
            expert = false;
            for (Mask mask = waited_by[static_cast<std::size_t>(needed_by)]; mask != 0;
                 mask &= mask - 1) {
                const auto k = static_cast<std::size_t>(std::countr_zero(mask));
                if (done[k] > need) {
                    need = done[k];
                    expert = w.collectives[k].group != models::CommGroup::tp;
                }
            }
            return need;
        };
        bool expert_wait = false;
        issue_all(issued_after[0]);
        for (int i = 0; i < n; ++i) {
            const auto slot = static_cast<std::size_t>(i);
            const models::Op& op = ops[slot];
            const double issue = c.host;
            c.host += host_overhead * op.kernels;
            cost.kernels += op.kernels;
            const double host_ready = std::max(c.gpu, issue);
            const double start = std::max(host_ready, wait_for(i, expert_wait));
            cost.host_wait += host_ready - c.gpu;
            (expert_wait ? cost.ep_wait : cost.tp_wait) += start - host_ready;
            const double t =
                op.time.seconds() *
                (op.kind == models::OpKind::memory_bound ? inv_memory_eff : inv_gemm_eff);
            // Slower beside the communication kernels in flight (those that ended before it
            // started dropped first).
            if (span_count > 0) {
                std::size_t kept = 0;
                for (std::size_t j = 0; j < span_count; ++j)
                    if (spans[j].end > start)
                        spans[kept++] = spans[j];
                span_count = kept;
            }
            const double slow =
                span_count == 0
                    ? 0.0
                    : stretched_end(start, t, op.kind,
                                    std::span<const CommSpan>(spans.data(), span_count)) -
                          (start + t);
            (u.recompute ? cost.recompute : cost.compute) += t + slow;
            cost.overlap_slowdown += slow;
            gemm_start = start;
            double end = start + t;
            // A ring-exchange all-gather feeding this GEMM: chunk j of the GEMM needs the j-th
            // shard, which arrives j ring steps after the exchange began (shard 0 is local).
            for (Mask mask = ring_feeds[slot]; mask != 0; mask &= mask - 1) {
                const auto k = static_cast<std::size_t>(std::countr_zero(mask));
                const int parts = std::max(2, env.tp_size);
                const double step = (ring_end[k] - done[k]) / (parts - 1);
                const double g = t / parts;
                double ring_start = done[k];
                end = start;
                if (env.symm_mem) {
                    // PyTorch's fused_all_gather_matmul (_pipelined_all_gather_and_consume): the
                    // local shard is first copied into the symmetric buffer on the compute
                    // stream and the ranks meet at a barrier, before the first chunk and
                    // before any shard is pulled (its source: overlapping the copy with the
                    // first chunk was given up).
                    end = std::max(start, ring_start) +
                          env.copy_seconds(2 * w.collectives[k].bytes / parts);
                    ring_start = end;
                }
                for (int j = 0; j < parts; ++j)
                    end = std::max(end, ring_start + j * step) + g;
            }
            if (pipelined_after[slot] && !env.symm_mem)
                end += t * (1 / env.rs_gemm_share - 1); // the SMs the reduce-scatter runs on
            // The context-parallel ring's exchanges the attention steps do not hide (counted
            // with the tensor-parallel waits).
            double cp_slow = 0;
            if (op.kind == models::OpKind::fused_attention) {
                end += u.pass == Pass::backward ? env.cp_backward : env.cp_forward;
                // The attention steps slowed by the exchanges beside them (compute).
                cp_slow =
                    u.pass == Pass::backward ? env.cp_backward_slowdown : env.cp_forward_slowdown;
                (u.recompute ? cost.recompute : cost.compute) += cp_slow;
                cost.overlap_slowdown += cp_slow;
            }
            cost.tp_wait += end - start - t;
            end += slow + cp_slow;
            c.gpu = end;
            issue_all(issued_after[slot + 1]);
        }
        const double need = wait_for(n, expert_wait);
        if (need > c.gpu) {
            (expert_wait ? cost.ep_wait : cost.tp_wait) += need - c.gpu;
            c.gpu = need;
        }
    }
    if (gather.copy_in > 0 && !units.empty() && units.back().pass == Pass::backward) {
        c.gpu += gather.copy_in;
        cost.compute += gather.copy_in;
    }
}

/// The cost of `count` identical layers run back to back from `clock`: the first three are
/// simulated, the rest extrapolated from the steady per-layer increment (the pipeline of host,
/// compute stream and collectives repeats exactly once it has filled).
void run_layers(const LayerWork& w, const std::vector<Unit>& units, int count, const PassEnv& env,
                Clock& c, PassSeconds& cost, const Gather& gather = {}) {
    constexpr int kSimulated = 3;
    Clock before = c;
    PassSeconds before_cost = cost;
    for (int i = 0; i < std::min(count, kSimulated); ++i) {
        before = c;
        before_cost = cost;
        if (i > 0 && gather.ahead) {
            // The chunk's whole gather was the first layer's; zero_grad's first bucket was,
            // the next layers' gathers chain from their pre-hooks.
            Gather next = gather.whole ? Gather{} : gather;
            next.ahead = false;
            next.lead = 0;
            run_units(w, units, env, c, cost, next);
        } else {
            run_units(w, units, env, c, cost, gather);
        }
    }
    if (count > kSimulated) {
        const double k = count - kSimulated;
        const PassSeconds step = cost - before_cost;
        c.host += k * (c.host - before.host);
        c.comm += k * (c.comm - before.comm);
        c.gpu += k * (c.gpu - before.gpu);
        c.gather += k * (c.gather - before.gather);
        c.prefetch += k * (c.prefetch - before.prefetch);
        cost += step * k;
    }
}

std::vector<Unit> forward_units(const LayerWork& w) {
    return {{&w.forward, Pass::forward, false}};
}
std::vector<Unit> backward_units(const LayerWork& w) {
    std::vector<Unit> u;
    if (!w.recompute.ops.empty())
        u.push_back({&w.recompute, Pass::recompute, true});
    u.push_back({&w.backward, Pass::backward, false});
    return u;
}

/// Ends a pass: the compute stream waits for the collectives still in flight. Returns the
/// pass's cost in picoseconds.
PassCost finish(Clock& c, const PassSeconds& cost) {
    c.gpu = std::max(c.gpu, c.comm);
    PassCost out;
    out.compute = sim::Time::from_seconds(cost.compute);
    out.recompute = sim::Time::from_seconds(cost.recompute);
    out.tp_wait = sim::Time::from_seconds(cost.tp_wait);
    out.ep_wait = sim::Time::from_seconds(cost.ep_wait);
    out.host_wait = sim::Time::from_seconds(cost.host_wait);
    out.dp_wait = sim::Time::from_seconds(cost.dp_wait);
    out.param_gather = sim::Time::from_seconds(cost.param_gather);
    out.ep_comm = sim::Time::from_seconds(cost.ep_comm);
    out.overlap_slowdown = sim::Time::from_seconds(cost.overlap_slowdown);
    out.time =
        out.compute + out.recompute + out.tp_wait + out.ep_wait + out.host_wait + out.dp_wait;
    out.kernels = cost.kernels;
    return out;
}

/// Everything that depends on the experiment but not on a stage's recompute choice.
struct Context {
    /// Every member from its initialiser, the layer works as LayerWork's default constructor
    /// leaves them (their op lists' slots uninitialised): an aggregate initialisation of this
    /// struct cleared all its ~97 KiB first (a memset per configuration).
    Context(const ExperimentSpec& experiment, const FrameworkSpec& framework, bool zero3_)
        : e(experiment)
        , cm(experiment.cluster)
        , tp_times(nullptr)
        , fw(framework)
        , zero3(zero3_) {}

    const ExperimentSpec& e;
    const hardware::ComputeModel cm;
    std::array<LayerWork, 3> layer; ///< by Recompute: none, selective, full
    LayerWork embedding;
    LayerWork head;
    std::unique_ptr<collectives::Communicator> tp_comm;
    CollectiveTimes tp_times;
    FrameworkSpec fw;
    /// The data-parallel (shard) group of pipeline rank 0 (the others are alike): parameter
    /// gathers.
    std::unique_ptr<collectives::Communicator> dp_comm;
    CollectiveTimes dp_times{nullptr};
    PassEnv env;
    bool zero3 = false; ///< parameters gathered per layer in every pass

    /// Time of all-gathering the parameters `params` (of one tensor-parallel rank) over the
    /// data-parallel shard group, in the dtype they are kept in for compute.
    Gather gather_time(std::int64_t params) {
        collectives::Collective c;
        c.op = collectives::Op::all_gather;
        c.dtype = comm_dtype(e.training.dtype);
        c.bytes = params * hardware::bytes_per_element(c.dtype);
        if (c.bytes <= 0)
            return {};
        Gather g{dp_times.time(c).seconds(), dp_times.load(c)};
        if (e.parallel.fsdp2) {
            // FSDP2 (torch/distributed/_composable/fsdp/_fsdp_collectives.py, PyTorch 2.5-2.6,
            // torchtitan's at its December 2024 benchmark): foreach_all_gather_copy_out waits
            // for the all-gather on the current stream and splits the flat output into the
            // parameters there (split_with_sizes_copy: the gathered bytes read and written);
            // foreach_reduce copies the unsharded gradients into the reduce-scatter input in
            // its reduce dtype (torchtitan's mixed_precision_reduce, float32) and the current
            // stream waits for that copy-in before it frees them.
            g.copy_out = env.copy_seconds(2 * c.bytes);
            g.copy_in =
                env.copy_seconds(params * (hardware::bytes_per_element(c.dtype) +
                                           hardware::bytes_per_element(grad_reduce_dtype(e))));
        }
        return g;
    }
    /// A mixture of experts' dense layers (first_k_dense_replace), by Recompute.
    std::array<LayerWork, 3> dense_layer;
    /// Experts laid out apart: the expert-parallel and expert tensor-parallel groups of the
    /// first GPU (the others are alike).
    std::unique_ptr<collectives::Communicator> ep_comm{};
    CollectiveTimes ep_times{nullptr};
    std::unique_ptr<collectives::Communicator> etp_comm{};
    CollectiveTimes etp_times{nullptr};
    /// The flex dispatcher's rail: the expert-parallel group's GPUs of one local rank.
    std::unique_ptr<collectives::Communicator> ep_rail_comm{};
    CollectiveTimes ep_rail_times{nullptr};

    /// What a virtual stage's costs depend on beside this context (cost_stage): its recompute
    /// plan, how many of its layers are a mixture of experts' dense ones, and whether it holds
    /// the embedding and the head. The rest of its inputs (layer works, communicators,
    /// framework, pass environment) are the context's and fixed once the stages are costed, and
    /// the collective times cached in it are pure functions of the collective, so two stages
    /// alike in this key get identical costs: a pipeline's middle stages, with equal layer
    /// counts, are costed once per plan instead of once each.
    struct StageKey {
        int layers = 0;
        RecomputePlan recompute;
        int dense = 0;
        bool embedding = false;
        bool head = false;
        /// VirtualStagePlan::gathered_ahead, gather_lead and gather_beside: a chunk's parameter
        /// gather issued ahead changes its first forward's cost.
        bool gathered_ahead = false;
        sim::Time gather_lead;
        sim::Time gather_beside;
        bool operator==(const StageKey& o) const {
            return layers == o.layers && recompute.none == o.recompute.none &&
                   recompute.selective == o.recompute.selective &&
                   recompute.full == o.recompute.full && dense == o.dense &&
                   embedding == o.embedding && head == o.head &&
                   gathered_ahead == o.gathered_ahead && gather_lead == o.gather_lead &&
                   gather_beside == o.gather_beside;
        }
    };
    /// The stages costed so far, by key (a handful per plan: searched in order).
    std::vector<std::pair<StageKey, VirtualStagePlan>> stage_costs{};
};

const LayerWork& layer_of(const Context& ctx, Recompute r) {
    return ctx.layer[static_cast<std::size_t>(r)];
}

/// How many of the layers of stage `st` under recompute plan `rp` are a mixture of experts'
/// first dense layers (the lowest of their stage).
int dense_layers(const Context& ctx, const VirtualStagePlan& st, const RecomputePlan& rp) {
    const auto& model = ctx.e.model;
    return model.is_moe() ? std::clamp(model.first_k_dense_replace - st.first_layer, 0,
                                       rp.full + rp.selective + rp.none)
                          : 0;
}

/// Costs, activations and gradient buckets of virtual stage `vs` under recompute plan `rp`.
void cost_stage_once(Context& ctx, VirtualStagePlan& st, const RecomputePlan& rp) {
    st.recompute = rp;
    const auto dtype = ctx.e.training.dtype;
    const FrameworkSpec& ho = ctx.fw;
    // The layers in order of recompute: full-recompute layers first (the lowest ones), then
    // selective, then none; their order does not change the time.
    // A mixture of experts' first dense layers are the lowest of their stage.
    int dense = dense_layers(ctx, st, rp);
    std::array<std::pair<const LayerWork*, int>, 6> groups{};
    std::size_t g = 0;
    for (auto [r, n] :
         {std::pair{Recompute::full, rp.full}, std::pair{Recompute::selective, rp.selective},
          std::pair{Recompute::none, rp.none}}) {
        const int d = std::min(dense, n);
        dense -= d;
        groups[g++] = {&ctx.dense_layer[static_cast<std::size_t>(r)], d};
        groups[g++] = {&layer_of(ctx, r), n - d};
    }

    // The head's parameters this stage holds: all of them, or with tied embeddings on the
    // embedding's stage only the final norm (the LM head is the embedding's matrix).
    const bool tied_here = ctx.head.shares_embedding_weights && ctx.e.parallel.pp == 1;
    const std::int64_t head_params =
        tied_here ? ctx.head.parameters - models::padded_vocab(ctx.e.model, ctx.e.parallel.tp) /
                                              ctx.e.parallel.tp * ctx.e.model.hidden
                  : ctx.head.parameters;
    // FSDP2's root unit as torchtitan wraps it without a pipeline (the embedding, the final
    // norm and the output layer, under fully_shard(model); the memory below has the sources):
    // one all-gather in the root's pre-forward, before the embedding runs, and none in the
    // backward, the root never being resharded after forward.
    const bool root_unit = ctx.zero3 && ctx.e.parallel.fsdp2 && ctx.e.parallel.pp == 1;
    const std::int64_t root_params =
        (st.embedding ? ctx.embedding.parameters : 0) + (st.head ? head_params : 0);
    // Each micro-batch starts with the host alone (get_batch synchronises host and device).
    // That is the Megatron training loop's machinery (batch broadcast, masks, loss averaging),
    // which the transformer models run under; the MLP is the lecture's plain PyTorch loop of
    // matmuls and sends, which has none of it.
    auto run_forward = [&](bool gathers, Clock& c) {
        c = Clock{};
        // Megatron-Core fetches the batch on the chunks holding the embedding or the loss
        // only (FrameworkSpec::batch_on_every_stage).
        const bool fetches = ho.batch_on_every_stage || st.embedding || st.head;
        c.host = ctx.e.model.is_transformer() && fetches ? ho.microbatch_overhead.seconds() : 0.0;
        PassSeconds f;
        // Gathered ahead (st.gathered_ahead): the chunk's one bucket, all its parameters,
        // waited for by its first module's pre-hook; nothing gathered after it.
        const bool ahead = gathers && st.gathered_ahead;
        Gather chunk_gather;
        if (ahead) {
            std::int64_t params = st.embedding ? ctx.embedding.parameters : 0;
            for (auto [wp, n] : groups)
                params += n * wp->parameters;
            if (st.head)
                params += head_params;
            chunk_gather = ctx.gather_time(params);
            chunk_gather.ahead = true;
            chunk_gather.whole = true;
            chunk_gather.lead = st.gather_lead.seconds();
            chunk_gather.beside = st.gather_beside.seconds();
        }
        bool first_unit = true;
        auto gather_of = [&](std::int64_t params) {
            const bool first = first_unit;
            first_unit = false;
            if (ahead)
                return first ? chunk_gather : Gather{};
            Gather layer = gathers ? ctx.gather_time(params) : Gather{};
            // The first chunk's first bucket, issued by zero_grad at the step's start: on a
            // rank after the first, gather_lead before its first forward (VirtualStagePlan::
            // gather_lead). The distributed optimizer's gathers only (first_forward): ZeRO-3's
            // per-pass gathers are issued by the pass.
            if (first && layer.seconds > 0 && !ctx.zero3 && st.gather_lead > sim::Time::zero()) {
                layer.ahead = true;
                layer.lead = st.gather_lead.seconds();
                layer.beside = st.gather_beside.seconds();
            }
            return layer;
        };
        if (st.embedding)
            run_units(ctx.embedding, forward_units(ctx.embedding), ctx.env, c, f,
                      gather_of(root_unit ? root_params : ctx.embedding.parameters));
        for (auto [wp, n] : groups) {
            if (n > 0) {
                const LayerWork& w = *wp;
                run_layers(w, forward_units(w), n, ctx.env, c, f, gather_of(w.parameters));
            }
        }
        if (st.head)
            run_units(ctx.head, forward_units(ctx.head), ctx.env, c, f,
                      root_unit && st.embedding ? Gather{} : gather_of(head_params));
        return finish(c, f);
    };
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
    const bool gathered_per_step = ctx.zero3 && ctx.e.parallel.fsdp2 && ctx.e.parallel.pp > 1;
    const bool gathers_per_pass = ctx.zero3 && !gathered_per_step;
    Clock c;
    st.forward = run_forward(gathers_per_pass, c);
    st.first_forward = st.forward;
    if ((ctx.e.parallel.overlap_param_gather && ctx.e.parallel.dp_cp() > 1 &&
         !ctx.e.training.forward_only) ||
        gathered_per_step) {
        Clock first;
        st.first_forward = run_forward(true, first);
    }

    // Backward: head first, then the layers from the last down, then the embedding. Bucket
    // readiness follows the layers' completion within the pass.
    const double grad_bytes_per_param =
        static_cast<double>(hardware::bytes_per_element(grad_reduce_dtype(ctx.e)));
    const std::int64_t bucket_limit = std::max<std::int64_t>(1, ctx.e.parallel.dp_bucket);
    st.buckets.clear();
    std::int64_t pending = 0;
    std::int64_t pending_expert = 0; // routed experts' gradients, in buckets of their own
    auto add_grads = [&](std::int64_t params, double at, std::int64_t expert_params = 0) {
        pending += static_cast<std::int64_t>((params - expert_params) * grad_bytes_per_param);
        if (pending >= bucket_limit) {
            st.buckets.push_back({pending, sim::Time::from_seconds(at)});
            pending = 0;
        }
        if (expert_params > 0) {
            pending_expert += static_cast<std::int64_t>(expert_params * grad_bytes_per_param);
            if (pending_expert >= bucket_limit) {
                st.buckets.push_back({pending_expert, sim::Time::from_seconds(at), true});
                pending_expert = 0;
            }
        }
    };
    c = Clock{};
    PassSeconds b;
    // A backward's gather of a unit: none for FSDP2's root (kept gathered since the forward),
    // whose gradients are still copied into its reduce-scatter input (Gather::copy_in).
    auto backward_gather = [&](std::int64_t params) {
        if (!gathers_per_pass)
            return Gather{};
        Gather gather = ctx.gather_time(params);
        if (root_unit) {
            gather.seconds = 0;
            gather.load = {};
            gather.copy_out = 0;
        }
        return gather;
    };
    // FSDP2's root unit has no post-backward hook of its own (its forward inputs, token ids,
    // need no gradient: RegisterPostBackwardFunction is not applied), so its gradients, the
    // output layer's, the final norm's and the embedding's, are reduce-scattered together in
    // the root's final callback once the whole backward has run (FSDPState.
    // _root_post_backward_final_callback calls post_backward on each group still unsharded,
    // the root first, torch/distributed/_composable/fsdp/_fsdp_state.py at
    // pytorch/pytorch@005da465b9). That reduce-scatter goes on the one reduce-scatter stream
    // the groups share (FSDPCommContext.reduce_scatter_stream), behind the blocks' own, and the
    // callback then makes the compute stream wait for it before backward() returns (the last
    // backward: current_stream().wait_event(reduce_scatter_state.event)), so the optimizer
    // step waits: one bucket, last, ready at the backward's end, with nothing left to hide it.
    if (st.head) {
        run_units(ctx.head, backward_units(ctx.head), ctx.env, c, b, backward_gather(head_params));
        if (!root_unit)
            add_grads(head_params, std::max(c.gpu, c.comm));
    }
    // torchtitan does not reshard the last transformer block after its forward without a
    // pipeline (apply_fsdp: reshard_after_forward = int(layer_id) < len(model.layers) - 1,
    // "the last transformer block's parameters will be all-gathered again at the start of
    // backward anyway", torchtitan/parallelisms/parallelize_llama.py at 9dec370): the
    // backward's first block gathers nothing; its gradients are still copied in for the
    // reduce-scatter. DeepSpeed's ZeRO-3 re-gathers it.
    bool last_block_kept = root_unit;
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
        const auto [wp, n] = *it;
        if (n == 0)
            continue;
        const LayerWork& w = *wp;
        const double start = std::max(c.gpu, c.comm);
        const Clock at_start = c;
        const Gather gather = gathers_per_pass ? ctx.gather_time(w.parameters) : Gather{};
        if (last_block_kept && gathers_per_pass) {
            Gather kept = gather;
            kept.seconds = 0;
            kept.load = {};
            kept.copy_out = 0;
            c.prefetch = c.host; // its pre-hook prefetches the next block's gather
            run_layers(w, backward_units(w), 1, ctx.env, c, b, kept);
            if (n > 1)
                run_layers(w, backward_units(w), n - 1, ctx.env, c, b, gather);
        } else {
            run_layers(w, backward_units(w), n, ctx.env, c, b, gather);
        }
        last_block_kept = false;
        // Layers finish at evenly spaced times across the group (extrapolated steady state).
        const double per_layer = (std::max(c.gpu, c.comm) - start) / n;
        (void)at_start;
        for (int i = 1; i <= n; ++i)
            add_grads(w.parameters, start + per_layer * i, w.expert_parameters);
    }
    if (st.embedding) {
        run_units(ctx.embedding, backward_units(ctx.embedding), ctx.env, c, b,
                  backward_gather(ctx.embedding.parameters));
        if (!root_unit)
            add_grads(ctx.embedding.parameters, std::max(c.gpu, c.comm));
    }
    st.backward = finish(c, b);
    if (pending > 0)
        st.buckets.push_back({pending, sim::Time::from_seconds(c.gpu)});
    if (pending_expert > 0)
        st.buckets.push_back({pending_expert, sim::Time::from_seconds(c.gpu), true});
    // The root unit's one reduce-scatter, after every other bucket, at the pass's end.
    if (root_unit && root_params > 0)
        st.buckets.push_back(
            {static_cast<std::int64_t>(root_params * grad_bytes_per_param), st.backward.time});

    // The split backward of the zero-bubble schedules: W is the weight-gradient kernels (names
    // ending in "wgrad"), B the rest of the pass.
    double w_seconds = 0;
    std::int64_t w_bytes = 0;
    const std::int64_t elt = hardware::bytes_per_element(dtype);
    auto add_weight = [&](const LayerWork& w, int n) {
        for (int i = 0; i < w.backward.ops.count(); ++i) {
            const models::Op& op = w.backward.ops[static_cast<std::size_t>(i)];
            if (!op.name.ends_with("wgrad"))
                continue;
            // An input that sequence parallelism re-gathers for this GEMM is kept sharded.
            std::int64_t input_share = 1;
            for (const models::TpCollective& tc : w.collectives)
                if (tc.pass == Pass::backward && tc.regather && tc.needed_by == i)
                    input_share = ctx.e.parallel.tp;
            w_seconds += n * op.time.seconds() /
                         (op.kind == models::OpKind::memory_bound ? ho.memory_efficiency
                                                                  : ho.gemm_efficiency);
            // Kept from B for W: the GEMM's input (M x K) and its output's gradient (K x N).
            if (op.kind != models::OpKind::memory_bound)
                w_bytes += n * (op.m * op.k / input_share + op.k * op.n) *
                           std::max<std::int64_t>(1, op.batch) * elt;
        }
    };
    if (st.head)
        add_weight(ctx.head, 1);
    for (auto [wp, n] : groups)
        add_weight(*wp, n);
    if (st.embedding)
        add_weight(ctx.embedding, 1);
    st.weight = PassCost{};
    st.weight.compute = std::min(st.backward.compute, sim::Time::from_seconds(w_seconds));
    st.weight.time = st.weight.compute;
    st.backward_input = st.backward;
    st.backward_input.compute -= st.weight.compute;
    st.backward_input.time -= st.weight.compute;
    st.weight_activation_bytes = w_bytes;

    st.activation_bytes = 0;
    st.transient_bytes = 0;
    st.parameters = 0;
    st.expert_parameters = 0;
    st.layer_parameters = 0;
    for (auto [wp, n] : groups) {
        const LayerWork& w = *wp;
        st.activation_bytes += n * w.activation_bytes;
        st.parameters += n * w.parameters;
        st.expert_parameters += n * w.expert_parameters;
        st.layer_parameters += n * w.parameters;
        if (n > 0)
            st.transient_bytes = std::max(st.transient_bytes, w.recomputed_activation_bytes);
    }
    if (st.embedding) {
        st.activation_bytes += ctx.embedding.activation_bytes;
        st.parameters += ctx.embedding.parameters;
    }
    if (st.head) {
        st.activation_bytes += ctx.head.activation_bytes;
        st.parameters += head_params;
    }
    const std::int64_t param_elt = hardware::bytes_per_element(comm_dtype(dtype));
    st.gathered_bytes = ctx.zero3 ? st.parameters * param_elt : 0;

    // ZeRO-3's gathered parameters in memory, gathered per pass: the unit running and the next
    // one prefetched (FSDP2's implicit forward prefetch and explicit backward prefetch of one
    // unit, torch/distributed/fsdp/_fully_shard/_fsdp_state.py; DeepSpeed's prefetch
    // likewise); the backward also holds a unit's unsharded gradients (param dtype) and the
    // reduce-scatter's input (reduce dtype: foreach_reduce's copy-in, _fsdp_collectives.py)
    // until the copy. DeepSpeed's ZeRO-3 gathers each module: bounded by the two largest
    // units (layers, embedding, head).
    // FSDP2 as torchtitan wraps it (torchtitan/parallelisms/parallelize_llama.py at 9dec370,
    // apply_fsdp): one unit per transformer block, and fully_shard(model) last, the root unit
    // holding the rest: the embedding, the final norm and the output layer. The root is never
    // resharded after forward, whatever reshard_after_forward says: FSDPState._lazy_init sets
    // its group's post_forward_mesh_info = None ("For the root, do not reshard after forward
    // since for training, the parameters would be freed and all-gathered immediately";
    // torch/distributed/_composable/fsdp/_fsdp_state.py at pytorch/pytorch@005da465b9, the
    // module torchtitan imports at 9dec370, December 2024; later PyTorch keeps the override
    // only where reshard_after_forward is left to its default). Its forward inputs (token
    // ids) need no gradient, so its post-backward runs in the root's final callback after the
    // whole backward (_root_post_backward_final_callback): the root's
    // parameters stay gathered through the forward and the backward, beside the two blocks,
    // and the output layer's gradient (with tied embeddings the shared matrix's), produced
    // first in the backward, is held unsharded (param dtype) until then. The root's own
    // reduce-scatter, in that callback after its reshard (FSDPParamGroup.post_backward
    // reshards before foreach_reduce), holds its gradients and their copy-in once the
    // backward's activations are freed: not counted beside them.
    st.forward_gather_bytes = 0;
    st.backward_gather_bytes = 0;
    st.step_gathered_bytes = 0;
    st.step_grad_bytes = 0;
    if (ctx.zero3 && !gathered_per_step) {
        std::int64_t first = 0;
        std::int64_t second = 0;
        auto unit = [&](std::int64_t params) {
            if (params > first) {
                second = first;
                first = params;
            } else if (params > second) {
                second = params;
            }
        };
        std::int64_t root = 0;       // FSDP2's root unit, gathered for the whole pass
        std::int64_t root_grads = 0; // of it, gradients held through the blocks' backward
        if (root_unit) {
            root = root_params;
            root_grads =
                st.head ? head_params + (tied_here && st.embedding ? ctx.embedding.parameters : 0)
                        : 0;
        } else {
            if (st.embedding)
                unit(ctx.embedding.parameters);
            if (st.head)
                unit(head_params);
        }
        for (auto [wp, n] : groups)
            for (int k = 0; k < std::min(n, 2); ++k)
                unit(wp->parameters);
        st.forward_gather_bytes = (root + first + second) * param_elt;
        st.backward_gather_bytes =
            st.forward_gather_bytes + root_grads * param_elt +
            first * (param_elt + hardware::bytes_per_element(grad_reduce_dtype(ctx.e)));
    }
    // FSDP2 under a pipeline (gathered_per_step above: reshard_after_forward False, no
    // resharding nor reduce-scatter before the last backward): the chunk's parameters stay
    // gathered, and after each backward but the last FSDPParamGroup.post_backward
    // (_fsdp_param_group.py: `if not self.reduce_grads`) keeps the unsharded gradients,
    // FSDPParam.to_accumulated_grad_if_needed upcasting them to the reduce dtype
    // (unsharded_accumulated_grad; torchtitan's mixed_precision_reduce, float32) and
    // accumulate_unsharded_grad_if_needed adding each later backward's into them.
    if (gathered_per_step) {
        st.step_gathered_bytes = st.gathered_bytes;
        st.step_grad_bytes = st.parameters * hardware::bytes_per_element(grad_reduce_dtype(ctx.e));
    }
}

/// cost_stage_once, or the costs of a stage costed before with the same key
/// (Context::StageKey); the stage keeps its place (index, rank, chunk, first layer, transfers).
void cost_stage(Context& ctx, VirtualStagePlan& st, const RecomputePlan& rp) {
    const Context::StageKey key{st.layers,
                                rp,
                                dense_layers(ctx, st, rp),
                                st.embedding,
                                st.head,
                                st.gathered_ahead,
                                st.gather_lead,
                                st.gather_beside};
    for (const auto& [k, costed] : ctx.stage_costs) {
        if (k == key) {
            VirtualStagePlan s = costed;
            s.index = st.index;
            s.rank = st.rank;
            s.chunk = st.chunk;
            s.first_layer = st.first_layer;
            s.send_forward = st.send_forward;
            s.send_backward = st.send_backward;
            s.send_bytes = st.send_bytes;
            st = std::move(s);
            return;
        }
    }
    cost_stage_once(ctx, st, rp);
    ctx.stage_costs.emplace_back(key, st);
}

RecomputePlan uniform(Recompute r, int layers) {
    RecomputePlan p;
    (r == Recompute::none ? p.none : r == Recompute::selective ? p.selective : p.full) = layers;
    return p;
}

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
void align_param_gathers(Context& ctx, StepPlan& plan) {
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
        // Start of the pass at each position, extended as chunks are costed: the passes before
        // chunk c's first forward are final once chunk c - 1 is.
        std::vector<sim::Time> start_at{waited};
        auto start = [&](std::size_t i) {
            while (start_at.size() <= i) {
                const std::size_t j = start_at.size() - 1;
                start_at.push_back(
                    start_at.back() +
                    pass_cost(plan.stage(virtual_stage(order[j].chunk, p, plan.shape)), order[j])
                        .time);
            }
            return start_at[i];
        };
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

void plan_ranks(Context& ctx, StepPlan& plan) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    const auto grad_dtype = grad_reduce_dtype(e);
    // Experts laid out apart: their weights, gradients and optimizer state are sharded (ZeRO,
    // the distributed optimizer) and reduced over the expert-data-parallel group.
    const bool experts_apart = par.expert_layout() && e.model.is_moe();
    const int edp = experts_apart ? par.expert_dp() : par.dp_cp();
    plan.ranks.clear();
    for (int p = 0; p < par.pp; ++p) {
        RankPlan r;
        r.rank = p;
        r.gpu = gpu_of(par, 0, 0, p);
        for (int t = 0; t < par.tp; ++t)
            r.tp_group.push_back(gpu_of(par, t, 0, p));
        // torchtitan's mesh (pp, dp_replicate, dp_shard, cp, tp): the shard dimension inside
        // the replicate one, so data-parallel rank d is replica d / shard, shard d % shard.
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
            layer_parameters += st.layer_parameters;
        }
        if (experts_apart) {
            for (int x = 0; x < par.ep; ++x)
                r.ep_group.push_back(expert_gpu_of(par, 0, x, 0, p));
            for (int d = 0; d < edp; ++d)
                r.expert_dp_group.push_back(expert_gpu_of(par, 0, 0, d, p));
        }
        const std::int64_t dense = r.parameters - r.expert_parameters;
        const auto state = state_bytes(e, dense, r.expert_parameters, edp, layer_parameters);
        r.weights_bytes = state.weights;
        r.grads_bytes = state.gradients;
        r.optimizer_bytes = state.optimizer;
        const int shards = par.shard_cp();
        const std::int64_t updated = par.zero < 1
                                         ? r.parameters
                                         : (dense + shards - 1) / shards +
                                               (r.expert_parameters + edp - 1) / std::max(edp, 1);
        if (!e.training.forward_only) {
            double seconds = models::optimizer_step(updated, weight_dtype(e.training.dtype),
                                                    e.training.optimizer, par.zero, ctx.cm)
                                 .time.seconds();
            // FP8: the layers' weights cast once per step, with their transposes (fp8.h;
            // tensorwise scaling casts them in every forward instead, in the layers' GEMMs).
            if (e.training.dtype == hardware::Dtype::fp8 &&
                e.training.fp8_recipe == models::Fp8Recipe::delayed)
                seconds +=
                    ctx.cm.memory_bound_seconds(models::fp8_weight_cast_bytes(layer_parameters));
            r.optimizer_time = sim::Time::from_seconds(seconds / ctx.fw.memory_efficiency);
        }
        plan.ranks.push_back(std::move(r));
    }
    if (e.training.forward_only)
        return;

    for (RankPlan& r : plan.ranks) {
        std::unique_ptr<collectives::Communicator> dp_comm;
        std::unique_ptr<collectives::Communicator> edp_comm;
        std::unique_ptr<collectives::Communicator> replicate_comm;
        CollectiveTimes times(par.shard_cp() > 1 ? communicator(plan, r.dp_group, dp_comm)
                                                 : nullptr);
        CollectiveTimes replicate_times(
            par.dp_replicate > 1 ? communicator(plan, r.replicate_group, replicate_comm) : nullptr);
        CollectiveTimes expert_times(
            experts_apart && edp > 1 ? communicator(plan, r.expert_dp_group, edp_comm) : nullptr);
        auto add = [&](collectives::Op op, std::int64_t bytes, hardware::Dtype dtype,
                       std::optional<int> chunk, std::optional<int> bucket, DpRole role,
                       bool expert = false) {
            DpCollective d;
            d.collective.op = op;
            d.collective.dtype = dtype;
            d.collective.bytes = bytes;
            d.time = (expert ? expert_times : times).time(d.collective);
            d.load = (expert ? expert_times : times).load(d.collective);
            d.role = role;
            d.chunk = chunk;
            d.bucket = bucket;
            d.expert = expert;
            r.dp.push_back(d);
        };
        // Hybrid sharding: each gradient reduce-scatter over the shard group is followed by the
        // all-reduce of its shard over the replicate group (FSDP2's foreach_reduce,
        // torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py: reduce_scatter on the
        // reduce-scatter group, then all_reduce of the reduce-scatter output on the all-reduce
        // group). Here both run in order on the data-parallel stream; without a shard group
        // (shard x cp = 1) the all-reduce is the whole reduction.
        auto add_grad = [&](collectives::Op op, std::int64_t bytes, hardware::Dtype dtype,
                            std::optional<int> chunk, std::optional<int> bucket, DpRole role,
                            bool expert = false) {
            if (expert || par.dp_replicate <= 1) {
                add(op, bytes, dtype, chunk, bucket, role, expert);
                return;
            }
            const int shard = par.shard_cp();
            if (shard > 1)
                add(op, bytes, dtype, chunk, bucket, role);
            DpCollective d;
            d.collective.op = collectives::Op::all_reduce;
            d.collective.dtype = dtype;
            d.collective.bytes = (bytes + shard - 1) / shard;
            d.time = replicate_times.time(d.collective);
            d.load = replicate_times.load(d.collective);
            d.role = DpRole::grad_all_reduce;
            d.chunk = chunk;
            d.bucket = bucket;
            d.replicate = true;
            r.dp.push_back(d);
        };
        const auto grad_op =
            par.zero >= 1 ? collectives::Op::reduce_scatter : collectives::Op::all_reduce;
        const DpRole grad_role =
            par.zero >= 1 ? DpRole::grad_reduce_scatter : DpRole::grad_all_reduce;
        const std::int64_t dense = r.parameters - r.expert_parameters;
        // Dense gradients over the data-parallel (x context-parallel) group, the routed
        // experts' over the expert-data-parallel group (when it has more than one GPU).
        const bool dense_dp = par.dp_cp() > 1;
        const bool expert_dp = r.expert_parameters > 0 && edp > 1;
        if (dense_dp || expert_dp) {
            if (par.dp_overlap) {
                // On one stream in the order the chunks' gradients complete, as Megatron-Core
                // launches them (its interleaved schedule starts a chunk's gradient sync after
                // the chunk's last backward: chunk v-1's first, chunk 0's last); in chunk
                // order, chunk 0's reduce would hold back all the others.
                const auto last_b = detail::last_backward_of_chunk(
                    plan.orders()[static_cast<std::size_t>(r.rank)], plan.shape.virtual_stages);
                std::vector<int> chunks(static_cast<std::size_t>(plan.shape.virtual_stages));
                for (int c = 0; c < plan.shape.virtual_stages; ++c)
                    chunks[static_cast<std::size_t>(c)] = c;
                std::stable_sort(chunks.begin(), chunks.end(), [&](int a, int b) {
                    return last_b[static_cast<std::size_t>(a)] <
                           last_b[static_cast<std::size_t>(b)];
                });
                for (const int c : chunks) {
                    const auto& st = plan.stage(virtual_stage(c, r.rank, plan.shape));
                    for (std::size_t k = 0; k < st.buckets.size(); ++k) {
                        const bool expert = st.buckets[k].expert;
                        if (expert ? expert_dp : dense_dp)
                            add_grad(grad_op, st.buckets[k].bytes, grad_dtype, c,
                                     static_cast<int>(k), grad_role, expert);
                    }
                }
            } else {
                if (dense_dp)
                    add_grad(grad_op, dense * hardware::bytes_per_element(grad_dtype), grad_dtype,
                             std::nullopt, std::nullopt, grad_role);
                if (expert_dp)
                    add(grad_op, r.expert_parameters * hardware::bytes_per_element(grad_dtype),
                        grad_dtype, std::nullopt, std::nullopt, grad_role, true);
            }
            // ZeRO-3 gathers per layer inside the passes (cost_stage); the distributed
            // optimizer's gather, when overlapped, inside the next step's first forward.
            if (par.zero >= 1 && par.zero < 3 && !par.overlap_param_gather) {
                const auto wdtype = weight_dtype(e.training.dtype);
                const std::int64_t elem = hardware::bytes_per_element(wdtype);
                if (dense_dp)
                    add(collectives::Op::all_gather, dense * elem, wdtype, std::nullopt,
                        std::nullopt, DpRole::param_all_gather);
                if (expert_dp)
                    add(collectives::Op::all_gather, r.expert_parameters * elem, wdtype,
                        std::nullopt, std::nullopt, DpRole::param_all_gather, true);
            }
        }
    }
    // Tied embeddings on separate stages: Megatron all-reduces the embedding gradient between
    // the first and the last pipeline rank after the backward.
    if (par.pp > 1 && e.model.is_transformer() && e.model.tied_embeddings) {
        const std::vector<int> pair{gpu_of(par, 0, 0, 0), gpu_of(par, 0, 0, par.pp - 1)};
        std::unique_ptr<collectives::Communicator> comm;
        CollectiveTimes times(communicator(plan, pair, comm));
        DpCollective d;
        d.collective.op = collectives::Op::all_reduce;
        d.collective.dtype = grad_dtype;
        d.collective.bytes = ctx.embedding.parameters * hardware::bytes_per_element(grad_dtype);
        d.time = times.time(d.collective);
        d.role = DpRole::embedding_grad_all_reduce;
        plan.ranks.front().dp.push_back(d);
        plan.ranks.back().dp.push_back(d);
    }
}

sim::Time p2p_time(const StepPlan& plan, int from, int to, std::int64_t bytes) {
    if (from == to || bytes <= 0)
        return sim::Time::zero();
    std::unique_ptr<collectives::Communicator> owned;
    const collectives::Communicator& pair = *communicator(plan, {from, to}, owned);
    collectives::Collective c;
    c.op = collectives::Op::send_recv;
    c.bytes = bytes;
    c.dtype = hardware::Dtype::fp32;
    c.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, 2);
    return c.bytes > 0 ? pair.predict(c) : sim::Time::zero();
}

} // namespace

std::int64_t peak_activation_bytes(const StepPlan& plan, int rank) {
    // The rank's chunks' bytes looked up once, not once per pass (a long pipeline's rank runs
    // thousands of passes of its few chunks).
    struct ChunkBytes {
        std::int64_t activation_bytes, transient_bytes, weight_activation_bytes;
    };
    std::vector<ChunkBytes> chunks;
    for (int c = 0; c < plan.shape.virtual_stages; ++c) {
        const auto& st = plan.stage(virtual_stage(c, rank, plan.shape));
        chunks.push_back({st.activation_bytes, st.transient_bytes, st.weight_activation_bytes});
    }
    std::int64_t live = 0;
    std::int64_t peak = 0;
    for (const PipePass& pass : plan.orders()[static_cast<std::size_t>(rank)]) {
        const ChunkBytes& st = chunks[pass.chunk];
        switch (pass.kind) {
        case PassKind::forward:
            live += st.activation_bytes;
            peak = std::max(peak, live);
            break;
        case PassKind::backward:
            peak = std::max(peak, live + st.transient_bytes);
            live -= st.activation_bytes;
            break;
        case PassKind::backward_input:
            // B frees the activations and leaves W its inputs and output gradients.
            peak = std::max(peak, live + st.transient_bytes);
            live += st.weight_activation_bytes - st.activation_bytes;
            peak = std::max(peak, live);
            break;
        case PassKind::weight:
            live -= st.weight_activation_bytes;
            break;
        }
    }
    return peak;
}

std::int64_t peak_gathered_bytes(const StepPlan& plan, int rank) {
    // Nothing gathered on this rank (no ZeRO-3): no walk of its order, which every
    // configuration of a sweep would otherwise pay.
    bool any = false;
    for (int c = 0; c < plan.shape.virtual_stages && !any; ++c) {
        const auto& st = plan.stage(virtual_stage(c, rank, plan.shape));
        any = st.forward_gather_bytes > 0 || st.backward_gather_bytes > 0 ||
              st.step_gathered_bytes > 0 || st.step_grad_bytes > 0;
    }
    if (!any)
        return 0;
    const auto& order = plan.orders()[static_cast<std::size_t>(rank)];
    // Per chunk: passes that produce weight gradients (backward, or W of a split one), and
    // whether it has run a forward; the held state is added on the first and freed after the
    // last weight-gradient pass.
    std::vector<int> grad_passes(static_cast<std::size_t>(plan.shape.virtual_stages), 0);
    for (const PipePass& pass : order)
        if (pass.kind == PassKind::backward || pass.kind == PassKind::weight)
            ++grad_passes[static_cast<std::size_t>(pass.chunk)];
    std::vector<int> seen(grad_passes.size(), 0);
    std::vector<bool> started(grad_passes.size(), false);
    std::int64_t held = 0;
    std::int64_t peak = 0;
    for (const PipePass& pass : order) {
        const auto c = static_cast<std::size_t>(pass.chunk);
        const auto& st = plan.stage(virtual_stage(pass.chunk, rank, plan.shape));
        if (pass.kind == PassKind::forward) {
            if (!started[c]) {
                started[c] = true;
                held += st.step_gathered_bytes;
            }
            peak = std::max(peak, held + st.forward_gather_bytes);
            continue;
        }
        peak = std::max(peak, held + st.backward_gather_bytes);
        if (pass.kind == PassKind::backward_input)
            continue;
        if (seen[c]++ == 0)
            held += st.step_grad_bytes;
        peak = std::max(peak, held);
        if (seen[c] == grad_passes[c])
            held -= st.step_grad_bytes + st.step_gathered_bytes;
    }
    return peak;
}

StepPlan build_step_plan(const ExperimentSpec& e,
                         std::shared_ptr<const hardware::Topology> topology,
                         collectives::CommunicatorCache* communicators) {
    const ParallelSpec& par = e.parallel;
    StepPlan plan;
    plan.experiment = &e;
    plan.topology = std::move(topology);
    plan.communicators = communicators;
    plan.shape =
        PipelineShape{par.pp, e.micro_batches(), chunks_per_rank(par.schedule, par.virtual_stages),
                      e.training.forward_only, placement_of(par.schedule)};
    plan.pass_orders = shared_pipeline_order(par.schedule, plan.shape);
    plan.capacity_bytes = e.cluster.node.gpu.hbm_bytes;
    plan.runtime_bytes = e.framework.runtime_memory;

    Context ctx(e, e.framework, par.zero >= 3 && par.shard_cp() > 1 && !e.training.forward_only);
    models::LayerConfig cfg;
    cfg.tp = par.tp;
    cfg.sequence_parallel = par.sequence_parallel && par.tp > 1;
    cfg.micro_batch = e.training.micro_batch;
    cfg.dtype = e.training.dtype;
    cfg.ep = par.ep;
    cfg.etp = par.etp;
    cfg.cp = par.cp;
    cfg.selective_op = par.selective_op;
    cfg.dtensor_tp = e.framework.dtensor_tp;
    cfg.fusions = e.training.kernels();
    cfg.fp8_recipe = e.training.fp8_recipe;
    cfg.recompute_modules = par.recompute_modules;
    // The expert-parallel group's GPUs (the first one's; every group is laid out alike), its
    // nodes, and its rail: those of the first GPU's local rank, one per node.
    std::vector<int> ep_group;
    std::vector<int> ep_rail;
    if (par.expert_layout() && e.model.is_moe()) {
        const int per_node = std::max(1, e.cluster.node.gpus);
        for (int x = 0; x < par.ep && par.ep > 1; ++x)
            ep_group.push_back(expert_gpu_of(par, 0, x, 0, 0));
        std::vector<int> nodes;
        for (int g : ep_group) {
            if (std::find(nodes.begin(), nodes.end(), g / per_node) == nodes.end())
                nodes.push_back(g / per_node);
            if (g % per_node == ep_group.front() % per_node)
                ep_rail.push_back(g);
        }
        cfg.flex_dispatcher = par.flex_dispatcher;
        cfg.ep_nodes = std::max<int>(1, static_cast<int>(nodes.size()));
        // A rail that misses some of the nodes (GPUs of the group at other local ranks on
        // them) has no single-hop path to each: cost the dispatch over the whole group.
        if (static_cast<int>(ep_rail.size()) != cfg.ep_nodes)
            cfg.ep_nodes = 1;
    }
    plan.automatic_recompute = par.recompute == RecomputePolicy::automatic;
    plan.uniform_recompute = par.recompute == RecomputePolicy::selective ? Recompute::selective
                             : par.recompute == RecomputePolicy::full    ? Recompute::full
                                                                         : Recompute::none;
    if (e.training.forward_only)
        plan.uniform_recompute = Recompute::none;
    const bool automatic_search = plan.automatic_recompute && !e.training.forward_only;
    const Recompute first_choice =
        plan.automatic_recompute ? Recompute::none : plan.uniform_recompute;
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        // The layer works the stages are costed with: the uniform choice (none first under
        // automatic recompute, whose search may take the others), and the plain layer for
        // context parallelism's exposure. The others stay empty: a stage with no layer of a
        // kind adds nothing from it (cost_stage runs and sums only groups with layers).
        const bool used =
            r == first_choice || automatic_search || (r == Recompute::none && par.cp > 1);
        if (!used)
            continue;
        cfg.recompute = r;
        ctx.layer[static_cast<std::size_t>(r)] = models::layer_work(e.model, cfg, ctx.cm);
        if (e.model.is_moe() && e.model.first_k_dense_replace > 0) {
            models::LayerConfig dense = cfg;
            dense.dense_layer = true;
            ctx.dense_layer[static_cast<std::size_t>(r)] =
                models::layer_work(e.model, dense, ctx.cm);
        }
    }
    cfg.recompute = Recompute::none;
    ctx.embedding = models::embedding_work(e.model, cfg, ctx.cm);
    ctx.head = models::head_work(e.model, cfg, ctx.cm);
    if (par.tp > 1) {
        std::vector<int> group;
        for (int t = 0; t < par.tp; ++t)
            group.push_back(gpu_of(par, t, 0, 0));
        ctx.tp_times = CollectiveTimes(communicator(plan, group, ctx.tp_comm));
    }
    if (par.dp_cp() > 1 && (ctx.zero3 || par.overlap_param_gather)) {
        std::vector<int> group;
        for (int d = 0; d < par.dp_shard_size(); ++d)
            for (int c = 0; c < par.cp; ++c)
                group.push_back(gpu_of(par, 0, d, 0, c));
        ctx.dp_times = CollectiveTimes(communicator(plan, group, ctx.dp_comm));
    }
    if (par.expert_layout() && e.model.is_moe()) {
        if (ep_group.size() > 1)
            ctx.ep_times = CollectiveTimes(communicator(plan, ep_group, ctx.ep_comm));
        if (cfg.flex_dispatcher && cfg.ep_nodes > 1)
            ctx.ep_rail_times = CollectiveTimes(communicator(plan, ep_rail, ctx.ep_rail_comm));
        std::vector<int> group;
        for (int t = 0; t < par.expert_tp() && par.expert_tp() > 1; ++t)
            group.push_back(expert_gpu_of(par, t, 0, 0, 0));
        if (group.size() > 1)
            ctx.etp_times = CollectiveTimes(communicator(plan, group, ctx.etp_comm));
        ctx.env.ep = &ctx.ep_times;
        ctx.env.etp = &ctx.etp_times;
        ctx.env.ep_rail = &ctx.ep_rail_times;
    }
    ctx.env.tp = &ctx.tp_times;
    ctx.env.dtype = e.training.dtype;
    ctx.env.fw = &ctx.fw;
    ctx.env.tp_size = par.tp;
    ctx.env.gpu = &e.cluster.node.gpu;
    ctx.env.tp_overlap = par.tp_comm_overlap && par.tp > 1 && par.sequence_parallel;
    ctx.env.symm_mem = ctx.env.tp_overlap && par.async_tp;
    ctx.env.cm = &ctx.cm;
    const int sms = e.cluster.node.gpu.sm_count;
    if (ctx.env.tp_overlap && !ctx.env.symm_mem && sms > kPipelinedRsSms)
        ctx.env.rs_gemm_share = static_cast<double>(sms - kPipelinedRsSms) / sms;
    if (par.cp > 1) {
        const CpExposure cp = cp_exposure(e, ctx.layer[0], ctx.cm, ctx.fw.gemm_efficiency,
                                          *plan.topology, plan.communicators);
        ctx.env.cp_forward = cp.forward;
        ctx.env.cp_backward = cp.backward;
        ctx.env.cp_forward_slowdown = cp.forward_slowdown;
        ctx.env.cp_backward_slowdown = cp.backward_slowdown;
    }

    const int V = stage_count(plan.shape);
    // Layers per model stage: the experiment's split (layer_assignment.h), or an even one for
    // an experiment that was not validated.
    const int model_stages = model_stage_count(plan.shape);
    std::vector<int> stage_layers = e.stage_layers;
    if (static_cast<int>(stage_layers.size()) != model_stages)
        stage_layers.assign(static_cast<std::size_t>(model_stages), e.model.layers / model_stages);
    std::vector<int> first_layer(stage_layers.size(), 0);
    for (std::size_t s = 1; s < stage_layers.size(); ++s)
        first_layer[s] = first_layer[s - 1] + stage_layers[s - 1];
    plan.stages.resize(static_cast<std::size_t>(V));
    for (int vs = 0; vs < V; ++vs) {
        VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
        st.index = vs;
        st.rank = rank_of_stage(vs, plan.shape);
        st.chunk = vs / par.pp;
        const auto ms = static_cast<std::size_t>(model_stage(vs, plan.shape));
        st.first_layer = first_layer[ms];
        st.layers = stage_layers[ms];
        st.embedding = route_start(vs, plan.shape) && e.model.is_transformer();
        st.head = route_end(vs, plan.shape);
        cost_stage(ctx, st, uniform(first_choice, st.layers));
    }

    // Automatic recompute: per rank, the cheapest plan that fits. Selective first (it drops
    // the large attention activations for a few percent of time), then whole layers to full
    // recompute, spread over the rank's chunks, until the peak fits.
    if (automatic_search) {
        const std::int64_t budget = plan.capacity_bytes - plan.runtime_bytes;
        for (int p = 0; p < par.pp; ++p) {
            std::int64_t params = 0;
            std::int64_t expert_params = 0;
            std::int64_t layer_params = 0;
            for (int c = 0; c < plan.shape.virtual_stages; ++c) {
                const auto& st = plan.stage(virtual_stage(c, p, plan.shape));
                params += st.parameters;
                expert_params += st.expert_parameters;
                layer_params += st.layer_parameters;
            }
            const int edp = par.expert_layout() && e.model.is_moe() ? par.expert_dp() : par.dp_cp();
            const auto state =
                state_bytes(e, params - expert_params, expert_params, edp, layer_params);
            auto fits = [&] {
                return state.total() + peak_activation_bytes(plan, p) +
                           peak_gathered_bytes(plan, p) <=
                       budget;
            };
            if (fits())
                continue;
            std::vector<int> chunks;
            for (int c = 0; c < plan.shape.virtual_stages; ++c)
                chunks.push_back(virtual_stage(c, p, plan.shape));
            const bool selective_helps = layer_of(ctx, Recompute::selective).activation_bytes <
                                         layer_of(ctx, Recompute::none).activation_bytes;
            if (selective_helps) {
                for (int vs : chunks) {
                    VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
                    cost_stage(ctx, st, uniform(Recompute::selective, st.layers));
                }
                if (fits())
                    continue;
            }
            const Recompute rest = selective_helps ? Recompute::selective : Recompute::none;
            // Whole layers to full recompute, k per chunk (all of a chunk's layers where it
            // holds fewer than k: uneven splits).
            int most = 0;
            for (int vs : chunks)
                most = std::max(most, plan.stage(vs).layers);
            for (int k = 1; k <= most && !fits(); ++k) {
                for (int vs : chunks) {
                    VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
                    const int full = std::min(k, st.layers);
                    RecomputePlan rp = uniform(rest, st.layers - full);
                    rp.full = full;
                    cost_stage(ctx, st, rp);
                }
            }
        }
    }

    // Megatron-Core's distributed optimizer with overlap_param_gather (megatron/core/optimizer/
    // distrib_optimizer.py at core_v0.8.0, _finish_param_sync_helper): one bucket's all-gather in
    // flight at a time, in forward order across the rank's model chunks, the next one issued
    // when a forward pre-hook waits for the one before. A model chunk after the first is one
    // bucket (megatron/training/training.py, get_model: disable_bucketing=(model_chunk_idx > 0);
    // NeMo 24.07's megatron_gpt_model.py likewise), so the previous chunk's first forward issues
    // this chunk's whole gather, and the passes the rank's order runs between the two first
    // forwards hide it (their durations: a lower bound of the lead; idle time only adds to it).
    // The first chunk's buckets chain from the step's start through its own first forward:
    // DistributedOptimizer.zero_grad issues the first ("launch all-gather for first accessed
    // bucket here before forward compute is initiated", distrib_optimizer.py at core_v0.8.0),
    // and Megatron's train_step calls it before forward_backward_func. A rank after the first
    // starts its first forward only when the previous ranks' first forwards have run (their
    // durations: a lower bound of the time it waits, sends only add to it), so that bucket had
    // that long to run beside no compute (VirtualStagePlan::gather_lead of the first chunk).
    const bool param_gather_overlapped =
        par.overlap_param_gather && par.dp_cp() > 1 && !ctx.zero3 && !e.training.forward_only;
    // Megatron-Core >= 0.9 with align_param_gather (FrameworkSpec::align_param_gather): the
    // interleaved schedule issues the gathers (align_param_gathers below), not the chain.
    const bool aligned = param_gather_overlapped && e.framework.align_param_gather &&
                         par.schedule == PipelineSchedule::interleaved_1f1b &&
                         plan.shape.virtual_stages > 1;
    if (param_gather_overlapped && par.pp > 1 && !aligned) {
        sim::Time lead;
        for (int p = 1; p < par.pp; ++p) {
            lead += plan.stage(virtual_stage(0, p - 1, plan.shape)).first_forward.time;
            VirtualStagePlan& st =
                plan.stages[static_cast<std::size_t>(virtual_stage(0, p, plan.shape))];
            st.gather_lead = lead;
            cost_stage(ctx, st, st.recompute);
        }
    }
    if (param_gather_overlapped && plan.shape.virtual_stages > 1 && !aligned) {
        for (int p = 0; p < par.pp; ++p) {
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
                    lead += pass_cost(plan.stage(virtual_stage(order[i].chunk, p, plan.shape)),
                                      order[i])
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
    if (aligned)
        align_param_gathers(ctx, plan);

    // Transfers between consecutive virtual stages, from each tensor-parallel rank: its
    // sequence shard of the s/cp x b x h activation under sequence parallelism; the whole
    // tensor otherwise, as Megatron-Core sends it since NVIDIA/Megatron-LM@3c92fa93b5 (2023,
    // "Move pipeline parallel functionality into core"), which removed the scatter-gather of
    // pipeline tensors (split_tensor_into_1d_equal_chunks / gather_split_1d_tensor) from
    // p2p_communication.py and sizes the tensor [s / tp if sequence_parallel else s, b, h]
    // (schedules.py, get_tensor_shapes); 1/tp with the receiver's gather as Megatron-LM did
    // in 2021 (FrameworkSpec::pipeline_tp_gather).
    const bool sp = par.sequence_parallel && par.tp > 1;
    const int act_share = sp || e.framework.pipeline_tp_gather ? par.tp : 1;
    const auto act_bytes = [&]() -> std::int64_t {
        const std::int64_t e_bytes = hardware::bytes_per_element(weight_dtype(e.training.dtype));
        if (!e.model.is_transformer())
            return std::int64_t{e.training.micro_batch} * e.model.hidden * e_bytes / act_share;
        return std::int64_t{e.model.seq} / par.cp * e.training.micro_batch * e.model.hidden *
               e_bytes / act_share;
    }();
    // Megatron-LM of 2021 (FrameworkSpec::pipeline_tp_gather): the receiver all-gathers the
    // whole tensor from the tensor-parallel ranks' shares before its next pass (exposed: the
    // exchange is synchronous). Sequence parallelism's shards are what the next layer takes.
    const sim::Time tp_gather = [&] {
        if (!e.framework.pipeline_tp_gather || par.tp < 2 || par.sequence_parallel)
            return sim::Time::zero();
        collectives::Collective c;
        c.op = collectives::Op::all_gather;
        c.dtype = weight_dtype(e.training.dtype);
        c.bytes = act_bytes * par.tp; // nccl-tests size: the whole output buffer
        return ctx.tp_times.time(c);
    }();
    std::map<std::pair<int, int>, sim::Time> p2p_cache;
    for (int vs = 0; vs + 1 < V; ++vs) {
        if (route_end(vs, plan.shape))
            continue; // DualPipe: the forward direction's last stage sends to no stage
        VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
        const int from = gpu_of(par, 0, 0, rank_of_stage(vs, plan.shape));
        const int to = gpu_of(par, 0, 0, rank_of_stage(vs + 1, plan.shape));
        const auto key = std::make_pair(from, to);
        if (!p2p_cache.count(key))
            p2p_cache[key] = p2p_time(plan, from, to, act_bytes);
        st.send_bytes = act_bytes;
        const sim::Time overhead =
            from == to ? sim::Time::zero() : e.framework.p2p_overhead + tp_gather;
        st.send_forward = p2p_cache[key] + overhead;
        st.send_backward = e.training.forward_only ? sim::Time::zero() : p2p_cache[key] + overhead;
    }
    plan_ranks(ctx, plan);
    return plan;
}

} // namespace clustersim::strategies::parallel
