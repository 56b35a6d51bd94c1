#pragma once
/// \file
/// What to change when a step does not fit in memory: a what-if search that simulates the
/// experiment again under recompute selective, then full, then each higher ZeRO stage, and
/// returns the first setting under which every rank fits (OomSuggestion; the app words it).
/// Each try is a whole step simulation, so a sweep turns it off (StepOptions::oom_advice).

#include "hardware/topology.h"
#include "strategies/collectives/communicator_cache.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <memory>

namespace clustersim::strategies::parallel::detail {

/// The first setting under which `e` fits, simulated on `topology` (with `communicators` when
/// not null); an empty suggestion when none does.
OomSuggestion find_fix(const ExperimentSpec& e,
                       const std::shared_ptr<const hardware::Topology>& topology,
                       collectives::CommunicatorCache* communicators);

} // namespace clustersim::strategies::parallel::detail
