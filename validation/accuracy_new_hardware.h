#pragma once
/// \file
/// The training-step model against published runs on the accelerators of late 2026
/// (data/reference/new-hardware/published-runs.yaml: Megatron-Bridge's performance summaries on
/// B200, B300, GB200/GB300 NVL72 and H100, AMD Primus tables on MI300X/MI325X/MI355X, MaxText's
/// TPU tables), the numbers of docs/validation.md's section "New hardware", per accelerator.
///
/// Each row becomes an experiment from its own fields (model dimensions, layout, batch,
/// precision) on one preset per accelerator; Megatron-Bridge's performance recipes set what the
/// table does not print, as validation/accuracy_recent.h does for its H100 rows. A row that
/// needs what clustersim does not have yet (an AMD or TPU preset, MXFP8 or NVFP4 recipes, a
/// model family's features, fine-tuning) is listed with what it needs, not predicted.

#include "calibrate/error_stats.h"

#include <string>
#include <utility>
#include <vector>

namespace clustersim::validation {

struct NewHardwareRun {
    std::string id;          ///< the file's row id
    std::string accelerator; ///< the file's hw_class: "B200", "GB200", "MI300X", "TPU", ...
    std::string preset;      ///< the hardware preset the row runs on ("" when none yet)
    std::string model;       ///< "Llama 3.1 405B"
    std::string precision;   ///< as the file prints it: "BF16", "FP8-CS", "MXFP8", ...
    int gpus = 0;
    std::string layout; ///< "tp 4 x pp 8 x cp 2 x dp 2, v 8"
    /// The experiment's settings (`--set` keys), as built from the row.
    std::vector<std::pair<std::string, std::string>> settings;
    std::string not_modelled; ///< empty when predicted; else "needs ..."
    double measured_s = 0;    ///< the file's derived step time
    double predicted_s = 0;

    bool ran() const { return not_modelled.empty(); }
    /// predicted / measured - 1 (a ran() row).
    double error() const { return predicted_s / measured_s - 1; }
};

/// Every row of new-hardware/published-runs.yaml under `data_dir`, each predicted or marked
/// not modelled. Throws InputError naming the file, line and key for a malformed row.
std::vector<NewHardwareRun> new_hardware_runs(const std::string& data_dir);

/// The errors of the rows that ran on `accelerator` ("" for every accelerator).
calibrate::ErrorStats new_hardware_errors(const std::vector<NewHardwareRun>& runs,
                                          const std::string& accelerator);

/// The rules for what the sources do not state, one sentence each, for the report.
std::vector<std::string> new_hardware_rules();

} // namespace clustersim::validation
