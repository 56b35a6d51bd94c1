// One training step: the plan built, run by the executor of the fidelity asked for, then the
// breakdown of the critical rank, the rates, the memory, the OOM advice and the timeline, each
// from its own file (training_step.h lists them).
#include "strategies/parallel/training_step.h"

#include "strategies/parallel/analytic_executor.h"
#include "strategies/parallel/executed_step.h"
#include "strategies/parallel/flow_executor.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/oom_advice.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/step_timeline.h"
#include "strategies/parallel/straggler.h"

#include "base/error.h"
#include "hardware/time_limit.h"
#include "strategies/models/model_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace clustersim::strategies::parallel {
namespace {

using detail::ExecutedPass;
using detail::ExecutedRank;

/// The breakdown of one rank; the parts sum to `step`. Summed in picoseconds, then reported
/// in seconds.
Breakdown breakdown_of(const StepPlan& plan, const ExecutedRank& r, int rank, sim::Time step) {
    using sim::Time;
    Time compute, recompute, tp_wait, ep_wait, host, pp_comm, dp_wait, slowdown;
    Time prev_end;
    Time prev_released;
    for (const ExecutedPass& x : r.passes) {
        const auto& st = plan.stage(x.vs);
        const PassCost& c = pass_cost(st, x.pass);
        compute += c.compute + x.overlap_slowdown;
        slowdown += c.overlap_slowdown + x.overlap_slowdown;
        dp_wait += c.dp_wait;
        recompute += c.recompute;
        tp_wait += c.tp_wait;
        ep_wait += c.ep_wait;
        host += c.host_wait;
        // Idle before this pass: first the previous pass's blocking send (the rank was busy
        // sending), then the transfer of this pass's input while it was in flight; the rest is
        // bubble.
        Time idle_from = prev_end;
        if (prev_released > prev_end) {
            pp_comm += std::min(x.start, prev_released) - prev_end;
            idle_from = std::min(x.start, prev_released);
        }
        const Time gap = std::max(Time::zero(), x.start - idle_from);
        if (gap > Time::zero() && x.input && x.input->end > idle_from)
            pp_comm += std::min(gap, x.input->end - std::max(idle_from, x.input->start));
        prev_end = x.end;
        prev_released = x.released;
    }
    const Time optimizer = plan.ranks[static_cast<std::size_t>(rank)].optimizer_time;
    if (prev_released > prev_end)
        pp_comm += prev_released - prev_end; // the last pass's blocking send
    const Time dp_comm = std::max(Time::zero(), r.optimizer_start - r.last_pass_end) +
                         std::max(Time::zero(), r.end - r.optimizer_end) + dp_wait;
    const Time accounted =
        compute + recompute + tp_wait + ep_wait + host + pp_comm + dp_comm + optimizer;
    Breakdown b;
    b.compute_s = compute.seconds();
    b.recompute_s = recompute.seconds();
    b.tp_comm_exposed_s = tp_wait.seconds();
    b.ep_comm_exposed_s = ep_wait.seconds();
    b.host_s = host.seconds();
    b.pp_comm_exposed_s = pp_comm.seconds();
    b.dp_comm_exposed_s = dp_comm.seconds();
    b.optimizer_s = optimizer.seconds();
    b.overlap_slowdown_s = slowdown.seconds();
    b.pp_bubble_s = std::max(Time::zero(), step - accounted).seconds();
    return b;
}

/// F, B, W of one rank's share of a micro-batch for the closed forms: the mean over virtual
/// stages (a model stage each), twice that under the V placement (a rank runs two chunks of one
/// micro-batch).
PassTimes mean_pass_times(const StepPlan& plan) {
    PassTimes t{0, 0, 0};
    for (const VirtualStagePlan& st : plan.stages) {
        t.f += st.forward.time.seconds();
        t.b += st.backward.time.seconds();
        t.w += st.weight.time.seconds();
    }
    const double k = (plan.shape.placement == Placement::v_shape ? 2.0 : 1.0) /
                     static_cast<double>(std::max<std::size_t>(1, plan.stages.size()));
    t.f *= k;
    t.b *= k;
    t.w *= k;
    return t;
}

/// The costs of scale of a step of `e` planned as `plan` (straggler.h): the slowest GPU of all,
/// the synchronisations' waits, and the slowest of the job's inter-node flows, one per GPU,
/// where a collective of the step crosses nodes (StepPlan::inter_node_flows: the same
/// communicators the congestion stretches; pipeline sends alone are one flow each and wait for
/// no other).
StragglerBand scale_costs(const ExperimentSpec& e, const StepPlan& plan) {
    StragglerBand b = straggler_slowdowns(e.framework.gpu_speed_spread, e.gpus);
    b.sync_jitter_s = e.framework.sync_jitter.seconds();
    b.synchronisations = step_synchronisations(e);
    b.sync_wait_s = step_sync_wait(e);
    b.network_spread = e.framework.network_flow_spread;
    b.network_flows = plan.inter_node_flows;
    if (b.network_spread > 0 && b.network_flows > 1) {
        b.network_slowdown = network_slowdown(b.network_spread, b.network_flows);
        b.network_slowdown_p05 = network_slowdown(b.network_spread, b.network_flows, 0.05);
        b.network_slowdown_p95 = network_slowdown(b.network_spread, b.network_flows, 0.95);
    }
    return b;
}

} // namespace

