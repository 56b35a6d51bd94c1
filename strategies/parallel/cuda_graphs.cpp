#include "strategies/parallel/cuda_graphs.h"

#include <array>
#include <utility>

namespace clustersim::strategies::parallel {

namespace {

constexpr std::array kImpls{std::pair{"none", CudaGraphImpl::none},
                            std::pair{"local", CudaGraphImpl::local},
                            std::pair{"transformer_engine", CudaGraphImpl::transformer_engine},
                            std::pair{"full_iteration", CudaGraphImpl::full_iteration}};

constexpr std::array kScopes{std::pair{"attn", GraphScope::attn}, std::pair{"mlp", GraphScope::mlp},
                             std::pair{"moe", GraphScope::moe},
                             std::pair{"moe_router", GraphScope::moe_router},
                             std::pair{"moe_preprocess", GraphScope::moe_preprocess}};

bool starts(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

} // namespace

std::optional<CudaGraphImpl> parse_cuda_graph_impl(std::string_view s) {
    for (const auto& [name, impl] : kImpls)
        if (s == name)
            return impl;
    return std::nullopt;
}

std::optional<GraphScope> parse_graph_scope(std::string_view s) {
    for (const auto& [name, scope] : kScopes)
        if (s == name)
            return scope;
    return std::nullopt;
}

std::string_view to_string(CudaGraphImpl i) {
    for (const auto& [name, impl] : kImpls)
        if (impl == i)
            return name;
    return "none";
}

std::string cuda_graph_scope_error(CudaGraphImpl impl, std::uint8_t scope) {
    if (impl != CudaGraphImpl::local && impl != CudaGraphImpl::transformer_engine)
        return "cuda_graph_scope names the parts of each layer that cuda_graph_impl local or "
               "transformer_engine captures; set one of them (full_iteration captures the whole "
               "step), or leave cuda_graph_scope out";
    if ((scope & graph_bit(GraphScope::moe_preprocess)) != 0 &&
        (scope & graph_bit(GraphScope::moe_router)) == 0)
        return "moe_preprocess is captured with the router: add moe_router (Megatron-Core "
               "requires it)";
    if ((scope & graph_bit(GraphScope::moe)) != 0 &&
        (scope & graph_bit(GraphScope::moe_router)) != 0)
        return "moe captures the whole MoE block, moe_router a part of it: give one of them "
               "(Megatron-Core refuses both)";
    return "";
}

std::uint8_t graph_scopes_of(std::string_view op, bool moe_layer) {
    const auto moe = graph_bit(GraphScope::moe);
    const auto router = graph_bit(GraphScope::moe_router);
    // _get_submodules_under_cudagraphs: attn holds input_layernorm and self_attention (with
    // its residual add, _forward_attention); mlp and moe the pre-MLP norm and the MLP block;
    // moe_router the pre-MLP norm, the router and the shared experts; moe_preprocess the
    // dispatcher's preprocessing (the permutation, _forward_mlp_router's outputs).
    if (starts(op, "input_layernorm") || starts(op, "attention."))
        return graph_bit(GraphScope::attn);
    if (starts(op, "post_attention_layernorm"))
        return moe_layer ? static_cast<std::uint8_t>(moe | router) : graph_bit(GraphScope::mlp);
    if (starts(op, "mlp."))
        return moe_layer ? moe : graph_bit(GraphScope::mlp);
    if (starts(op, "moe.router") || starts(op, "moe.shared."))
        return static_cast<std::uint8_t>(moe | router);
    if (starts(op, "moe.permute"))
        return static_cast<std::uint8_t>(moe | graph_bit(GraphScope::moe_preprocess));
    if (starts(op, "moe."))
        return moe;
    return 0;
}

} // namespace clustersim::strategies::parallel
