#include "strategies/parallel/pass_clock.h"

#include "strategies/parallel/cuda_graphs.h"
#include "strategies/parallel/ep_overlap_host.h"
#include "strategies/parallel/precision.h"

#include <algorithm>
#include <array>
#include <bit>
#include <span>

namespace clustersim::strategies::parallel::detail {

namespace {

using models::LayerWork;
using models::Pass;

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

/// The layer's parameter all-gather before its first kernel: when it runs on the gather
/// stream, what it slows of the compute beside it, and how long the compute stream waits.
void wait_for_gather(const std::vector<Unit>& units, const Gather& gather, Clock& c,
                     PassSeconds& cost) {
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
    const double from = gather.ahead ? -std::min(gather.lead, gather.beside) : std::max(0.0, start);
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

/// Communication kernels in flight beside the compute stream (overlap_interference.h), kept
/// across the units of a pass.
struct InFlight {
    std::span<CommSpan> spans;
    std::size_t count = 0;
    /// Drops the spans that ended at or before `t`.
    void drop_ended(double t) {
        std::size_t kept = 0;
        for (std::size_t j = 0; j < count; ++j)
            if (spans[j].end > t)
                spans[kept++] = spans[j];
        count = kept;
    }
    std::span<const CommSpan> active() const { return {spans.data(), count}; }
};

/// One unit of a pass on the clock: its kernels in order, the collectives each issues and
/// waits for, the tensor-parallel overlaps (ring exchanges, pipelined reduce-scatters) and the
/// context-parallel exposure after the attention kernels.
class UnitRun {
public:
    UnitRun(const LayerWork& w, const Unit& u, const PassEnv& env, Clock& c, PassSeconds& cost,
            InFlight& flight)
        : w_(w)
        , u_(u)
        , env_(env)
        , c_(c)
        , cost_(cost)
        , flight_(flight)
        , n_(u.work->ops.count())
        , host_overhead_(env.fw->host_overhead.seconds())
        , collective_host_(
              env.graph_iteration ? 0.0 : host_overhead_ + env.fw->collective_overhead.seconds())
        , inv_gemm_eff_(1.0 / env.fw->gemm_efficiency)
        , inv_memory_eff_(1.0 / env.fw->memory_efficiency) {
        classify();
    }

    void run() {
        bool expert_wait = false;
        issue_all(issued_after_[0]);
        for (int i = 0; i < n_; ++i)
            run_op(i);
        const double need = wait_for(n_, expert_wait);
        if (need > c_.gpu) {
            (expert_wait ? cost_.ep_wait : cost_.tp_wait) += need - c_.gpu;
            c_.gpu = need;
        }
    }

private:
    using Mask = std::uint32_t; // bit k: w.collectives[k]
    static_assert(models::kMaxLayerCollectives <= 32, "collective masks are 32 bits");

    /// This pass's collectives as bit masks, by the op they follow (slot 0: issued at the
    /// pass's start, slot i + 1: after op i) and by the op that waits for them (slot n: the
    /// pass's end), so that each op looks at its own collectives only; bits are visited in
    /// index order, as the collectives were listed.
    void classify() {
        classify_graphs();
        for (std::size_t k = 0; k < w_.collectives.size(); ++k) {
            const auto& tc = w_.collectives[k];
            if (tc.pass != u_.pass)
                continue;
            how_[k] = env_.tp_overlap ? overlap_of(tc, *u_.work) : TpOverlap::none;
            const auto bit = static_cast<Mask>(Mask{1} << k);
            if (tc.after < n_)
                issued_after_[static_cast<std::size_t>(std::max(tc.after, -1) + 1)] |= bit;
            if (tc.needed_by >= 0 && tc.needed_by <= n_) {
                auto& slot = how_[k] == TpOverlap::ring ? ring_feeds_ : waited_by_;
                slot[static_cast<std::size_t>(tc.needed_by)] |= bit;
            }
            if (how_[k] == TpOverlap::pipelined && tc.after >= 0 && tc.after < n_)
                pipelined_after_[static_cast<std::size_t>(tc.after)] = true;
        }
    }

    /// Which kernels a CUDA graph replays (PassEnv::graph_scopes): a run of them costs the
    /// host one launch, at its first kernel.
    void classify_graphs() {
        if (env_.graph_scopes == 0 || env_.graph_iteration)
            return;
        const auto& ops = u_.work->ops;
        bool moe_layer = false;
        for (int i = 0; i < n_ && !moe_layer; ++i)
            moe_layer = ops[static_cast<std::size_t>(i)].name.substr(0, 4) == "moe.";
        for (int i = 0; i < n_; ++i)
            captured_[static_cast<std::size_t>(i)] =
                (graph_scopes_of(ops[static_cast<std::size_t>(i)].name, moe_layer) &
                 env_.graph_scopes) != 0;
    }

    /// Host seconds to issue op `i`: each of its kernels, one graph launch for a run of
    /// captured ones, nothing inside a whole-iteration graph.
    double host_cost(int i, const models::Op& op) const {
        if (env_.graph_iteration)
            return 0.0;
        const auto slot = static_cast<std::size_t>(i);
        if (captured_[slot])
            return i > 0 && captured_[slot - 1] ? 0.0 : host_overhead_;
        return host_overhead_ * op.kernels;
    }

    void issue_all(Mask mask) {
        for (; mask != 0; mask &= mask - 1)
            issue(static_cast<std::size_t>(std::countr_zero(mask)));
    }

    void issue(std::size_t k) {
        const models::TpCollective& tc = w_.collectives[k];
        const double issue = c_.host;
        c_.host += collective_host_;
        ++cost_.kernels;
        collectives::Collective coll;
        coll.op = to_collective(tc.op);
        coll.bytes = tc.bytes;
        coll.dtype = comm_dtype(env_.dtype);
        if (how_[k] == TpOverlap::pipelined && env_.symm_mem) {
            issue_fused_reduce_scatter(k, coll, issue);
            return;
        }
        if (how_[k] == TpOverlap::pipelined) {
            issue_pipelined_reduce_scatter(k, coll, issue);
            return;
        }
        issue_on_stream(k, coll, issue);
    }

    /// PyTorch's fused_matmul_reduce_scatter (_pipelined_produce_and_all2all): the GEMM as one
    /// chunk per rank, the other ranks' chunks first, each pulled by its rank with the copy
    /// engine while the next one computes (a ring step: the collective's time over tp - 1), the
    /// own chunk last; then a reduction kernel on the compute stream sums the tp partial chunks
    /// (reads the whole output, writes its shard), which the next kernel waits for.
    void issue_fused_reduce_scatter(std::size_t k, const collectives::Collective& coll,
                                    double issue) {
        const models::TpCollective& tc = w_.collectives[k];
        const int parts = std::max(2, env_.tp_size);
        const double step = env_.tp->time(coll).seconds() / (parts - 1);
        const double g = (c_.gpu - gemm_start_) / parts;
        double t = std::max(issue, c_.comm);
        for (int j = 1; j < parts; ++j)
            t = std::max(t, gemm_start_ + j * g) + step;
        c_.comm = t;
        cost_.tp_comm += step * (parts - 1);
        done_[k] = std::max(t, c_.gpu) + env_.copy_seconds(tc.bytes + tc.bytes / parts);
    }

    /// Transformer Engine's pipelined reduce-scatter: the GEMM's output in chunks, each
    /// reduce-scattered as soon as it is done; the last chunk's reduce-scatter and what the
    /// chunks' GEMMs cannot hide are exposed.
    void issue_pipelined_reduce_scatter(std::size_t k, collectives::Collective coll, double issue) {
        coll.bytes = w_.collectives[k].bytes / kPipelinedRsChunks;
        const double r = env_.tp->time(coll).seconds();
        const double g = (c_.gpu - gemm_start_) / kPipelinedRsChunks;
        double t = std::max(issue, c_.comm);
        for (int j = 1; j <= kPipelinedRsChunks; ++j)
            t = std::max(t, gemm_start_ + j * g) + r;
        done_[k] = t;
        c_.comm = t;
        cost_.tp_comm += r * kPipelinedRsChunks;
    }

    /// A collective on the communication stream once issued, the compute before it done and
    /// the stream free; a ring exchange starts then and feeds the GEMM that needs it.
    void issue_on_stream(std::size_t k, const collectives::Collective& coll, double issue) {
        const models::TpCollective& tc = w_.collectives[k];
        CollectiveTimes* times = tc.group == models::CommGroup::ep        ? env_.ep
                                 : tc.group == models::CommGroup::etp     ? env_.etp
                                 : tc.group == models::CommGroup::ep_rail ? env_.ep_rail
                                                                          : env_.tp;
        const double start = std::max({issue, c_.gpu, c_.comm});
        const double took = times != nullptr ? times->time(coll).seconds() : 0.0;
        done_[k] = start + took;
        // What it takes from the kernels beside it: a ring exchange runs on the copy engines
        // (Transformer Engine's use_ce, no SM margin); a bulk overlap of Transformer Engine
        // (tp_comm_overlap's other tensor-parallel collectives) on its num_sm SMs; the rest are
        // NCCL kernels (async TP's unfused collectives too).
        if (took > 0 && how_[k] != TpOverlap::ring && env_.gpu != nullptr) {
            CommLoad load;
            if (env_.tp_overlap && !env_.symm_mem && tc.group == models::CommGroup::tp) {
                const double each_way =
                    collectives::bus_factor(coll.op, env_.tp_size) * static_cast<double>(tc.bytes);
                load = comm_load(*env_.gpu, kTeOverlapSms, 2 * each_way, took);
            } else if (times != nullptr) {
                load = times->load(coll);
            }
            if (flight_.count == flight_.spans.size())
                flight_.drop_ended(c_.gpu);
            if (flight_.count < flight_.spans.size())
                flight_.spans[flight_.count++] = CommSpan{start, start + took, load};
        }
        (tc.group != models::CommGroup::tp ? cost_.ep_comm : cost_.tp_comm) += took;
        // A ring exchange starts now; the GEMM that needs it reads `done` as its start.
        c_.comm = done_[k];
        ring_end_[k] = done_[k];
        if (how_[k] == TpOverlap::ring)
            done_[k] = start;
    }

    /// The latest of the collectives op `needed_by` waits for; `expert`: whether that one is an
    /// expert-parallel collective (its wait is counted apart).
    double wait_for(int needed_by, bool& expert) const {
        double need = 0;
        expert = false;
        for (Mask mask = waited_by_[static_cast<std::size_t>(needed_by)]; mask != 0;
             mask &= mask - 1) {
            const auto k = static_cast<std::size_t>(std::countr_zero(mask));
            if (done_[k] > need) {
                need = done_[k];
                expert = w_.collectives[k].group != models::CommGroup::tp;
            }
        }
        return need;
    }

    /// A ring-exchange all-gather feeding the GEMM of `slot` (started at `start`, taking `t`):
    /// chunk j of the GEMM needs the j-th shard, which arrives j ring steps after the exchange
    /// began (shard 0 is local). Returns the GEMM's end.
    double ring_fed_end(std::size_t slot, double start, double t, double end) const {
        for (Mask mask = ring_feeds_[slot]; mask != 0; mask &= mask - 1) {
            const auto k = static_cast<std::size_t>(std::countr_zero(mask));
            const int parts = std::max(2, env_.tp_size);
            const double step = (ring_end_[k] - done_[k]) / (parts - 1);
            const double g = t / parts;
            double ring_start = done_[k];
            end = start;
            if (env_.symm_mem) {
                // PyTorch's fused_all_gather_matmul (_pipelined_all_gather_and_consume): the
                // local shard is first copied into the symmetric buffer on the compute stream
                // and the ranks meet at a barrier, before the first chunk and before any shard
                // is pulled (its source: overlapping the copy with the first chunk was given
                // up).
                end = std::max(start, ring_start) +
                      env_.copy_seconds(2 * w_.collectives[k].bytes / parts);
                ring_start = end;
            }
            for (int j = 0; j < parts; ++j)
                end = std::max(end, ring_start + j * step) + g;
        }
        return end;
    }

    void run_op(int i) {
        const auto slot = static_cast<std::size_t>(i);
        const models::Op& op = u_.work->ops[slot];
        const double issue = c_.host;
        c_.host += host_cost(i, op);
        cost_.kernels += op.kernels;
        bool expert_wait = false;
        const double host_ready = std::max(c_.gpu, issue);
        const double start = std::max(host_ready, wait_for(i, expert_wait));
        cost_.host_wait += host_ready - c_.gpu;
        (expert_wait ? cost_.ep_wait : cost_.tp_wait) += start - host_ready;
        const double t =
            op.time.seconds() *
            (op.kind == models::OpKind::memory_bound ? inv_memory_eff_ : inv_gemm_eff_);
        // Slower beside the communication kernels in flight (those that ended before it
        // started dropped first).
        if (flight_.count > 0)
            flight_.drop_ended(start);
        const double slow = flight_.count == 0
                                ? 0.0
                                : stretched_end(start, t, op.kind, flight_.active()) - (start + t);
        (u_.recompute ? cost_.recompute : cost_.compute) += t + slow;
        cost_.overlap_slowdown += slow;
        gemm_start_ = start;
        double end = ring_fed_end(slot, start, t, start + t);
        if (pipelined_after_[slot] && !env_.symm_mem)
            end += t * (1 / env_.rs_gemm_share - 1); // the SMs the reduce-scatter runs on
        // The context-parallel ring's exchanges the attention steps do not hide (counted
        // with the tensor-parallel waits).
        double cp_slow = 0;
        if (op.kind == models::OpKind::fused_attention) {
            end += u_.pass == Pass::backward ? env_.cp_backward : env_.cp_forward;
            // The attention steps slowed by the exchanges beside them (compute).
            cp_slow =
                u_.pass == Pass::backward ? env_.cp_backward_slowdown : env_.cp_forward_slowdown;
            (u_.recompute ? cost_.recompute : cost_.compute) += cp_slow;
            cost_.overlap_slowdown += cp_slow;
        }
        cost_.tp_wait += end - start - t;
        end += slow + cp_slow;
        c_.gpu = end;
        if (op.host_sync && !env_.graph_iteration)
            c_.host = std::max(c_.host, c_.gpu);
        issue_all(issued_after_[slot + 1]);
    }

    const LayerWork& w_;
    const Unit& u_;
    const PassEnv& env_;
    Clock& c_;
    PassSeconds& cost_;
    InFlight& flight_;
    const int n_;
    const double host_overhead_;
    const double collective_host_;
    const double inv_gemm_eff_;
    const double inv_memory_eff_;
    double gemm_start_ = 0;
    // Completion times of this unit's collectives, by index in w.collectives; for a ring
    // exchange, its start.
    std::array<double, models::kMaxLayerCollectives> done_{};
    std::array<double, models::kMaxLayerCollectives> ring_end_{};
    std::array<TpOverlap, models::kMaxLayerCollectives> how_{};
    std::array<Mask, models::kMaxOpsPerPass + 1> issued_after_{};
    std::array<Mask, models::kMaxOpsPerPass + 1> waited_by_{};
    std::array<Mask, models::kMaxOpsPerPass + 1> ring_feeds_{};
    std::array<bool, models::kMaxOpsPerPass> pipelined_after_{};
    std::array<bool, models::kMaxOpsPerPass> captured_{};
};

} // namespace

void run_units(const LayerWork& w, const std::vector<Unit>& units, const PassEnv& env, Clock& c,
               PassSeconds& cost, const Gather& gather) {
    if (gather.seconds > 0)
        wait_for_gather(units, gather, c, cost);
    // Per thread and reused (sweeps run this for every layer of every configuration): only
    // the first `count` entries are read.
    thread_local std::array<CommSpan, 2 * models::kMaxLayerCollectives> spans;
    InFlight flight{spans};
    for (const Unit& u : units)
        UnitRun(w, u, env, c, cost, flight).run();
    if (gather.copy_in > 0 && !units.empty() && units.back().pass == Pass::backward) {
        c.gpu += gather.copy_in;
        cost.compute += gather.copy_in;
    }
}

void run_layers(const LayerWork& w, const std::vector<Unit>& units, int count, const PassEnv& env,
                Clock& c, PassSeconds& cost, const Gather& gather) {
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

namespace {

/// Which ops of a slice op_seconds counts: all, or only those of the attention step of
/// Megatron-Core's expert-parallel overlap (the shared experts and, in a recompute, the
/// attention modules' kernels), or only the others.
enum class OpSet : std::uint8_t { all, attention_step, other };

bool in_attention_step(std::string_view name, bool recompute) {
    // fine_grained_callables.py (NVIDIA/Megatron-LM@d98e8a64dd): the shared experts run in the
    // attention node on the compute stream, forward and backward; a recompute of an attention
    // module (mla_up_proj, core_attn, its norm) runs inside the attention's backward.
    // moe.shared.add (the shared experts' output added to the combine's) is the combine's
    // postprocess: it stays after the combine.
    return (name.starts_with("moe.shared.") && name != "moe.shared.add") ||
           (recompute && (name.starts_with("attention.") || name.starts_with("input_layernorm")));
}

/// The GPU seconds of ops [from, to) of `work` in `set` (the framework's efficiencies applied),
/// and of those among them that are weight gradients when `wgrad` is given.
double op_seconds(const models::PassWork& work, int from, int to, const PassEnv& env,
                  double* wgrad = nullptr, OpSet set = OpSet::all, bool recompute = false) {
    double all = 0;
    for (int i = std::max(0, from); i < std::min(to, work.ops.count()); ++i) {
        const models::Op& op = work.ops[static_cast<std::size_t>(i)];
        if (set != OpSet::all &&
            in_attention_step(op.name, recompute) != (set == OpSet::attention_step))
            continue;
        const double t =
            op.time.seconds() / (op.kind == models::OpKind::memory_bound ? env.fw->memory_efficiency
                                                                         : env.fw->gemm_efficiency);
        const std::string_view n = op.name;
        if (wgrad != nullptr && n.size() >= 6 && n.substr(n.size() - 6) == ".wgrad")
            *wgrad += t;
        else
            all += t;
    }
    return all;
}

/// The four all-to-alls that split a layer into the overlap's nodes (null where one lacks).
struct EpSplit {
    const models::TpCollective* dispatch = nullptr;
    const models::TpCollective* combine = nullptr;
    const models::TpCollective* combine_bwd = nullptr;
    const models::TpCollective* dispatch_bwd = nullptr;
    bool complete() const {
        return dispatch != nullptr && combine != nullptr && combine_bwd != nullptr &&
               dispatch_bwd != nullptr;
    }
};

EpSplit ep_split(const LayerWork& w) {
    EpSplit s;
    for (const models::TpCollective& tc : w.collectives) {
        if (tc.op != models::TpOp::all_to_all)
            continue;
        const bool bwd = tc.pass == Pass::backward;
        const bool is_dispatch = tc.name.find("dispatch") != std::string_view::npos;
        (bwd ? (is_dispatch ? s.dispatch_bwd : s.combine_bwd)
             : (is_dispatch ? s.dispatch : s.combine)) = &tc;
    }
    return s;
}

/// Which ops of a node's slice count: all, or only the weight gradients, or all but them.
enum class Wgrad : std::uint8_t { any, only, none };

bool is_wgrad(std::string_view n) {
    return n.size() >= 6 && n.substr(n.size() - 6) == ".wgrad";
}

/// Adds to `node` the host side of ops [from, to) of `work` in `set` (op_seconds' slices):
/// what UnitRun::host_cost charges for each (its kernels, one launch per captured run,
/// nothing in a whole-iteration graph), its GPU seconds, and where its last host sync falls.
void add_host(EpNodeHost& node, const models::PassWork& work, int from, int to, const PassEnv& env,
              OpSet set, bool recompute = false, Wgrad wg = Wgrad::any) {
    if (env.graph_iteration) {
        return; // no host time and no host wait inside the graph
    }
    const double per_kernel = env.fw->host_overhead.seconds();
    bool moe_layer = false;
    for (const models::Op& op : work.ops)
        moe_layer = moe_layer || op.name.starts_with("moe.");
    bool prev_captured = false;
    for (int i = 0; i < work.ops.count(); ++i) {
        const models::Op& op = work.ops[static_cast<std::size_t>(i)];
        const bool captured =
            env.graph_scopes != 0 && (graph_scopes_of(op.name, moe_layer) & env.graph_scopes) != 0;
        const bool first_of_run = !prev_captured;
        prev_captured = captured;
        if (i < from || i >= to)
            continue;
        if (set != OpSet::all &&
            in_attention_step(op.name, recompute) != (set == OpSet::attention_step))
            continue;
        if ((wg == Wgrad::only && !is_wgrad(op.name)) || (wg == Wgrad::none && is_wgrad(op.name)))
            continue;
        node.issue += captured ? (first_of_run ? per_kernel : 0.0) : per_kernel * op.kernels;
        node.gpu +=
            op.time.seconds() / (op.kind == models::OpKind::memory_bound ? env.fw->memory_efficiency
                                                                         : env.fw->gemm_efficiency);
        if (op.host_sync) {
            node.sync = true;
            node.issue_to_sync = node.issue;
            node.gpu_to_sync = node.gpu;
        }
    }
}

} // namespace

std::optional<EpOverlapHost> ep_overlap_host(const LayerWork& w, const PassEnv& env) {
    const EpSplit s = ep_split(w);
    if (!s.complete())
        return std::nullopt;
    EpOverlapHost h;
    if (!env.graph_iteration)
        for (EpNode n :
             {EpNode::dispatch_fwd, EpNode::combine_fwd, EpNode::combine_bwd, EpNode::dispatch_bwd})
            h[n].issue = env.fw->host_overhead.seconds() + env.fw->collective_overhead.seconds();
    const models::PassWork& F = w.forward;
    const models::PassWork& B = w.backward;
    const models::PassWork& R = w.recompute;
    const int nf = F.ops.count(), nb = B.ops.count(), nr = R.ops.count();
    add_host(h[EpNode::attn_fwd], F, 0, s.dispatch->after + 1, env, OpSet::other);
    add_host(h[EpNode::attn_fwd], F, 0, nf, env, OpSet::attention_step);
    add_host(h[EpNode::mlp_fwd], F, s.dispatch->after + 1, s.combine->after + 1, env, OpSet::other);
    add_host(h[EpNode::post_fwd], F, s.combine->after + 1, nf, env, OpSet::other);
    add_host(h[EpNode::pre_bwd], R, 0, nr, env, OpSet::other, true);
    add_host(h[EpNode::pre_bwd], B, 0, s.combine_bwd->after + 1, env, OpSet::other);
    add_host(h[EpNode::mlp_bwd], B, s.combine_bwd->after + 1, s.dispatch_bwd->after + 1, env,
             OpSet::other, false, Wgrad::none);
    add_host(h[EpNode::mlp_wgrad], B, s.combine_bwd->after + 1, s.dispatch_bwd->after + 1, env,
             OpSet::other, false, Wgrad::only);
    add_host(h[EpNode::attn_bwd], B, s.dispatch_bwd->after + 1, nb, env, OpSet::other);
    add_host(h[EpNode::attn_bwd], B, 0, nb, env, OpSet::attention_step);
    add_host(h[EpNode::attn_bwd], R, 0, nr, env, OpSet::attention_step, true);
    return h;
}

std::optional<EpOverlapLayer> ep_overlap_layer(const LayerWork& w, const PassEnv& env) {
    const EpSplit s = ep_split(w);
    if (!s.complete())
        return std::nullopt;
    const models::TpCollective* dispatch = s.dispatch;
    const models::TpCollective* combine = s.combine;
    const models::TpCollective* combine_bwd = s.combine_bwd;
    const models::TpCollective* dispatch_bwd = s.dispatch_bwd;
    // Each all-to-all's time, and its SM and HBM shares weighted by it.
    double comm = 0, sm = 0, hbm = 0;
    auto seconds = [&](const models::TpCollective& tc) {
        CollectiveTimes* times = tc.group == models::CommGroup::ep_rail ? env.ep_rail : env.ep;
        if (times == nullptr)
            return 0.0;
        collectives::Collective coll;
        coll.op = to_collective(tc.op);
        coll.bytes = tc.bytes;
        coll.dtype = comm_dtype(env.dtype);
        const double t = times->time(coll).seconds();
        const CommLoad load = times->load(coll);
        comm += t;
        sm += t * load.sm_share;
        hbm += t * load.hbm_share;
        return t;
    };
    const models::PassWork& F = w.forward;
    const models::PassWork& B = w.backward;
    EpOverlapLayer l;
    // The attention step holds the shared experts (and, backward, the attention modules'
    // recompute) wherever the layer's op list puts them (in_attention_step).
    const int nf = F.ops.count(), nb = B.ops.count(), nr = w.recompute.ops.count();
    l.attn_fwd = op_seconds(F, 0, dispatch->after + 1, env, nullptr, OpSet::other) +
                 op_seconds(F, 0, nf, env, nullptr, OpSet::attention_step);
    l.dispatch_fwd = seconds(*dispatch);
    l.mlp_fwd = op_seconds(F, dispatch->after + 1, combine->after + 1, env, nullptr, OpSet::other);
    l.combine_fwd = seconds(*combine);
    l.post_fwd = op_seconds(F, combine->after + 1, nf, env, nullptr, OpSet::other);
    l.pre_bwd = op_seconds(w.recompute, 0, nr, env, nullptr, OpSet::other, true) +
                op_seconds(B, 0, combine_bwd->after + 1, env, nullptr, OpSet::other);
    l.combine_bwd = seconds(*combine_bwd);
    l.mlp_bwd = op_seconds(B, combine_bwd->after + 1, dispatch_bwd->after + 1, env, &l.mlp_wgrad,
                           OpSet::other);
    l.dispatch_bwd = seconds(*dispatch_bwd);
    l.attn_bwd = op_seconds(B, dispatch_bwd->after + 1, nb, env, nullptr, OpSet::other) +
                 op_seconds(B, 0, nb, env, nullptr, OpSet::attention_step) +
                 op_seconds(w.recompute, 0, nr, env, nullptr, OpSet::attention_step, true);
    // The kernels' mix of tensor-core and memory-bound time sets the share they lose (as a
    // parameter gather's beside a layer: wait_for_gather).
    double all = 0, memory = 0;
    for (const models::PassWork* pass : {&F, &B})
        for (const models::Op& op : pass->ops) {
            all += op.time.seconds();
            if (op.kind == models::OpKind::memory_bound)
                memory += op.time.seconds();
        }
    if (comm > 0 && all > 0) {
        const double f = memory / all;
        l.comm_share = ((1 - f) * sm + f * hbm) / comm;
    }
    return l;
}

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
    out.tp_comm = sim::Time::from_seconds(cost.tp_comm);
    out.overlap_slowdown = sim::Time::from_seconds(cost.overlap_slowdown);
    out.time =
        out.compute + out.recompute + out.tp_wait + out.ep_wait + out.host_wait + out.dp_wait;
    out.kernels = cost.kernels;
    return out;
}

} // namespace clustersim::strategies::parallel::detail
