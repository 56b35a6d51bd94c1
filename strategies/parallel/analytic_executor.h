#pragma once
/// \file
/// The `analytic` executor of a step plan: the pipeline timed as a DAG (schedule_timing.h)
/// with the plan's pass durations and the transfers' closed forms, then each rank's
/// data-parallel stream laid after the backward passes that produce its gradients, the
/// optimizer, and ZeRO's all-gather. No event queue: fast enough for sweeps of thousands of
/// configurations, and exact where nothing contends (the flow executor agrees there).

#include "strategies/parallel/executed_step.h"
#include "strategies/parallel/step_plan.h"

#include <vector>

namespace clustersim::strategies::parallel::detail {

/// Runs `plan`. `timeline`: also record the transfers and collectives as labelled intervals,
/// and every rank's passes (only the timeline uses them); without it, a sweep's case, only the
/// ranks that end last get their passes (the step's breakdown reads the critical rank's); the
/// others' are empty, their streams and ends filled all the same.
std::vector<ExecutedRank> run_analytic(const StepPlan& plan, bool timeline);

/// What the gradient reductions overlapped with the backward cost the passes they run beside
/// (overlap_interference.h), per rank and pass of its order (an empty vector: nothing), from
/// the schedule timed with the plan's durations: the lengthening run_analytic applies, which
/// the flow executor applies too.
std::vector<std::vector<sim::Time>> dp_overlap_slowdown(const StepPlan& plan);

} // namespace clustersim::strategies::parallel::detail
