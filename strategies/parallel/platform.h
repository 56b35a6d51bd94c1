#pragma once
/// \file
/// A platform: the hardware, the training software that runs on it, and where the calibrated
/// values of both came from. One hardware file (configs/hardware/<name>.yaml) describes all
/// three: its hardware keys (hardware/hardware_loader.h), `framework:` (framework_spec.h), and
/// `calibration:` and `uncertainty:` (provenance.h), layered with `extends:` as one file. The
/// training-step model needs the cluster and the framework; the app prints the provenance.
/// Commands that need the hardware alone load it with hardware::load_hardware, which skips the
/// upper sections unread.

#include "hardware/specs.h"
#include "strategies/parallel/framework_spec.h"
#include "strategies/parallel/provenance.h"

#include <string>

namespace YAML {
class Node;
}

namespace clustersim::strategies::parallel {

/// The cluster with its training stack and the provenance of its calibrated values.
struct Platform {
    hardware::ClusterSpec cluster;
    FrameworkSpec framework;
    Provenance provenance;
};

/// Loads a hardware preset name ("dgx-h100") or a path to a hardware file, all sections. The
/// hardware is validated as hardware::load_hardware validates it; the errors are the same.
Platform load_platform(const std::string& name_or_path);

/// Loads a hardware mapping given inline (an experiment's `hardware:`), or a preset name or
/// path when `node` is a scalar; `file` names the file it came from, for errors, and a relative
/// path is resolved against `file`'s directory (never the current directory).
Platform load_platform_node(const YAML::Node& node, const std::string& file);

/// Loads a platform from hardware-file text (`file` names it in errors); YAML syntax errors are
/// InputErrors.
Platform parse_platform_yaml(const std::string& text, const std::string& file);

/// The same platform with its cluster resized to hold at least `gpus` GPUs (whole nodes).
Platform with_gpu_count(Platform platform, int gpus);

} // namespace clustersim::strategies::parallel
