#pragma once
// Shared helpers of the collectives tests.

#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"

#include <map>
#include <memory>
#include <string>

namespace collectives_test {

/// A topology of `gpus` GPUs of a preset, built once per (preset, size) and kept for the run.
inline const clustersim::hardware::Topology& topology(const std::string& preset, int gpus) {
    static std::map<std::pair<std::string, int>, std::unique_ptr<clustersim::hardware::Topology>>
        cache;
    auto& slot = cache[{preset, gpus}];
    if (!slot) {
        auto spec = clustersim::hardware::load_hardware(preset);
        if (gpus > 0)
            spec = clustersim::hardware::with_gpu_count(spec, gpus);
        slot = std::make_unique<clustersim::hardware::Topology>(spec);
    }
    return *slot;
}

inline constexpr std::int64_t MiB = 1 << 20;
inline constexpr std::int64_t GiB = std::int64_t(1) << 30;

} // namespace collectives_test
