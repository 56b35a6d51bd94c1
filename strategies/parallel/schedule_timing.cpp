#include "strategies/parallel/schedule_timing.h"

#include <algorithm>
#include <stdexcept>

namespace clustersim::strategies::parallel {

namespace {

/// An end not known yet (a timing's times are never negative).
constexpr sim::Time kNotYet = sim::Time::ps(-1);

/// The durations by (kind, virtual stage) into `s` (they depend on nothing else: evaluated once
/// per timing).
void stage_durations(const PipelineShape& shape, const PassDurations& d, TimingState& s) {
    const int V = stage_count(shape);
    for (auto* v : {&s.f, &s.f0, &s.b, &s.bi, &s.w, &s.xfer_f, &s.xfer_b})
        v->assign(static_cast<std::size_t>(V), sim::Time::zero());
    for (int vs = 0; vs < V; ++vs) {
        s.f[vs] = d.pass(PassKind::forward, vs);
        s.f0[vs] = d.first_forward ? d.first_forward(vs) : s.f[vs];
        s.b[vs] = shape.forward_only ? sim::Time::zero() : d.pass(PassKind::backward, vs);
        if (!shape.forward_only) {
            s.bi[vs] = d.pass(PassKind::backward_input, vs);
            s.w[vs] = d.pass(PassKind::weight, vs);
        }
        if (vs + 1 < V && !route_end(vs, shape)) {
            s.xfer_f[vs] = d.transfer(PassKind::forward, vs);
            if (!shape.forward_only)
                s.xfer_b[vs] = d.transfer(PassKind::backward, vs);
        }
    }
    s.blocking_sends = d.blocking_sends;
}

/// What the sweep needs of a chunk on a rank, looked up once per timing instead of once per
/// pass: where its passes' ends are kept (plus the micro-batch), those of the stages before and
/// after it on its route, the transfers from them, its durations and what a blocking send of
/// its output adds to when its rank goes on (release_of's).
struct ChunkOnRank {
    bool starts = false; ///< route_start: its forwards take no input
    bool ends = false;   ///< route_end: its backwards take no gradient
    std::size_t own = 0, before = 0, after = 0;
    sim::Time in_f, in_b;
    sim::Time f, f0, b, bi, w;
    sim::Time send_f, send_b;
};

std::vector<ChunkOnRank> chunks_on_ranks(const PipelineShape& shape, const TimingState& s) {
    const int P = shape.ranks;
    const int v = shape.virtual_stages;
    std::vector<ChunkOnRank> out(static_cast<std::size_t>(P) * static_cast<std::size_t>(v));
    for (int p = 0; p < P; ++p)
        for (int c = 0; c < v; ++c) {
            ChunkOnRank& x = out[static_cast<std::size_t>(p) * v + c];
            const int vs = virtual_stage(c, p, shape);
            const auto at = static_cast<std::size_t>(vs);
            x.starts = route_start(vs, shape);
            x.ends = route_end(vs, shape);
            x.own = s.end_index(0, vs);
            if (!x.starts) {
                x.before = s.end_index(0, vs - 1);
                x.in_f = s.xfer_f[at - 1];
            }
            if (!x.ends) {
                x.after = s.end_index(0, vs + 1);
                x.in_b = s.xfer_b[at];
            }
            x.f = s.f[at];
            x.f0 = s.f0[at];
            x.b = s.b[at];
            x.bi = s.bi[at];
            x.w = s.w[at];
            x.send_f =
                release_of(s, PipePass{PassKind::forward, 0, c}, vs, sim::Time::zero(), shape);
            x.send_b =
                release_of(s, PipePass{PassKind::backward, 0, c}, vs, sim::Time::zero(), shape);
        }
    return out;
}

/// Times the passes of `orders` after those `t` holds (a prefix of each rank's order), each
/// pass's duration plus `extra(rank, index)`, `s` holding the ends of the passes timed so far:
/// sweeps the ranks, running every pass whose inputs are known; a sweep that runs nothing means
/// the orders deadlock (a bug in a schedule, reported as such).
template <class Extra>
void sweep(const std::vector<std::vector<PipePass>>& orders, const PipelineShape& shape,
           ScheduleTiming& t, TimingState& s, std::vector<sim::Time>& free_at, Extra&& extra) {
    const int P = shape.ranks;
    const int v = shape.virtual_stages;
    const std::vector<ChunkOnRank> chunks = chunks_on_ranks(shape, s);
    sim::Time* const fwd_end = s.fwd_end.data();
    sim::Time* const bwd_end = s.bwd_end.data();
    std::size_t remaining = 0;
    for (int p = 0; p < P; ++p)
        remaining += orders[p].size() - t.timed[p];

    // The sweeps go up the ranks and down again: forwards flow up the pipeline and backwards
    // down, so each direction's wave runs through every rank in one sweep (sweeping up alone,
    // a backward waited a whole sweep per rank; in the Turing-530B sweep of bench_sweep one try
    // in five now finds its rank blocked). The order the passes are timed in changes no time:
    // each pass starts when its inputs and its rank's previous pass are done.
    bool up = true;
    sim::Time makespan = t.makespan;
    while (remaining > 0) {
        bool progressed = false;
        for (int k = 0; k < P; ++k) {
            const int p = up ? k : P - 1 - k;
            const auto& order = orders[p];
            PassTime* const done = t.passes.data() + t.first[p];
            const ChunkOnRank* const rank_chunks = chunks.data() + static_cast<std::size_t>(p) * v;
            // The rank's running state in locals (stores to the ends could alias them).
            sim::Time free = free_at[p];
            sim::Time busy = t.busy[p];
            const std::size_t before = t.timed[p];
            std::size_t index = before;
            for (; index < order.size(); ++index) {
                const PipePass& pass = order[index];
                const ChunkOnRank& c = rank_chunks[pass.chunk];
                const auto j = static_cast<std::size_t>(pass.micro_batch);
                sim::Time ready;
                if (pass.kind == PassKind::weight) {
                    // After its own B, which the rank ran earlier in its order.
                    const sim::Time own = bwd_end[c.own + j];
                    if (own == kNotYet)
                        break;
                    ready = own;
                } else if (pass.kind == PassKind::forward) {
                    if (!c.starts) {
                        const sim::Time prev = fwd_end[c.before + j];
                        if (prev == kNotYet)
                            break;
                        ready = prev + c.in_f;
                    }
                } else {
                    const sim::Time own = fwd_end[c.own + j];
                    if (own == kNotYet)
                        break;
                    ready = own;
                    if (!c.ends) {
                        const sim::Time later = bwd_end[c.after + j];
                        if (later == kNotYet)
                            break;
                        ready = std::max(ready, later + c.in_b);
                    }
                }
                if (pass.joint && index + 1 < order.size()) {
                    // Waits for the next pass's input from another stage as well.
                    const PipePass& next = order[index + 1];
                    const ChunkOnRank& c2 = rank_chunks[next.chunk];
                    const auto j2 = static_cast<std::size_t>(next.micro_batch);
                    if (next.kind == PassKind::forward && !c2.starts) {
                        const sim::Time in = fwd_end[c2.before + j2];
                        if (in == kNotYet)
                            break;
                        ready = std::max(ready, in + c2.in_f);
                    } else if (is_input_backward(next.kind) && !c2.ends) {
                        const sim::Time in = bwd_end[c2.after + j2];
                        if (in == kNotYet)
                            break;
                        ready = std::max(ready, in + c2.in_b);
                    }
                }
                const sim::Time start = std::max(ready, free);
                sim::Time dur;
                sim::Time send;
                switch (pass.kind) {
                case PassKind::forward:
                    dur = j == 0 ? c.f0 : c.f;
                    send = c.send_f;
                    break;
                case PassKind::backward:
                    dur = c.b;
                    send = c.send_b;
                    break;
                case PassKind::backward_input:
                    dur = c.bi;
                    send = c.send_b;
                    break;
                case PassKind::weight:
                    dur = c.w;
                    break;
                }
                dur += extra(p, index);
                const sim::Time end = start + dur;
                if (pass.kind == PassKind::forward)
                    fwd_end[c.own + j] = end;
                else if (is_input_backward(pass.kind))
                    bwd_end[c.own + j] = end;
                free = end + send; // what release_of gives
                busy += dur;
                done[index] = PassTime{start, end};
                makespan = std::max(makespan, free);
            }
            free_at[p] = free;
            t.busy[p] = busy;
            t.timed[p] = index;
            remaining -= index - before;
            progressed = progressed || index > before;
        }
        if (!progressed)
            throw std::logic_error("pipeline schedule deadlocks: no rank can run its next pass");
        up = !up;
    }
    t.makespan = makespan;
}

} // namespace

ScheduleTiming time_schedule(const std::vector<std::vector<PipePass>>& orders,
                             const PipelineShape& shape, const PassDurations& d) {
    TimingState state;
    return time_schedule(orders, shape, d, state);
}

ScheduleTiming time_schedule(const std::vector<std::vector<PipePass>>& orders,
                             const PipelineShape& shape, const PassDurations& d,
                             TimingState& state) {
    ScheduleTiming t;
    time_schedule(orders, shape, d, state, t);
    return t;
}

void time_schedule(const std::vector<std::vector<PipePass>>& orders, const PipelineShape& shape,
                   const PassDurations& d, TimingState& state, ScheduleTiming& t) {
    const int P = shape.ranks;
    const std::size_t ends = static_cast<std::size_t>(shape.micro_batches) *
                             static_cast<std::size_t>(stage_count(shape));
    stage_durations(shape, d, state);
    state.micro_batches = shape.micro_batches;
    state.fwd_end.assign(ends, kNotYet);
    state.bwd_end.assign(ends, kNotYet);
    t.first.assign(static_cast<std::size_t>(P) + 1, 0);
    for (int p = 0; p < P; ++p)
        t.first[static_cast<std::size_t>(p) + 1] =
            t.first[static_cast<std::size_t>(p)] + orders[static_cast<std::size_t>(p)].size();
    // Each pass timed once: room for the orders, kept from an earlier timing if it had more.
    if (t.passes.size() < t.first.back())
        t.passes.resize(t.first.back());
    t.timed.assign(static_cast<std::size_t>(P), 0);
    t.makespan = sim::Time::zero();
    t.busy.assign(static_cast<std::size_t>(P), sim::Time::zero());
    std::vector<sim::Time> free_at(static_cast<std::size_t>(P));
    if (d.extra)
        sweep(orders, shape, t, state, free_at, d.extra);
    else
        sweep(orders, shape, t, state, free_at, [](int, std::size_t) { return sim::Time::zero(); });
}

std::vector<std::size_t> first_movable(const ScheduleTiming& timing, const PassExtras& extra) {
    // The earliest start of a pass given time.
    sim::Time first = sim::Time::max();
    for (std::size_t p = 0; p < extra.size() && p < timing.ranks(); ++p) {
        const auto passes = timing.rank(p);
        const std::size_t n = std::min(extra[p].size(), passes.size());
        for (std::size_t i = 0; i < n; ++i)
            if (extra[p][i] != sim::Time::zero()) {
                first = std::min(first, passes[i].start);
                break; // a rank's passes start in order
            }
    }
    std::vector<std::size_t> from(timing.ranks());
    for (std::size_t p = 0; p < from.size(); ++p) {
        const auto passes = timing.rank(p);
        from[p] = static_cast<std::size_t>(
            std::partition_point(passes.begin(), passes.end(),
                                 [&](const PassTime& x) { return x.start < first; }) -
            passes.begin());
    }
    return from;
}

void retime_with_extras(ScheduleTiming& timing, TimingState& state,
                        const std::vector<std::vector<PipePass>>& orders,
                        const PipelineShape& shape, const PassExtras& extra) {
    const int P = shape.ranks;
    const std::vector<std::size_t> from = first_movable(timing, extra);
    // The passes that keep their times stay, with their ends as inputs and their rank's last
    // release as when it goes on; the others are dropped, with their ends and busy time, and
    // timed again.
    std::vector<sim::Time> free_at(static_cast<std::size_t>(P));
    timing.makespan = sim::Time::zero();
    for (int p = 0; p < P; ++p) {
        const auto passes = timing.rank(static_cast<std::size_t>(p));
        const std::size_t keep = from[static_cast<std::size_t>(p)];
        const auto& order = orders[static_cast<std::size_t>(p)];
        for (std::size_t i = keep; i < passes.size(); ++i) {
            const PassTime& x = passes[i];
            const PipePass& pass = order[i];
            const std::size_t key =
                state.end_index(pass.micro_batch, virtual_stage(pass.chunk, p, shape));
            if (pass.kind == PassKind::forward)
                state.fwd_end[key] = kNotYet;
            else if (is_input_backward(pass.kind))
                state.bwd_end[key] = kNotYet;
            timing.busy[static_cast<std::size_t>(p)] -= x.end - x.start;
        }
        timing.timed[static_cast<std::size_t>(p)] = keep;
        if (keep > 0) {
            // A rank's releases never decrease: its last kept pass's is its latest.
            const PipePass& last = order[keep - 1];
            const sim::Time released = release_of(state, last, virtual_stage(last.chunk, p, shape),
                                                  passes[keep - 1].end, shape);
            free_at[static_cast<std::size_t>(p)] = released;
            timing.makespan = std::max(timing.makespan, released);
        }
    }
    sweep(orders, shape, timing, state, free_at, [&extra](int p, std::size_t i) {
        const auto& e = extra[static_cast<std::size_t>(p)];
        return i < e.size() ? e[i] : sim::Time::zero();
    });
}

} // namespace clustersim::strategies::parallel
