#pragma once
/// \file
/// How a training step is reported: the human table, the JSON of the DESIGN contract, the
/// Perfetto trace and the Gantt chart, and the sentences that word a StepResult (which holds
/// numbers and enums only). Shared by `run`, the demo and the examples; run_report.cpp.

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>

namespace clustersim::app {

/// "4 full + 8 selective": a rank's (or chunk's) recompute; "no layers" when it has none.
std::string describe_recompute(const strategies::parallel::RecomputePlan& r);
/// "auto: stage 0: 4 full + 8 selective, stage 1: 12 selective": the recompute of every rank.
std::string recompute_plan_text(const strategies::parallel::StepResult& r);
/// "fits with recompute: selective", "fits with zero: 2", or that nothing fits; "" when no
/// search ran.
std::string oom_fix_text(const std::optional<strategies::parallel::OomSuggestion>& fix);
/// Which GPUs were simulated and why that stands for all: "one GPU per pipeline rank (...)".
std::string simulated_note(const strategies::parallel::StepResult& r);

/// "tp 8 x pp 8 x dp 1, interleaved-1f1b (v=3), 64 micro-batches of 1, recompute selective".
std::string describe_parallel(const strategies::parallel::ExperimentSpec& e);
void print_step_table(std::ostream& out, const strategies::parallel::ExperimentSpec& e,
                      const strategies::parallel::StepResult& r);
nlohmann::ordered_json step_json(const strategies::parallel::ExperimentSpec& e,
                                 const strategies::parallel::StepResult& r);
/// Chrome trace-event JSON: a process per simulated GPU, a thread per stream, memory counters.
std::string step_trace(const strategies::parallel::ExperimentSpec& e,
                       const strategies::parallel::StepResult& r);
/// The pipeline as a Gantt chart (SVG).
std::string step_timeline_svg(const strategies::parallel::ExperimentSpec& e,
                              const strategies::parallel::StepResult& r);
/// Each simulated GPU's memory over the step (line chart, SVG), with the capacity.
std::string step_memory_svg(const strategies::parallel::ExperimentSpec& e,
                            const strategies::parallel::StepResult& r);

} // namespace clustersim::app
