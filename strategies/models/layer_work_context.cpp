// The shared accounting of layer_work_context.h: a transformer layer's shape, the collectives'
// bookkeeping, the configuration check, and eager PyTorch's elementwise chains.
#include "strategies/models/layer_work_context.h"

#include "base/error.h"

#include <string>

namespace clustersim::strategies::models::layer_detail {

LayerShape layer_shape(const Ctx& c) {
    const ModelSpec& m = c.m;
    LayerShape s{};
    s.e = c.elem;
    s.T = c.tokens;
    s.sharded = s.T * c.h / c.sp_div;
    s.bh = c.b * m.heads / c.t;
    s.d = m.head_dim();
    s.qkv_n = m.qkv_out() / c.t;
    s.fc1_n = m.fc1_out() / c.t;
    s.f = m.ffn / c.t;
    s.drop = m.dropout > 0;
    s.flash = m.attention == AttentionKind::flash;
    s.swiglu = m.activation == Activation::swiglu;
    s.rope = m.position_embedding == PositionEmbedding::rope;
    s.tp = c.t > 1;
    s.scores = s.bh * c.s * c.s;
    s.fused_softmax =
        c.cfg.fusions.masked_softmax_fusion && megatron_fused_softmax(s.bh, c.s, c.s, c.dtype);
    const Fusions& fuse = c.cfg.fusions;
    s.norm_eager = !fuse.norm_fusion && m.norm == Norm::rmsnorm;
    s.rope_eager = !fuse.apply_rope_fusion && s.rope && !m.is_mla();
    s.rope_unfused = !s.rope_eager && s.rope && !m.is_mla() && m.yarn_rotary_scaling_factor > 1;
    s.swiglu_eager = !fuse.bias_activation_fusion && s.swiglu;
    s.q_elems = s.T * m.heads * s.d / c.t;
    s.kv_elems = s.T * std::int64_t{m.kv_heads} * s.d / c.t;
    s.gqa_copies = fuse.gqa_copies && !s.rope_eager && !m.is_mla() && s.q_elems != s.kv_elems;
    s.gathered = s.T * c.h;
    s.comm = s.T * c.h * s.e;
    s.exit_op = c.sp ? TpOp::reduce_scatter : TpOp::all_reduce;
    // Rotary embedding (Su et al. 2021) rotates Q and K in place: one elementwise pass that
    // reads and writes the query and key heads of this rank (Transformer Engine's fused RoPE;
    // the cos/sin table is s x d, negligible). Its backward rotates dQ and dK back.
    s.rope_bytes = 2 * s.T * (m.heads + std::int64_t{m.kv_heads}) * s.d / c.t * s.e;
    return s;
}

void add_collective(LayerWork& w, std::string_view name, TpOp op, Pass pass, std::int64_t bytes,
                    int after, int needed_by, bool regather) {
    TpCollective c;
    c.name = name;
    c.op = op;
    c.pass = pass;
    c.bytes = bytes;
    c.after = after;
    c.needed_by = needed_by;
    c.regather = regather;
    w.collectives.push_back(c);
}

void add_group_collective(LayerWork& w, std::string_view name, TpOp op, CommGroup group, Pass pass,
                          std::int64_t bytes, int after, int needed_by) {
    add_collective(w, name, op, pass, bytes, after, needed_by);
    w.collectives[w.collectives.size() - 1].group = group;
}

void check_config(const ModelSpec& m, const LayerConfig& cfg) {
    check_tensor_parallel(m, cfg.tp, cfg.sequence_parallel && cfg.tp > 1);
    check_context_parallel(m, cfg.cp, cfg.tp, cfg.sequence_parallel);
    if (cfg.micro_batch < 1)
        throw InputError("micro-batch size must be at least 1, got " +
                         std::to_string(cfg.micro_batch));
}

// ---- Eager PyTorch's elementwise chains (Fusions false), kernel by kernel as torchtitan's
// Llama block writes them (torchtitan/models/llama/model.py, models/norms.py, commit
// 9dec370ad26b5f8e9a7333a0e36165018262644b) and as autograd runs their backward (PyTorch's
// tools/autograd/derivatives.yaml: each op's gradient formula, one kernel per pointwise op of
// it). `e` bytes per 16-bit activation element, 4 per fp32 one; per-token scalars (the mean,
// + eps, rsqrt and their gradients) and the s x d/2 RoPE table are left out, as in the fused
// counts. Sizes of each kernel in bytes read + written.

/// RMSNorm.forward over n elements: self._norm(x.float()).type_as(x) * self.weight, with
/// _norm(x) = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps): x.float(), pow(2),
/// mean, the product with rsqrt's result, type_as, times the weight. 36 bytes per element
/// in bf16 (the fused kernel: 4).
Op eager_rmsnorm(const Ctx& c, std::string_view name, std::int64_t n) {
    const std::int64_t e = c.elem;
    return c.chain(name, {n * (e + 4), n * 8, n * 4, n * 8, n * (4 + e), n * 2 * e});
}

/// Its backward: times the weight (grad * weight; grad * normed and its sum over the tokens
/// for the weight's gradient), type_as back to fp32, the product x * r (grad * r; grad * x
/// and its sum over the hidden dimension for r), mean's gradient (expanded and divided),
/// pow's (pow_backward: grad * (2 * x.pow(1)), three kernels), the two gradients of x.float()
/// summed, x.float()'s back to 16 bits; then the residual stream's two gradients (this norm's
/// and the residual add's) summed, which the fused kernel does in its 4 passes. 98 bytes per
/// element in bf16 (fused: 8). `projections` more elements (the gathered [T, h] input of the
/// projections the norm's output feeds) get autograd's sum of their `k` gradients, k - 1
/// adds (wq, wk, wv: 2; w1, w3: 1).
Op eager_rmsnorm_backward(const Ctx& c, std::string_view name, std::int64_t n,
                          std::int64_t projections, int k) {
    const std::int64_t e = c.elem;
    const std::int64_t sums = projections * 3 * e; // one add: two read, one written
    return c.chain(name, {n * 2 * e, n * 3 * e, n * e, n * (e + 4), n * 8, n * 12, n * 4, n * 4,
                          n * 8, n * 8, n * 12, n * 12, n * (4 + e), n * 3 * e, k > 1 ? sums : 0,
                          k > 2 ? sums : 0});
}

/// apply_rotary_emb on q queries and k keys (elements) and repeat_kv for grouped-query
/// attention: each of xq, xk to fp32 (view_as_complex is a view), the complex64 product with
/// freqs_cis (4 bytes per real element each way), view_as_real and back to 16 bits with
/// type_as: 20 bytes per element in bf16 (TE's fused RoPE: 4); then, with fewer key/value
/// heads than query heads, the keys and values expanded to every query head and copied
/// (expand + reshape of a non-contiguous view) for scaled_dot_product_attention.
Op eager_rope(const Ctx& c, std::string_view name, std::int64_t q, std::int64_t k) {
    const std::int64_t e = c.elem;
    const std::int64_t repeat = q != k ? q * e + k * e : 0; // read k, write q elements
    return c.chain(
        name, {q * (e + 4), q * 8, q * (4 + e), k * (e + 4), k * 8, k * (4 + e), repeat, repeat});
}

/// Its backward, the same kernels' sizes: repeat_kv's (expand's gradient: the repeats summed
/// back), then for dq and dk type_as's (to fp32), the product with the conjugate table,
/// x.float()'s (to 16 bits).
Op eager_rope_backward(const Ctx& c, std::string_view name, std::int64_t q, std::int64_t k) {
    return eager_rope(c, name, q, k);
}

/// Megatron-Core's unfused RoPE (megatron/core/models/common/embeddings/rope_utils.py,
/// _apply_rotary_pos_emb_bshd and _rotate_half, at
/// NVIDIA/Megatron-LM@2edffadb528ea07e261b0c02cdc42a7bb9c3197a), called once for the queries (q
/// elements) and once for the keys (k): each call builds its cos and sin tables from the
/// fp32 frequencies (s x d: cos, times mscale, to 16 bits; the same for sin), then t * cos
/// (read, written), _rotate_half's negation of the second half and concatenation, the product
/// with sin, the sum (two read, one written) and the concatenation with the unrotated rest
/// (read, written): 12 bytes per 16-bit element.
Op megatron_unfused_rope(const Ctx& c, std::string_view name, std::int64_t q, std::int64_t k) {
    const std::int64_t e = c.elem;
    const std::int64_t table = c.s * c.m.head_dim();
    Op op;
    op.name = name;
    op.kind = OpKind::memory_bound;
    for (const std::int64_t n : {q, k}) {
        for (const std::int64_t b :
             {table * 8, table * 8, table * (4 + e), table * 8, table * 8, table * (4 + e),
              2 * n * e, n * e, 2 * n * e, 2 * n * e, 3 * n * e, 2 * n * e}) {
            op.bytes += b;
            op.time += c.cm.memory_bound(b);
            ++op.kernels;
        }
    }
    op.kernels -= 1; // counted from 1
    return op;
}

/// Its backward through autograd, per tensor: the gradient times sin, negated back (half) and
/// concatenated (chunk's backward), the gradient times cos, the two gradients of t summed, and
/// the slice t[..., :rot_dim]'s backward (zeros, then the gradient copied in): 13 bytes per
/// 16-bit element.
Op megatron_unfused_rope_backward(const Ctx& c, std::string_view name, std::int64_t q,
                                  std::int64_t k) {
    const std::int64_t e = c.elem;
    Op op;
    op.name = name;
    op.kind = OpKind::memory_bound;
    for (const std::int64_t n : {q, k}) {
        for (const std::int64_t b :
             {2 * n * e, n * e, 2 * n * e, 2 * n * e, 3 * n * e, n * e, 2 * n * e}) {
            op.bytes += b;
            op.time += c.cm.memory_bound(b);
            ++op.kernels;
        }
    }
    op.kernels -= 1;
    return op;
}

/// SwiGLU as F.silu(w1(x)) * w3(x) over n elements of each input: silu, the product; 10 bytes
/// per element in bf16 (fused: 6).
Op eager_swiglu(const Ctx& c, std::string_view name, std::int64_t n) {
    const std::int64_t e = c.elem;
    return c.chain(name, {n * 2 * e, n * 3 * e});
}

/// Its backward: the product's two gradients (grad * w3(x), grad * silu(w1(x))) and
/// silu_backward(grad, w1(x)); 18 bytes per element in bf16 (fused: 10).
Op eager_swiglu_backward(const Ctx& c, std::string_view name, std::int64_t n) {
    const std::int64_t e = c.elem;
    return c.chain(name, {n * 3 * e, n * 3 * e, n * 3 * e});
}

} // namespace clustersim::strategies::models::layer_detail
