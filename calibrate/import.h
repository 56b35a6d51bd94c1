#pragma once
/// \file
/// Importing measurements someone already has into the measurement format:
/// - whole nccl-tests logs (`*_perf` output): every variant of the table (out-of-place and
///   in-place column sets, the old `error` and the new `#wrong` column, `N/A` values), `-g`
///   and MPI runs with their per-rank `# Rank` lines, `mpirun --tag-output` and `srun --label`
///   prefixes, several tests concatenated in one file, NCCL INFO lines in between;
/// - CSV tables of collective sweeps (`size(B),count,type,time(ns),busbw(GB/s),...`, or a
///   `bytes` column and one busbw column per device);
/// - CSV tables of training steps (Megatron knob names as columns, iteration time in ms);
/// - measurement files themselves (JSON), so several can be merged into one.
///
/// Every row is checked: sizes and times positive, units declared in the header, algbw equal
/// to size / time and busbw to algbw times nccl-tests' factor for the GPU count (this catches
/// mixed units and a wrong GPU count), the `# Avg bus bandwidth` footer equal to the rows'
/// mean (this catches lost or edited rows), no duplicate points. Errors name the file and line.

#include "calibrate/measurements.h"

#include <optional>
#include <string>
#include <vector>

namespace clustersim::calibrate {

/// What the files do not say themselves. A value given here that contradicts the file (an op
/// or GPU count) is an error, not an override.
struct ImportOptions {
    std::optional<CollectiveOp> op;       ///< `--op`: when neither the log nor the file name says
    std::optional<int> gpus;              ///< `--gpus`: when neither the log nor the file name says
    std::string device;                   ///< `--device`: the GPU's name when the file does not say
    std::string column;                   ///< `--column`: which device column of a multi-device CSV
    std::optional<hardware::Dtype> dtype; ///< `--dtype`: for tables without a type column
    bool in_place = false; ///< `--in-place`: a table with one column set measured in place
    /// `--set SECTION.KEY=VALUE`: settings every imported training step shares that its file
    /// does not say (model.vocab=50257, parallel.recompute=full).
    std::vector<std::string> step_settings;
};

/// The measurements and what was skipped or assumed, one line each ("FILE:LINE: ...").
struct ImportResult {
    MeasurementFile measurements;
    std::vector<std::string> warnings;
};

/// Imports and merges files; the kind of each comes from its extension (.csv, .json) or,
/// for anything else, is an nccl-tests log. Throws InputError naming the file and line.
ImportResult import_files(const std::vector<std::string>& paths, const ImportOptions& options);

/// Imports one file's text; `name` is its path (used in errors, sources and to infer the op
/// and GPU count from the file name).
ImportResult import_text(std::string_view text, const std::string& name,
                         const ImportOptions& options);

/// The nccl-tests log importer alone.
ImportResult import_nccl_tests_log(std::string_view text, const std::string& name,
                                   const ImportOptions& options);
/// The CSV importer alone (collective sweeps and training steps).
ImportResult import_csv(std::string_view text, const std::string& name,
                        const ImportOptions& options);

} // namespace clustersim::calibrate
