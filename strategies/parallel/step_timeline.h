#pragma once
/// \file
/// The timeline of a simulated step, for traces and Gantt charts: the bars of each rank's
/// streams (passes split into recompute and backward, pipeline transfers, data-parallel
/// collectives, the optimizer) and its activation memory over time. Built from what the
/// executor ran, only when asked for (StepOptions::timeline): a sweep needs none of it.

#include "strategies/parallel/executed_step.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include <vector>

namespace clustersim::strategies::parallel::detail {

/// Appends the bars and memory points of `ranks` to `r`.
void record_timeline(const StepPlan& plan, const std::vector<ExecutedRank>& ranks, StepResult& r);

} // namespace clustersim::strategies::parallel::detail
