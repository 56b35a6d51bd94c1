// Attention blocks of a transformer layer (layer_work_context.h): multi-head or grouped-query
// attention, unfused or FlashAttention, with its tensor-parallel collectives; latent attention
// (MLA); and whether Megatron's fused softmax kernel applies.
#include "strategies/models/layer_work_context.h"

namespace clustersim::strategies::models {

using hardware::Dtype;

/// Whether Megatron-LM's fused scale-mask-softmax kernel (scaled_upper_triang_masked_softmax,
/// causal) takes attention scores of `attn_batches` = micro-batch x heads per rank rows of
/// `sq` x `sk`: 16-bit input, 16 < sk <= 2048, sq and attn_batches multiples of 4, and
/// attn_batches a multiple of the kernel's rows per block (128 threads; a warp per row of up
/// to 32 x 32 elements, two rows per warp up to 128 columns). Otherwise Megatron runs
/// PyTorch's softmax (FusedScaleMaskSoftmax.is_kernel_available, megatron/model/fused_softmax.py).
/// The multiple-of-4 condition on attn_batches predates Narayanan et al. 2021: it came with
/// NVIDIA/Megatron-LM@4916bae616 (2021-02-04, "conditioning fused kernels") and is in the code
/// of the paper's release (8cfef1bfe7, 2021-04-08, FusedScaleMaskSoftmax.forward); at sequence
/// 2048 the rows-per-block condition of today's code asks the same (4 rows per block).
bool megatron_fused_softmax(std::int64_t attn_batches, std::int64_t sq, std::int64_t sk,
                            Dtype dtype) {
    if (hardware::bytes_per_element(dtype) != 2 || !(16 < sk && sk <= 2048) || sq % 4 != 0 ||
        attn_batches % 4 != 0)
        return false;
    std::int64_t pow2 = 1;
    while (pow2 < sk)
        pow2 *= 2;
    const std::int64_t warp = std::min<std::int64_t>(pow2, 32);
    const std::int64_t rows_per_block = (128 / warp) * (pow2 <= 128 ? 2 : 1);
    return attn_batches % rows_per_block == 0;
}

namespace layer_detail {

namespace {

/// What grouped-query attention's copies add to the compiled RoPE kernel (LayerShape::
/// gqa_copies): the keys written for every query head rather than once (q - kv elements) and
/// the values read and written so (kv + q); backward the copies' gradients summed back, as
/// many bytes. 0 without them.
std::int64_t gqa_copy_bytes(const LayerShape& s) {
    return s.gqa_copies ? 2 * s.q_elems * s.e : 0;
}

} // namespace

CoreAttention attention_forward(const Ctx& c, const LayerShape& s, LayerWork& w, int ln1) {
    const std::int64_t e = s.e;
    const std::int64_t T = s.T;
    const std::int64_t bh = s.bh;
    const std::int64_t d = s.d;
    const std::int64_t scores = s.scores;
    const std::int64_t comm = s.comm;
    const bool drop = s.drop;
    const bool tp = s.tp;
    PassWork& F = w.forward;
    CoreAttention core;
    const int qkv = F.add(c.gemm("attention.qkv", T, s.qkv_n, c.h));
    if (tp && c.sp)
        add_collective(w, "attention.all_gather", TpOp::all_gather, Pass::forward, comm, ln1, qkv);
    // Qwen3's and Gemma 3's per-head RMSNorm of the queries and keys (one fused kernel over
    // both, read and written; Megatron-Core's q_layernorm and k_layernorm).
    if (c.m.qk_layernorm)
        F.add(c.memory("attention.qk_norm", 2 * (s.q_elems + s.kv_elems) * e));
    if (s.rope)
        F.add(s.rope_eager     ? eager_rope(c, "attention.rope", s.q_elems, s.kv_elems)
              : s.rope_unfused ? megatron_unfused_rope(c, "attention.rope", s.q_elems, s.kv_elems)
                               : c.memory("attention.rope", s.rope_bytes + gqa_copy_bytes(s)));
    core.begin = Ctx::next(F);
    if (s.flash && c.fp8_attention())
        F.add(c.attention_quantize("attention.flash.quantize", s.q_elems + 2 * s.kv_elems));
    if (s.flash) {
        F.add(c.flash("attention.flash", false));
    } else {
        F.add(c.gemm("attention.scores", c.s, c.s, d, bh)); // Q K^T
        if (s.fused_softmax) {
            F.add(c.memory("attention.softmax", 2 * bh * c.s * c.s * e));
        } else { // in fp32: cast, scale, causal mask (in place), softmax, cast back
            if (e < 4)
                F.add(c.memory("attention.softmax.to_fp32", scores * (e + 4)));
            F.add(c.memory("attention.softmax.scale", scores * 8));
            F.add(c.memory("attention.softmax.mask", scores * 9)); // and the 1-byte mask
            F.add(c.memory("attention.softmax.torch", scores * 8));
            if (e < 4)
                F.add(c.memory("attention.softmax.to_16bit", scores * (4 + e)));
        }
        if (drop)
            F.add(c.memory("attention.dropout", bh * c.s * c.s * (2 * e + 1)));
        F.add(c.gemm("attention.context", c.s, d, c.s, bh)); // P V
    }
    core.end = Ctx::next(F);
    const int proj = F.add(c.gemm("attention.proj", T, c.h, c.m.q_dim() / c.t));
    if (tp)
        add_collective(w, c.sp ? "attention.reduce_scatter" : "attention.all_reduce", s.exit_op,
                       Pass::forward, comm, proj, proj + 1);
    return core;
}

void attention_backward(const Ctx& c, const LayerShape& s, LayerWork& w) {
    const std::int64_t e = s.e;
    const std::int64_t T = s.T;
    const std::int64_t bh = s.bh;
    const std::int64_t d = s.d;
    const std::int64_t qkv_n = s.qkv_n;
    const std::int64_t scores = s.scores;
    const std::int64_t comm = s.comm;
    const bool drop = s.drop;
    const bool tp = s.tp;
    const TpOp exit_op = s.exit_op;
    PassWork& B = w.backward;
    int i = Ctx::next(B);
    if (tp && c.sp)
        add_collective(w, "attention.grad_all_gather", TpOp::all_gather, Pass::backward, comm,
                       i - 1, i);
    B.add(c.gemm("attention.proj.dgrad", T, c.m.q_dim() / c.t, c.h));
    B.add(c.gemm("attention.proj.wgrad", c.m.q_dim() / c.t, c.h, T));
    if (s.flash && c.fp8_attention()) // the output gradient, as many elements as the queries
        B.add(c.attention_quantize("attention.flash.quantize.bwd", s.q_elems));
    if (s.flash) {
        B.add(c.flash("attention.flash.bwd", true));
    } else {
        B.add(c.gemm("attention.context.dgrad_probs", c.s, c.s, d, bh));  // dP = dO V^T
        B.add(c.gemm("attention.context.dgrad_values", c.s, d, c.s, bh)); // dV = P^T dO
        if (drop)
            B.add(c.memory("attention.dropout.bwd", bh * c.s * c.s * (2 * e + 1)));
        if (s.fused_softmax) {
            B.add(c.memory("attention.softmax.bwd", 3 * bh * c.s * c.s * e));
        } else { // autograd through the same five: casts, softmax, masked fill, scale
            if (e < 4)
                B.add(c.memory("attention.softmax.to_16bit.bwd", scores * (e + 4)));
            B.add(c.memory("attention.softmax.torch.bwd", scores * 12));
            B.add(c.memory("attention.softmax.mask.bwd", scores * 9));
            B.add(c.memory("attention.softmax.scale.bwd", scores * 8));
            if (e < 4)
                B.add(c.memory("attention.softmax.to_fp32.bwd", scores * (4 + e)));
        }
        B.add(c.gemm("attention.scores.dgrad_query", c.s, d, c.s, bh)); // dQ = dS K
        B.add(c.gemm("attention.scores.dgrad_key", c.s, d, c.s, bh));   // dK = dS^T Q
    }
    if (s.rope)
        B.add(s.rope_eager ? eager_rope_backward(c, "attention.rope.bwd", s.q_elems, s.kv_elems)
              : s.rope_unfused
                  ? megatron_unfused_rope_backward(c, "attention.rope.bwd", s.q_elems, s.kv_elems)
                  : c.memory("attention.rope.bwd", s.rope_bytes + gqa_copy_bytes(s)));
    if (c.m.qk_layernorm) // reads the input and the output gradient, writes the input's
        B.add(c.memory("attention.qk_norm.bwd", 3 * (s.q_elems + s.kv_elems) * e));
    i = Ctx::next(B);
    if (tp && c.sp && !c.cfg.dtensor_tp)
        add_collective(w, "attention.qkv.regather", TpOp::all_gather, Pass::backward, comm, i - 1,
                       i + 1, true);
    B.add(c.gemm("attention.qkv.dgrad", T, c.h, qkv_n));
    B.add(c.gemm("attention.qkv.wgrad", c.h, qkv_n, T));
    if (tp)
        add_collective(w,
                       c.sp ? "attention.qkv.grad_reduce_scatter" : "attention.qkv.grad_all_reduce",
                       exit_op, Pass::backward, comm, c.cfg.dtensor_tp ? i + 1 : i, i + 2);
}

/// Latent attention's forward (Megatron-Core's MLASelfAttention), after the first norm (op
/// `ln1`): the down projections to the query latent and to the key/value latent with its shared
/// rotary key run replicated on this rank's tokens (its sequence shard), the latents are
/// gathered over the tensor-parallel ranks (a [T, q_lora + kv_lora + rope] tensor, not
/// [T, h]), normalised, projected up to this rank's heads, the rotary parts rotated and the
/// per-head queries and keys assembled (nope and rotary parts concatenated, the rotary key
/// broadcast to every head), FlashAttention over qk + rope dimensions for scores and v_head_dim
/// for values, and the output projection by rows with the usual reduction.
void mla_forward(const Ctx& c, LayerWork& w, int ln1) {
    const ModelSpec& m = c.m;
    PassWork& F = w.forward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t local = T / c.sp_div;
    const std::int64_t a = m.heads / c.t;
    const std::int64_t qk = m.mla_qk_dim();
    const std::int64_t rope = m.qk_pos_emb_head_dim;
    // Without a query latent (q_lora_rank 0) the queries are projected from the hidden state by
    // a column-parallel linear_q_proj, which gathers that state over the sequence shards
    // instead of a query latent (multi_latent_attention.py, _qkv_down_projection:
    // q_compressed = hidden_states).
    const bool q_latent = m.q_lora_rank > 0;
    const std::int64_t latent =
        (q_latent ? std::int64_t{m.q_lora_rank} : c.h) + m.kv_lora_rank + rope;
    (void)ln1;
    if (q_latent)
        F.add(c.gemm("attention.q_down", local, m.q_lora_rank, c.h));
    const int kv_down = F.add(c.gemm("attention.kv_down", local, m.kv_lora_rank + rope, c.h));
    const int q_norm =
        q_latent ? F.add(c.memory("attention.q_norm", 2 * T * m.q_lora_rank * e)) : Ctx::next(F);
    if (c.t > 1 && c.sp)
        add_collective(w, "attention.latent_all_gather", TpOp::all_gather, Pass::forward,
                       T * latent * e, kv_down, q_norm);
    if (q_latent)
        F.add(c.gemm("attention.q_up", T, a * qk, m.q_lora_rank));
    else
        F.add(c.gemm("attention.q_proj", T, a * qk, c.h));
    F.add(c.memory("attention.kv_norm", 2 * T * m.kv_lora_rank * e));
    F.add(c.gemm("attention.kv_up", T, a * (m.qk_head_dim + m.v_head_dim), m.kv_lora_rank));
    // Rotary parts of the queries (per head) and of the shared key, read and written; then the
    // queries and keys of every head written whole for the attention kernel (each element
    // read once and written once).
    F.add(c.memory("attention.rope", 2 * T * (a + 1) * rope * e));
    F.add(c.memory("attention.mla_assemble", 2 * 2 * T * a * qk * e));
    if (c.fp8_attention()) // every head's queries and keys, and its values
        F.add(c.attention_quantize("attention.flash.quantize", T * a * (2 * qk + m.v_head_dim)));
    F.add(c.flash("attention.flash", false, (qk + m.v_head_dim) / 2));
    const int proj = F.add(c.gemm("attention.proj", T, c.h, a * m.v_head_dim));
    if (c.t > 1)
        add_collective(w, c.sp ? "attention.reduce_scatter" : "attention.all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::forward, T * c.h * e,
                       proj, proj + 1);
}

/// Its backward: the output projection, FlashAttention, the assembly and rotation, the up
/// projections and norms; the latents' gradients (partial sums over this rank's heads) are
/// reduced over the tensor-parallel ranks before the down projections' backward.
void mla_backward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& B = w.backward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t local = T / c.sp_div;
    const std::int64_t a = m.heads / c.t;
    const std::int64_t qk = m.mla_qk_dim();
    const std::int64_t rope = m.qk_pos_emb_head_dim;
    const std::int64_t kv_up = a * (m.qk_head_dim + m.v_head_dim);
    const bool q_latent = m.q_lora_rank > 0;
    const std::int64_t latent =
        (q_latent ? std::int64_t{m.q_lora_rank} : c.h) + m.kv_lora_rank + rope;
    int i = Ctx::next(B);
    if (c.t > 1 && c.sp)
        add_collective(w, "attention.grad_all_gather", TpOp::all_gather, Pass::backward,
                       T * c.h * e, i - 1, i);
    B.add(c.gemm("attention.proj.dgrad", T, a * m.v_head_dim, c.h));
    B.add(c.gemm("attention.proj.wgrad", a * m.v_head_dim, c.h, T));
    if (c.fp8_attention())
        B.add(c.attention_quantize("attention.flash.quantize.bwd", T * a * m.v_head_dim));
    B.add(c.flash("attention.flash.bwd", true, (qk + m.v_head_dim) / 2));
    B.add(c.memory("attention.mla_assemble.bwd", 2 * 2 * T * a * qk * e));
    B.add(c.memory("attention.rope.bwd", 2 * T * (a + 1) * rope * e));
    B.add(c.gemm("attention.kv_up.dgrad", T, m.kv_lora_rank, kv_up));
    B.add(c.gemm("attention.kv_up.wgrad", m.kv_lora_rank, kv_up, T));
    B.add(c.memory("attention.kv_norm.bwd", 4 * T * m.kv_lora_rank * e));
    int q_norm = 0;
    if (q_latent) {
        B.add(c.gemm("attention.q_up.dgrad", T, m.q_lora_rank, a * qk));
        B.add(c.gemm("attention.q_up.wgrad", m.q_lora_rank, a * qk, T));
        q_norm = B.add(c.memory("attention.q_norm.bwd", 4 * T * m.q_lora_rank * e));
    } else {
        B.add(c.gemm("attention.q_proj.dgrad", T, c.h, a * qk));
        q_norm = B.add(c.gemm("attention.q_proj.wgrad", c.h, a * qk, T));
    }
    i = Ctx::next(B);
    if (c.t > 1)
        add_collective(
            w, c.sp ? "attention.latent_grad_reduce_scatter" : "attention.latent_grad_all_reduce",
            c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, T * latent * e, q_norm,
            i);
    B.add(c.gemm("attention.kv_down.dgrad", local, c.h, m.kv_lora_rank + rope));
    B.add(c.gemm("attention.kv_down.wgrad", c.h, m.kv_lora_rank + rope, local));
    if (q_latent) {
        B.add(c.gemm("attention.q_down.dgrad", local, c.h, m.q_lora_rank));
        B.add(c.gemm("attention.q_down.wgrad", c.h, m.q_lora_rank, local));
    }
}

} // namespace layer_detail

} // namespace clustersim::strategies::models
