#pragma once
/// \file
/// The pieces of the experiment loader (experiment.h), for code that builds many variants of
/// one experiment file without reading it again each time (experiment_variants.h). Not for
/// general use: load_experiment is the way to read an experiment.

#include "config/scalar_map.h"
#include "config/yaml_map.h"
#include "strategies/parallel/experiment.h"

#include <string>

namespace clustersim::strategies::parallel::detail {

/// Sets the dotted `key` to `value` in a parsed experiment document, as `--set` does (a preset
/// name where a mapping is needed becomes `{extends: NAME}` first).
void override_key(YAML::Node root, const std::string& key, const std::string& value);

/// Reads a parsed experiment document (overrides already applied) into an ExperimentSpec,
/// without validate_experiment. `path` names it in messages and resolves relative files.
ExperimentSpec read_experiment_document(YAML::Node doc, const std::string& path);

/// Reads a `training:` mapping onto `t`; keys that are absent keep their values.
void read_training_section(config::YamlMap m, TrainingSpec& t);
/// Reads a `parallel:` mapping onto `p`; keys that are absent keep their values.
void read_parallel_section(config::YamlMap m, ParallelSpec& p);
/// The same readers over a ScalarMap: the same values where they succeed, and
/// ScalarMap::Refused wherever the YamlMap readers would throw an InputError.
void read_training_section(config::ScalarMap& m, TrainingSpec& t);
void read_parallel_section(config::ScalarMap& m, ParallelSpec& p);

} // namespace clustersim::strategies::parallel::detail
