#pragma once
// The Llama-like model the torch-stack tests (FSDP2, async TP, torch.distributed.pipelining,
// torchao's FP8 all-gather) build their experiments on, as `--set` style settings: Llama 3 8B's
// layer (hidden 4096, 32 query and 8 key/value heads, SwiGLU of 14336, RMSNorm, RoPE, no bias,
// FlashAttention) with 4096-token sequences and a 32000-token vocabulary, no dropout. Each test
// appends its own training and parallel keys.
#include <string>
#include <utility>
#include <vector>

namespace clustersim::test {

inline std::vector<std::pair<std::string, std::string>> llama_model_settings(int layers) {
    return {{"model.kind", "transformer"}, {"model.layers", std::to_string(layers)},
            {"model.hidden", "4096"},      {"model.heads", "32"},
            {"model.kv_heads", "8"},       {"model.ffn", "14336"},
            {"model.seq", "4096"},         {"model.vocab", "32000"},
            {"model.attention", "flash"},  {"model.activation", "swiglu"},
            {"model.norm", "rmsnorm"},     {"model.position_embedding", "rope"},
            {"model.bias", "false"},       {"model.dropout", "0"}};
}

} // namespace clustersim::test
