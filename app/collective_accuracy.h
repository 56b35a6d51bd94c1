#pragma once
/// \file
/// The "collectives" section of docs/validation.md: the numbers of
/// validation::collective_accuracy (validation/accuracy_collectives.h), worded as Markdown.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// The Markdown of the "collectives" section. Throws InputError for a missing or malformed
/// reference file.
std::string collective_accuracy_markdown(ReportData& data);

/// The Markdown of the "Across nodes" section: validation::multi_node_accuracy.
std::string multi_node_accuracy_markdown(ReportData& data);

} // namespace clustersim::app
