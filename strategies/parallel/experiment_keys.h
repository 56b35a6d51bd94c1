#pragma once
/// \file
/// The keys of an experiment file, declared once (config/key_table.h): the top level, and the
/// training: and parallel: sections (the model's are models::model_keys()). The loader reads
/// them by these tables (experiment.cpp), and `clustersim init`, docs/experiments.md, the
/// measurement files' step settings (calibrate/measurements_settings.cpp) and the sweep's key list
/// (experiment_variants.h) are all drawn from them: a key added here is known to all of them.
/// Knob names follow Megatron-LM where one exists, torchtitan's where it does not.

#include "config/key_table.h"
#include "strategies/parallel/experiment.h"

#include <string>
#include <vector>

namespace clustersim::strategies::parallel {

/// The top level: name, description, hardware, gpus or nodes, and the three sections (read by
/// hand in experiment.cpp: each is a rule or a section of its own).
const std::vector<config::Key<ExperimentSpec>>& top_level_keys();
const std::vector<config::Key<TrainingSpec>>& training_keys();
const std::vector<config::Key<ParallelSpec>>& parallel_keys();

/// The experiment file's sections in file order: "" (the top level), "model", "training",
/// "parallel".
const std::vector<config::KeySection>& experiment_sections();

/// Every dotted key that `--set` and a sweep's `--vary` take, under each of its names, sorted:
/// "description", "gpus", "hardware", "model", "model.activation", ..., "training.dtype", ...
/// (not "training" and "parallel", which are mappings).
std::vector<std::string> experiment_key_paths();

/// The section at `path` of experiment_sections(); null when there is none.
const config::KeySection* experiment_section(std::string_view path);

namespace detail {

/// A choice's setter through the enum's parser (which knows every choice of the table).
template <class Spec, auto Member, auto Parse>
void set_parsed(Spec& s, std::string_view text) {
    s.*Member = *Parse(text);
}

} // namespace detail

} // namespace clustersim::strategies::parallel
