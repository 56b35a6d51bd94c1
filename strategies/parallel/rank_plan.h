#pragma once
/// \file
/// The plan of each pipeline rank once its stages are costed (stage_cost.h): its groups of GPUs,
/// its model state and optimizer step, and the collectives of its data-parallel phase (gradient
/// buckets overlapped with the backward or after it, hybrid sharding's replica all-reduce,
/// ZeRO's parameter all-gather after the optimizer, tied embeddings' all-reduce between the
/// first and the last rank). Internal to the step model.

#include "strategies/parallel/stage_cost.h"
#include "strategies/parallel/step_plan.h"

namespace clustersim::strategies::parallel::detail {

/// Fills `plan.ranks` from the plan's costed stages.
void plan_ranks(PlanContext& ctx, StepPlan& plan);

} // namespace clustersim::strategies::parallel::detail
