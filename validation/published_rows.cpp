// What the studies of published runs share (published_rows.h).
#include "validation/published_rows.h"

#include <map>

namespace clustersim::validation::detail {

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

int dim(config::YamlMap& m, std::string_view key) {
    return static_cast<int>(m.integer(key, 1, 1 << 24));
}

/// The model keys of a dense row from its dimensions, with the architecture its family has.
void dense_model(config::YamlMap model, const std::string& name, Settings& s) {
    s.emplace_back("model.kind", "transformer");
    s.emplace_back("model.layers", std::to_string(dim(model, "layers")));
    s.emplace_back("model.hidden", std::to_string(dim(model, "hidden")));
    s.emplace_back("model.heads", std::to_string(dim(model, "heads")));
    s.emplace_back("model.kv_heads", std::to_string(dim(model, "kv_heads")));
    s.emplace_back("model.ffn", std::to_string(dim(model, "ffn")));
    s.emplace_back("model.seq", std::to_string(dim(model, "seq_len")));
    s.emplace_back("model.vocab", std::to_string(dim(model, "vocab")));
    s.emplace_back("model.attention", "flash");
    s.emplace_back("model.dropout", "0");
    if (contains(name, "Llama")) {
        // Llama 2/3 (their papers and released configs): SwiGLU, RMSNorm, RoPE, no biases.
        s.emplace_back("model.activation", "swiglu");
        s.emplace_back("model.norm", "rmsnorm");
        s.emplace_back("model.position_embedding", "rope");
        // Untied but where the row says otherwise (Llama 3.2 1B and 3B tie them).
        const bool tied = model.has("tied_embeddings") && !model.raw("tied_embeddings").IsNull() &&
                          model.boolean("tied_embeddings");
        s.emplace_back("model.tied_embeddings", tied ? "true" : "false");
        s.emplace_back("model.bias", "false");
    } else if (contains(name, "Nemotron")) {
        // Nemotron-4 (the row's notes): squared ReLU, LayerNorm, RoPE, untied, no biases. The
        // squared ReLU is costed as GeLU: the same two matrices, one elementwise kernel.
        s.emplace_back("model.activation", "gelu");
        s.emplace_back("model.norm", "layernorm");
        s.emplace_back("model.position_embedding", "rope");
        s.emplace_back("model.tied_embeddings", "false");
        s.emplace_back("model.bias", "false");
    } else {
        // GPT-3 (Brown et al. 2020): GeLU, LayerNorm, learned positions, tied embeddings,
        // biases.
        s.emplace_back("model.activation", "gelu");
        s.emplace_back("model.norm", "layernorm");
        s.emplace_back("model.position_embedding", "learned");
        s.emplace_back("model.tied_embeddings", "true");
        s.emplace_back("model.bias", "true");
    }
}

// torchtitan's split of `layers` over `stages` when no split points are given, at the
// benchmark page's commit 9dec370 (torchtitan/parallelisms/pipelining_utils.py,
// generate_split_points): layers / stages each, the first stage that many, the middle stages
// one more while the remainder lasts, the last stage what is left. As a layout string (the
// embedding on the first stage, the norm and output layer on the last).
std::string torchtitan_layout(int layers, int stages) {
    const int base = layers / stages;
    int extra = layers % stages;
    std::string out;
    int placed = 0;
    for (int i = 0; i < stages; ++i) {
        int n = base;
        if (i > 0 && i + 1 < stages && extra > 0) {
            ++n;
            --extra;
        }
        if (i + 1 == stages)
            n = layers - placed;
        placed += n;
        out += (i == 0 ? "E" : "|") + std::string(static_cast<std::size_t>(n), 't');
    }
    return out + "L";
}

void for_each_row(const std::string& file, const std::function<void(YAML::Node)>& each) {
    const YAML::Node doc = config::load_yaml_file(file);
    config::YamlMap root(doc, file);
    const YAML::Node rows = root.raw("rows");
    if (!rows.IsSequence())
        root.fail("rows", "expected a list of runs");
    for (const auto& row : rows)
        each(row);
}

strategies::parallel::Platform platform(const std::string& preset) {
    static std::map<std::string, strategies::parallel::Platform> cache;
    auto it = cache.find(preset);
    if (it == cache.end())
        it = cache.emplace(preset, strategies::parallel::load_platform(preset)).first;
    return it->second;
}

// Every model's performance config sets mixed_precision.grad_reduce_in_fp32 and
// ddp.grad_reduce_in_fp32 False: scripts/performance/configs/*/*_llm_pretrain.yaml at v0.1.0rc3
// and v0.1.0rc4; *_llm_pretrain.py and llama3_llm_finetune.py at r0.2.0, v0.3.0, v0.4.2 and
// v0.5.0; v0.6.0's _benchmark_common and _perf_precision for every benchmark recipe
// (src/megatron/bridge/perf_recipes/_common.py; of the new-hardware table's models none
// overrides it there: Kimi K2's True is in recipes/kimi/h100, not a row here).
void megatron_bridge_grad_reduce(strategies::parallel::FrameworkSpec& fw, std::string_view stack) {
    if (contains(stack, "Megatron-Bridge"))
        fw.fp32_grad_reduce = false;
}

} // namespace clustersim::validation::detail
