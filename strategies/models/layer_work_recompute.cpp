// Recompute and activations of a transformer layer (layer_work_context.h): the activation
// bytes item by item, the recompute pass for full recompute, Megatron-Core's selective
// recompute modules and torchtitan's op-level selective checkpointing.
#include "strategies/models/layer_work_context.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace clustersim::strategies::models::layer_detail {

namespace {

/// Activation bytes of a transformer layer, item by item as Korthikanti et al. 2022 count
/// them (section 4.1), generalised to GQA, SwiGLU, FlashAttention, no dropout, any dtype.
struct TransformerActivations {
    std::int64_t layer_input = 0;    ///< input of the first norm: what full recompute keeps
    std::int64_t attention_core = 0; ///< what selective recompute drops (unfused only)
    std::int64_t all = 0;            ///< everything, without recompute
    // What each of Megatron-Core's recompute_modules drops (LayerConfig::recompute_modules);
    // a module kept by checkpointing keeps its input, which the layer keeps anyway.
    /// layernorm: the outputs of the norms that run as their own modules (see
    /// selective_recompute): the input norm's with latent attention, the pre-MLP norm's in a
    /// layer with experts.
    std::int64_t input_norm_output = 0;
    std::int64_t pre_mlp_norm_output = 0;
    std::int64_t mla_up = 0;  ///< mla_up_proj: the normalised latents and every head's Q, K, V
    std::int64_t mlp = 0;     ///< mlp (a dense layer's) or moe (a layer with experts): inside
    std::int64_t moe_act = 0; ///< moe_act: the routed experts' activation outputs (and clamp_input)
    std::int64_t shared = 0;  ///< shared_experts: inside the shared experts
};

/// What eager PyTorch's chains (Fusions false; layer_work_context.cpp, eager_rmsnorm and its
/// neighbours: torchtitan's and torchtune's Llama modules, torchtune/modules at
/// meta-pytorch/torchtune@1814feb17) keep beyond the fused kernels' saved set. Autograd saves
/// an input only where the gradient of another input that requires one needs it
/// (tools/autograd/gen_variable_type.py's should_compute_output guards).
/// - RMSNorm, `(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * weight`:
///   pow and the product keep the fp32 copy, the product with the weight its 16-bit input,
///   where the fused kernel keeps the 16-bit input alone: 4 bytes more per element, each of
///   the two norms (dense layers without latent attention).
/// - RoPE on an fp32 copy times the rotation table, a buffer: nothing kept (the table needs
///   no gradient); but grouped-query attention's keys and values are expanded to every
///   query head and copied (`k.unsqueeze(2).expand(...).flatten(1, 2)`, torchtune's
///   attention.py; torchtitan's repeat_kv) before scaled_dot_product_attention, which keeps
///   the copies: e x (query - key) elements each. Compiled, the copies stay
///   (Fusions::gqa_copies).
/// - SwiGLU, `silu(w1(x)) * w3(x)`: the product keeps silu's output too.
std::int64_t eager_saved_bytes(const Ctx& c) {
    const ModelSpec& m = c.m;
    if (m.is_mla() || c.moe || c.a2a)
        return 0;
    const LayerShape s = layer_shape(c);
    std::int64_t bytes = 0;
    if (s.norm_eager)
        bytes += 2 * 4 * s.sharded;
    if (s.rope_eager || s.gqa_copies)
        bytes += 2 * s.e * (s.q_elems - s.kv_elems);
    if (s.swiglu_eager)
        bytes += s.e * s.T * s.f;
    return bytes;
}

/// What the experts' eager clamp keeps beside the activation's input (layer_work_moe.cpp,
/// expert_clamp): torch.clamp saves its input for the gradient's mask, and each half it clamps
/// is a view of fc1's output, so fc1's whole output stays (the activation keeps the clamped
/// concatenation, a tensor of its own, counted as the activation's input). Under moe_act
/// recompute the checkpoint around bias_act_func keeps fc1's output alone, its input: one of
/// the two tensors of that size, so moe_act, which it drops, counts the other.
/// `n` expert token copies of fc1's output split over `split` ranks.
std::int64_t clamp_input(const Ctx& c, std::int64_t n, int split) {
    return clamp_apart(c) ? c.elem * n * c.m.expert_fc1_out() / split : 0;
}

/// A dense layer's activations under torch.cuda.amp's autocast (LayerConfig::autocast), as
/// Hugging Face's BERT modules run it (src/transformers/models/bert/modeling_bert.py, a 4.x
/// version, at
/// huggingface/transformers@004ad5f50b627b59bf0d581c31bc0052b6cfd40b: separate query, key and value
/// linears, eager attention, post-norm residual blocks) under autocast's op lists
/// (aten/src/ATen/autocast_mode.cpp, read at
/// pytorch/pytorch@008ec6b1840c94ff6d0f685bc10fbf585167c673, the lists autocast has had since
/// PyTorch 1.6: linear, matmul and bmm cast to fp16, layer_norm run in fp32, softmax in fp32
/// by its dtype argument, everything else in its inputs' type). The residual stream and the
/// norms' inputs and outputs stay fp32: a 16-bit block output added to the fp32 residual
/// promotes to fp32. Autocast caches only the weights' casts (leaves that require grad), so
/// every linear casts its input itself and saves its own copy: three of the attention's input
/// (query, key, value), one of the MLP's. The attention scores come out of the 16-bit product;
/// adding the fp32 mask promotes them, softmax keeps its fp32 output, dropout its mask, and
/// the product with the values its 16-bit copy of the dropped probabilities. `e` is the
/// 16-bit element's bytes.
TransformerActivations autocast_activations(const Ctx& c) {
    const ModelSpec& m = c.m;
    constexpr std::int64_t fp32 = 4;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t sharded = T * c.h / c.sp_div;
    const std::int64_t bh = c.b * m.heads / c.t;
    const bool drop = m.dropout > 0;
    TransformerActivations a;
    a.layer_input = fp32 * sharded;
    const std::int64_t qkv_input = 3 * e * sharded;
    const std::int64_t qkv = e * T * m.qkv_out() / c.t;
    if (m.attention == AttentionKind::unfused)
        a.attention_core = bh * c.s * c.s * (fp32 + e + (drop ? 1 : 0));
    const std::int64_t lse = m.attention == AttentionKind::flash ? 4 * bh * c.s / c.cp : 0;
    const std::int64_t proj_input = e * T * m.q_dim() / c.t;
    const std::int64_t masks = drop ? 2 * sharded : 0;
    const std::int64_t post_norm_input = fp32 * sharded;
    const std::int64_t fc1_input = e * sharded;
    a.pre_mlp_norm_output = fc1_input;
    a.mlp = e * T * m.fc1_out() / c.t + e * T * m.ffn / c.t;
    a.all = a.layer_input + qkv_input + qkv + a.attention_core + lse + proj_input + masks +
            post_norm_input + fc1_input + a.mlp;
    return a;
}

TransformerActivations transformer_activations(const Ctx& c) {
    const ModelSpec& m = c.m;
    if (c.cfg.autocast && !m.is_mla() && !c.moe && !c.a2a)
        return autocast_activations(c);
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t sharded = T * c.h / c.sp_div; // elements of an [s/t, b, h] tensor
    const std::int64_t bh = c.b * m.heads / c.t;
    const bool drop = m.dropout > 0;
    TransformerActivations a;
    a.layer_input = e * sharded;
    if (m.is_mla()) {
        // The down projections' input (sharded), the latents kept for the norms and the up
        // projections (gathered; q and kv each twice), the heads' queries, keys and values
        // for FlashAttention, its log-sum-exp, the output projection's input.
        const std::int64_t ah = m.heads / c.t;
        const std::int64_t latents = std::int64_t{m.q_lora_rank} + m.kv_lora_rank;
        const std::int64_t heads_qkv = e * T * ah * (2 * m.mla_qk_dim() + m.v_head_dim);
        a.all = a.layer_input + e * sharded + 2 * e * T * latents + heads_qkv +
                4 * bh * c.s / c.cp + e * T * ah * m.v_head_dim;
        // Recomputing the up projections (output-discarding checkpoint) keeps its inputs, the
        // latents of this rank's sequence shard, and drops the gathered ones, their norms'
        // outputs and every head's queries, keys and values until the attention's backward.
        a.mla_up = 2 * e * T * latents - e * (T / c.sp_div) * latents + heads_qkv;
        a.input_norm_output = e * sharded;
    }
    // The inputs of the column-parallel GEMMs (qkv, fc1): stored sharded with SP and
    // re-gathered for the weight gradients (Megatron); under DTensor tensor parallelism
    // stored gathered: torchtitan's plan (parallelize_llama, apply_tp) redistributes the
    // sequence-sharded input to Replicate before attention and feed_forward
    // (PrepareModuleInput, torch/distributed/tensor/parallel/style.py: an all-gather), and
    // the ColwiseParallel linears' autograd saves that gathered input for their weight
    // gradients (wq, wk, wv share one; w1 and w3 another).
    const std::int64_t col_input = c.cfg.dtensor_tp ? T * c.h : sharded;
    const std::int64_t qkv_input = c.saved(col_input);
    // (With per-head query and key norms their inputs, the projection's q and k, are kept too.)
    const std::int64_t qkv =
        e * T * m.qkv_out() / c.t +
        (m.qk_layernorm ? e * T * (std::int64_t{m.heads} + m.kv_heads) * m.head_dim() / c.t : 0);
    if (m.attention == AttentionKind::unfused) {
        // softmax output; with dropout also its mask (1 byte) and output, which feeds A.V
        a.attention_core = bh * c.s * c.s * (drop ? 2 * e + 1 : e);
    }
    const std::int64_t lse = m.attention == AttentionKind::flash ? 4 * bh * c.s / c.cp : 0;
    const std::int64_t proj_input = c.saved(T * m.q_dim()) / c.t;
    const std::int64_t masks = drop ? 2 * sharded : 0; // the two hidden dropouts
    const std::int64_t post_norm_input = e * sharded;
    // (A layer with experts keeps its MLP input as Megatron-Core does: sharded.)
    const std::int64_t fc1_input = c.saved(c.moe || c.a2a ? sharded : col_input);
    std::int64_t mlp = 0;
    a.pre_mlp_norm_output = c.saved(sharded);
    if (c.a2a) {
        // The router's fp32 probabilities (local tokens), the permuted copies this GPU sent
        // (the combine's weighted sum needs them for the probabilities' gradient), and for
        // every copy its experts compute (the busiest GPU's): the fc1 input, the activation's
        // and fc2's inputs (1/etp of the columns); the shared experts like a dense MLP.
        const std::int64_t N = c.a2a_computed();
        a.moe_act = c.saved(N * m.moe_ffn_hidden_size) / c.etp + clamp_input(c, N, c.etp);
        mlp = 4 * T / c.sp_div * m.num_experts + e * c.a2a_sent() * c.h + c.saved(N * c.h) +
              e * N * m.expert_fc1_out() / c.etp + a.moe_act;
        if (m.moe_shared_expert_intermediate_size > 0) {
            a.shared = e * T * m.shared_fc1_out() / c.t +
                       c.saved(T * m.moe_shared_expert_intermediate_size) / c.t;
            mlp += c.saved(sharded) + a.shared;
        }
    } else if (!c.moe) {
        // activation and fc2 inputs
        mlp = e * T * m.fc1_out() / c.t + c.saved(T * m.ffn) / c.t;
    } else {
        // The router's fp32 probabilities over the experts (local tokens); the permuted token
        // copies (the experts' fc1 input), the activation and fc2 inputs of every copy, and
        // the experts' outputs, which the weighted combine needs for the gradient of the
        // routing probabilities; the shared experts like a dense MLP.
        const std::int64_t N = c.tokens_per_expert() * m.num_experts;
        a.moe_act = c.saved(N * m.moe_ffn_hidden_size) / c.t + clamp_input(c, N, c.t);
        mlp = 4 * T / c.sp_div * m.num_experts + c.saved(N * c.h) +
              e * N * m.expert_fc1_out() / c.t + a.moe_act + e * N * c.h;
        if (m.moe_shared_expert_intermediate_size > 0) {
            a.shared = e * T * m.shared_fc1_out() / c.t +
                       c.saved(T * m.moe_shared_expert_intermediate_size) / c.t;
            mlp += c.saved(sharded) + a.shared;
        }
    }
    a.mlp = mlp;
    if (m.is_mla())
        a.all += masks + post_norm_input + fc1_input + mlp;
    else
        a.all = a.layer_input + qkv_input + qkv + a.attention_core + lse + proj_input + masks +
                post_norm_input + fc1_input + mlp + eager_saved_bytes(c);
    return a;
}

/// The forward's ops [begin, end) again in the recompute pass. With `collectives`, the forward
/// collectives the range issues and waits for, and the one gathering its input just before it
/// (a module's own all-gather under sequence parallelism), again as well.
void recompute_range(LayerWork& w, int begin, int end, bool collectives) {
    if (begin < 0 || end <= begin)
        return;
    const int base = Ctx::next(w.recompute);
    for (int k = begin; k < end; ++k)
        w.recompute.add(w.forward.ops[static_cast<std::size_t>(k)]);
    if (!collectives)
        return;
    const std::size_t n = w.collectives.size();
    for (std::size_t k = 0; k < n; ++k) {
        const TpCollective& tc = w.collectives[k];
        if (tc.pass != Pass::forward || tc.after < begin - 1 || tc.after >= end ||
            tc.needed_by > end)
            continue;
        TpCollective again = tc;
        again.pass = Pass::recompute;
        again.after = tc.after - begin + base;
        again.needed_by = tc.needed_by - begin + base;
        w.collectives.push_back(again);
    }
}

/// The index of the forward op named `name`; -1: none.
int forward_op(const LayerWork& w, std::string_view name) {
    for (int k = 0; k < w.forward.ops.count(); ++k) {
        if (w.forward.ops[static_cast<std::size_t>(k)].name == name)
            return k;
    }
    return -1;
}

/// Megatron-Core's selective recompute of LayerConfig::recompute_modules
/// (megatron/core/transformer/transformer_layer.py, multi_latent_attention.py, moe/moe_layer.py,
/// experts.py): each module's forward kernels run again before the backward, and what they
/// produced is not kept. "mlp", "moe" and "shared_experts" checkpoint a whole module (its
/// tensor- and expert-parallel collectives again); "layernorm", "moe_act" and "mla_up_proj"
/// discard a function's output and rerun it from its kept input ("mla_up_proj" includes the
/// all-gather of the latents, which its up projections do under sequence parallelism). "mlp"
/// is a dense layer's MLP only (a layer with experts is "moe"); "moe" includes its
/// "moe_act" and "shared_experts".
void selective_recompute(const Ctx& c, LayerWork& w, const TransformerActivations& act,
                         ModuleOps at) {
    const auto has = [&](RecomputeModule m) {
        return (c.cfg.recompute_modules & recompute_bit(m)) != 0;
    };
    const bool experts = c.moe || c.a2a;
    const bool swiglu = c.m.activation == Activation::swiglu;
    std::int64_t dropped = 0;
    // Megatron-Core's Transformer Engine layer spec (megatron/core/models/gpt/
    // gpt_layer_specs.py) fuses the input norm into linear_qkv (TELayerNormColumnParallelLinear,
    // input_layernorm IdentityOp) except with latent attention, and the pre-MLP norm into
    // linear_fc1 except in a layer with experts; transformer_layer.py checkpoints a norm only
    // when it is not an IdentityOp, so "layernorm" recomputes those two cases only.
    const bool input_norm_apart = c.m.is_mla();
    const bool pre_mlp_norm_apart = experts;
    if (has(RecomputeModule::layernorm) && input_norm_apart) {
        recompute_range(w, forward_op(w, "input_layernorm"), forward_op(w, "input_layernorm") + 1,
                        false);
        dropped += act.input_norm_output;
    }
    if (has(RecomputeModule::core_attn) && c.m.attention != AttentionKind::flash) {
        recompute_range(w, at.core_begin, at.core_end, false);
        dropped += act.attention_core;
    }
    if (has(RecomputeModule::mla_up_proj) && c.m.is_mla()) {
        // From the query latent's norm, or without one from linear_q_proj, which the
        // checkpointed up projection then runs (multi_latent_attention.py).
        const int from = c.m.q_lora_rank > 0 ? forward_op(w, "attention.q_norm")
                                             : forward_op(w, "attention.q_proj");
        recompute_range(w, from, forward_op(w, "attention.flash"), true);
        dropped += act.mla_up;
    }
    if (has(RecomputeModule::layernorm) && pre_mlp_norm_apart) {
        const int ln2 = forward_op(w, "post_attention_layernorm");
        recompute_range(w, ln2, ln2 + 1, false);
        dropped += act.pre_mlp_norm_output;
    }
    if (experts && has(RecomputeModule::moe)) {
        recompute_range(w, at.mlp_begin, at.mlp_end, true);
        dropped += act.mlp;
    } else if (experts) {
        if (has(RecomputeModule::moe_act)) {
            // The checkpointed function is bias_act_func, the activation's clamp included
            // (experts.py; layer_work_moe.cpp, expert_clamp).
            const int a = forward_op(w, swiglu ? "moe.experts.swiglu" : "moe.experts.gelu");
            const int clamp = forward_op(w, "moe.experts.clamp");
            recompute_range(w, clamp >= 0 ? clamp : a, a + 1, false);
            dropped += act.moe_act;
        }
        if (has(RecomputeModule::shared_experts) && c.m.moe_shared_expert_intermediate_size > 0) {
            recompute_range(w, forward_op(w, "moe.shared.fc1"), forward_op(w, "moe.shared.fc2") + 1,
                            true);
            dropped += act.shared;
        }
    } else if (has(RecomputeModule::mlp)) {
        recompute_range(w, at.mlp_begin, at.mlp_end, true);
        dropped += act.mlp;
    } else if (has(RecomputeModule::mlpwi)) {
        // The input projections and the activation again (fc2's input); fc2 not, nor its
        // reduction: the MLP's activations are dropped all the same.
        const int fc2 = forward_op(w, "mlp.fc2");
        recompute_range(w, at.mlp_begin, fc2 > at.mlp_begin ? fc2 : at.mlp_end, true);
        dropped += act.mlp;
    }
    w.activation_bytes = act.all - dropped;
    w.recomputed_activation_bytes = dropped;
}

/// torchtitan's op-level selective checkpointing (LayerConfig::selective_op): every
/// elementwise and normalisation op again, and every second matmul of the block in the order
/// its forward calls them (models/llama3/model.py: wq, wk, wv, wo, then w1, w3, w2 for SwiGLU,
/// or fc1, fc2). SDPA's output is saved: no attention again. Returns the bytes the block keeps:
/// its input (checkpoint_wrapper's saved argument) and the outputs the policy saves
/// (torchtitan/parallelisms/parallelize_llama.py at 9dec370, _save_list and _custom_policy:
/// aten.mm's except every second one's, counted per block call; SDPA's output and log-sum-exp;
/// the functional reduce-scatters' outputs of sequence parallelism) - nothing else survives the
/// forward (torch/utils/checkpoint.py: PREFER_RECOMPUTE ops' saved tensors are discarded and
/// rerun). Each matmul output is 16-bit: under Float8, torchao's Float8Tensor is dispatched
/// as aten.mm, which the policy sees and saves in the output dtype.
std::int64_t selective_op_recompute(const Ctx& c, const LayerShape& s, LayerWork& w) {
    const ModelSpec& m = c.m;
    const std::int64_t T = s.T;
    const std::int64_t d = s.d;
    const std::int64_t f = s.f;
    for (const Op& op : w.forward.ops)
        if (op.kind == OpKind::memory_bound)
            w.recompute.add(op);
    const std::int64_t q_n = std::int64_t{m.heads} * d / c.t;
    const std::int64_t kv_n = std::int64_t{m.kv_heads} * d / c.t;
    struct Mm {
        std::string_view name;
        std::int64_t n, k;
    };
    std::vector<Mm> mms{{"attention.wq", q_n, c.h},
                        {"attention.wk", kv_n, c.h},
                        {"attention.wv", kv_n, c.h},
                        {"attention.proj", c.h, m.q_dim() / c.t}};
    if (s.swiglu)
        mms.insert(mms.end(), {{"mlp.w1", f, c.h}, {"mlp.w3", f, c.h}, {"mlp.w2", c.h, f}});
    else
        mms.insert(mms.end(), {{"mlp.fc1", f, c.h}, {"mlp.fc2", c.h, f}});
    for (std::size_t k = 1; k < mms.size(); k += 2)
        w.recompute.add(c.gemm(mms[k].name, T, mms[k].n, mms[k].k));
    // The 1st, 3rd, ... matmul's output (a row-parallel one's: the [T, h] partial sums before
    // their reduction), the block's input, SDPA's output and log-sum-exp (fp32 per head and
    // token), and with sequence parallelism the two reduce-scatters' outputs.
    const std::int64_t e = c.elem;
    std::int64_t saved = e * T * c.h / c.sp_div + e * T * m.q_dim() / c.t;
    for (std::size_t k = 0; k < mms.size(); k += 2)
        saved += e * T * mms[k].n;
    if (s.flash)
        saved += 4 * T * m.heads / c.t;
    if (c.sp)
        saved += 2 * e * T * c.h / c.sp_div;
    return saved;
}

/// `w`'s collectives without those `drop` says.
template <typename Drop>
void drop_collectives(LayerWork& w, Drop drop) {
    decltype(w.collectives) kept;
    for (const TpCollective& tc : w.collectives)
        if (!drop(tc))
            kept.push_back(tc);
    w.collectives = kept;
}

/// Full recompute: the whole forward again, its collectives included; only the layer's input
/// is kept. As JAX's remat runs it (LayerConfig::remat_backward_reads), the forward up to the
/// MLP's down projection only: jax.checkpoint's backward recomputes the residuals the
/// linearized layer reads (jax-ml/jax, jax/_src/ad_checkpoint.py, remat_partial_eval: the
/// recomputing jaxpr is dead-code-eliminated to the residuals, pe.dce_jaxpr), and no backward
/// op reads the down projection's output, its reduction or the residual sum after it (a
/// GEMM's weight gradient reads its input, an addition's backward nothing), which only feed
/// the next layer. A dense layer's MLP only; a mixture's experts run again whole.
void full_recompute(const Ctx& c, LayerWork& w, const TransformerActivations& act) {
    const int fc2 = c.cfg.remat_backward_reads ? forward_op(w, "mlp.fc2") : -1;
    if (fc2 > 0) {
        // The recomputed all-gathers give the weight gradients their gathered inputs: no
        // re-gather in the backward (Megatron's sequence parallelism re-gathers what it kept
        // sharded).
        recompute_range(w, 0, fc2, true);
        drop_collectives(
            w, [](const TpCollective& tc) { return tc.pass == Pass::backward && tc.regather; });
    } else {
        for (const Op& op : w.forward.ops)
            w.recompute.add(op);
        const std::size_t n = w.collectives.size();
        for (std::size_t k = 0; k < n; ++k) {
            if (w.collectives[k].pass != Pass::forward)
                continue;
            TpCollective again = w.collectives[k];
            again.pass = Pass::recompute;
            w.collectives.push_back(again);
        }
    }
    w.activation_bytes = act.layer_input;
    w.recomputed_activation_bytes = act.all - act.layer_input;
}

/// MaxText's named-dot policies as JAX's remat runs them (LayerConfig::remat_backward_reads;
/// maxtext decoders.py, get_remat_policy: save_only_these_names of the projections' outputs):
/// what the backward reads and no name saves runs again, the forward's kernels before the
/// MLP's down projection that are not saved GEMMs: the norms, RoPE, the residual add and the
/// MLP's activation; the attention kernel unless its output is saved ("context", the
/// with_context policies: core_attn not in the modules); fc1 with `mlpwi`. The norms' gathered
/// outputs are gathered again where the backward re-gathers its GEMMs' sharded inputs.
/// Activations as Megatron's selective recompute of the same modules (selective_recompute).
void named_dots_recompute(const Ctx& c, LayerWork& w, const TransformerActivations& act,
                          ModuleOps at) {
    selective_recompute(c, w, act, at);
    w.recompute = PassWork{};
    drop_collectives(w, [](const TpCollective& tc) { return tc.pass == Pass::recompute; });
    const auto has = [&](RecomputeModule m) {
        return (c.cfg.recompute_modules & recompute_bit(m)) != 0;
    };
    const int fc2 = forward_op(w, "mlp.fc2");
    for (int k = 0; k < fc2; ++k) {
        const Op& op = w.forward.ops[static_cast<std::size_t>(k)];
        const bool fc1 = k >= at.mlp_begin && op.kind == OpKind::gemm;
        if (op.kind == OpKind::memory_bound ||
            (op.kind == OpKind::fused_attention && has(RecomputeModule::core_attn)) ||
            (fc1 && has(RecomputeModule::mlpwi)))
            w.recompute.add(op);
    }
}

} // namespace

