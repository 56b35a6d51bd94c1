#pragma once
/// \file
/// The section "Training steps: published Megatron-LM runs" of docs/validation.md: the runs of
/// validation/accuracy_published.h (Narayanan et al. SC21 Table 1, the Megatron-LM README of
/// 2020) with their rules, errors and step breakdowns, as Markdown.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// Markdown of the section (both tables, their rules and summaries).
std::string published_megatron_markdown(ReportData& data);

} // namespace clustersim::app
