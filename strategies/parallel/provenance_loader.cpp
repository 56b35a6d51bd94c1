// The `calibration:` and `uncertainty:` sections of hardware files. YAML is read here and in
// the other loader files only.
#include "strategies/parallel/provenance_loader.h"

#include "strategies/parallel/platform_keys.h"

#include <algorithm>

namespace clustersim::strategies::parallel {

using config::YamlMap;
namespace {

std::vector<std::string> read_strings(YamlMap& m, std::string_view key) {
    const YAML::Node list = m.raw(key);
    if (!list.IsSequence())
        m.fail(key, "expected a list of file names like [a.json, b.json]");
    std::vector<std::string> out;
    for (const auto& item : list) {
        if (!item.IsScalar() || item.Scalar().empty())
            m.fail_at(item, key, "expected a file name");
        out.push_back(item.Scalar());
    }
    return out;
}

double read_percent(YamlMap& m, std::string_view key) {
    return m.has(key) ? m.number(key, 0) / 100.0 : 0.0;
}

ResidualBand read_band(YamlMap& m) {
    ResidualBand b;
    config::read_keys(m, band_keys(), b);
    if (!(b.p10 <= b.p50 && b.p50 <= b.p90))
        m.fail("p90", "expected p10 <= p50 <= p90");
    return b;
}

void apply_band(YamlMap m, ResidualBand& band) {
    const ResidualBand b = read_band(m);
    m.finish();
    band = b;
}

/// The collective_bands: list, which replaces an inherited one whole (its records are one
/// validation's).
void apply_regime_bands(const YamlMap& parent, const YAML::Node& node,
                        std::vector<RegimeBand>& out) {
    if (!node.IsSequence())
        parent.fail_at(node, "collective_bands",
                       "expected a list of bands (- {regime: latency, gpus: 8, points: ..., p10: "
                       "..., p50: ..., p90: ...})");
    std::vector<RegimeBand> bands;
    std::size_t i = 0;
    for (const auto& item : node) {
        YamlMap m(item, parent.file(), "collective_bands[" + std::to_string(i++) + "]");
        RegimeBand r;
        config::read_keys(m, regime_band_keys(), r);
        r.band = read_band(m);
        m.finish();
        for (const auto& b : bands)
            if (b.regime == r.regime && b.gpus == r.gpus)
                m.fail("gpus", "a second band of regime " + std::string(to_string(r.regime)) +
                                   " on " + std::to_string(r.gpus) + " GPUs");
        bands.push_back(r);
    }
    std::stable_sort(bands.begin(), bands.end(), [](const RegimeBand& a, const RegimeBand& b) {
        return a.regime != b.regime ? a.regime < b.regime : a.gpus < b.gpus;
    });
    out = std::move(bands);
}

} // namespace

void apply_calibration(const YamlMap& parent, const YAML::Node& node,
                       std::vector<CalibrationRecord>& out) {
    if (!node.IsSequence())
        parent.fail_at(node, "calibration",
                       "expected a list of records (- key: ..., value: ..., files: [...])");
    std::size_t i = 0;
    for (const auto& item : node) {
        YamlMap m(item, parent.file(), "calibration[" + std::to_string(i++) + "]");
        CalibrationRecord r;
        config::read_keys(m, calibration_record_keys(), r);
        if (r.key.empty())
            m.fail("key", "expected the dotted key the record describes");
        if (m.has("files"))
            r.files = read_strings(m, "files");
        r.mean_abs_error = read_percent(m, "mean_abs_error_pct");
        r.max_abs_error = read_percent(m, "max_abs_error_pct");
        m.finish();
        auto same = std::find_if(out.begin(), out.end(),
                                 [&](const CalibrationRecord& c) { return c.key == r.key; });
        if (same != out.end())
            *same = std::move(r);
        else
            out.push_back(std::move(r));
    }
}

void apply_uncertainty(YamlMap m, Uncertainty& out) {
    config::read_keys(m, uncertainty_keys(), out);
    if (m.has("collectives")) {
        apply_band(m.map("collectives"), out.collectives);
        // The regime bands of another validation than this band's would disagree with it.
        out.collective_bands.clear();
    }
    if (m.has("gemms"))
        apply_band(m.map("gemms"), out.gemms);
    if (m.has("steps"))
        apply_band(m.map("steps"), out.steps);
    if (m.has("collective_bands"))
        apply_regime_bands(m, m.raw("collective_bands"), out.collective_bands);
    m.finish();
}

} // namespace clustersim::strategies::parallel