void recompute_layer(const Ctx& c, const LayerShape& s, LayerWork& w, ModuleOps at) {
    const ModelSpec& m = c.m;
    const TransformerActivations act = transformer_activations(c);
    switch (c.cfg.recompute) {
    case Recompute::none:
        w.activation_bytes = act.all;
        break;
    case Recompute::selective:
        // JAX's named-dot policies (MaxText's remat_policy); torchtitan's op-level policy
        // (selective_op) is a PyTorch stack's, never set with it.
        if (c.cfg.remat_backward_reads && !m.is_mla() && !c.moe && !c.a2a) {
            named_dots_recompute(c, w, act, at);
            break;
        }
        if (c.cfg.selective_op) {
            // A dense block's saved set is the policy's; otherwise (latent attention, experts:
            // no op list here) counted as Megatron's selective: a bound.
            const std::int64_t saved = !m.is_mla() && !c.moe && !c.a2a
                                           ? selective_op_recompute(c, s, w)
                                           : act.all - act.attention_core;
            for (int k = at.core_begin; k < at.core_end && !s.flash; ++k)
                w.recompute.add(w.forward.ops[static_cast<std::size_t>(k)]);
            w.activation_bytes = std::min(saved, act.all);
            w.recomputed_activation_bytes = act.all - w.activation_bytes;
            break;
        }
        selective_recompute(c, w, act, at);
        break;
    case Recompute::full:
        full_recompute(c, w, act);
        break;
    }
}

} // namespace clustersim::strategies::models::layer_detail
