#include "calibrate/split.h"

#include "base/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

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
    split_list(file.kernels, fraction, seed, s.chosen.kernels, s.rest.kernels);
    split_list(file.trace_steps, fraction, seed, s.chosen.trace_steps, s.rest.trace_steps);
    return s;
}

namespace {
/// The file a trace-derived point came from ("t.json.gz: traceEvents[3]" -> "t.json.gz").
std::string trace_file(const std::string& source) {
    const auto colon = source.find(": ");
    return colon == std::string::npos ? source : source.substr(0, colon);
}

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

template <typename T>
void split_by_group(const std::vector<T>& all, const std::set<std::string>& chosen_groups,
                    std::vector<T>& chosen, std::vector<T>& rest) {
    for (const auto& p : all)
        (chosen_groups.count(shape_group(p)) ? chosen : rest).push_back(p);
}
} // namespace

std::string shape_group(const CollectiveMeasurement& c) {
    return fmt::format("collective {} {} {}", to_string(c.op), c.gpus, c.bytes);
}
std::string shape_group(const GemmMeasurement& g) {
    return fmt::format("gemm {}x{}x{}", g.m, g.n, g.k);
}
std::string shape_group(const CopyMeasurement& c) {
    return fmt::format("copy {}", c.bytes);
}
std::string shape_group(const P2pMeasurement& p) {
    return fmt::format("p2p {}", p.bytes);
}
std::string shape_group(const LaunchMeasurement& l) {
    return fmt::format("launch {}", to_string(l.method));
}
std::string shape_group(const StepMeasurement& s) {
    // A training step imported from a trace goes with the trace's kernels.
    if (s.source.find(": ProfilerStep#") != std::string::npos)
        return "trace " + trace_file(s.source);
    std::string key = "step " + s.model_preset;
    for (const auto& o : s.overrides())
        if (o.rfind("parallel.", 0) != 0)
            key += " " + o;
    return key;
}
std::string shape_group(const KernelMeasurement& k) {
    return "trace " + trace_file(k.source);
}
std::string shape_group(const TraceStepMeasurement& t) {
    return "trace " + trace_file(t.source);
}

MeasurementSplit split_measurements_by_shape(const MeasurementFile& file, double fraction,
                                             std::uint64_t seed) {
    if (!(fraction > 0 && fraction < 1))
        throw InputError(
            fmt::format("--fraction: expected a number between 0 and 1, got {}", fraction));
    std::set<std::string> groups;
    auto add = [&](const auto& list) {
        for (const auto& p : list)
            groups.insert(shape_group(p));
    };
    add(file.collectives);
    add(file.gemms);
    add(file.copies);
    add(file.p2p);
    add(file.launches);
    add(file.steps);
    add(file.kernels);
    add(file.trace_steps);
    if (groups.size() < 2)
        throw InputError(fmt::format("--by-shape: the points have {} shape{}; a split by shape "
                                     "needs two or more",
                                     groups.size(), groups.size() == 1 ? "" : "s"));
    std::vector<std::pair<std::uint64_t, std::string>> ranked;
    for (const auto& g : groups)
        ranked.emplace_back(splitmix64(seed + fnv1a(g)), g);
    std::sort(ranked.begin(), ranked.end());
    auto take =
        static_cast<std::size_t>(std::llround(fraction * static_cast<double>(ranked.size())));
    take = std::clamp<std::size_t>(take, 1, ranked.size() - 1);
    std::set<std::string> chosen;
    for (std::size_t i = 0; i < take; ++i)
        chosen.insert(ranked[i].second);

    MeasurementSplit s;
    s.chosen.version = s.rest.version = file.version;
    s.chosen.environment = s.rest.environment = file.environment;
    split_by_group(file.collectives, chosen, s.chosen.collectives, s.rest.collectives);
    split_by_group(file.gemms, chosen, s.chosen.gemms, s.rest.gemms);
    split_by_group(file.copies, chosen, s.chosen.copies, s.rest.copies);
    split_by_group(file.p2p, chosen, s.chosen.p2p, s.rest.p2p);
    split_by_group(file.launches, chosen, s.chosen.launches, s.rest.launches);
    split_by_group(file.steps, chosen, s.chosen.steps, s.rest.steps);
    split_by_group(file.kernels, chosen, s.chosen.kernels, s.rest.kernels);
    split_by_group(file.trace_steps, chosen, s.chosen.trace_steps, s.rest.trace_steps);
    return s;
}

} // namespace clustersim::calibrate
