#pragma once
/// \file
/// Two sections of docs/validation.md from validation/accuracy_recent.h (and the Narayanan runs
/// of validation/accuracy_published.h): "Training steps across nodes" (the dev sets with
/// their targets and signed errors) and "Recent large runs" (every row of
/// large-scale/h100-published-runs.yaml, predicted or marked not modelled), as Markdown.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// Markdown of "Training steps across nodes".
std::string steps_across_nodes_markdown(ReportData& data);

/// Markdown of "Recent large runs".
std::string recent_runs_markdown(ReportData& data);

} // namespace clustersim::app
