#include "strategies/parallel/schedule_timing.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>

namespace clustersim::strategies::parallel {

ScheduleTiming time_schedule(const std::vector<std::vector<PipePass>>& orders,
                             const PipelineShape& shape, const PassDurations& d) {
    const int P = shape.ranks;
    const int m = shape.micro_batches;
    const int V = stage_count(shape);
    // End times of every (micro-batch, virtual stage) forward and input-gradient backward, once
    // known.
    std::vector<std::optional<sim::Time>> fwd_end(static_cast<std::size_t>(m) * V);
    std::vector<std::optional<sim::Time>> bwd_end(static_cast<std::size_t>(m) * V);
    auto at = [V](int j, int vs) { return static_cast<std::size_t>(j) * V + vs; };

    // Durations depend only on (kind, virtual stage): evaluate each once.
    bool split = false;
    for (const auto& o : orders)
        for (const PipePass& pass : o)
            split = split || (pass.kind != PassKind::forward && pass.kind != PassKind::backward);
    std::vector<sim::Time> dur_f(V), dur_f0(V), dur_b(V), dur_bi(V), dur_w(V), xfer_f(V), xfer_b(V);
    for (int vs = 0; vs < V; ++vs) {
        dur_f[vs] = d.pass(PassKind::forward, vs);
        dur_f0[vs] = d.first_forward ? d.first_forward(vs) : dur_f[vs];
        dur_b[vs] = shape.forward_only ? sim::Time::zero() : d.pass(PassKind::backward, vs);
        if (split && !shape.forward_only) {
            dur_bi[vs] = d.pass(PassKind::backward_input, vs);
            dur_w[vs] = d.pass(PassKind::weight, vs);
        }
        if (vs + 1 < V && !route_end(vs, shape)) {
            xfer_f[vs] = d.transfer(PassKind::forward, vs);
            if (!shape.forward_only)
                xfer_b[vs] = d.transfer(PassKind::backward, vs);
        }
    }

    ScheduleTiming t;
    t.ranks.resize(P);
    for (int p = 0; p < P; ++p)
        t.ranks[p].reserve(orders[p].size()); // each pass timed once: no room to spare
    t.busy.assign(P, sim::Time::zero());
    std::vector<std::size_t> next(P, 0);
    std::vector<sim::Time> free_at(P);
    std::size_t remaining = 0;
    for (const auto& o : orders)
        remaining += o.size();

    // Sweep the ranks, running every pass whose inputs are known; a sweep that runs nothing
    // means the orders deadlock (a bug in a schedule, reported as such).
    while (remaining > 0) {
        bool progressed = false;
        for (int p = 0; p < P; ++p) {
            const auto& order = orders[p];
            while (next[p] < order.size()) {
                const PipePass& pass = order[next[p]];
                const int vs = virtual_stage(pass.chunk, p, shape);
                sim::Time ready;
                if (pass.kind == PassKind::weight) {
                    // After its own B, which the rank ran earlier in its order.
                    const std::optional<sim::Time> own = bwd_end[at(pass.micro_batch, vs)];
                    if (!own)
                        break;
                    ready = *own;
                } else if (pass.kind == PassKind::forward) {
                    if (!route_start(vs, shape)) {
                        const std::optional<sim::Time> prev = fwd_end[at(pass.micro_batch, vs - 1)];
                        if (!prev)
                            break;
                        ready = *prev + xfer_f[vs - 1];
                    }
                } else {
                    const std::optional<sim::Time> own = fwd_end[at(pass.micro_batch, vs)];
                    if (!own)
                        break;
                    ready = *own;
                    if (!route_end(vs, shape)) {
                        const std::optional<sim::Time> later =
                            bwd_end[at(pass.micro_batch, vs + 1)];
                        if (!later)
                            break;
                        ready = std::max(ready, *later + xfer_b[vs]);
                    }
                }
                if (pass.joint && next[p] + 1 < order.size()) {
                    // Waits for the next pass's input from another stage as well.
                    const PipePass& after = order[next[p] + 1];
                    const int vs2 = virtual_stage(after.chunk, p, shape);
                    if (after.kind == PassKind::forward && !route_start(vs2, shape)) {
                        const auto in = fwd_end[at(after.micro_batch, vs2 - 1)];
                        if (!in)
                            break;
                        ready = std::max(ready, *in + xfer_f[vs2 - 1]);
                    } else if (is_input_backward(after.kind) && !route_end(vs2, shape)) {
                        const auto in = bwd_end[at(after.micro_batch, vs2 + 1)];
                        if (!in)
                            break;
                        ready = std::max(ready, *in + xfer_b[vs2]);
                    }
                }
                const sim::Time start = std::max(ready, free_at[p]);
                sim::Time dur;
                switch (pass.kind) {
                case PassKind::forward:
                    dur = pass.micro_batch == 0 ? dur_f0[vs] : dur_f[vs];
                    break;
                case PassKind::backward:
                    dur = dur_b[vs];
                    break;
                case PassKind::backward_input:
                    dur = dur_bi[vs];
                    break;
                case PassKind::weight:
                    dur = dur_w[vs];
                    break;
                }
                if (d.extra)
                    dur += d.extra(p, next[p]);
                const sim::Time end = start + dur;
                if (pass.kind == PassKind::forward)
                    fwd_end[at(pass.micro_batch, vs)] = end;
                else if (is_input_backward(pass.kind))
                    bwd_end[at(pass.micro_batch, vs)] = end;
                sim::Time released = end;
                if (d.blocking_sends) {
                    if (pass.kind == PassKind::forward && !route_end(vs, shape))
                        released += xfer_f[vs];
                    else if (is_input_backward(pass.kind) && !route_start(vs, shape))
                        released += xfer_b[vs - 1];
                }
                free_at[p] = released;
                t.busy[p] += dur;
                t.ranks[p].push_back(PassTime{pass, vs, start, end, released});
                t.makespan = std::max(t.makespan, released);
                ++next[p];
                --remaining;
                progressed = true;
            }
        }
        if (!progressed)
            throw std::logic_error("pipeline schedule deadlocks: no rank can run its next pass");
    }
    return t;
}

} // namespace clustersim::strategies::parallel
