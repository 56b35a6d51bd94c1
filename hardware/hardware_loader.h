#pragma once
/// \file
/// Loading hardware files (YAML) into a ClusterSpec.
///
/// A hardware file names a preset to extend (`extends: dgx-a100`) and overrides any field, so a
/// calibrated file is a small layer over the datasheet preset. Presets live in
/// `configs/hardware/<name>.yaml`. Unknown keys, wrong types, bad units and missing required
/// fields are InputErrors naming the file, line, column and key.
///
/// A hardware file also holds the sections of the layer above (`framework:`, `calibration:`,
/// `uncertainty:`, read by strategies/parallel/platform.h). `read_hardware_layer` reads the
/// hardware keys of one layer and leaves those to its caller; `load_hardware` and its siblings
/// skip them (see hardware_loader.cpp).

#include "config/preset.h"
#include "hardware/specs.h"

#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace clustersim::hardware {

/// Hardware presets: configs/hardware/<name>.yaml.
const config::PresetKind& hardware_presets();

/// Reads the hardware keys of one layer of a hardware file onto `spec` (which holds what the
/// layers below gave; `extended` says whether there were any), without calling
/// `root.finish()`: the caller reads its own sections, then finishes. A config::LayerReader
/// building block for loaders of types that contain a ClusterSpec.
void read_hardware_layer(config::YamlMap& root, ClusterSpec& spec, bool extended);

/// Loads a preset name ("dgx-h100") or a path to a YAML file.
ClusterSpec load_hardware(const std::string& name_or_path);

/// Loads a hardware mapping given inline (an experiment's `hardware:`), or a preset name or
/// path when `node` is a scalar; `file` names the file it came from, for errors, and a relative
/// path is resolved against `file`'s directory.
ClusterSpec load_hardware_node(const YAML::Node& node, const std::string& file);

/// Loads hardware from YAML text (`file` names it in errors); YAML syntax errors are InputErrors.
ClusterSpec parse_hardware_yaml(const std::string& text, const std::string& file);

/// Checks that every required field is present and consistent; throws InputError naming `file`.
void validate(const ClusterSpec& spec, const std::string& file);

/// What a hardware file asks once all its layers are merged, then `validate`: `node.gpus_used`
/// makes the node that many GPUs with the NICs of their trays. Every loader of hardware (this
/// file's and the platform's) calls it last. Throws InputError naming `file` and the key.
void complete(ClusterSpec& spec, const std::string& file);

} // namespace clustersim::hardware
