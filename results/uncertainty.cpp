#include "results/uncertainty.h"

#include "base/units.h"

#include <fmt/format.h>

#include <cmath>

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

/// The regime band a collective of `scope` takes (BandSource::regime or regime_nearest), or
/// null when none has enough points.
const strategies::parallel::RegimeBand* regime_band(const strategies::parallel::Uncertainty& u,
                                                    const CollectiveScope& scope,
                                                    BandSource& source) {
    if (!scope.regime || scope.gpus < 1)
        return nullptr;
    const strategies::parallel::RegimeBand* best = nullptr;
    double best_distance = 0;
    for (const auto& r : u.collective_bands) {
        if (r.regime != *scope.regime || r.band.points < strategies::parallel::kMinRegimeBandPoints)
            continue;
        // Nearest by ratio; bands are ordered by GPU count, so a tie keeps the smaller.
        const double distance = std::abs(std::log2(static_cast<double>(r.gpus) / scope.gpus));
        if (!best || distance < best_distance) {
            best = &r;
            best_distance = distance;
        }
    }
    if (best)
        source = best->gpus == scope.gpus ? BandSource::regime : BandSource::regime_nearest;
    return best;
}

} // namespace

std::optional<TimeBand> time_band(const strategies::parallel::Uncertainty& uncertainty,
                                  PredictionKind kind, double predicted_s,
                                  const CollectiveScope& scope) {
    TimeBand t;
    t.basis = uncertainty.basis.empty() ? "in-sample" : uncertainty.basis;
    const strategies::parallel::RegimeBand* r =
        kind == PredictionKind::collective ? regime_band(uncertainty, scope, t.source) : nullptr;
    const strategies::parallel::ResidualBand& b = r ? r->band : band_of(uncertainty, kind);
    if (!b.present())
        return std::nullopt;
    t.low_s = predicted_s * (1 + b.p10);
    t.high_s = predicted_s * (1 + b.p90);
    t.p10 = b.p10;
    t.p90 = b.p90;
    t.points = b.points;
    if (r) {
        t.regime = r->regime;
        t.gpus = r->gpus;
    }
    return t;
}

std::string band_basis_text(const TimeBand& band, PredictionKind kind) {
    if (band.source == BandSource::kind)
        return fmt::format("{} {} {}", band.points, band.basis, kind_name(kind, band.points));
    return fmt::format("{} {} {}-bound {} on {} GPU{}{}", band.points, band.basis,
                       strategies::parallel::to_string(band.regime), kind_name(kind, band.points),
                       band.gpus, band.gpus == 1 ? "" : "s",
                       band.source == BandSource::regime_nearest
                           ? fmt::format(", the nearest GPU count with {} points",
                                         strategies::parallel::kMinRegimeBandPoints)
                           : "");
}

std::string band_text(const strategies::parallel::Uncertainty& uncertainty,
                      const std::string& hardware, PredictionKind kind, double predicted_s,
                      const CollectiveScope& scope) {
    const auto b = time_band(uncertainty, kind, predicted_s, scope);
    if (!b)
        return fmt::format("uncalibrated (hardware '{}' has no uncertainty for {})", hardware,
                           kind_name(kind, 2));
    return fmt::format("p10-p90 {} - {} ({})", base::format_time(sim::Time::from_seconds(b->low_s)),
                       base::format_time(sim::Time::from_seconds(b->high_s)),
                       band_basis_text(*b, kind));
}

nlohmann::ordered_json band_json(const strategies::parallel::Uncertainty& uncertainty,
                                 PredictionKind kind, double predicted_s,
                                 const CollectiveScope& scope) {
    const auto b = time_band(uncertainty, kind, predicted_s, scope);
    if (!b)
        return "uncalibrated";
    nlohmann::ordered_json j = {
        {"p10_s", b->low_s}, {"p90_s", b->high_s}, {"points", b->points}, {"basis", b->basis}};
    if (kind == PredictionKind::collective) {
        if (b->source == BandSource::kind)
            j["band"] = "all";
        else
            j["band"] = {{"regime", strategies::parallel::to_string(b->regime)},
                         {"gpus", b->gpus},
                         {"nearest", b->source == BandSource::regime_nearest}};
    }
    return j;
}

std::vector<CalibratedPart> calibrated_parts(const strategies::parallel::Provenance& provenance) {
    // Key prefixes as calibrate/fit.cpp writes them; a key of no part here is not counted.
    static const struct {
        const char* name;
        const char* key;
        const char* prefix;
    } kParts[] = {{"collectives", "collectives", "collectives."},
                  {"GEMMs", "gemms", "compute.gemm."},
                  {"memory-bound kernels", "memory_kernels", "compute.memory."},
                  {"kernel launch", "launch", "compute.launch_overhead"},
                  {"framework overheads", "framework", "framework."}};
    std::vector<CalibratedPart> parts;
    for (const auto& p : kParts) {
        CalibratedPart part{p.name, p.key, 0};
        for (const auto& r : provenance.calibration)
            part.values += r.key.starts_with(p.prefix) ? 1 : 0;
        parts.push_back(part);
    }
    return parts;
}

std::string calibrated_text(const strategies::parallel::Provenance& provenance) {
    if (provenance.calibration.empty())
        return "";
    std::string calibrated, datasheet;
    for (const auto& p : calibrated_parts(provenance)) {
        if (p.values > 0)
            calibrated += fmt::format("{}{} ({} value{})", calibrated.empty() ? "" : ", ", p.name,
                                      p.values, p.values == 1 ? "" : "s");
        else
            datasheet += fmt::format("{}{}", datasheet.empty() ? "" : ", ", p.name);
    }
    if (calibrated.empty())
        calibrated = "none of the model's parts";
    return datasheet.empty() ? calibrated : calibrated + "; from the datasheet: " + datasheet;
}

nlohmann::ordered_json calibrated_json(const strategies::parallel::Provenance& provenance) {
    if (provenance.calibration.empty())
        return nullptr;
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& p : calibrated_parts(provenance))
        j[p.key] = p.values;
    return j;
}

} // namespace clustersim::results