StepResult simulate_step(const ExperimentSpec& e, const StepOptions& options) {
    return detail::simulate_step_on(e, options,
                                    std::make_shared<const hardware::Topology>(e.cluster), nullptr);
}

StepResult detail::simulate_step_on(const ExperimentSpec& e, const StepOptions& options,
                                    std::shared_ptr<const hardware::Topology> topology,
                                    collectives::CommunicatorCache* communicators) {
    // No step is faster than its model FLOPs at the GPUs' peak: where even that passes the
    // longest time the simulator can hold, the durations would overflow as they are summed
    // (hidden 16777152 printed a step of 105 days and an MFU of 139.6%). Refused before
    // anything is built, and after the run where the sum passes it.
    const double peak = e.cluster.node.gpu.peak(e.training.dtype);
    const double flops =
        models::model_flops_per_iteration(e.model, e.training.global_batch, false) /
        (e.training.forward_only ? 3 : 1);
    const double longest = hardware::kLongestPrediction.seconds();
    auto refuse_long = [&](double seconds) {
        throw InputError(fmt::format(
            "{}: one step would take at least {:.3g} s ({:.0f} days), past what the simulator "
            "can time ({:.1f} days): the model is too large for {} GPUs of this hardware",
            e.name, seconds, seconds / 86400, longest / 86400, e.gpus));
    };
    if (peak > 0 && flops / (peak * e.gpus) > longest)
        refuse_long(flops / (peak * e.gpus));
    const StepPlan plan = build_step_plan(e, topology, communicators, options.timeline);

    StepResult r;
    r.experiment = e.name;
    r.fidelity = options.fidelity;
    r.gpus = e.gpus;
    r.tp = e.parallel.tp;
    r.pp = e.parallel.pp;
    r.dp = e.parallel.dp;
    r.ep = e.parallel.ep;
    r.etp = e.parallel.expert_tp();
    r.expert_dp = e.parallel.expert_dp();
    r.micro_batches = plan.shape.micro_batches;
    r.virtual_stages = plan.shape.virtual_stages;
    r.schedule = std::string(to_string(e.parallel.schedule));

    std::vector<detail::ExecutedRank> ranks;
    if (options.fidelity == Fidelity::flow) {
        detail::FlowRun run =
            detail::run_flow(plan, options.flow_symmetry, options.flow_max_seconds);
        ranks = std::move(run.ranks);
        r.events = run.events;
        r.flow_symmetry = options.flow_symmetry;
        r.flow_gpus = std::move(run.flow_gpus);
        r.represented_gpus = std::move(run.represented_gpus);
        r.flows = run.flows;
        r.represented_flows = run.represented_flows;
    } else {
        ranks = detail::run_analytic(plan, options.timeline);
    }
    sim::Time step;
    for (std::size_t p = 0; p < ranks.size(); ++p) {
        if (ranks[p].end > step) {
            step = ranks[p].end;
            r.critical_rank = static_cast<int>(p);
        }
    }
    if (step > hardware::kLongestPrediction)
        refuse_long(step.seconds());
    r.step_time_s = step.seconds();
    r.breakdown =
        breakdown_of(plan, ranks[static_cast<std::size_t>(r.critical_rank)], r.critical_rank, step);
    r.straggler = scale_costs(e, plan);
    if (options.straggler_band && (r.straggler.slowdown != 0 || r.straggler.network_spread > 0)) {
        StepOptions again = options;
        again.straggler_band = again.timeline = again.oom_advice = false;
        // The slowest GPU and the slowest flow at the same percentile (an allocation draws
        // both; taking them together bounds the step's band from outside), the
        // synchronisations' waits at their expectation.
        auto step_at = [&](double slowdown, double quantile) {
            ExperimentSpec at = e;
            at.framework = with_slowest_gpu_at(e.framework, e.gpus, slowdown);
            at.framework.network_quantile = quantile;
            return simulate_step_on(at, again, topology, communicators).step_time_s;
        };
        r.straggler.step_time_p05_s = step_at(r.straggler.slowdown_p05, 0.05);
        r.straggler.step_time_p95_s = step_at(r.straggler.slowdown_p95, 0.95);
    }
    r.bubble_fraction = r.step_time_s > 0 ? r.breakdown.pp_bubble_s / r.step_time_s : 0;
    r.ideal_bubble_fraction =
        ideal_bubble_fraction(e.parallel.schedule, plan.shape, mean_pass_times(plan));
    r.model_flops = flops;
    r.mfu = r.step_time_s > 0 ? r.model_flops / (r.step_time_s * e.gpus * peak) : 0;
    r.mfu_causal =
        r.step_time_s > 0
            ? models::causal_model_flops_per_iteration(e.model, e.training.global_batch) /
                  (e.training.forward_only ? 3 : 1) / (r.step_time_s * e.gpus * peak)
            : 0;
    r.tokens_per_s =
        r.step_time_s > 0 ? static_cast<double>(e.tokens_per_iteration()) / r.step_time_s : 0;

    detail::account_memory(plan, r);
    if (r.oom && options.oom_advice)
        r.oom_fix = detail::find_fix(e, topology, communicators);

    for (const RankPlan& rp : plan.ranks)
        r.simulated_gpus.push_back(rp.gpu);
    if (options.timeline)
        detail::record_timeline(plan, ranks, r);
    return r;
}

} // namespace clustersim::strategies::parallel
