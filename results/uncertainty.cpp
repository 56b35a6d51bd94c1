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
