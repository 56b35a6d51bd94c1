#pragma once
/// \file
/// Sections of docs/validation.md: each compares predictions with the reference measurements
/// (data/reference) and returns Markdown. `clustersim report validation` joins them; the
/// script scripts/gen-validation.sh regenerates the file, and CI checks it is up to date.

#include "app/report_data.h"

#include <functional>
#include <string>
#include <vector>

namespace clustersim::app {

struct ReportSection {
    std::string name;  ///< short id, e.g. "collectives"
    std::string title; ///< Markdown heading
    std::function<std::string(ReportData& data)> markdown;
};

/// Every section, in the order they appear in docs/validation.md.
std::vector<ReportSection> report_sections();

} // namespace clustersim::app
