#include "strategies/parallel/analytic_executor.h"

#include "strategies/parallel/overlap_interference.h"
#include "strategies/parallel/schedule_timing.h"

#include <algorithm>
#include <optional>

namespace clustersim::strategies::parallel::detail {

namespace {

/// The plan's pass and transfer durations, as the schedule timing takes them.
PassDurations durations_of(const StepPlan& plan) {
    PassDurations d;
    d.pass = [&plan](PassKind k, int vs) {
        switch (k) {
        case PassKind::forward:
            return plan.stage(vs).forward.time;
        case PassKind::backward:
            return plan.stage(vs).backward.time;
        case PassKind::backward_input:
            return plan.stage(vs).backward_input.time;
        case PassKind::weight:
            break;
        }
        return plan.stage(vs).weight.time;
    };
    if (plan.experiment->parallel.overlap_param_gather)
        d.first_forward = [&plan](int vs) { return plan.stage(vs).first_forward.time; };
    d.transfer = [&plan](PassKind k, int vs) {
        return k == PassKind::forward ? plan.stage(vs).send_forward : plan.stage(vs).send_backward;
    };
    d.blocking_sends = !plan.experiment->parallel.pp_overlap;
    return d;
}

/// Per rank and pass of its order: what the gradient reductions overlapped with the backward
/// cost the passes they run beside, under `timing` (empty vectors: nothing); true if any.
bool extras_of(const StepPlan& plan, const ScheduleTiming& timing,
               std::vector<std::vector<sim::Time>>& extra) {
    const int P = plan.shape.ranks;
    // Each rank's vector emptied, its memory kept (run_analytic reuses it from step to step).
    extra.resize(static_cast<std::size_t>(P));
    for (auto& e : extra)
        e.clear();
    // The gradient reductions overlapped with the backward (the collectives of a chunk's
    // buckets, issued as run_analytic issues them) slow the passes they run beside: each one by
    // overlap_slowdown of the compute it overlaps, shared among those passes by their overlap.
    // Passes are taken as tensor-core bound: the share they lose is the collective's SMs.
    bool any = false;
    for (int p = 0; p < P; ++p) {
        const RankPlan& rp = plan.ranks[static_cast<std::size_t>(p)];
        const auto passes = timing.rank(static_cast<std::size_t>(p));
        auto& extras = extra[static_cast<std::size_t>(p)];
        bool overlapped_dp = false;
        for (const DpCollective& c : rp.dp)
            overlapped_dp = overlapped_dp || (!c.after_optimizer() && c.chunk);
        if (!overlapped_dp)
            continue;
        extras.assign(passes.size(), sim::Time::zero());
        const auto& order = plan.orders()[static_cast<std::size_t>(p)];
        const auto last_b = last_backward_of_chunk(order, plan.shape.virtual_stages);
        sim::Time t;
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer() || !c.chunk)
                continue;
            const auto at = static_cast<std::size_t>(last_b[static_cast<std::size_t>(*c.chunk)]);
            const PassTime& b = passes[at];
            const PipePass& pass = order[at];
            const sim::Time ready =
                b.start + bucket_ready(plan.stage(virtual_stage(pass.chunk, p, plan.shape)),
                                       pass.kind, static_cast<std::size_t>(*c.bucket));
            const sim::Time begin = std::max(ready, t);
            t = begin + c.time;
            const double share = c.load.sm_share;
            if (!(share > 0) || t <= begin)
                continue;
            // The passes it overlaps: from the first that ends after it starts (a rank's passes
            // run in order) to the first that starts after it ends.
            const auto first = static_cast<std::size_t>(
                std::partition_point(passes.begin(), passes.end(),
                                     [&](const PassTime& x) { return x.end <= begin; }) -
                passes.begin());
            auto overlap = [&](const PassTime& x) {
                return std::max(0.0, (std::min(x.end, t) - std::max(x.start, begin)).seconds());
            };
            double overlapped = 0;
            for (std::size_t i = first; i < passes.size() && passes[i].start < t; ++i)
                overlapped += overlap(passes[i]);
            const double slow = overlap_slowdown((t - begin).seconds(), overlapped, share);
            if (!(slow > 0))
                continue;
            for (std::size_t i = first; i < passes.size() && passes[i].start < t; ++i) {
                const double o = overlap(passes[i]);
                if (o > 0) {
                    extras[i] += sim::Time::from_seconds(slow * o / overlapped);
                    any = true;
                }
            }
        }
    }
    if (!any)
        for (auto& e : extra)
            e.clear();
    return any;
}

} // namespace

