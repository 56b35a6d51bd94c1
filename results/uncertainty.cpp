#include "results/uncertainty.h"

#include "base/units.h"

#include <fmt/format.h>

namespace clustersim::results {
namespace {

const strategies::parallel::ResidualBand& band_of(const strategies::parallel::Uncertainty& u,
                                                  PredictionKind kind) {
    switch (kind) {
    case PredictionKind::collective:
        return u.collectives;
    case PredictionKind::gemm:
        return u.gemms;
    case PredictionKind::step:
        break;
    }
    return u.steps;
}

const char* kind_name(PredictionKind kind, int points) {
    switch (kind) {
    case PredictionKind::collective:
        return points == 1 ? "collective" : "collectives";
    case PredictionKind::gemm:
        return points == 1 ? "GEMM" : "GEMMs";
    case PredictionKind::step:
        break;
    }
    return points == 1 ? "step" : "steps";
}

} // namespace

std::optional<TimeBand> time_band(const strategies::parallel::Uncertainty& uncertainty,
                                  PredictionKind kind, double predicted_s) {
    const strategies::parallel::ResidualBand& b = band_of(uncertainty, kind);
    if (!b.present())
        return std::nullopt;
    return TimeBand{predicted_s * (1 + b.p10), predicted_s * (1 + b.p90), b.points,
                    uncertainty.basis.empty() ? "in-sample" : uncertainty.basis};
}

std::string band_text(const strategies::parallel::Uncertainty& uncertainty,
                      const std::string& hardware, PredictionKind kind, double predicted_s) {
    const auto b = time_band(uncertainty, kind, predicted_s);
    if (!b)
        return fmt::format("uncalibrated (hardware '{}' has no uncertainty for {})", hardware,
                           kind_name(kind, 2));
    return fmt::format("p10-p90 {} - {} ({} {} {})",
                       base::format_time(sim::Time::from_seconds(b->low_s)),
                       base::format_time(sim::Time::from_seconds(b->high_s)), b->points, b->basis,
                       kind_name(kind, b->points));
}

nlohmann::ordered_json band_json(const strategies::parallel::Uncertainty& uncertainty,
                                 PredictionKind kind, double predicted_s) {
    const auto b = time_band(uncertainty, kind, predicted_s);
    if (!b)
        return "uncalibrated";
    return {{"p10_s", b->low_s}, {"p90_s", b->high_s}, {"points", b->points}, {"basis", b->basis}};
}

} // namespace clustersim::results
