#pragma once
/// \file
/// Loading models (YAML) into a ModelSpec: a preset name (`gpt3-175B`, from
/// configs/models/<name>.yaml), a path to a file, or a mapping given inline (an experiment's
/// `model:`). A mapping may `extends:` a preset or file and override any key:
///
///     model: {extends: gpt3-175B, layers: 48, attention: flash}
///
/// Transformer keys: kind, layers, hidden, heads, kv_heads (default heads), ffn (default
/// 4 * hidden), seq, vocab, vocab_divisible_by (128), attention (unfused | flash), activation
/// (gelu | swiglu), norm (layernorm | rmsnorm), position_embedding (learned | rope),
/// tied_embeddings (true), bias (true), dropout (0.1); a mixture of experts: num_experts (0:
/// dense), moe_router_topk (2), moe_ffn_hidden_size (ffn), moe_shared_expert_intermediate_size
/// (0), first_k_dense_replace (0), moe_expert_capacity_factor (dropless), moe_load_imbalance
/// (1). MLP keys (`kind: mlp`): layers, dim.
/// Unknown keys, wrong types and inconsistent numbers (heads not dividing hidden, kv_heads not
/// dividing heads, ...) are InputErrors naming the file, line, column and key.

#include "config/preset.h"
#include "strategies/models/model_spec.h"

#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace clustersim::strategies::models {

/// Model presets: configs/models/<name>.yaml.
const config::PresetKind& model_presets();

/// Loads a preset name or a path to a YAML file.
ModelSpec load_model(const std::string& name_or_path);

/// Loads an experiment's `model:` node: a scalar names a preset or file, a mapping is the model
/// itself; `file` names the file it came from, for errors.
ModelSpec load_model_node(const YAML::Node& node, const std::string& file);

/// Loads a model from YAML text (`file` names it in errors).
ModelSpec parse_model_yaml(const std::string& text, const std::string& file);

} // namespace clustersim::strategies::models
