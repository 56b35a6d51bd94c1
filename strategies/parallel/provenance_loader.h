#pragma once
/// \file
/// The `calibration:` and `uncertainty:` sections of hardware files, which `clustersim
/// calibrate fit` writes (README.md, "Calibrate, then validate"), into a Provenance
/// (provenance.h):
///
///     calibration:                       # one entry per fitted value
///       - key: collectives.launch_latency
///         value: 31.2us
///         method: huber-nelder-mead
///         files: [a100-tables.json]
///         points: 2048
///         mean_abs_error_pct: 1.9
///         max_abs_error_pct: 12.1
///     uncertainty:                       # measured / predicted - 1, by kind
///       basis: held-out                  # or in-sample
///       collectives: {points: 1024, p10: -0.031, p50: 0.002, p90: 0.028}
///       gemms: {...}
///       steps: {...}
///       collective_bands:                # collectives by regime and GPU count
///         - {regime: latency, gpus: 4, points: 16, p10: -0.09, p50: 0.01, p90: 0.12}
///         - {regime: bandwidth, gpus: 4, points: 2032, p10: -0.017, p50: -0.003, p90: 0.019}
///
/// A file that extends another replaces the records of the keys it names and the bands of the
/// kinds it gives (its collectives: band drops the inherited collective_bands: list, which only
/// its own list replaces); the rest is inherited.

#include "config/yaml_map.h"
#include "strategies/parallel/provenance.h"

namespace clustersim::strategies::parallel {

/// Reads a `calibration:` list (`node`, the value of the key) into `out`.
void apply_calibration(const config::YamlMap& parent, const YAML::Node& node,
                       std::vector<CalibrationRecord>& out);
/// Reads an `uncertainty:` mapping into `out`.
void apply_uncertainty(config::YamlMap m, Uncertainty& out);

} // namespace clustersim::strategies::parallel
