#include "app/cluster_options.h"

#include "base/text.h"
#include "hardware/hardware_loader.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <limits>
#include <utility>

namespace clustersim::app {

void ClusterOptions::add_to(CLI::App& cmd, bool positional) {
    if (positional)
        cmd.add_option("hardware", hardware,
                       "Hardware preset (dgx-a100, dgx-h100, ...) or YAML file")
            ->required();
    else
        cmd.add_option("--hardware,-H", hardware,
                       "Hardware preset (dgx-a100, dgx-h100, hgx-h200, pcie-4gpu) or YAML file")
            ->required();
    cmd.add_option("--gpus,-g", gpus,
                   "GPUs in the cluster; enough nodes of the preset are joined by its network")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                // CLI::PositiveNumber would print its range up to 1.8e308 in 309 digits.
                long long v = 0;
                const char* end = text.data() + text.size();
                const auto [ptr, ec] = std::from_chars(text.data(), end, v);
                if (ec != std::errc() || ptr != end || v < 1 || v > std::numeric_limits<int>::max())
                    return "expected a GPU count of at least 1, got '" + base::excerpt(text) + "'";
                return {};
            },
            "GPUS >= 1"));
}

hardware::ClusterSpec ClusterOptions::load() const {
    hardware::ClusterSpec spec = hardware::load_hardware(hardware);
    if (gpus > 0)
        spec = hardware::with_gpu_count(spec, gpus);
    return spec;
}

strategies::parallel::Platform ClusterOptions::load_platform() const {
    strategies::parallel::Platform p = strategies::parallel::load_platform(hardware);
    if (gpus > 0)
        p = strategies::parallel::with_gpu_count(std::move(p), gpus);
    return p;
}

} // namespace clustersim::app
