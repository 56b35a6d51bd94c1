#include "calibrate/gemm_variants.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace clustersim::calibrate {

std::vector<GemmVariantRatio> gemm_variant_ratios(const std::vector<GemmMeasurement>& gemms) {
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, hardware::Dtype, std::string,
                           std::string>;
    auto key = [](const GemmMeasurement& g) {
        return Key{g.m, g.n, g.k, g.dtype, g.layout, g.library};
    };
    std::map<Key, double> plain;
    for (const auto& g : gemms)
        if (g.variant == GemmVariant::plain && g.time.seconds() > 0)
            plain.emplace(key(g), g.time.seconds());
    std::map<std::pair<GemmVariant, hardware::Dtype>, std::vector<double>> ratios;
    for (const auto& g : gemms) {
        if (g.variant == GemmVariant::plain)
            continue;
        if (const auto it = plain.find(key(g)); it != plain.end())
            ratios[{g.variant, g.dtype}].push_back(g.time.seconds() / it->second);
    }
    std::vector<GemmVariantRatio> out;
    for (auto& [which, r] : ratios) {
        std::sort(r.begin(), r.end());
        const std::size_t n = r.size();
        GemmVariantRatio v;
        v.variant = which.first;
        v.dtype = which.second;
        v.shapes = static_cast<int>(n);
        v.median = n % 2 == 1 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
        v.lowest = r.front();
        v.highest = r.back();
        out.push_back(v);
    }
    return out;
}

} // namespace clustersim::calibrate
