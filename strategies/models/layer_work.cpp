#include "strategies/models/layer_work.h"

#include "strategies/models/layer_work_context.h"

#include <array>
#include <string>
#include <tuple>

namespace clustersim::strategies::models {

using hardware::ComputeModel;
using hardware::Dtype;

std::string_view to_string(Pass p) {
    switch (p) {
    case Pass::forward:
        return "forward";
    case Pass::backward:
        return "backward";
    case Pass::recompute:
        return "recompute";
    }
    return "?";
}

namespace {
constexpr std::array<std::string_view, kRecomputeModules> kRecomputeModuleNames{
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts", "mlpwi"};
} // namespace

std::string_view to_string(RecomputeModule m) {
    return kRecomputeModuleNames[static_cast<std::size_t>(m)];
}

std::optional<RecomputeModule> parse_recompute_module(std::string_view s) {
    for (std::size_t i = 0; i < kRecomputeModuleNames.size(); ++i) {
        if (kRecomputeModuleNames[i] == s)
            return static_cast<RecomputeModule>(i);
    }
    return std::nullopt;
}

std::string_view to_string(OpKind k) {
    switch (k) {
    case OpKind::gemm:
        return "gemm";
    case OpKind::batched_gemm:
        return "batched_gemm";
    case OpKind::fused_attention:
        return "fused_attention";
    case OpKind::memory_bound:
        return "memory_bound";
    }
    return "?";
}

std::string_view to_string(TpOp op) {
    switch (op) {
    case TpOp::all_reduce:
        return "all_reduce";
    case TpOp::all_gather:
        return "all_gather";
    case TpOp::reduce_scatter:
        return "reduce_scatter";
    case TpOp::all_to_all:
        return "all_to_all";
    }
    return "?";
}

std::string_view to_string(Optimizer o) {
    return o == Optimizer::sgd ? "sgd" : o == Optimizer::adam8bit ? "adamw8bit" : "adam";
}

std::optional<Optimizer> parse_optimizer(std::string_view s) {
    if (s == "adam" || s == "adamw")
        return Optimizer::adam;
    if (s == "sgd")
        return Optimizer::sgd;
    if (s == "adamw8bit" || s == "adam8bit")
        return Optimizer::adam8bit;
    return std::nullopt;
}

std::int64_t LayerWork::collective_bytes(Pass p) const {
    std::int64_t total = 0;
    for (const auto& c : collectives) {
        if (c.pass == p)
            total += c.bytes;
    }
    return total;
}

int LayerWork::collective_count(Pass p, TpOp op) const {
    int n = 0;
    for (const auto& c : collectives) {
        if (c.pass == p && c.op == op)
            ++n;
    }
    return n;
}

namespace {

using namespace layer_detail;

LayerWork transformer_layer(const Ctx& c) {
    const ModelSpec& m = c.m;
    LayerWork w;
    const LayerShape s = layer_shape(c);
    const std::int64_t e = s.e;
    const std::int64_t sharded = s.sharded;
    const bool drop = s.drop;
    // Residual branch end: bias + dropout + residual add fused (Megatron), or the add alone.
    const std::int64_t branch_end_bytes = drop ? sharded * (3 * e + 1) : 3 * sharded * e;
    const std::string_view attn_end =
        drop ? "attention.bias_dropout_add" : "attention.residual_add";
    const std::string_view mlp_end = drop ? "mlp.bias_dropout_add" : "mlp.residual_add";

    // ---- forward
    PassWork& F = w.forward;
    const int ln1 = F.add(s.norm_eager ? eager_rmsnorm(c, "input_layernorm", sharded)
                                       : c.memory("input_layernorm", 2 * sharded * e));
    ModuleOps at{};
    if (m.is_mla()) {
        mla_forward(c, w, ln1);
        at.core_begin = at.core_end = Ctx::next(F);
    } else {
        const CoreAttention core = attention_forward(c, s, w, ln1);
        at.core_begin = core.begin;
        at.core_end = core.end;
    }
    F.add(c.memory(attn_end, branch_end_bytes));
    const int ln2 = F.add(s.norm_eager ? eager_rmsnorm(c, "post_attention_layernorm", sharded)
                                       : c.memory("post_attention_layernorm", 2 * sharded * e));
    at.mlp_begin = Ctx::next(F);
    if (c.a2a)
        moe_a2a_forward(c, w);
    else if (c.moe)
        moe_forward(c, w, ln2);
    else
        dense_mlp_forward(c, s, w, ln2);
    at.mlp_end = F.add(c.memory(mlp_end, branch_end_bytes));

    // ---- backward (reverse order; data gradient, then weight gradient, of every GEMM)
    PassWork& B = w.backward;
    if (drop)
        B.add(c.memory("mlp.dropout.bwd", sharded * (2 * e + 1)));
    if (c.a2a)
        moe_a2a_backward(c, w);
    else if (c.moe)
        moe_backward(c, w);
    else
        dense_mlp_backward(c, s, w);
    // The norm's backward also accumulates the residual stream's gradient (4 passes).
    // (Eager: w1 and w3 take the norm's output, whose two gradients autograd sums; the MLP
    // with experts is not torchtitan's dense block.)
    B.add(s.norm_eager ? eager_rmsnorm_backward(c, "post_attention_layernorm.bwd", sharded,
                                                s.gathered, c.moe || !s.swiglu ? 1 : 2)
                       : c.memory("post_attention_layernorm.bwd", 4 * sharded * e));
    if (drop)
        B.add(c.memory("attention.dropout_add.bwd", sharded * (2 * e + 1)));
    if (m.is_mla())
        mla_backward(c, w);
    else
        attention_backward(c, s, w);
    // (Eager: wq, wk and wv take the norm's output: three gradients summed.)
    B.add(s.norm_eager ? eager_rmsnorm_backward(c, "input_layernorm.bwd", sharded, s.gathered,
                                                m.is_mla() ? 1 : 3)
                       : c.memory("input_layernorm.bwd", 4 * sharded * e));

    // ---- recompute and activations
    recompute_layer(c, s, w, at);
    w.parameters =
        c.moe ? moe_layer_parameters_per_rank(m, c.cfg.tp) : layer_parameters_per_rank(m, c.cfg.tp);
    if (c.a2a)
        std::tie(w.parameters, w.expert_parameters) = moe_a2a_parameters(c);
    return w;
}

} // namespace

LayerWork layer_work(const ModelSpec& m, const LayerConfig& cfg, const ComputeModel& cm) {
    check_config(m, cfg);
    const Ctx c(m, cfg, cm);
    if (!m.is_transformer())
        return mlp_layer(c);
    LayerWork w = transformer_layer(c);
    apply_lora(c, w);
    return w;
}

Op optimizer_step(std::int64_t parameters, Dtype dtype, Optimizer optimizer, int zero_stage,
                  const ComputeModel& cm, bool master_weights) {
    const std::int64_t elt = hardware::bytes_per_element(dtype);
    const bool mixed = elt < 4;
    // Pure 16-bit training (torchtune's bf16 recipes, models::model_state_bytes): no master
    // copy; the 16-bit gradient read, the weights and Adam's moments read and written in the
    // parameters' dtype (torch.optim.AdamW's state follows the parameter's dtype).
    const bool pure = mixed && !master_weights;
    // Gradients: fp32 main gradients (Megatron) unless ZeRO keeps 16-bit ones (Rajbhandari
    // et al.); fp32 master weights read and written in mixed precision, then the 16-bit copy.
    const std::int64_t grad = pure || (mixed && zero_stage > 0) ? elt : 4;
    const std::int64_t weights = pure ? 2 * elt : mixed ? 8 + elt : 8;
    // m, v read and written: fp32 (16-bit when pure), or one byte each with their block scales
    // (8-bit Adam).
    const std::int64_t state = optimizer == Optimizer::adam       ? (pure ? 4 * elt : 16)
                               : optimizer == Optimizer::adam8bit ? 4
                                                                  : 0;
    Op op;
    op.name = optimizer == Optimizer::sgd ? "optimizer.sgd" : "optimizer.adam";
    op.kind = OpKind::memory_bound;
    op.bytes = parameters * (grad + weights + state);
    op.time = cm.memory_bound(op.bytes);
    return op;
}

} // namespace clustersim::strategies::models
