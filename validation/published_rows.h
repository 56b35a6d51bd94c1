#pragma once
/// \file
/// What the studies of published runs (accuracy_recent, accuracy_new_hardware) share: a dense
/// model's keys from a row's dimensions, and the presets' platforms loaded once.

#include "config/yaml_map.h"
#include "strategies/parallel/framework_spec.h"
#include "strategies/parallel/platform.h"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim::validation::detail {

using Settings = std::vector<std::pair<std::string, std::string>>;

/// Whether `text` holds `part`.
bool contains(std::string_view text, std::string_view part);

/// A positive dimension of a row (1 to 2^24), or the row's error naming the key.
int dim(config::YamlMap& m, std::string_view key);

/// The model keys of a dense row from its dimensions (layers, hidden, heads, kv_heads, ffn,
/// seq_len, vocab), with the architecture its family has: Llama's SwiGLU, RMSNorm, RoPE,
/// untied output, no biases; Nemotron-4's squared ReLU costed as GeLU; else GPT-3's.
void dense_model(config::YamlMap model, const std::string& name, Settings& s);

/// torchtitan's split of `layers` over `stages` when no split points are given, at its
/// benchmark page's commit 9dec370 (generate_split_points), as a layout string
/// (parallel.pipeline_model_parallel_layout).
std::string torchtitan_layout(int layers, int stages);

/// Calls `each` with every row of the list `rows` of the YAML file `file`; InputError naming the
/// file when it has no such list.
void for_each_row(const std::string& file, const std::function<void(YAML::Node)>& each);

/// The preset's platform, loaded once per process.
strategies::parallel::Platform platform(const std::string& preset);

/// Megatron-Bridge's performance scripts keep and reduce the gradients in bf16: where the
/// row's training stack `stack` names it, FrameworkSpec::fp32_grad_reduce is false
/// (published_rows.cpp has the releases read).
void megatron_bridge_grad_reduce(strategies::parallel::FrameworkSpec& fw, std::string_view stack);

} // namespace clustersim::validation::detail
