// LoRA fine-tuning of a layer's work (layer_work.h, Lora): the frozen base weights lose their
// weight-gradient GEMMs, and each targeted linear gains its adapter's two thin GEMMs forward
// and their data and weight gradients backward.
//
// Hu et al. 2021 (arXiv 2106.09685), section 4.1: h = W0 x + B A x with W0 frozen ("W0 is frozen
// and does not receive gradient updates, while A and B contain trainable parameters"); so the
// backward still propagates the activation gradient through every frozen W0 (its dgrad GEMM)
// but computes no gradient of W0 (no wgrad GEMM). Megatron-Bridge (src/megatron/bridge/peft/
// lora.py, LoRALinear.forward: the base linear's output plus the adapter's, computed from the
// same input; peft/utils.py, ParallelLinearAdapter: linear_in then linear_out, each a
// Megatron-Core ColumnParallelLinear or RowParallelLinear, not Transformer Engine's, so the
// adapters' GEMMs run in the activations' dtype, bf16, under FP8 too: fp8.cpp's runs_in_fp8).
#include "base/error.h"
#include "strategies/models/layer_work_context.h"

#include <array>

namespace clustersim::strategies::models {

namespace {

constexpr std::array<std::string_view, kLoraTargets> kLoraTargetNames{"linear_qkv", "linear_proj",
                                                                      "linear_fc1", "linear_fc2"};

/// A target's base GEMM in the forward (layer_work_attention.cpp, layer_work_mlp.cpp), whether
/// it is column-parallel (its input whole, its output split) and its adapter's kernel names.
struct TargetOps {
    std::string_view base;
    bool column;
    std::string_view in, out, in_dgrad, out_dgrad, in_wgrad, out_wgrad;
};

constexpr std::array<TargetOps, kLoraTargets> kTargetOps{{
    {"attention.qkv", true, "lora.attention.qkv.linear_in", "lora.attention.qkv.linear_out",
     "lora.attention.qkv.linear_in.dgrad", "lora.attention.qkv.linear_out.dgrad",
     "lora.attention.qkv.linear_in.wgrad", "lora.attention.qkv.linear_out.wgrad"},
    {"attention.proj", false, "lora.attention.proj.linear_in", "lora.attention.proj.linear_out",
     "lora.attention.proj.linear_in.dgrad", "lora.attention.proj.linear_out.dgrad",
     "lora.attention.proj.linear_in.wgrad", "lora.attention.proj.linear_out.wgrad"},
    {"mlp.fc1", true, "lora.mlp.fc1.linear_in", "lora.mlp.fc1.linear_out",
     "lora.mlp.fc1.linear_in.dgrad", "lora.mlp.fc1.linear_out.dgrad",
     "lora.mlp.fc1.linear_in.wgrad", "lora.mlp.fc1.linear_out.wgrad"},
    {"mlp.fc2", false, "lora.mlp.fc2.linear_in", "lora.mlp.fc2.linear_out",
     "lora.mlp.fc2.linear_in.dgrad", "lora.mlp.fc2.linear_out.dgrad",
     "lora.mlp.fc2.linear_in.wgrad", "lora.mlp.fc2.linear_out.wgrad"},
}};

/// An adapter's two GEMMs on one rank for a base GEMM Y = X W of M x N = (M x K)(K x N) on that
/// rank. Column-parallel base (K = in, N = out / t): linear_in M x r/t x K (its output
/// gathered), linear_out M x N x r. Row-parallel base (K = in / t, N = out): linear_in
/// M x r x K (its output all-reduced), linear_out M x N/t x r (its output gathered).
struct AdapterShape {
    std::int64_t m, in_n, in_k, out_n, out_k;
};

AdapterShape adapter_shape(const Op& base, bool column, std::int64_t r, std::int64_t t) {
    if (column)
        return {base.m, r / t, base.k, base.n, r};
    return {base.m, r, base.k, base.n / t, r};
}

/// What each op of a pass becomes: itself, itself and ops after it (as part of it: a
/// collective issued after it is issued after them), or nothing.
struct Edit {
    bool keep = true;
    FixedList<Op, 3> extra;
};

/// Rebuilds `pass` of `w` with `edits` (one per op), moving its collectives' anchors: one issued
/// after op i is issued after the last op i became (or the op before, if i went), one needed by
/// op i is needed by the first (or the op after). A sequence-parallel re-gather needed only by
/// a weight gradient that went is dropped with it.
void rebuild(LayerWork& w, Pass p, const std::array<Edit, kMaxOpsPerPass>& edits) {
    PassWork& pass = p == Pass::forward    ? w.forward
                     : p == Pass::backward ? w.backward
                                           : w.recompute;
    const int n = pass.ops.count();
    std::array<int, kMaxOpsPerPass + 1> first{};
    std::array<int, kMaxOpsPerPass + 1> last{};
    PassWork out;
    for (int i = 0; i < n; ++i) {
        const auto& e = edits[static_cast<std::size_t>(i)];
        first[static_cast<std::size_t>(i)] = out.ops.count();
        if (e.keep)
            out.add(pass.ops[static_cast<std::size_t>(i)]);
        for (const Op& op : e.extra)
            out.add(op);
        last[static_cast<std::size_t>(i)] = out.ops.count() - 1;
    }
    first[static_cast<std::size_t>(n)] = out.ops.count();
    FixedList<TpCollective, kMaxLayerCollectives> kept;
    for (TpCollective tc : w.collectives) {
        if (tc.pass == p) {
            const auto need = static_cast<std::size_t>(tc.needed_by);
            if (tc.regather && tc.needed_by < n && first[need] > last[need])
                continue;
            if (tc.after >= 0)
                tc.after = last[static_cast<std::size_t>(tc.after)];
            tc.needed_by = first[need];
        }
        kept.push_back(tc);
    }
    w.collectives = kept;
    pass = out;
}

/// The index of op `name` in `pass`, or -1.
int find(const PassWork& pass, std::string_view name) {
    for (int i = 0; i < pass.ops.count(); ++i)
        if (pass.ops[static_cast<std::size_t>(i)].name == name)
            return i;
    return -1;
}

/// Adds the adapters' forward GEMMs after their base GEMMs in a forward or recompute pass.
void add_adapters_forward(const layer_detail::Ctx& c, LayerWork& w, Pass p) {
    const PassWork& pass = w.pass(p);
    std::array<Edit, kMaxOpsPerPass> edits{};
    bool any = false;
    for (int k = 0; k < kLoraTargets; ++k) {
        const TargetOps& t = kTargetOps[static_cast<std::size_t>(k)];
        const int i = find(pass, t.base);
        if ((c.cfg.lora.targets & lora_bit(static_cast<LoraTarget>(k))) == 0 || i < 0)
            continue;
        const AdapterShape a =
            adapter_shape(pass.ops[static_cast<std::size_t>(i)], t.column, c.cfg.lora.dim, c.t);
        auto& extra = edits[static_cast<std::size_t>(i)].extra;
        extra.push_back(c.gemm(t.in, a.m, a.in_n, a.in_k));
        extra.push_back(c.gemm(t.out, a.m, a.out_n, a.out_k));
        any = true;
    }
    if (any)
        rebuild(w, p, edits);
}

/// The backward: each frozen base GEMM keeps its data gradient and loses its weight gradient;
/// a target's adapter runs linear_out's and linear_in's data gradients after the base's (they
/// add to the same input gradient) and their weight gradients where the base's was.
void adapt_backward(const layer_detail::Ctx& c, LayerWork& w) {
    const PassWork& forward = w.forward;
    const PassWork& pass = w.backward;
    std::array<Edit, kMaxOpsPerPass> edits{};
    for (int i = 0; i < pass.ops.count(); ++i)
        if (pass.ops[static_cast<std::size_t>(i)].name.ends_with("wgrad"))
            edits[static_cast<std::size_t>(i)].keep = false;
    for (int k = 0; k < kLoraTargets; ++k) {
        const TargetOps& t = kTargetOps[static_cast<std::size_t>(k)];
        const int f = find(forward, t.base);
        if ((c.cfg.lora.targets & lora_bit(static_cast<LoraTarget>(k))) == 0 || f < 0)
            continue;
        const AdapterShape a =
            adapter_shape(forward.ops[static_cast<std::size_t>(f)], t.column, c.cfg.lora.dim, c.t);
        std::string base_dgrad(t.base);
        const int d = find(pass, base_dgrad += ".dgrad");
        const int g = find(pass, std::string(t.base) + ".wgrad");
        if (d < 0 || g < 0)
            throw std::logic_error("LoRA: a target's backward GEMMs were not found");
        // Y = X W as (M x K)(K x N): dgrad dX = dY W^T is M x K x N, wgrad dW = X^T dY K x N x M.
        auto& dg = edits[static_cast<std::size_t>(d)].extra;
        dg.push_back(c.gemm(t.out_dgrad, a.m, a.out_k, a.out_n));
        dg.push_back(c.gemm(t.in_dgrad, a.m, a.in_k, a.in_n));
        auto& wg = edits[static_cast<std::size_t>(g)].extra;
        wg.push_back(c.gemm(t.out_wgrad, a.out_k, a.out_n, a.m));
        wg.push_back(c.gemm(t.in_wgrad, a.in_k, a.in_n, a.m));
        // The adapters' parameters on this rank: r (in + out) / t, and linear_out's input, the
        // M x r low-rank activation, kept for its weight gradient (linear_in's input is the
        // base GEMM's, already kept).
        w.parameters += a.in_n * a.in_k + a.out_n * a.out_k;
        if (c.cfg.recompute != Recompute::full)
            w.activation_bytes += a.m * c.cfg.lora.dim * c.elem;
    }
    rebuild(w, Pass::backward, edits);
}

} // namespace

std::string_view to_string(LoraTarget t) {
    return kLoraTargetNames[static_cast<std::size_t>(t)];
}

std::optional<LoraTarget> parse_lora_target(std::string_view s) {
    for (std::size_t i = 0; i < kLoraTargetNames.size(); ++i)
        if (kLoraTargetNames[i] == s)
            return static_cast<LoraTarget>(i);
    return std::nullopt;
}

namespace layer_detail {

void apply_lora(const Ctx& c, LayerWork& w) {
    if (!c.cfg.lora.on())
        return;
    for (int k = 0; k < kLoraTargets; ++k)
        if ((c.cfg.lora.targets & lora_bit(static_cast<LoraTarget>(k))) != 0 &&
            find(w.forward, kTargetOps[static_cast<std::size_t>(k)].base) < 0)
            throw InputError("lora_target_modules: " +
                             std::string(kLoraTargetNames[static_cast<std::size_t>(k)]) +
                             " has no linear layer of that name in this model's layers");
    w.frozen_parameters = w.parameters;
    add_adapters_forward(c, w, Pass::forward);
    if (c.cfg.recompute == Recompute::full || c.cfg.selective_op)
        add_adapters_forward(c, w, Pass::recompute);
    adapt_backward(c, w);
}

void freeze_lora(const LayerConfig& cfg, LayerWork& w, bool whole_backward) {
    if (!cfg.lora.on())
        return;
    w.frozen_parameters = w.parameters;
    std::array<Edit, kMaxOpsPerPass> edits{};
    for (int i = 0; i < w.backward.ops.count(); ++i)
        edits[static_cast<std::size_t>(i)].keep =
            !whole_backward && !w.backward.ops[static_cast<std::size_t>(i)].name.ends_with("wgrad");
    if (whole_backward) {
        FixedList<TpCollective, kMaxLayerCollectives> kept;
        for (const TpCollective& tc : w.collectives)
            if (tc.pass != Pass::backward)
                kept.push_back(tc);
        w.collectives = kept;
        w.backward = PassWork{};
        return;
    }
    rebuild(w, Pass::backward, edits);
}

} // namespace layer_detail

} // namespace clustersim::strategies::models
