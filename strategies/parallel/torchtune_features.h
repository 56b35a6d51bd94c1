#pragma once
/// \file
/// What torchtune's memory features (TrainingSpec: master_weights false, optimizer_in_bwd,
/// activation_offloading, cross_entropy chunked) ask of an experiment: the combinations
/// torchtune refuses and those clustersim does not model.

#include <optional>
#include <string>
#include <utility>

namespace clustersim::strategies::parallel {

struct ExperimentSpec;

/// Why `e`'s torchtune features cannot run: what is wrong and what fixes it, and the key.
/// nullopt: nothing.
std::optional<std::pair<std::string, const char*>>
torchtune_feature_refusal(const ExperimentSpec& e);

} // namespace clustersim::strategies::parallel
