#include "strategies/parallel/step_timeline.h"

#include <algorithm>
#include <string>

namespace clustersim::strategies::parallel::detail {

void record_timeline(const StepPlan& plan, const std::vector<ExecutedRank>& ranks, StepResult& r) {
    // The executors time in seconds; the result's timeline is in sim::Time, converted here once.
    auto t = [](double seconds) { return sim::Time::from_seconds(seconds); };
    const int v = plan.shape.virtual_stages;
    for (std::size_t p = 0; p < ranks.size(); ++p) {
        const ExecutedRank& x = ranks[p];
        const int rank = static_cast<int>(p);
        std::int64_t live = 0;
        r.memory_points.push_back({rank, sim::Time::zero(), 0});
        for (const ExecutedPass& e : x.passes) {
            const auto& st = plan.stage(e.vs);
            const std::string label = pass_label(e.pass, v);
            if (e.pass.kind == PassKind::forward) {
                r.bars.push_back(
                    {rank, TimelineStream::compute, t(e.start), t(e.end), "forward", label});
                live += st.activation_bytes;
                r.memory_points.push_back({rank, t(e.start), live});
            } else {
                const double total = std::max(1e-18, st.backward.time);
                const double split = e.start + (e.end - e.start) * (st.backward.recompute / total);
                if (split > e.start)
                    r.bars.push_back({rank, TimelineStream::compute, t(e.start), t(split),
                                      "recompute", "R" + label.substr(1)});
                r.bars.push_back(
                    {rank, TimelineStream::compute, t(split), t(e.end), "backward", label});
                r.memory_points.push_back({rank, t(e.start), live + st.transient_bytes});
                live -= st.activation_bytes;
                r.memory_points.push_back({rank, t(e.end), live});
            }
        }
        for (const Interval& s : x.sends)
            r.bars.push_back({rank, TimelineStream::pp, t(s.start), t(s.end), "pp-comm", s.label});
        for (const Interval& d : x.dp)
            r.bars.push_back({rank, TimelineStream::dp, t(d.start), t(d.end), "dp-comm", d.label});
        if (x.optimizer_end > x.optimizer_start)
            r.bars.push_back({rank, TimelineStream::compute, t(x.optimizer_start),
                              t(x.optimizer_end), "optimizer", "opt"});
    }
}

} // namespace clustersim::strategies::parallel::detail
