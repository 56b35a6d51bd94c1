#pragma once
/// \file
/// How far to trust a prediction: the band a calibrated hardware file's `uncertainty:` section
/// gives it (strategies::parallel::Uncertainty, written by `clustersim calibrate fit`). For a kind
/// with residuals r = measured / predicted - 1, a predicted time t has the band [t (1 + p10), t (1
/// + p90)]: where 80% of that file's validation points fell. A rate (busbw, tokens/s) divides by
/// the time, so its band is [x / (1 + p90), x / (1 + p10)]. Hardware without a band for the kind is
/// "uncalibrated".
///
/// Used by `run` and `collective` (each prediction), and by `sweep` (the best configuration's
/// step, under its table).
///
/// Collectives have bands by regime (latency- or bandwidth-bound, strategies/parallel/
/// collective_regime.h) and GPU count as well: the residuals of small messages spread otherwise
/// than those of large ones, so one band over all sizes misplaces both. A collective takes the
/// band of its regime and GPU count when that has at least kMinRegimeBandPoints points, else
/// the band of its regime on the nearest GPU count that has them (nearest by the ratio of GPU
/// counts, the smaller on a tie: collectives' costs grow with log p and (p-1)/p), else the
/// kind's band over every size; the band says which it is and how many points are behind it.
///
/// A band needs measured points of its kind: a file fitted on collectives alone has no band for
/// a step. `calibrated_parts` says which parts of the model its `calibration:` records set, so
/// that such a step says what is calibrated instead of only "uncalibrated".

#include "strategies/parallel/provenance.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace clustersim::results {

enum class PredictionKind { collective, gemm, step };

/// What selects a collective's band: its regime (nullopt: unknown, the kind's band serves)
/// and its GPU count.
struct CollectiveScope {
    std::optional<strategies::parallel::MessageRegime> regime;
    int gpus = 0;
};

/// Which band a prediction got.
enum class BandSource : std::uint8_t {
    kind,           ///< the kind's band over every size and GPU count
    regime,         ///< its regime on its own GPU count
    regime_nearest, ///< its regime on the nearest GPU count with enough points
};

/// A predicted time's p10-p90 band, in seconds.
struct TimeBand {
    double low_s = 0;        ///< t (1 + p10)
    double high_s = 0;       ///< t (1 + p90)
    double p10 = 0, p90 = 0; ///< of measured / predicted - 1
    int points = 0;          ///< validation points the band comes from
    std::string basis;       ///< "held-out" or "in-sample"
    BandSource source = BandSource::kind;
    /// source != kind: the band's regime and GPU count
    strategies::parallel::MessageRegime regime = strategies::parallel::MessageRegime::bandwidth;
    int gpus = 0;
};

/// The band of a predicted time of `kind` under `uncertainty` (a platform's provenance);
/// nullopt when it is uncalibrated. `scope` (collectives) picks a regime band where the file
/// has one with enough points.
std::optional<TimeBand> time_band(const strategies::parallel::Uncertainty& uncertainty,
                                  PredictionKind kind, double predicted_s,
                                  const CollectiveScope& scope = {});

/// "p10-p90 298 ms - 330 ms (1152 held-out steps)", "p10-p90 60.1 us - 66.0 us (16 held-out
/// latency-bound collectives on 4 GPUs)", or "uncalibrated (hardware 'dgx-a100' has no
/// uncertainty for steps)"; `hardware` names the hardware file.
std::string band_text(const strategies::parallel::Uncertainty& uncertainty,
                      const std::string& hardware, PredictionKind kind, double predicted_s,
                      const CollectiveScope& scope = {});

/// Which band it is, in words: "16 held-out latency-bound collectives on 4 GPUs",
/// "... on 8 GPUs (the nearest GPU count with 10 points)", "2048 held-out collectives".
std::string band_basis_text(const TimeBand& band, PredictionKind kind);

/// {"p10_s": .., "p90_s": .., "points": .., "basis": .., "band": ..}, or the string
/// "uncalibrated". "band" is {"regime": "latency", "gpus": 4, "nearest": false} for a regime
/// band, "all" for the kind's.
nlohmann::ordered_json band_json(const strategies::parallel::Uncertainty& uncertainty,
                                 PredictionKind kind, double predicted_s,
                                 const CollectiveScope& scope = {});

/// One part of the model a hardware file's `calibration:` records may set.
struct CalibratedPart {
    const char* name; ///< "collectives", "GEMMs", ... (as the table words it)
    const char* key;  ///< "collectives", "gemms", ... (as the JSON names it)
    int values = 0;   ///< calibrated values in that part; 0: from the datasheet
};

/// Every part, in a fixed order (collectives, GEMMs, memory-bound kernels, kernel launch,
/// framework overheads), with the number of the file's calibrated values in each: a record's
/// part is the section of its key (collectives.*, compute.gemm.*, compute.memory.*,
/// compute.launch_overhead, framework.*).
std::vector<CalibratedPart> calibrated_parts(const strategies::parallel::Provenance& provenance);

/// "collectives (8 values); from the datasheet: GEMMs, memory-bound kernels, kernel launch,
/// framework overheads"; "" when the file has no calibration records.
std::string calibrated_text(const strategies::parallel::Provenance& provenance);

/// {"collectives": 8, "gemms": 0, ...}: calibrated values per part; null when the file has no
/// calibration records.
nlohmann::ordered_json calibrated_json(const strategies::parallel::Provenance& provenance);

} // namespace clustersim::results
