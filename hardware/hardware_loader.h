#pragma once
/// \file
/// Loading hardware files (YAML) into a ClusterSpec.
///
/// A hardware file names a preset to extend (`extends: dgx-a100`) and overrides any field, so a
/// calibrated file is a small layer over the datasheet preset. Presets live in
/// `configs/hardware/<name>.yaml`. Unknown keys, wrong types, bad units and missing required
/// fields are InputErrors naming the file, line, column and key.

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

/// Loads a preset name ("dgx-h100") or a path to a YAML file.
ClusterSpec load_hardware(const std::string& name_or_path);

/// Loads a hardware mapping given inline (an experiment's `hardware:`); `file` names the file it
/// came from, for errors.
ClusterSpec load_hardware_node(const YAML::Node& node, const std::string& file);

/// Loads hardware from YAML text (`file` names it in errors); YAML syntax errors are InputErrors.
ClusterSpec parse_hardware_yaml(const std::string& text, const std::string& file);

/// Checks that every required field is present and consistent; throws InputError naming `file`.
void validate(const ClusterSpec& spec, const std::string& file);

} // namespace clustersim::hardware
