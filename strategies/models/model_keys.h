#pragma once
/// \file
/// The keys of a model (a file in configs/models, or an experiment's `model:` mapping), declared
/// once (config/key_table.h): the loader reads them by this table, `clustersim init` and
/// docs/experiments.md are written from it. Names follow Megatron-Core's TransformerConfig.

#include "config/key_table.h"
#include "strategies/models/model_spec.h"

#include <vector>

namespace clustersim::strategies::models {

/// Every key of a model, transformer and MLP (KeyInfo::when says which), in reading order.
const std::vector<config::Key<ModelSpec>>& model_keys();

/// Whether `k` is a key of models of `s`'s kind.
bool applies(const config::KeyInfo& k, const ModelSpec& s);

} // namespace clustersim::strategies::models
