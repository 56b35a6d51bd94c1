#include "strategies/parallel/step_timeline.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string>

namespace clustersim::strategies::parallel::detail {

namespace {

/// The units of a pass as slices within [from, to] of the compute stream, one per layer with its
/// work (FLOPs, bytes), and each layer's tensor-parallel collectives on the TP stream from the
/// layer's start for their summed time (they run between its kernels). The stage's layers start
/// at the model's layer `first_layer`.
void record_units(const PassSpans& spans, int first_layer, sim::Time from, sim::Time to,
                  const std::string& label, int rank, StepResult& r) {
    const sim::Time width = to - from;
    for (const UnitSpan& s : spans.spans) {
        const double share = (s.end - s.begin) / s.count;
        for (int k = 0; k < s.count; ++k) {
            const sim::Time start = from + width.scaled(s.begin + share * k);
            const sim::Time end = std::min(to, from + width.scaled(s.begin + share * (k + 1)));
            if (end <= start)
                continue;
            // "L12 F3.1" (or "embedding F3.1"), written once: a step has tens of thousands.
            std::string name;
            if (s.name == "layer") {
                char digits[16];
                const auto n =
                    static_cast<std::size_t>(std::to_chars(std::begin(digits), std::end(digits),
                                                           first_layer + s.first_layer + k)
                                                 .ptr -
                                             digits);
                name.reserve(2 + n + label.size());
                name.append("L").append(digits, n);
            } else {
                name.reserve(s.name.size() + 1 + label.size());
                name.append(s.name);
            }
            name.append(" ").append(label);
            sim::Time tp_end = start;
            if (s.tp > 0 && s.tp_bytes > 0)
                tp_end = std::min(end, start + width.scaled(s.tp));
            const bool tp = tp_end > start;
            TimelineBar& bar = r.bars.emplace_back();
            bar.rank = rank;
            bar.stream = TimelineStream::compute;
            bar.start = start;
            bar.end = end;
            bar.kind = "layer";
            if (tp)
                bar.label = name; // the TP slice's label is built from it below
            else
                bar.label = std::move(name);
            bar.flops = s.flops;
            bar.bytes = s.bytes;
            if (tp) {
                TimelineBar& t = r.bars.emplace_back();
                t.rank = rank;
                t.stream = TimelineStream::tp;
                t.start = start;
                t.end = tp_end;
                t.kind = "tp-comm";
                t.label.reserve(3 + name.size() + 9);
                t.label.append("TP ").append(name).append(" (summed)");
                t.bytes = s.tp_bytes;
            }
        }
    }
}

/// The transfer a pass waited for, from the rank of the stage that sent it (none from the
/// pass's own rank: no flow arrow within a GPU).
void record_transfer(const StepPlan& plan, const ExecutedPass& e, int rank,
                     const std::string& label, StepResult& r) {
    if (!e.input || e.input->end <= e.input->start)
        return;
    const int from =
        rank_of_stage(e.pass.kind == PassKind::forward ? e.vs - 1 : e.vs + 1, plan.shape);
    if (from != rank)
        r.transfers.push_back({from, rank, e.input->start, e.start, label});
}

/// At most how many bars record_timeline adds: per pass, its own, a recompute, a parameter
/// gather and an all-to-all, and a slice and a TP slice per unit; the sends, collectives and
/// optimizer step of each rank.
std::size_t bars_at_most(const StepPlan& plan, const std::vector<ExecutedRank>& ranks) {
    auto units = [](const PassSpans& spans) {
        std::size_t n = 0;
        for (const UnitSpan& s : spans.spans)
            n += static_cast<std::size_t>(std::max(0, s.count));
        return n;
    };
    std::size_t n = 0;
    for (const ExecutedRank& x : ranks) {
        for (const ExecutedPass& e : x.passes) {
            const VirtualStagePlan& st = plan.stage(e.vs);
            n += 4 +
                 2 * units(e.pass.kind == PassKind::forward ? st.forward_spans : st.backward_spans);
        }
        n += x.sends.size() + x.dp.size() + 1;
    }
    return n;
}

} // namespace

void record_timeline(const StepPlan& plan, const std::vector<ExecutedRank>& ranks, StepResult& r) {
    const int v = plan.shape.virtual_stages;
    r.bars.reserve(r.bars.size() + bars_at_most(plan, ranks));
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
            record_transfer(plan, e, rank, label, r);
            if (e.pass.kind == PassKind::forward) {
                r.bars.push_back({rank, TimelineStream::compute, e.start, e.end, "forward", label});
                record_units(st.forward_spans, st.first_layer, e.start, e.end, label, rank, r);
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
                        ? e.start + (e.end - e.start).scaled(cost.recompute / cost.time)
                        : e.start;
                if (split > e.start)
                    r.bars.push_back({rank, TimelineStream::compute, e.start, split, "recompute",
                                      "R" + label.substr(1)});
                r.bars.push_back({rank, TimelineStream::compute, split, e.end, "backward", label});
                // The layers inside the backward's bar (the recompute drawn before it as one).
                record_units(st.backward_spans, st.first_layer, split, e.end, label, rank, r);
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
