#include "strategies/parallel/step_timeline.h"

#include <algorithm>
#include <string>

namespace clustersim::strategies::parallel::detail {

void record_timeline(const StepPlan& plan, const std::vector<ExecutedRank>& ranks, StepResult& r) {
    const int v = plan.shape.virtual_stages;
    for (std::size_t p = 0; p < ranks.size(); ++p) {
        const ExecutedRank& x = ranks[p];
        const int rank = static_cast<int>(p);
        std::int64_t live = 0;
        r.memory_points.push_back({rank, sim::Time::zero(), 0});
        for (const ExecutedPass& e : x.passes) {
            const auto& st = plan.stage(e.vs);
            const std::string label = pass_label(e.pass, v);
            // Parameter all-gathers run beside the pass from its start (ZeRO-3 per layer, or
            // the distributed optimizer's overlapped with the first forward), or for a chunk
            // gathered ahead (VirtualStagePlan::gathered_ahead) or the first chunk's first
            // bucket issued by zero_grad from its lead before it (gather_lead; under
            // align_param_gather the chunk's gather as the schedule issued it, behind the ones
            // before it: never past the pass's start, which follows the previous chunk's first
            // forward, which waited for the gather before this one).
            const PassCost& cost = pass_cost(st, e.pass);
            if (cost.param_gather > sim::Time::zero()) {
                sim::Time from = e.start;
                if (st.gather_lead != sim::Time::zero() && e.pass.kind == PassKind::forward &&
                    e.pass.micro_batch == 0)
                    from = e.start > st.gather_lead ? e.start - st.gather_lead : sim::Time::zero();
                r.bars.push_back({rank, TimelineStream::dp, from,
                                  std::min(e.end, from + cost.param_gather), "dp-comm",
                                  "param all-gather " + label});
            }
            // Expert-parallel collectives (all-to-alls) run inside the pass, between its
            // kernels: drawn from its start for their summed time.
            if (cost.ep_comm > sim::Time::zero())
                r.bars.push_back({rank, TimelineStream::ep, e.start,
                                  std::min(e.end, e.start + cost.ep_comm), "ep-comm",
                                  "all-to-all " + label + " (summed)"});
            if (e.pass.kind == PassKind::forward) {
                r.bars.push_back({rank, TimelineStream::compute, e.start, e.end, "forward", label});
                live += st.activation_bytes;
                r.memory_points.push_back({rank, e.start, live});
            } else if (e.pass.kind == PassKind::weight) {
                r.bars.push_back({rank, TimelineStream::compute, e.start, e.end, "weight", label});
                live -= st.weight_activation_bytes;
                r.memory_points.push_back({rank, e.end, live});
            } else {
                // The recompute runs first; it takes its share of the pass as it ran.
                const sim::Time split =
                    cost.time > sim::Time::zero()
                        ? e.start + sim::Time::from_seconds((e.end - e.start).seconds() *
                                                            (cost.recompute / cost.time))
                        : e.start;
                if (split > e.start)
                    r.bars.push_back({rank, TimelineStream::compute, e.start, split, "recompute",
                                      "R" + label.substr(1)});
                r.bars.push_back({rank, TimelineStream::compute, split, e.end, "backward", label});
                r.memory_points.push_back({rank, e.start, live + st.transient_bytes});
                live -= st.activation_bytes;
                if (e.pass.kind == PassKind::backward_input)
                    live += st.weight_activation_bytes;
                r.memory_points.push_back({rank, e.end, live});
            }
        }
        for (const Interval& s : x.sends)
            r.bars.push_back({rank, TimelineStream::pp, s.start, s.end, "pp-comm", s.label});
        for (const Interval& d : x.dp)
            r.bars.push_back({rank, TimelineStream::dp, d.start, d.end, "dp-comm", d.label});
        if (x.optimizer_end > x.optimizer_start)
            r.bars.push_back({rank, TimelineStream::compute, x.optimizer_start, x.optimizer_end,
                              "optimizer", "opt"});
    }
}

} // namespace clustersim::strategies::parallel::detail
