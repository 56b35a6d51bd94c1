#pragma once
/// \file
/// The training-step section of docs/validation.md: the step model (strategies/parallel) with
/// the dgx-a100 preset against the 1,440 measured Megatron steps of one A100 node
/// (a100-node/megatron-steps-single-node.csv), overall, on the seeded four-fifths the preset's
/// framework factors were not fitted on, and by group (tensor, pipeline and data parallel size,
/// hidden size, micro-batch), with the worst rows.

#include "app/report_data.h"

#include <string>

namespace clustersim::app {

/// Markdown of the section. Throws InputError when the CSV is missing or malformed.
std::string training_steps_markdown(ReportData& data);

} // namespace clustersim::app
