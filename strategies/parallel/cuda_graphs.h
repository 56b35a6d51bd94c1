#pragma once
/// \file
/// CUDA graphs as Megatron-Core captures them (TransformerConfig.cuda_graph_impl and
/// cuda_graph_scope; NVIDIA/Megatron-LM@core_v0.17.1:megatron/core/transformer/
/// transformer_config.py, enums.py CudaGraphScope, transformer_layer.py
/// _get_submodules_under_cudagraphs). A captured region's kernels are replayed by one launch:
/// the host issues the graph, not each kernel, so a region of many short kernels no longer
/// waits for the host (the framework's host_overhead per kernel, step_plan.h).
///
/// - "transformer_engine" (Transformer Engine's make_graphed_callables) and "local" capture
///   parts of each transformer layer, forward and backward, by scope: `attn` the input norm and
///   the attention block; `mlp` a dense layer's norm and MLP; `moe` a layer with experts' norm
///   and whole MoE block; `moe_router` its norm, router and shared experts (MoE layers);
///   `moe_preprocess` with it the token dispatcher's preprocessing (the permutation before the
///   dispatch). No scope: the whole layer. The all-to-alls and the experts stay eager
///   under moe_router and moe_preprocess.
/// - "full_iteration" (megatron/core/full_cuda_graph.py, FullCudaGraphWrapper): the whole
///   forward-backward of the step, every micro-batch, one graph (the optimizer step outside).
///   Spelled cuda_graph_impl "full_iteration" from Megatron-LM@d98e8a64dd
///   (transformer_config.py), and cuda_graph_impl "local" with cuda_graph_scope
///   "full_iteration" in core_v0.17.1 (enums.py CudaGraphScope); the experiment takes both:
///   no kernel waits for the host, and the micro-batches' batches are read into static buffers
///   before the replay (StaticBufferLoader), so no micro-batch starts with the host alone.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clustersim::strategies::parallel {

enum class CudaGraphImpl : std::uint8_t { none, local, transformer_engine, full_iteration };

/// Megatron-Core's CudaGraphScope values a layer's capture takes, as bits.
enum class GraphScope : std::uint8_t {
    attn = 1,
    mlp = 2,
    moe = 4,
    moe_router = 8,
    moe_preprocess = 16,
};

constexpr std::uint8_t graph_bit(GraphScope s) {
    return static_cast<std::uint8_t>(s);
}
/// Every layer scope: what an empty cuda_graph_scope captures.
constexpr std::uint8_t kWholeLayerGraph =
    graph_bit(GraphScope::attn) | graph_bit(GraphScope::mlp) | graph_bit(GraphScope::moe);

std::optional<CudaGraphImpl> parse_cuda_graph_impl(std::string_view s);
std::optional<GraphScope> parse_graph_scope(std::string_view s);
std::string_view to_string(CudaGraphImpl i);

/// Why Megatron-Core refuses `scope` (GraphScope bits, as given) under `impl`
/// (TransformerConfig.__post_init__): a scope without a per-layer implementation, or
/// moe_preprocess without moe_router. Empty: nothing.
std::string cuda_graph_scope_error(CudaGraphImpl impl, std::uint8_t scope);

/// The scopes that capture the kernel `op` (a models::Op name: "attention.qkv",
/// "moe.router.topk", ...) of a layer with experts (`moe_layer`) or a dense one, as bits; 0: no
/// layer scope captures it (the embedding, the head, the all-to-alls).
std::uint8_t graph_scopes_of(std::string_view op, bool moe_layer);

} // namespace clustersim::strategies::parallel
