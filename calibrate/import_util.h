#pragma once
/// \file
/// Pieces the importers share (internal to calibrate/): strict number parsing, what a file
/// name says, nccl-tests' type names, and the rate checks that catch mixed units.

#include "base/error.h"
#include "calibrate/import.h"
#include "config/csv.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate::detail {

using Line = config::TextLine;
using config::split_lines;
/// Splits on runs of spaces and tabs.
std::vector<std::string_view> split_words(std::string_view text);
using config::trim;
std::string lower(std::string_view s);

/// A whole-string decimal number ("40.12", "1e-3", "16330"); nullopt otherwise.
using config::parse_number;
/// A whole-string integer ("1048576"); nullopt otherwise (also for "1e6" or "1.0").
std::optional<std::int64_t> parse_integer(std::string_view s);

/// The one collective a file name names ("nccl-all-reduce-2gpu.csv" -> all_reduce); nullopt
/// when it names none or several.
std::optional<CollectiveOp> op_from_file_name(const std::string& path);
/// The GPU count a file name names ("...-8gpu.csv", "8_gpus", "8-gpu"); nullopt when none.
std::optional<int> gpus_from_file_name(const std::string& path);

/// nccl-tests' element type ("float", "half", "bfloat16", "double", "f8e4m3") or ours
/// ("fp32", ...); nullopt for types clustersim does not model (int8, int32, ...).
std::optional<hardware::Dtype> dtype_from_type_name(std::string_view name);

/// A time unit from a header: "ns", "us", "µs", "ms", "s" -> seconds per unit.
std::optional<double> seconds_per_unit(std::string_view unit);

/// Checks a printed bandwidth (GB/s) against the one computed from size and time; values are
/// printed with two decimals, so the tolerance is half a unit in the last place plus 1%.
/// Returns an error message, or "" when they agree.
std::string check_printed_rate(std::string_view what, double printed_gbps, double computed_gbps);

/// Picks one value from several sources; a disagreement between two sources is an error.
/// Each candidate is (value, where it came from).
template <typename T>
std::optional<std::pair<T, std::string>>
agree(const std::vector<std::pair<std::optional<T>, std::string>>& candidates,
      const std::string& where, std::string_view what);

/// `where: what` with the point's description, for duplicate errors.
std::string describe_point(const CollectiveMeasurement& c);

/// The environment every import starts from: `--device` when given, else unknown.
Environment initial_environment(const ImportOptions& options);
/// A warning when the device stayed unknown.
void warn_unknown_device(const ImportResult& result, const std::string& name,
                         std::vector<std::string>& warnings);

// -------------------------------------------------------------------------------------------

template <typename T>
std::optional<std::pair<T, std::string>>
agree(const std::vector<std::pair<std::optional<T>, std::string>>& candidates,
      const std::string& where, std::string_view what) {
    std::optional<std::pair<T, std::string>> chosen;
    for (const auto& [value, source] : candidates) {
        if (!value)
            continue;
        if (!chosen) {
            chosen = std::pair<T, std::string>{*value, source};
            continue;
        }
        if (!(chosen->first == *value))
            throw InputError(where + ": " + std::string(what) + " disagree: " + chosen->second +
                             " but " + source);
    }
    return chosen;
}

} // namespace clustersim::calibrate::detail