std::vector<std::vector<sim::Time>> dp_overlap_slowdown(const StepPlan& plan) {
    std::vector<std::vector<sim::Time>> extra;
    extras_of(plan, time_schedule(plan.orders(), plan.shape, durations_of(plan)), extra);
    return extra;
}

std::vector<ExecutedRank> run_analytic(const StepPlan& plan, bool timeline) {
    const int P = plan.shape.ranks;
    const PassDurations d = durations_of(plan);
    // What a timing holds: by pass of every rank, by micro-batch and stage, and per rank and
    // pass what the data-parallel collectives beside it cost it (extra). Kept from step to step
    // on each thread: a sweep's configurations then reuse the same pages, where each one
    // allocated its own megabytes (page faults, and the allocator's shared arena, cost a sweep
    // on two threads more than on one).
    struct Scratch {
        TimingState state;
        ScheduleTiming timing;
        std::vector<std::vector<sim::Time>> extra;
    };
    thread_local Scratch scratch;
    TimingState& state = scratch.state;
    ScheduleTiming& timing = scratch.timing;
    std::vector<std::vector<sim::Time>>& extra = scratch.extra; // sized by extras_of

    // The ranks' data-parallel streams, optimizer and end, from the timing; then the pass
    // records: every rank's for the timeline, else only those of the ranks that end last (the
    // step's breakdown reads the critical rank's alone, and a long pipeline has millions of
    // passes). `state` keeps, by micro-batch x virtual stage, when each forward and
    // input-gradient backward ended: when each pass's input was sent.
    auto execute = [&] {
        std::vector<ExecutedRank> out(static_cast<std::size_t>(P));
        auto slowdown_of = [&](int p, std::size_t i) {
            const auto& extras = extra[static_cast<std::size_t>(p)];
            return i < extras.size() ? extras[i] : sim::Time::zero();
        };

        // Data-parallel streams, in issue order; the embedding all-reduce shared by the first
        // and last rank waits for both.
        std::vector<sim::Time> before_shared(static_cast<std::size_t>(P));
        for (int p = 0; p < P; ++p) {
            const RankPlan& rp = plan.ranks[static_cast<std::size_t>(p)];
            ExecutedRank& r = out[static_cast<std::size_t>(p)];
            const auto passes = timing.rank(static_cast<std::size_t>(p));
            const auto& order = plan.orders()[static_cast<std::size_t>(p)];
            if (!passes.empty())
                r.last_pass_end = release_of(state, order.back(),
                                             virtual_stage(order.back().chunk, p, plan.shape),
                                             passes.back().end, plan.shape);
            const auto last_b = last_backward_of_chunk(order, plan.shape.virtual_stages);
            sim::Time t;
            for (const DpCollective& c : rp.dp) {
                if (c.after_optimizer() || !c.chunk)
                    continue;
                const auto at =
                    static_cast<std::size_t>(last_b[static_cast<std::size_t>(*c.chunk)]);
                const PassTime& b = passes[at];
                const PipePass& pass = order[at];
                const auto& st = plan.stage(virtual_stage(pass.chunk, p, plan.shape));
                // A pass slowed by the collectives beside it produces its gradients as much later.
                const sim::Time ready =
                    b.start +
                    stretched(bucket_ready(st, pass.kind, static_cast<std::size_t>(*c.bucket)),
                              b.end - b.start - slowdown_of(p, at), b.end - b.start);
                const sim::Time start = std::max(ready, t);
                t = start + c.time;
                r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
            }
            for (const DpCollective& c : rp.dp) {
                if (c.after_optimizer() || c.chunk || c.role == DpRole::embedding_grad_all_reduce)
                    continue;
                const sim::Time start = std::max(r.last_pass_end, t);
                t = start + c.time;
                r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
            }
            before_shared[static_cast<std::size_t>(p)] = std::max(t, r.last_pass_end);
        }
        sim::Time last_end;
        for (int p = 0; p < P; ++p) {
            const RankPlan& rp = plan.ranks[static_cast<std::size_t>(p)];
            ExecutedRank& r = out[static_cast<std::size_t>(p)];
            sim::Time t = before_shared[static_cast<std::size_t>(p)];
            for (const DpCollective& c : rp.dp) {
                if (c.role != DpRole::embedding_grad_all_reduce)
                    continue;
                const sim::Time start = std::max(before_shared.front(), before_shared.back());
                t = start + c.time;
                r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
            }
            r.optimizer_start = std::max(r.last_pass_end, t);
            r.optimizer_end = r.optimizer_start + rp.optimizer_time;
            t = r.optimizer_end;
            for (const DpCollective& c : rp.dp) {
                if (!c.after_optimizer())
                    continue;
                const sim::Time start = t;
                t = start + c.time;
                r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
            }
            r.end = t;
            last_end = std::max(last_end, r.end);
        }

        const std::vector<sim::Time>& fwd_end = state.fwd_end;
        const std::vector<sim::Time>& bwd_end = state.bwd_end;
        for (int p = 0; p < P; ++p) {
            ExecutedRank& r = out[static_cast<std::size_t>(p)];
            if (!timeline && r.end != last_end)
                continue;
            const auto passes = timing.rank(static_cast<std::size_t>(p));
            const auto& order = plan.orders()[static_cast<std::size_t>(p)];
            r.passes.reserve(passes.size());
            for (std::size_t i = 0; i < passes.size(); ++i) {
                const PassTime& t = passes[i];
                const PipePass& pass = order[i];
                const int vs = virtual_stage(pass.chunk, p, plan.shape);
                ExecutedPass e{pass,
                               vs,
                               t.start,
                               t.end,
                               std::nullopt,
                               release_of(state, pass, vs, t.end, plan.shape),
                               slowdown_of(p, i)};
                if (pass.kind == PassKind::forward && !route_start(vs, plan.shape)) {
                    const sim::Time sent = fwd_end[state.end_index(pass.micro_batch, vs - 1)];
                    e.input = InputTransfer{sent, sent + plan.stage(vs - 1).send_forward};
                } else if (is_input_backward(pass.kind) && !route_end(vs, plan.shape)) {
                    const sim::Time sent = bwd_end[state.end_index(pass.micro_batch, vs + 1)];
                    e.input = InputTransfer{sent, sent + plan.stage(vs).send_backward};
                }
                if (timeline && e.input && e.input->end > e.input->start) {
                    // Record the transfer on the sender's timeline.
                    const int sender =
                        rank_of_stage(pass.kind == PassKind::forward ? vs - 1 : vs + 1, plan.shape);
                    out[static_cast<std::size_t>(sender)].sends.push_back(
                        {e.input->start, e.input->end,
                         pass_label(pass, plan.shape.virtual_stages)});
                }
                r.passes.push_back(e);
            }
        }
        return out;
    };

    time_schedule(plan.orders(), plan.shape, d, state, timing);
    // The passes lengthened by the gradient reductions beside them, and the schedule timed once
    // more (one correction, not iterated to a fixed point): only the passes that can move.
    if (extras_of(plan, timing, extra))
        retime_with_extras(timing, state, plan.orders(), plan.shape, extra);
    std::vector<ExecutedRank> out = execute();
    return out;
}

} // namespace clustersim::strategies::parallel::detail
