#pragma once
/// \file
/// Memory of a step: per pipeline rank, its weights, gradients and optimizer state, the peak of
/// its activations under the schedule's pass order (step_plan.h), and the framework's runtime;
/// and whether any rank exceeds the GPU's capacity, by how much. Independent of the timing:
/// the same plan gives the same memory in either fidelity.

#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

namespace clustersim::strategies::parallel::detail {

/// Fills `r.memory`, `r.peak_bytes_max`, `r.capacity_bytes`, the OOM verdict and
/// `r.automatic_recompute` from `plan`.
void account_memory(const StepPlan& plan, StepResult& r);

} // namespace clustersim::strategies::parallel::detail
