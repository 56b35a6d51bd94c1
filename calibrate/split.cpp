#include "calibrate/split.h"

#include "base/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace clustersim::calibrate {

std::uint64_t splitmix64(std::uint64_t x) {
    std::uint64_t z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

namespace {

template <typename T>
void split_list(const std::vector<T>& all, double fraction, std::uint64_t seed,
                std::vector<T>& chosen, std::vector<T>& rest) {
    const std::size_t n = all.size();
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [seed](std::size_t a, std::size_t b) {
        return splitmix64(seed + a) < splitmix64(seed + b);
    });
    const auto take = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(n)));
    std::vector<bool> pick(n, false);
    for (std::size_t i = 0; i < take && i < n; ++i)
        pick[order[i]] = true;
    for (std::size_t i = 0; i < n; ++i)
        (pick[i] ? chosen : rest).push_back(all[i]);
}

} // namespace

MeasurementSplit split_measurements(const MeasurementFile& file, double fraction,
                                    std::uint64_t seed) {
    if (!(fraction > 0 && fraction < 1))
        throw InputError(
            fmt::format("--fraction: expected a number between 0 and 1, got {}", fraction));
    MeasurementSplit s;
    s.chosen.version = s.rest.version = file.version;
    s.chosen.environment = s.rest.environment = file.environment;
    split_list(file.collectives, fraction, seed, s.chosen.collectives, s.rest.collectives);
    split_list(file.gemms, fraction, seed, s.chosen.gemms, s.rest.gemms);
    split_list(file.copies, fraction, seed, s.chosen.copies, s.rest.copies);
    split_list(file.p2p, fraction, seed, s.chosen.p2p, s.rest.p2p);
    split_list(file.launches, fraction, seed, s.chosen.launches, s.rest.launches);
    split_list(file.steps, fraction, seed, s.chosen.steps, s.rest.steps);
    return s;
}

} // namespace clustersim::calibrate
