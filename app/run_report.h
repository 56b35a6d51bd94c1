#pragma once
/// \file
/// How a training step is reported: the human table, the Perfetto trace and the Gantt chart
/// (the JSON record, which the Python module returns too, is results/step_json.h). Shared by
/// `run`, the demo and the examples; run_report.cpp.

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <optional>
#include <string>

namespace clustersim::app {

/// "tp 8 x pp 8 x dp 1, interleaved-1f1b (v=3), 64 micro-batches of 1, recompute selective".
std::string describe_parallel(const strategies::parallel::ExperimentSpec& e);
void print_step_table(std::ostream& out, const strategies::parallel::ExperimentSpec& e,
                      const strategies::parallel::StepResult& r);
/// Chrome trace-event JSON: a process per simulated GPU, a thread per stream, memory counters.
/// A timeline bar's work as a trace event's args (a layer's FLOPs and bytes, a TP slice's
/// bytes); null when it has none.
nlohmann::json bar_args(const strategies::parallel::TimelineBar& bar);
std::string step_trace(const strategies::parallel::ExperimentSpec& e,
                       const strategies::parallel::StepResult& r);
/// The pipeline as a Gantt chart (SVG).
std::string step_timeline_svg(const strategies::parallel::ExperimentSpec& e,
                              const strategies::parallel::StepResult& r);
/// Each simulated GPU's memory over the step (line chart, SVG), with the capacity.
std::string step_memory_svg(const strategies::parallel::ExperimentSpec& e,
                            const strategies::parallel::StepResult& r);

} // namespace clustersim::app
