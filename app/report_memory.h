#pragma once
/// \file
/// docs/validation.md's section "Memory" from validation/accuracy_memory.h: every row of
/// memory/measured-peak-memory.yaml, predicted on the statistic its source printed or listed
/// with what it needs, as Markdown.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// Markdown of "Memory".
std::string memory_markdown(ReportData& data);

} // namespace clustersim::app
