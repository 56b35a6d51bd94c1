#pragma once
/// \file
/// docs/validation.md's section "New hardware" from validation/accuracy_new_hardware.h: every
/// row of new-hardware/published-runs.yaml, predicted or listed with what it needs, and the
/// errors per accelerator, as Markdown.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// Markdown of "New hardware".
std::string new_hardware_markdown(ReportData& data);

} // namespace clustersim::app
