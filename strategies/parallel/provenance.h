#pragma once
/// \file
/// Where a hardware file's calibrated values came from and how far to trust its predictions:
/// the `calibration:` and `uncertainty:` sections that `clustersim calibrate fit` writes
/// (provenance_loader.h reads them). Neither changes a prediction: the app prints them beside
/// the numbers. They live above hardware/ because they describe a fit of the whole platform
/// (hardware and framework together, steps included), not the hardware.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::strategies::parallel {

/// Where one calibrated value came from: the data it was fitted to and how well it fits.
struct CalibrationRecord {
    std::string key;                ///< dotted key it sets, e.g. "collectives.launch_latency"
    std::string value;              ///< as written in the file, e.g. "31.2us"
    std::string method;             ///< e.g. "huber-nelder-mead"
    std::vector<std::string> files; ///< measurement files
    int points = 0;                 ///< measured points the fit used
    double mean_abs_error = 0;      ///< mean |predicted / measured - 1| over them after the fit
    double max_abs_error = 0;       ///< largest |predicted / measured - 1|
};

/// Distribution of measured / predicted - 1 over validated points of one kind.
struct ResidualBand {
    int points = 0; ///< 0: none (uncalibrated for this kind)
    double p10 = 0, p50 = 0, p90 = 0;
    bool present() const { return points > 0; }
};

/// Which term of a collective's predicted time dominates it (collective_regime.h decides).
enum class MessageRegime : std::uint8_t {
    latency,   ///< the fixed cost (launch, per-step latencies) is at least half the time
    bandwidth, ///< the bytes' cost is more than half
};
/// "latency", "bandwidth" (as the hardware file writes them).
std::string_view to_string(MessageRegime regime);
std::optional<MessageRegime> parse_regime(std::string_view s);

/// The band of the collectives of one regime on one GPU count.
struct RegimeBand {
    MessageRegime regime = MessageRegime::bandwidth;
    int gpus = 0;
    ResidualBand band;
};

/// The fewest points a regime band needs to serve a prediction (results/uncertainty.h falls
/// back to the nearest GPU count, then to the kind's band). Its p10 and p90 are order
/// statistics: with n points, n/10 of them are expected below p10 and above p90, so under 10
/// points the band is the extreme residuals themselves, whose spread depends on n more than on
/// the model (Hyndman and Fan's type 7 interpolates p10 between the two lowest at n = 10).
inline constexpr int kMinRegimeBandPoints = 10;

/// How far to trust the platform's predictions, by kind (the `uncertainty:` section).
struct Uncertainty {
    std::string basis; ///< "held-out" or "in-sample": what the residuals were measured on
    ResidualBand collectives, gemms, steps;
    /// Collectives' bands by regime and GPU count (`collective_bands:`), ordered by regime then
    /// GPU count; empty in files written before them (the kind's band then serves every size).
    std::vector<RegimeBand> collective_bands;
    bool present() const { return collectives.present() || gemms.present() || steps.present(); }
};

/// The provenance of a calibrated platform: the records of its fitted values and the residual
/// bands of its predictions. Empty for an uncalibrated (datasheet) preset.
struct Provenance {
    std::vector<CalibrationRecord> calibration; ///< origin of calibrated values (may be empty)
    Uncertainty uncertainty;                    ///< validation residuals; absent: uncalibrated
};

} // namespace clustersim::strategies::parallel
