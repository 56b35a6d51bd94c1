#pragma once
/// \file
/// A training step as the record `run --format json` prints and `clustersim.run()` returns in
/// Python: the fields of the DESIGN contract (step_time_s, tokens_per_s, mfu, bubble_fraction,
/// breakdown, memory, oom) and the notes that say what was simulated. One home for that record,
/// so the command and the Python module cannot drift apart; the short texts it carries (the
/// recompute plan, the OOM fix, what was simulated) live here too, and the table of `run` uses
/// them.

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace clustersim::results {

/// "4 full + 8 selective": a rank's (or chunk's) recompute; "no layers" when it has none.
std::string describe_recompute(const strategies::parallel::RecomputePlan& r);
/// "auto: stage 0: 4 full + 8 selective, stage 1: 12 selective": the recompute of every rank.
std::string recompute_plan_text(const strategies::parallel::StepResult& r);
/// "fits with recompute: selective", "fits with zero: 2", or that nothing fits; "" when no
/// search ran.
std::string oom_fix_text(const std::optional<strategies::parallel::OomSuggestion>& fix);
/// Which GPUs were simulated and why that stands for all: "one GPU per pipeline rank (...)".
std::string simulated_note(const strategies::parallel::StepResult& r);
/// "analytic", "flow" or "flow-full": the fidelity the step ran in, as `--fidelity` names it.
std::string_view fidelity_name(const strategies::parallel::StepResult& r);
/// Flow fidelity: whose communication was simulated, and what symmetry left out.
std::string symmetry_note(const strategies::parallel::StepResult& r);

/// The costs of scale of a step (strategies/parallel/straggler.h): the slowest GPU, the
/// synchronisations' waits, the slowest inter-node flow; the band's step times where
/// simulated. The record's "straggler" field, and each point of `scale --format json`.
nlohmann::ordered_json straggler_json(const strategies::parallel::StragglerBand& b);

/// The step's record: what `run --format json` prints (as .dump(2)).
nlohmann::ordered_json step_json(const strategies::parallel::ExperimentSpec& e,
                                 const strategies::parallel::StepResult& r);

} // namespace clustersim::results
