#pragma once
/// \file
/// The summary at the top of docs/validation.md: one row per study (what was measured, the
/// file, the result, the target and whether it is met), read from the same numbers as the
/// sections below it. docs/accuracy.md quotes the table, checked against this page.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// Markdown of "Summary".
std::string summary_markdown(ReportData& data);

} // namespace clustersim::app
