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
    const int V = P * shape.virtual_stages;
    // End times of every (micro-batch, virtual stage) forward and backward, once known.
    std::vector<std::optional<sim::Time>> fwd_end(static_cast<std::size_t>(m) * V);
    std::vector<std::optional<sim::Time>> bwd_end(static_cast<std::size_t>(m) * V);
    auto at = [V](int j, int vs) { return static_cast<std::size_t>(j) * V + vs; };

    // Durations depend only on (kind, virtual stage): evaluate each once.
    std::vector<sim::Time> dur_f(V), dur_f0(V), dur_b(V), xfer_f(V), xfer_b(V);
    for (int vs = 0; vs < V; ++vs) {
        dur_f[vs] = d.pass(PassKind::forward, vs);
        dur_f0[vs] = d.first_forward ? d.first_forward(vs) : dur_f[vs];
        dur_b[vs] = shape.forward_only ? sim::Time::zero() : d.pass(PassKind::backward, vs);
        if (vs + 1 < V) {
            xfer_f[vs] = d.transfer(PassKind::forward, vs);
            if (!shape.forward_only)
                xfer_b[vs] = d.transfer(PassKind::backward, vs);
        }
    }

    ScheduleTiming t;
    t.ranks.resize(P);
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
                const int vs = virtual_stage(pass.chunk, p, P);
                sim::Time ready;
                if (pass.kind == PassKind::forward) {
                    if (vs > 0) {
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
                    if (vs + 1 < V) {
                        const std::optional<sim::Time> later =
                            bwd_end[at(pass.micro_batch, vs + 1)];
                        if (!later)
                            break;
                        ready = std::max(ready, *later + xfer_b[vs]);
                    }
                }
                const sim::Time start = std::max(ready, free_at[p]);
                const sim::Time dur = pass.kind == PassKind::forward
                                          ? (pass.micro_batch == 0 ? dur_f0[vs] : dur_f[vs])
                                          : dur_b[vs];
                const sim::Time end = start + dur;
                (pass.kind == PassKind::forward ? fwd_end : bwd_end)[at(pass.micro_batch, vs)] =
                    end;
                sim::Time released = end;
                if (d.blocking_sends) {
                    if (pass.kind == PassKind::forward && vs + 1 < V)
                        released += xfer_f[vs];
                    else if (pass.kind == PassKind::backward && vs > 0)
                        released += xfer_b[vs - 1];
                }
                free_at[p] = released;
                t.busy[p] += dur;
                t.ranks[p].push_back(PassTime{pass, vs, start, end, ready, released});
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
