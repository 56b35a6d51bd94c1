#pragma once
/// \file
/// The `--hardware H [--gpus N]` pair that several commands share.

#include "hardware/specs.h"
#include "strategies/parallel/platform.h"

#include <string>

namespace CLI {
class App;
}

namespace clustersim::app {

struct ClusterOptions {
    std::string hardware;
    int gpus = 0; ///< 0: one node of the preset (or the file's `nodes`)

    /// Adds --hardware (required unless `positional`) and --gpus to `cmd`.
    void add_to(CLI::App& cmd, bool positional = false);
    /// Loads the hardware alone (hardware::load_hardware) and sizes it to `gpus` when given.
    hardware::ClusterSpec load() const;
    /// The same with the framework and the provenance of the file (for the uncertainty band).
    strategies::parallel::Platform load_platform() const;
};

} // namespace clustersim::app
