#include "strategies/models/layer_work.h"

#include "base/error.h"
#include "strategies/models/context_parallel.h"
#include "strategies/models/expert_parallel.h"
#include "strategies/models/fp8.h"

#include <array>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};
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
    return o == Optimizer::sgd ? "sgd" : "adam";
}

std::optional<Optimizer> parse_optimizer(std::string_view s) {
    if (s == "adam" || s == "adamw")
        return Optimizer::adam;
    if (s == "sgd")
        return Optimizer::sgd;
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

namespace {

/// Shared quantities of one layer on one rank and the kernel constructors.
struct Ctx {
    const ModelSpec& m;
    const LayerConfig& cfg;
    const ComputeModel& cm;
    Dtype dtype;       ///< of activations and of the GEMMs that do not run in FP8
    bool fp8;          ///< the linear layers' GEMMs in FP8 (fp8.h)
    std::int64_t elem; ///< bytes per activation element
    /// Bytes per element of a GEMM input saved for the weight gradient (FP8: the cast copy).
    std::int64_t saved_input;
    std::int64_t t; ///< tensor-parallel size
    bool sp;        ///< sequence parallel in effect (t > 1)
    std::int64_t b; ///< micro-batch
    std::int64_t s; ///< sequence
    int cp;         ///< context-parallel size: this rank runs s / cp tokens
    std::int64_t h; ///< hidden
    std::int64_t tokens;
    std::int64_t sp_div; ///< t with sequence parallelism, else 1
    bool moe;            ///< this layer has experts
    std::int64_t ep;     ///< expert-parallel size
    std::int64_t etp;    ///< expert tensor-parallel size
    bool a2a;            ///< experts laid out apart: the alltoall token dispatcher

    Ctx(const ModelSpec& model, const LayerConfig& config, const ComputeModel& compute)
        : m(model)
        , cfg(config)
        , cm(compute)
        , dtype(config.dtype == Dtype::fp8 ? Dtype::bf16 : config.dtype)
        , fp8(config.dtype == Dtype::fp8)
        , elem(hardware::bytes_per_element(dtype))
        , saved_input(fp8 ? 1 : elem)
        , t(config.tp)
        , sp(config.sequence_parallel && config.tp > 1)
        , b(config.micro_batch)
        , s(model.is_transformer() ? model.seq : 1)
        , cp(std::max(1, config.cp))
        , h(model.hidden)
        , tokens(b * s / cp)
        , sp_div(sp ? config.tp : 1)
        , moe(model.is_moe() && !config.dense_layer)
        , ep(config.ep)
        , etp(config.etp > 0 ? config.etp : config.tp)
        , a2a(moe && (ep > 1 || etp != t)) {}

    // ---- the alltoall token dispatcher (a2a): per GPU of the expert-parallel group
    /// Token copies this GPU routes and sends in the dispatch: its tokens (its sequence shard)
    /// times top-k, fewer when a capacity factor below 1 drops the excess.
    std::int64_t a2a_sent() const {
        const std::int64_t copies = tokens / sp_div * m.moe_router_topk;
        const double cap = m.moe_expert_capacity_factor;
        if (cap > 0 && cap < 1)
            return static_cast<std::int64_t>(static_cast<double>(copies) * cap);
        return copies;
    }
    /// Copies the busiest GPU receives in the dispatch (its own share included): the mean
    /// times moe_load_imbalance with experts on other GPUs, at most the capacity it keeps (as
    /// expert_parallel_work counts them).
    std::int64_t a2a_received() const {
        const std::int64_t copies = tokens / sp_div * m.moe_router_topk;
        double factor = ep > 1 ? m.moe_load_imbalance : 1.0;
        if (m.moe_expert_capacity_factor > 0)
            factor = std::min(factor, m.moe_expert_capacity_factor);
        return static_cast<std::int64_t>(static_cast<double>(copies) * factor);
    }
    /// Copies the busiest GPU's experts compute: those its expert tensor-parallel group
    /// received (gathered over the etp ranks, each computing 1/etp of the columns).
    std::int64_t a2a_computed() const { return etp * a2a_received(); }
    std::int64_t local_experts() const { return m.num_experts / ep; }
    /// Tokens per local expert in the grouped GEMMs, rounded up.
    std::int64_t a2a_per_expert() const {
        return (a2a_computed() + local_experts() - 1) / local_experts();
    }

    /// Token copies this rank's experts compute: every token goes to top-k experts, all local
    /// without expert parallelism, so each rank computes T k of them (its 1/t of every
    /// expert's columns); a capacity factor below 1 drops the excess. (The load imbalance
    /// factor sets the busiest expert-parallel rank's share; with every expert local it
    /// changes nothing.)
    std::int64_t routed_tokens() const {
        const std::int64_t copies = tokens * m.moe_router_topk;
        const double cap = m.moe_expert_capacity_factor;
        if (cap > 0 && cap < 1)
            return static_cast<std::int64_t>(static_cast<double>(copies) * cap);
        return copies;
    }
    /// Tokens per expert in the grouped GEMM (balanced over the local experts, rounded up).
    std::int64_t tokens_per_expert() const {
        return (routed_tokens() + m.num_experts - 1) / m.num_experts;
    }

    Op gemm(std::string_view name, std::int64_t M, std::int64_t N, std::int64_t K,
            std::int64_t batch = 1) const {
        Op op;
        op.name = name;
        op.kind = batch > 1 ? OpKind::batched_gemm : OpKind::gemm;
        op.flops = ComputeModel::gemm_flops(M, N, K, batch);
        const bool in_fp8 = fp8 && runs_in_fp8(name);
        const Dtype gemm_dtype = in_fp8 ? Dtype::fp8 : dtype;
        op.bytes = ComputeModel::gemm_bytes(M, N, K, gemm_dtype, batch);
        op.time = cm.gemm(M, N, K, gemm_dtype, batch);
        // The casts (with transposes) of its inputs, charged to the GEMM they feed.
        if (in_fp8) {
            const Fp8CastBytes cast =
                fp8_gemm_cast_bytes(name, M, N, K, batch, cfg.fp8_recipe, elem);
            op.bytes += cast.total();
            for (const std::int64_t kernel : {cast.amax, cast.cast, cast.copies})
                if (kernel > 0) {
                    op.time += cm.memory_bound(kernel);
                    // Transformer Engine's delayed casts are fused into the kernels before
                    // them (its fused cast-transpose); torchao's are launched apart.
                    if (cfg.fp8_recipe == Fp8Recipe::tensorwise)
                        ++op.kernels;
                }
        }
        op.m = M;
        op.n = N;
        op.k = K;
        op.batch = batch;
        return op;
    }
    Op memory(std::string_view name, std::int64_t bytes) const {
        Op op;
        op.name = name;
        op.kind = OpKind::memory_bound;
        op.bytes = bytes;
        op.time = cm.memory_bound(bytes);
        return op;
    }
    /// A chain of eager kernels as one op: their bytes summed, each kernel timed on its own
    /// (each pays its fill and launch).
    Op chain(std::string_view name, std::initializer_list<std::int64_t> kernels) const {
        Op op;
        op.name = name;
        op.kind = OpKind::memory_bound;
        op.kernels = static_cast<int>(kernels.size());
        for (const std::int64_t k : kernels) {
            op.bytes += k;
            op.time += cm.memory_bound(k);
        }
        return op;
    }
    /// FlashAttention over this rank's heads; `d` the head dimension (latent attention: the
    /// mean of its query/key and value dimensions, which gives its FLOPs and bytes exactly).
    Op flash(std::string_view name, bool backward) const {
        return flash(name, backward, m.head_dim());
    }
    Op flash(std::string_view name, bool backward, std::int64_t d) const {
        const std::int64_t bh = b * m.heads / t;
        Op op;
        op.name = name;
        op.kind = OpKind::fused_attention;
        if (cp > 1) { // the ring's cp steps (context_parallel.h), s / cp queries each
            const CpAttention a = cp_attention(bh, s, d, cp, dtype, backward, cm);
            op.flops = a.flops;
            op.bytes = a.bytes;
            op.time = sim::Time::from_seconds(a.seconds(cp));
            op.m = s / cp;
            op.n = s;
            op.k = d;
            op.batch = bh;
            return op;
        }
        op.flops = ComputeModel::fused_attention_flops(bh, s, d, true, backward);
        op.bytes = ComputeModel::fused_attention_bytes(bh, s, d, dtype, backward);
        op.time = cm.fused_attention(bh, s, d, dtype, true, backward);
        op.m = s;
        op.n = s;
        op.k = d;
        op.batch = bh;
        return op;
    }
    /// The next op's index in `pass` (what a collective issued now is `after` of, plus one).
    static int next(const PassWork& pass) { return pass.ops.count(); }
};

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

void add_collective(LayerWork& w, std::string_view name, TpOp op, Pass pass, std::int64_t bytes,
                    int after, int needed_by, bool regather = false) {
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

void check_config(const ModelSpec& m, const LayerConfig& cfg) {
    check_tensor_parallel(m, cfg.tp, cfg.sequence_parallel && cfg.tp > 1);
    check_context_parallel(m, cfg.cp, cfg.tp, cfg.sequence_parallel);
    if (cfg.micro_batch < 1)
        throw InputError("micro-batch size must be at least 1, got " +
                         std::to_string(cfg.micro_batch));
}

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
    std::int64_t moe_act = 0; ///< moe_act: the routed experts' activation outputs
    std::int64_t shared = 0;  ///< shared_experts: inside the shared experts
};

TransformerActivations transformer_activations(const Ctx& c) {
    const ModelSpec& m = c.m;
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
    const std::int64_t qkv_input = c.saved_input * col_input;
    const std::int64_t qkv = e * T * m.qkv_out() / c.t;
    if (m.attention == AttentionKind::unfused) {
        // softmax output; with dropout also its mask (1 byte) and output, which feeds A.V
        a.attention_core = bh * c.s * c.s * (drop ? 2 * e + 1 : e);
    }
    const std::int64_t lse = m.attention == AttentionKind::flash ? 4 * bh * c.s / c.cp : 0;
    const std::int64_t proj_input = c.saved_input * T * c.h / c.t;
    const std::int64_t masks = drop ? 2 * sharded : 0; // the two hidden dropouts
    const std::int64_t post_norm_input = e * sharded;
    // (A layer with experts keeps its MLP input as Megatron-Core does: sharded.)
    const std::int64_t fc1_input = c.saved_input * (c.moe || c.a2a ? sharded : col_input);
    std::int64_t mlp = 0;
    a.pre_mlp_norm_output = c.saved_input * sharded;
    if (c.a2a) {
        // The router's fp32 probabilities (local tokens), the permuted copies this GPU sent
        // (the combine's weighted sum needs them for the probabilities' gradient), and for
        // every copy its experts compute (the busiest GPU's): the fc1 input, the activation's
        // and fc2's inputs (1/etp of the columns); the shared experts like a dense MLP.
        const std::int64_t N = c.a2a_computed();
        a.moe_act = c.saved_input * N * m.moe_ffn_hidden_size / c.etp;
        mlp = 4 * T / c.sp_div * m.num_experts + e * c.a2a_sent() * c.h + c.saved_input * N * c.h +
              e * N * m.expert_fc1_out() / c.etp + a.moe_act;
        if (m.moe_shared_expert_intermediate_size > 0) {
            a.shared = e * T * m.shared_fc1_out() / c.t +
                       c.saved_input * T * m.moe_shared_expert_intermediate_size / c.t;
            mlp += c.saved_input * sharded + a.shared;
        }
    } else if (!c.moe) {
        // activation and fc2 inputs
        mlp = e * T * m.fc1_out() / c.t + c.saved_input * T * m.ffn / c.t;
    } else {
        // The router's fp32 probabilities over the experts (local tokens); the permuted token
        // copies (the experts' fc1 input), the activation and fc2 inputs of every copy, and
        // the experts' outputs, which the weighted combine needs for the gradient of the
        // routing probabilities; the shared experts like a dense MLP.
        const std::int64_t N = c.tokens_per_expert() * m.num_experts;
        a.moe_act = c.saved_input * N * m.moe_ffn_hidden_size / c.t;
        mlp = 4 * T / c.sp_div * m.num_experts + c.saved_input * N * c.h +
              e * N * m.expert_fc1_out() / c.t + a.moe_act + e * N * c.h;
        if (m.moe_shared_expert_intermediate_size > 0) {
            a.shared = e * T * m.shared_fc1_out() / c.t +
                       c.saved_input * T * m.moe_shared_expert_intermediate_size / c.t;
            mlp += c.saved_input * sharded + a.shared;
        }
    }
    a.mlp = mlp;
    if (m.is_mla())
        a.all += masks + post_norm_input + fc1_input + mlp;
    else
        a.all = a.layer_input + qkv_input + qkv + a.attention_core + lse + proj_input + masks +
                post_norm_input + fc1_input + mlp;
    return a;
}

/// The MLP block of a layer with experts, forward, after the second norm (op `ln2`), as
/// Megatron-Core's MoELayer runs it without expert parallelism (the all-gather token
/// dispatcher): the router on this rank's tokens (a GEMM to the expert logits, then softmax and
/// top-k in fp32), the tokens gathered over the tensor-parallel ranks (sequence parallelism),
/// permuted into expert order (one copy per routed expert), a grouped GEMM per expert matrix
/// over the local experts (each with its share of the tokens and 1/t of its columns), the
/// combine (unpermute: the copies weighted by their probabilities and summed per token), the
/// shared experts as a dense MLP on the same tokens, and the partial sums reduced over the
/// tensor-parallel ranks as after a dense MLP.
void moe_forward(const Ctx& c, LayerWork& w, int ln2) {
    const ModelSpec& m = c.m;
    PassWork& F = w.forward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t local = T / c.sp_div;
    const std::int64_t E = m.num_experts;
    const std::int64_t N = c.tokens_per_expert() * E;
    const std::int64_t fe = m.moe_ffn_hidden_size / c.t;
    const std::int64_t fs = m.moe_shared_expert_intermediate_size / c.t;
    const bool swiglu = m.activation == Activation::swiglu;
    const std::int64_t comm = T * c.h * e;
    F.add(c.gemm("moe.router", local, E, c.h));
    // Logits cast to fp32, softmax read and written, top-k read: the indices and
    // probabilities written are k per token.
    const int topk = F.add(
        c.memory("moe.router.topk", local * E * (e + 4 + 8 + 4) + local * m.moe_router_topk * 12));
    (void)ln2;
    const int permute = F.add(c.memory("moe.permute", T * c.h * e + N * c.h * e));
    if (c.t > 1 && c.sp)
        add_collective(w, "moe.all_gather", TpOp::all_gather, Pass::forward, comm, topk, permute);
    F.add(c.gemm("moe.experts.fc1", c.tokens_per_expert(), m.expert_fc1_out() / c.t, c.h, E));
    F.add(c.memory(swiglu ? "moe.experts.swiglu" : "moe.experts.gelu",
                   (swiglu ? 3 : 2) * N * fe * e));
    F.add(c.gemm("moe.experts.fc2", c.tokens_per_expert(), c.h, fe, E));
    int last = F.add(c.memory("moe.unpermute", N * c.h * e + N * 4 + T * c.h * e));
    if (fs > 0) {
        F.add(c.gemm("moe.shared.fc1", T, m.shared_fc1_out() / c.t, c.h));
        F.add(c.memory(swiglu ? "moe.shared.swiglu" : "moe.shared.gelu",
                       (swiglu ? 3 : 2) * T * fs * e));
        F.add(c.gemm("moe.shared.fc2", T, c.h, fs));
        last = F.add(c.memory("moe.shared.add", 3 * T * c.h * e));
    }
    if (c.t > 1)
        add_collective(w, c.sp ? "moe.reduce_scatter" : "moe.all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::forward, comm, last,
                       last + 1);
}

/// The shared experts' backward (moe_backward and moe_a2a_backward): fc2's gradients, the
/// activation's, the sequence-parallel regather of fc1's input, fc1's gradients. Returns the
/// index of fc1's data-gradient GEMM.
int shared_expert_backward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& B = w.backward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t fs = m.moe_shared_expert_intermediate_size / c.t;
    const bool swiglu = m.activation == Activation::swiglu;
    B.add(c.gemm("moe.shared.fc2.dgrad", T, fs, c.h));
    B.add(c.gemm("moe.shared.fc2.wgrad", fs, c.h, T));
    B.add(c.memory(swiglu ? "moe.shared.swiglu.bwd" : "moe.shared.gelu.bwd",
                   (swiglu ? 5 : 3) * T * fs * e));
    const int i = Ctx::next(B);
    if (c.t > 1 && c.sp)
        add_collective(w, "moe.shared.fc1.regather", TpOp::all_gather, Pass::backward, T * c.h * e,
                       i - 1, i + 1, true);
    const int dgrad = B.add(c.gemm("moe.shared.fc1.dgrad", T, c.h, m.shared_fc1_out() / c.t));
    B.add(c.gemm("moe.shared.fc1.wgrad", c.h, m.shared_fc1_out() / c.t, T));
    return dgrad;
}

/// Its backward, in reverse: the shared experts, the combine, the experts' data and weight
/// gradients, the permutation (a scatter-add of the copies' gradients per token), whose
/// partial sums are reduced over the tensor-parallel ranks while the router's top-k and GEMM
/// backward run on the local tokens.
void moe_backward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& B = w.backward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t local = T / c.sp_div;
    const std::int64_t E = m.num_experts;
    const std::int64_t M = c.tokens_per_expert();
    const std::int64_t N = M * E;
    const std::int64_t fe = m.moe_ffn_hidden_size / c.t;
    const std::int64_t fs = m.moe_shared_expert_intermediate_size / c.t;
    const bool swiglu = m.activation == Activation::swiglu;
    const std::int64_t comm = T * c.h * e;
    const int i = Ctx::next(B);
    if (c.t > 1 && c.sp) // backward of the reduce-scatter
        add_collective(w, "moe.grad_all_gather", TpOp::all_gather, Pass::backward, comm, i - 1, i);
    if (fs > 0)
        shared_expert_backward(c, w);
    // The copies' gradients (weighted by the probabilities) and the probabilities' gradients
    // (a dot product of each copy's output with its incoming gradient).
    B.add(c.memory("moe.unpermute.bwd", T * c.h * e + 2 * N * c.h * e + N * 4));
    B.add(c.gemm("moe.experts.fc2.dgrad", M, fe, c.h, E));
    B.add(c.gemm("moe.experts.fc2.wgrad", fe, c.h, M, E));
    B.add(c.memory(swiglu ? "moe.experts.swiglu.bwd" : "moe.experts.gelu.bwd",
                   (swiglu ? 5 : 3) * N * fe * e));
    B.add(c.gemm("moe.experts.fc1.dgrad", M, c.h, m.expert_fc1_out() / c.t, E));
    B.add(c.gemm("moe.experts.fc1.wgrad", c.h, m.expert_fc1_out() / c.t, M, E));
    const int scatter = B.add(c.memory("moe.permute.bwd", N * c.h * e + 2 * T * c.h * e));
    B.add(
        c.memory("moe.router.topk.bwd", local * E * (4 + 4 + e) + local * m.moe_router_topk * 12));
    B.add(c.gemm("moe.router.dgrad", local, c.h, E));
    B.add(c.gemm("moe.router.wgrad", c.h, E, local));
    if (c.t > 1)
        add_collective(w, c.sp ? "moe.grad_reduce_scatter" : "moe.grad_all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, comm,
                       scatter, Ctx::next(B));
}

void add_group_collective(LayerWork& w, std::string_view name, TpOp op, CommGroup group, Pass pass,
                          std::int64_t bytes, int after, int needed_by) {
    add_collective(w, name, op, pass, bytes, after, needed_by);
    w.collectives[w.collectives.size() - 1].group = group;
}

/// The sizes both passes of the alltoall dispatcher use, per GPU of the expert-parallel group.
struct A2aSizes {
    std::int64_t elem;    ///< bytes per element
    std::int64_t tokens;  ///< this rank's tokens (its sequence shard)
    std::int64_t local;   ///< of them, those this GPU routes (sequence-parallel shard)
    std::int64_t experts; ///< num_experts
    std::int64_t local_experts;
    std::int64_t sent;     ///< token copies dispatched
    std::int64_t computed; ///< copies the busiest GPU's experts compute
    std::int64_t per_expert;
    std::int64_t expert_ffn; ///< moe_ffn_hidden_size / etp
    std::int64_t shared_ffn; ///< shared experts' intermediate size / tp
    bool swiglu;
    std::int64_t a2a_bytes; ///< received by the busiest GPU in one all-to-all
    std::int64_t etp_bytes; ///< of one etp all-gather or reduce-scatter
    CommGroup a2a_group;    ///< where the all-to-alls run
};

/// Bytes of one dispatch or combine all-to-all as the busiest GPU sees them: with the alltoall
/// dispatcher one copy per (token, expert) it receives; with the flex dispatcher (DeepEP) one
/// per (token, destination node) over its rail across nodes, or per (token, destination GPU)
/// inside one, times the same imbalance factor.
std::int64_t a2a_bytes(const Ctx& c) {
    if (!c.cfg.flex_dispatcher)
        return c.a2a_received() * c.h * c.elem;
    const std::int64_t local = c.tokens / c.sp_div;
    const double factor =
        static_cast<double>(c.a2a_received()) / static_cast<double>(local * c.m.moe_router_topk);
    const std::int64_t bytes =
        flex_dispatch_bytes(c.m, static_cast<int>(c.ep), c.cfg.ep_nodes, local, c.dtype);
    return static_cast<std::int64_t>(static_cast<double>(bytes) * factor);
}

A2aSizes a2a_sizes(const Ctx& c) {
    const ModelSpec& m = c.m;
    const std::int64_t e = c.elem;
    const std::int64_t N = c.a2a_computed();
    return {e,
            c.tokens,
            c.tokens / c.sp_div,
            m.num_experts,
            c.local_experts(),
            c.a2a_sent(),
            N,
            c.a2a_per_expert(),
            m.moe_ffn_hidden_size / c.etp,
            m.moe_shared_expert_intermediate_size / c.t,
            m.activation == Activation::swiglu,
            a2a_bytes(c),
            N * c.h * e,
            c.cfg.flex_dispatcher && c.cfg.ep_nodes > 1 ? CommGroup::ep_rail : CommGroup::ep};
}

/// The MLP block of a layer with experts laid out apart (ep > 1 or etp != tp), forward, as
/// Megatron-Core's MoELayer runs it with the alltoall token dispatcher
/// (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher): the router
/// on this GPU's tokens (its sequence shard), the copies permuted into expert order, the
/// dispatch all-to-all over the expert-parallel group, the received copies gathered over the
/// expert tensor-parallel group (etp > 1) and sorted by local expert (more than one local
/// expert), the grouped GEMMs of the num_experts / ep local experts with 1/etp of their
/// columns, and the way back: unsorted, reduce-scattered over etp, the combine all-to-all, the
/// weighted sum per token. The busiest GPU sets the pace: its experts compute
/// moe_load_imbalance times the mean, and every all-to-all is timed at the volume it receives
/// (its port is the most loaded). The collectives run on the compute stream in Megatron
/// (nothing overlaps them): the next kernel waits. The shared experts follow as a
/// tensor-parallel dense MLP on the same tokens.
void moe_a2a_forward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& F = w.forward;
    const auto [e, T, local, E, L, sent, N, M, fe, fs, swiglu, a2a_bytes, etp_bytes, group] =
        a2a_sizes(c);
    F.add(c.gemm("moe.router", local, E, c.h));
    F.add(
        c.memory("moe.router.topk", local * E * (e + 4 + 8 + 4) + local * m.moe_router_topk * 12));
    const int permute = F.add(c.memory("moe.permute", local * c.h * e + sent * c.h * e));
    int next = Ctx::next(F);
    if (c.ep > 1)
        add_group_collective(w, "moe.dispatch", TpOp::all_to_all, group, Pass::forward, a2a_bytes,
                             permute, next);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_all_gather", TpOp::all_gather, CommGroup::etp,
                             Pass::forward, etp_bytes, permute, next);
    if (L > 1)
        F.add(c.memory("moe.sort_chunks", 2 * N * c.h * e));
    F.add(c.gemm("moe.experts.fc1", M, m.expert_fc1_out() / c.etp, c.h, L));
    F.add(c.memory(swiglu ? "moe.experts.swiglu" : "moe.experts.gelu",
                   (swiglu ? 3 : 2) * N * fe * e));
    int last = F.add(c.gemm("moe.experts.fc2", M, c.h, fe, L));
    if (L > 1)
        last = F.add(c.memory("moe.unsort_chunks", 2 * N * c.h * e));
    next = Ctx::next(F);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_reduce_scatter", TpOp::reduce_scatter, CommGroup::etp,
                             Pass::forward, etp_bytes, last, next);
    if (c.ep > 1)
        add_group_collective(w, "moe.combine", TpOp::all_to_all, group, Pass::forward, a2a_bytes,
                             last, next);
    const int unpermute =
        F.add(c.memory("moe.unpermute", sent * c.h * e + sent * 4 + local * c.h * e));
    if (fs > 0) {
        const std::int64_t comm = T * c.h * e;
        const int fc1 = F.add(c.gemm("moe.shared.fc1", T, m.shared_fc1_out() / c.t, c.h));
        if (c.t > 1 && c.sp)
            add_collective(w, "moe.shared.all_gather", TpOp::all_gather, Pass::forward, comm,
                           unpermute, fc1);
        F.add(c.memory(swiglu ? "moe.shared.swiglu" : "moe.shared.gelu",
                       (swiglu ? 3 : 2) * T * fs * e));
        const int fc2 = F.add(c.gemm("moe.shared.fc2", T, c.h, fs));
        if (c.t > 1)
            add_collective(w, c.sp ? "moe.shared.reduce_scatter" : "moe.shared.all_reduce",
                           c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::forward, comm, fc2,
                           fc2 + 1);
        F.add(c.memory("moe.shared.add", 3 * local * c.h * e));
    }
}

/// Its backward, in reverse: the shared experts (their input gradient reduced over the
/// tensor-parallel ranks while the routed experts run), the weighted sum, the combine's
/// all-to-all reversed (copies' gradients back to the experts' GPUs) and the etp all-gather of
/// the reduce-scatter, the experts' data and weight gradients, then the etp reduce-scatter and
/// the dispatch's all-to-all reversed, the permutation's scatter-add and the router.
void moe_a2a_backward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& B = w.backward;
    const auto [e, T, local, E, L, sent, N, M, fe, fs, swiglu, a2a_bytes, etp_bytes, group] =
        a2a_sizes(c);
    const std::int64_t comm = T * c.h * e;
    int shared_dgrad = -1;
    if (fs > 0) {
        const int i = Ctx::next(B);
        if (c.t > 1 && c.sp) // backward of the reduce-scatter
            add_collective(w, "moe.shared.grad_all_gather", TpOp::all_gather, Pass::backward, comm,
                           i - 1, i);
        shared_dgrad = shared_expert_backward(c, w);
    }
    const int unpermute =
        B.add(c.memory("moe.unpermute.bwd", local * c.h * e + 2 * sent * c.h * e + sent * 4));
    int next = Ctx::next(B);
    if (c.ep > 1)
        add_group_collective(w, "moe.combine.bwd", TpOp::all_to_all, group, Pass::backward,
                             a2a_bytes, unpermute, next);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_grad_all_gather", TpOp::all_gather, CommGroup::etp,
                             Pass::backward, etp_bytes, unpermute, next);
    if (L > 1)
        B.add(c.memory("moe.unsort_chunks.bwd", 2 * N * c.h * e));
    B.add(c.gemm("moe.experts.fc2.dgrad", M, fe, c.h, L));
    B.add(c.gemm("moe.experts.fc2.wgrad", fe, c.h, M, L));
    B.add(c.memory(swiglu ? "moe.experts.swiglu.bwd" : "moe.experts.gelu.bwd",
                   (swiglu ? 5 : 3) * N * fe * e));
    B.add(c.gemm("moe.experts.fc1.dgrad", M, c.h, m.expert_fc1_out() / c.etp, L));
    int last = B.add(c.gemm("moe.experts.fc1.wgrad", c.h, m.expert_fc1_out() / c.etp, M, L));
    if (L > 1)
        last = B.add(c.memory("moe.sort_chunks.bwd", 2 * N * c.h * e));
    next = Ctx::next(B);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_grad_reduce_scatter", TpOp::reduce_scatter, CommGroup::etp,
                             Pass::backward, etp_bytes, last, next);
    if (c.ep > 1)
        add_group_collective(w, "moe.dispatch.bwd", TpOp::all_to_all, group, Pass::backward,
                             a2a_bytes, last, next);
    B.add(c.memory("moe.permute.bwd", sent * c.h * e + 2 * local * c.h * e));
    B.add(
        c.memory("moe.router.topk.bwd", local * E * (4 + 4 + e) + local * m.moe_router_topk * 12));
    B.add(c.gemm("moe.router.dgrad", local, c.h, E));
    B.add(c.gemm("moe.router.wgrad", c.h, E, local));
    if (shared_dgrad >= 0 && c.t > 1)
        add_collective(
            w, c.sp ? "moe.shared.fc1.grad_reduce_scatter" : "moe.shared.fc1.grad_all_reduce",
            c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, comm, shared_dgrad,
            Ctx::next(B));
}

/// Parameters of a layer with experts laid out apart on one GPU: attention, norms, router and
/// shared experts as without expert parallelism (split over tp; the router replicated), and the
/// num_experts / ep local experts split over etp. Returns {all, routed experts'}.
std::pair<std::int64_t, std::int64_t> moe_a2a_parameters(const Ctx& c) {
    const ModelSpec& m = c.m;
    ModelSpec attention_only = m;
    attention_only.ffn = 0;
    const std::int64_t h = m.hidden;
    const std::int64_t shared =
        h * m.shared_fc1_out() + std::int64_t{m.moe_shared_expert_intermediate_size} * h;
    const std::int64_t experts =
        routed_expert_parameters_per_rank(m, c.cfg.ep, c.cfg.etp > 0 ? c.cfg.etp : c.cfg.tp);
    const std::int64_t dense = layer_parameters_per_rank(attention_only, c.cfg.tp) +
                               std::int64_t{m.num_experts} * h + shared / c.t;
    return {dense + experts, experts};
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
    const std::int64_t latent = std::int64_t{m.q_lora_rank} + m.kv_lora_rank + rope;
    (void)ln1;
    F.add(c.gemm("attention.q_down", local, m.q_lora_rank, c.h));
    const int kv_down = F.add(c.gemm("attention.kv_down", local, m.kv_lora_rank + rope, c.h));
    const int q_norm = F.add(c.memory("attention.q_norm", 2 * T * m.q_lora_rank * e));
    if (c.t > 1 && c.sp)
        add_collective(w, "attention.latent_all_gather", TpOp::all_gather, Pass::forward,
                       T * latent * e, kv_down, q_norm);
    F.add(c.gemm("attention.q_up", T, a * qk, m.q_lora_rank));
    F.add(c.memory("attention.kv_norm", 2 * T * m.kv_lora_rank * e));
    F.add(c.gemm("attention.kv_up", T, a * (m.qk_head_dim + m.v_head_dim), m.kv_lora_rank));
    // Rotary parts of the queries (per head) and of the shared key, read and written; then the
    // queries and keys of every head written whole for the attention kernel (each element
    // read once and written once).
    F.add(c.memory("attention.rope", 2 * T * (a + 1) * rope * e));
    F.add(c.memory("attention.mla_assemble", 2 * 2 * T * a * qk * e));
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
    const std::int64_t latent = std::int64_t{m.q_lora_rank} + m.kv_lora_rank + rope;
    int i = Ctx::next(B);
    if (c.t > 1 && c.sp)
        add_collective(w, "attention.grad_all_gather", TpOp::all_gather, Pass::backward,
                       T * c.h * e, i - 1, i);
    B.add(c.gemm("attention.proj.dgrad", T, a * m.v_head_dim, c.h));
    B.add(c.gemm("attention.proj.wgrad", a * m.v_head_dim, c.h, T));
    B.add(c.flash("attention.flash.bwd", true, (qk + m.v_head_dim) / 2));
    B.add(c.memory("attention.mla_assemble.bwd", 2 * 2 * T * a * qk * e));
    B.add(c.memory("attention.rope.bwd", 2 * T * (a + 1) * rope * e));
    B.add(c.gemm("attention.kv_up.dgrad", T, m.kv_lora_rank, kv_up));
    B.add(c.gemm("attention.kv_up.wgrad", m.kv_lora_rank, kv_up, T));
    B.add(c.memory("attention.kv_norm.bwd", 4 * T * m.kv_lora_rank * e));
    B.add(c.gemm("attention.q_up.dgrad", T, m.q_lora_rank, a * qk));
    B.add(c.gemm("attention.q_up.wgrad", m.q_lora_rank, a * qk, T));
    const int q_norm = B.add(c.memory("attention.q_norm.bwd", 4 * T * m.q_lora_rank * e));
    i = Ctx::next(B);
    if (c.t > 1)
        add_collective(
            w, c.sp ? "attention.latent_grad_reduce_scatter" : "attention.latent_grad_all_reduce",
            c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, T * latent * e, q_norm,
            i);
    B.add(c.gemm("attention.kv_down.dgrad", local, c.h, m.kv_lora_rank + rope));
    B.add(c.gemm("attention.kv_down.wgrad", c.h, m.kv_lora_rank + rope, local));
    B.add(c.gemm("attention.q_down.dgrad", local, c.h, m.q_lora_rank));
    B.add(c.gemm("attention.q_down.wgrad", c.h, m.q_lora_rank, local));
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

/// Where a layer's forward puts what the recompute modules cover.
struct ModuleOps {
    int core_begin, core_end; ///< the core attention
    int mlp_begin, mlp_end;   ///< the MLP block: dense MLP or mixture of experts, shared included
};

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
        recompute_range(w, forward_op(w, "attention.q_norm"), forward_op(w, "attention.flash"),
                        true);
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
            const int a = forward_op(w, swiglu ? "moe.experts.swiglu" : "moe.experts.gelu");
            recompute_range(w, a, a + 1, false);
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
    }
    w.activation_bytes = act.all - dropped;
    w.recomputed_activation_bytes = dropped;
}

LayerWork transformer_layer(const Ctx& c) {
    const ModelSpec& m = c.m;
    LayerWork w;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t sharded = T * c.h / c.sp_div;
    const std::int64_t bh = c.b * m.heads / c.t;
    const std::int64_t d = m.head_dim();
    const std::int64_t qkv_n = m.qkv_out() / c.t;
    const std::int64_t fc1_n = m.fc1_out() / c.t;
    const std::int64_t f = m.ffn / c.t;
    const bool drop = m.dropout > 0;
    const bool flash = m.attention == AttentionKind::flash;
    const bool swiglu = m.activation == Activation::swiglu;
    const bool rope = m.position_embedding == PositionEmbedding::rope;
    const bool tp = c.t > 1;
    const std::int64_t scores = bh * c.s * c.s; // attention score elements, unfused
    const bool fused_softmax =
        c.cfg.fusions.masked_softmax_fusion && megatron_fused_softmax(bh, c.s, c.s, c.dtype);
    const Fusions& fuse = c.cfg.fusions;
    const bool norm_eager = !fuse.norm_fusion && m.norm == Norm::rmsnorm;
    const bool rope_eager = !fuse.apply_rope_fusion && rope && !m.is_mla();
    const bool swiglu_eager = !fuse.bias_activation_fusion && swiglu;
    const std::int64_t q_elems = T * m.heads * d / c.t;
    const std::int64_t kv_elems = T * std::int64_t{m.kv_heads} * d / c.t;
    const std::int64_t gathered = T * c.h; // the projections' input
    const std::int64_t comm = T * c.h * e; // every TP collective: s b h elements
    const TpOp exit_op = c.sp ? TpOp::reduce_scatter : TpOp::all_reduce;
    // Residual branch end: bias + dropout + residual add fused (Megatron), or the add alone.
    const std::int64_t branch_end_bytes = drop ? sharded * (3 * e + 1) : 3 * sharded * e;
    const std::string_view attn_end =
        drop ? "attention.bias_dropout_add" : "attention.residual_add";
    const std::string_view mlp_end = drop ? "mlp.bias_dropout_add" : "mlp.residual_add";

    // Rotary embedding (Su et al. 2021) rotates Q and K in place: one elementwise pass that
    // reads and writes the query and key heads of this rank (Transformer Engine's fused RoPE;
    // the cos/sin table is s x d, negligible). Its backward rotates dQ and dK back.
    const std::int64_t rope_bytes = 2 * T * (m.heads + std::int64_t{m.kv_heads}) * d / c.t * e;

    // ---- forward
    PassWork& F = w.forward;
    const int ln1 = F.add(norm_eager ? eager_rmsnorm(c, "input_layernorm", sharded)
                                     : c.memory("input_layernorm", 2 * sharded * e));
    int core_begin = 0;
    int core_end = 0;
    if (m.is_mla()) {
        mla_forward(c, w, ln1);
        core_begin = core_end = Ctx::next(F);
    } else {
        const int qkv = F.add(c.gemm("attention.qkv", T, qkv_n, c.h));
        if (tp && c.sp)
            add_collective(w, "attention.all_gather", TpOp::all_gather, Pass::forward, comm, ln1,
                           qkv);
        if (rope)
            F.add(rope_eager ? eager_rope(c, "attention.rope", q_elems, kv_elems)
                             : c.memory("attention.rope", rope_bytes));
        core_begin = Ctx::next(F);
        if (flash) {
            F.add(c.flash("attention.flash", false));
        } else {
            F.add(c.gemm("attention.scores", c.s, c.s, d, bh)); // Q K^T
            if (fused_softmax) {
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
        core_end = Ctx::next(F);
        const int proj = F.add(c.gemm("attention.proj", T, c.h, c.h / c.t));
        if (tp)
            add_collective(w, c.sp ? "attention.reduce_scatter" : "attention.all_reduce", exit_op,
                           Pass::forward, comm, proj, proj + 1);
    }
    F.add(c.memory(attn_end, branch_end_bytes));
    const int ln2 = F.add(norm_eager ? eager_rmsnorm(c, "post_attention_layernorm", sharded)
                                     : c.memory("post_attention_layernorm", 2 * sharded * e));
    const int mlp_begin = Ctx::next(F);
    if (c.a2a) {
        moe_a2a_forward(c, w);
    } else if (c.moe) {
        moe_forward(c, w, ln2);
    } else {
        const int fc1 = F.add(c.gemm("mlp.fc1", T, fc1_n, c.h));
        if (tp && c.sp)
            add_collective(w, "mlp.all_gather", TpOp::all_gather, Pass::forward, comm, ln2, fc1);
        F.add(swiglu_eager
                  ? eager_swiglu(c, "mlp.swiglu", T * f)
                  : c.memory(swiglu ? "mlp.swiglu" : "mlp.gelu", (swiglu ? 3 : 2) * T * f * e));
        const int fc2 = F.add(c.gemm("mlp.fc2", T, c.h, f));
        if (tp)
            add_collective(w, c.sp ? "mlp.reduce_scatter" : "mlp.all_reduce", exit_op,
                           Pass::forward, comm, fc2, fc2 + 1);
    }
    const int mlp_stop = F.add(c.memory(mlp_end, branch_end_bytes));

    // ---- backward (reverse order; data gradient, then weight gradient, of every GEMM)
    PassWork& B = w.backward;
    if (drop)
        B.add(c.memory("mlp.dropout.bwd", sharded * (2 * e + 1)));
    int i = Ctx::next(B);
    if (c.a2a) {
        moe_a2a_backward(c, w);
    } else if (c.moe) {
        moe_backward(c, w);
    } else {
        if (tp && c.sp) // backward of the reduce-scatter
            add_collective(w, "mlp.grad_all_gather", TpOp::all_gather, Pass::backward, comm, i - 1,
                           i);
        B.add(c.gemm("mlp.fc2.dgrad", T, f, c.h));
        B.add(c.gemm("mlp.fc2.wgrad", f, c.h, T));
        B.add(swiglu_eager ? eager_swiglu_backward(c, "mlp.swiglu.bwd", T * f)
                           : c.memory(swiglu ? "mlp.swiglu.bwd" : "mlp.gelu.bwd",
                                      (swiglu ? 5 : 3) * T * f * e));
        i = Ctx::next(B);
        if (tp && c.sp && !c.cfg.dtensor_tp)
            add_collective(w, "mlp.fc1.regather", TpOp::all_gather, Pass::backward, comm, i - 1,
                           i + 1, true);
        B.add(c.gemm("mlp.fc1.dgrad", T, c.h, fc1_n));
        B.add(c.gemm("mlp.fc1.wgrad", c.h, fc1_n, T));
        if (tp)
            add_collective(w, c.sp ? "mlp.fc1.grad_reduce_scatter" : "mlp.fc1.grad_all_reduce",
                           exit_op, Pass::backward, comm, c.cfg.dtensor_tp ? i + 1 : i, i + 2);
    }
    // The norm's backward also accumulates the residual stream's gradient (4 passes).
    // (Eager: w1 and w3 take the norm's output, whose two gradients autograd sums; the MLP
    // with experts is not torchtitan's dense block.)
    B.add(norm_eager ? eager_rmsnorm_backward(c, "post_attention_layernorm.bwd", sharded, gathered,
                                              c.moe || !swiglu ? 1 : 2)
                     : c.memory("post_attention_layernorm.bwd", 4 * sharded * e));
    if (drop)
        B.add(c.memory("attention.dropout_add.bwd", sharded * (2 * e + 1)));
    if (m.is_mla()) {
        mla_backward(c, w);
    } else {
        i = Ctx::next(B);
        if (tp && c.sp)
            add_collective(w, "attention.grad_all_gather", TpOp::all_gather, Pass::backward, comm,
                           i - 1, i);
        B.add(c.gemm("attention.proj.dgrad", T, c.h / c.t, c.h));
        B.add(c.gemm("attention.proj.wgrad", c.h / c.t, c.h, T));
        if (flash) {
            B.add(c.flash("attention.flash.bwd", true));
        } else {
            B.add(c.gemm("attention.context.dgrad_probs", c.s, c.s, d, bh));  // dP = dO V^T
            B.add(c.gemm("attention.context.dgrad_values", c.s, d, c.s, bh)); // dV = P^T dO
            if (drop)
                B.add(c.memory("attention.dropout.bwd", bh * c.s * c.s * (2 * e + 1)));
            if (fused_softmax) {
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
        if (rope)
            B.add(rope_eager ? eager_rope_backward(c, "attention.rope.bwd", q_elems, kv_elems)
                             : c.memory("attention.rope.bwd", rope_bytes));
        i = Ctx::next(B);
        if (tp && c.sp && !c.cfg.dtensor_tp)
            add_collective(w, "attention.qkv.regather", TpOp::all_gather, Pass::backward, comm,
                           i - 1, i + 1, true);
        B.add(c.gemm("attention.qkv.dgrad", T, c.h, qkv_n));
        B.add(c.gemm("attention.qkv.wgrad", c.h, qkv_n, T));
        if (tp)
            add_collective(
                w, c.sp ? "attention.qkv.grad_reduce_scatter" : "attention.qkv.grad_all_reduce",
                exit_op, Pass::backward, comm, c.cfg.dtensor_tp ? i + 1 : i, i + 2);
    }
    // (Eager: wq, wk and wv take the norm's output: three gradients summed.)
    B.add(norm_eager ? eager_rmsnorm_backward(c, "input_layernorm.bwd", sharded, gathered,
                                              m.is_mla() ? 1 : 3)
                     : c.memory("input_layernorm.bwd", 4 * sharded * e));

    // ---- recompute and activations
    const TransformerActivations act = transformer_activations(c);
    switch (c.cfg.recompute) {
    case Recompute::none:
        w.activation_bytes = act.all;
        break;
    case Recompute::selective:
        if (c.cfg.selective_op && !m.is_mla() && !c.moe && !c.a2a) {
            // torchtitan's op-level selective checkpointing (LayerConfig::selective_op): every
            // elementwise and normalisation op again, and every second matmul of the block in
            // the order its forward calls them (models/llama3/model.py: wq, wk, wv, wo, then
            // w1, w3, w2 for SwiGLU, or fc1, fc2). SDPA's output is saved: no attention again.
            // Memory is counted as Megatron's selective (all activations kept): a bound.
            for (const Op& op : F.ops)
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
                                {"attention.proj", c.h, c.h / c.t}};
            if (swiglu)
                mms.insert(mms.end(), {{"mlp.w1", f, c.h}, {"mlp.w3", f, c.h}, {"mlp.w2", c.h, f}});
            else
                mms.insert(mms.end(), {{"mlp.fc1", f, c.h}, {"mlp.fc2", c.h, f}});
            for (std::size_t k = 1; k < mms.size(); k += 2)
                w.recompute.add(c.gemm(mms[k].name, T, mms[k].n, mms[k].k));
        }
        if (c.cfg.selective_op) {
            for (int k = core_begin; k < core_end && !flash; ++k)
                w.recompute.add(F.ops[static_cast<std::size_t>(k)]);
            w.activation_bytes = act.all - act.attention_core;
            w.recomputed_activation_bytes = act.attention_core;
            break;
        }
        selective_recompute(c, w, act, {core_begin, core_end, mlp_begin, mlp_stop});
        break;
    case Recompute::full: {
        for (const Op& op : F.ops)
            w.recompute.add(op);
        const std::size_t n = w.collectives.size();
        for (std::size_t k = 0; k < n; ++k) {
            if (w.collectives[k].pass != Pass::forward)
                continue;
            TpCollective again = w.collectives[k];
            again.pass = Pass::recompute;
            w.collectives.push_back(again);
        }
        w.activation_bytes = act.layer_input;
        w.recomputed_activation_bytes = act.all - act.layer_input;
        break;
    }
    }
    w.parameters =
        c.moe ? moe_layer_parameters_per_rank(m, c.cfg.tp) : layer_parameters_per_rank(m, c.cfg.tp);
    if (c.a2a)
        std::tie(w.parameters, w.expert_parameters) = moe_a2a_parameters(c);
    return w;
}

/// The lecture's MLP layer, x = gelu(x @ W), each rank holding W[:, dim/t].
LayerWork mlp_layer(const Ctx& c) {
    LayerWork w;
    const std::int64_t e = c.elem;
    const std::int64_t rows = c.b;
    const std::int64_t n = c.h / c.t;
    const bool tp = c.t > 1;
    const std::int64_t gathered = rows * c.h * e;
    PassWork& F = w.forward;
    F.add(c.gemm("mlp.linear", rows, n, c.h));
    const int gelu = F.add(c.memory("mlp.gelu", 2 * rows * n * e));
    if (tp) // every rank needs the whole activation for the next layer
        add_collective(w, "mlp.all_gather", TpOp::all_gather, Pass::forward, gathered, gelu,
                       gelu + 1);
    PassWork& B = w.backward;
    B.add(c.memory("mlp.gelu.bwd", 3 * rows * n * e));
    const int dgrad = B.add(c.gemm("mlp.linear.dgrad", rows, c.h, n));
    B.add(c.gemm("mlp.linear.wgrad", c.h, n, rows));
    if (tp) // each rank's dgrad is a partial sum over its columns of W
        add_collective(w, "mlp.grad_all_reduce", TpOp::all_reduce, Pass::backward, gathered, dgrad,
                       B.ops.count());
    const std::int64_t input = rows * c.h * e;
    const std::int64_t gelu_input = rows * n * e;
    if (c.cfg.recompute == Recompute::full) {
        for (const Op& op : F.ops)
            w.recompute.add(op);
        if (tp)
            add_collective(w, "mlp.all_gather", TpOp::all_gather, Pass::recompute, gathered, gelu,
                           gelu + 1);
        w.activation_bytes = input;
        w.recomputed_activation_bytes = gelu_input;
    } else {
        w.activation_bytes = input + gelu_input;
    }
    w.parameters = layer_parameters_per_rank(c.m, c.cfg.tp);
    return w;
}

} // namespace

LayerWork layer_work(const ModelSpec& m, const LayerConfig& cfg, const ComputeModel& cm) {
    check_config(m, cfg);
    const Ctx c(m, cfg, cm);
    return m.is_transformer() ? transformer_layer(c) : mlp_layer(c);
}

LayerWork embedding_work(const ModelSpec& m, const LayerConfig& cfg, const ComputeModel& cm) {
    check_config(m, cfg);
    LayerWork w;
    if (!m.is_transformer())
        return w;
    const Ctx c(m, cfg, cm);
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t sharded = T * c.h / c.sp_div;
    const std::int64_t vocab_local = padded_vocab(m, cfg.tp) / c.t;
    const bool learned = m.position_embedding == PositionEmbedding::learned;
    const bool drop = m.dropout > 0;
    PassWork& F = w.forward;
    // Vocabulary-parallel lookup: each rank gathers the rows of its vocabulary shard (zeros
    // elsewhere); the partial embeddings are summed across the tensor-parallel ranks.
    const int lookup = F.add(c.memory("embedding.lookup", 2 * T * c.h * e));
    if (c.t > 1)
        add_collective(w, c.sp ? "embedding.reduce_scatter" : "embedding.all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::forward, T * c.h * e,
                       lookup, lookup + 1);
    if (learned)
        F.add(c.memory("embedding.position_add", 3 * sharded * e));
    if (drop)
        F.add(c.memory("embedding.dropout", sharded * (2 * e + 1)));
    PassWork& B = w.backward;
    if (drop)
        B.add(c.memory("embedding.dropout.bwd", sharded * (2 * e + 1)));
    const int grad = Ctx::next(B);
    if (c.t > 1 && c.sp)
        add_collective(w, "embedding.grad_all_gather", TpOp::all_gather, Pass::backward,
                       T * c.h * e, grad - 1, grad);
    // A dense gradient of the local vocabulary rows, accumulated into the fp32 main gradient.
    B.add(c.memory("embedding.wgrad", T * c.h * e + vocab_local * c.h * e));
    B.add(c.memory("embedding.grad_accumulate", vocab_local * c.h * (e + 8)));
    if (learned)
        B.add(c.memory("embedding.position_wgrad", sharded * e + std::int64_t{m.seq} * c.h * 8));
    w.activation_bytes = drop ? sharded : 0; // the dropout mask (1 byte per element)
    w.parameters = vocab_local * c.h + (learned ? std::int64_t{m.seq} * c.h : 0);
    return w;
}

LayerWork head_work(const ModelSpec& m, const LayerConfig& cfg, const ComputeModel& cm) {
    check_config(m, cfg);
    const Ctx c(m, cfg, cm);
    LayerWork w;
    const std::int64_t e = c.elem;
    if (!m.is_transformer()) {
        // mean(x^2) over the gathered output: a reduction, and its gradient 2x/n.
        const std::int64_t x = c.b * c.h * e;
        w.forward.add(c.memory("loss", x));
        w.backward.add(c.memory("loss.bwd", 2 * x));
        w.activation_bytes = x;
        return w;
    }
    const std::int64_t T = c.tokens;
    const std::int64_t sharded = T * c.h / c.sp_div;
    const std::int64_t vocab_local = padded_vocab(m, cfg.tp) / c.t;
    const std::int64_t comm = T * c.h * e;
    const bool tp = c.t > 1;
    PassWork& F = w.forward;
    const int norm = F.add(c.memory("final_layernorm", 2 * sharded * e));
    const int head = F.add(c.gemm("lm_head", T, vocab_local, c.h));
    if (tp && c.sp)
        add_collective(w, "lm_head.all_gather", TpOp::all_gather, Pass::forward, comm, norm, head);
    // Megatron's vocab_parallel_cross_entropy, kernel by kernel: it is not fused, and every
    // step is a pass over the fp32 logits [T, V/t]: the cast of the 16-bit logits to fp32, the
    // max over the vocabulary (all-reduced), its subtraction, the target logit picked per
    // token (all-reduced), exp, the sum of exponentials (all-reduced), and the division that
    // leaves the softmax kept for the backward; then the loss per token and its masked mean.
    // Per logit 38 bytes forward (6 + 4 + 8 + 8 + 4 + 8) and 14 backward (the gradient
    // scaled in place, 8, and cast back to 16-bit, 6); the token-sized kernels are small.
    const std::int64_t logits = T * vocab_local;
    const std::int64_t fp32 = 4;
    const bool cast = e != fp32; // fp32 training has no casts
    if (cast)
        F.add(c.memory("cross_entropy.to_fp32", logits * (e + fp32)));
    const int max = F.add(c.memory("cross_entropy.max", logits * fp32));
    if (tp)
        add_collective(w, "cross_entropy.all_reduce", TpOp::all_reduce, Pass::forward, fp32 * T,
                       max, max + 1);
    F.add(c.memory("cross_entropy.subtract_max", 2 * logits * fp32));
    const int target = F.add(c.memory("cross_entropy.target_logit", 4 * T * fp32));
    F.add(c.memory("cross_entropy.exp", 2 * logits * fp32));
    const int sum = F.add(c.memory("cross_entropy.sum", logits * fp32));
    const int softmax = F.add(c.memory("cross_entropy.softmax", 2 * logits * fp32));
    if (tp) {
        add_collective(w, "cross_entropy.all_reduce", TpOp::all_reduce, Pass::forward, fp32 * T,
                       target, softmax + 1); // the target logit, needed by the loss
        add_collective(w, "cross_entropy.all_reduce", TpOp::all_reduce, Pass::forward, fp32 * T,
                       sum, softmax); // the sum of exponentials
    }
    F.add(c.memory("cross_entropy.loss", 4 * T * fp32));
    PassWork& B = w.backward;
    B.add(c.memory("cross_entropy.bwd.target", 4 * T * fp32));
    B.add(c.memory("cross_entropy.bwd.scale", 2 * logits * fp32));
    if (cast)
        B.add(c.memory("cross_entropy.bwd.to_16bit", logits * (fp32 + e)));
    const int dgrad = Ctx::next(B);
    if (tp && c.sp && !c.cfg.dtensor_tp)
        add_collective(w, "lm_head.regather", TpOp::all_gather, Pass::backward, comm, dgrad - 1,
                       dgrad + 1, true);
    B.add(c.gemm("lm_head.dgrad", T, c.h, vocab_local));
    B.add(c.gemm("lm_head.wgrad", c.h, vocab_local, T));
    if (tp)
        add_collective(w, c.sp ? "lm_head.grad_reduce_scatter" : "lm_head.grad_all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, comm,
                       c.cfg.dtensor_tp ? dgrad + 1 : dgrad, dgrad + 2);
    B.add(c.memory("final_layernorm.bwd", 4 * sharded * e));
    // Korthikanti et al. 2022, section 4.3: 4 s b h / t (1 + v / h) with sequence parallelism.
    w.activation_bytes = 2 * sharded * e + T * vocab_local * 4;
    w.parameters = vocab_local * c.h + (m.norm == Norm::layernorm ? 2 * c.h : c.h);
    w.shares_embedding_weights = m.tied_embeddings;
    return w;
}

Op optimizer_step(std::int64_t parameters, Dtype dtype, Optimizer optimizer, int zero_stage,
                  const ComputeModel& cm) {
    const bool mixed = hardware::bytes_per_element(dtype) < 4;
    // Gradients: fp32 main gradients (Megatron) unless ZeRO keeps 16-bit ones (Rajbhandari
    // et al.); fp32 master weights read and written in mixed precision, then the 16-bit copy.
    const std::int64_t grad = mixed && zero_stage > 0 ? 2 : 4;
    const std::int64_t weights = mixed ? 8 + hardware::bytes_per_element(dtype) : 8;
    const std::int64_t state = optimizer == Optimizer::adam ? 16 : 0; // m, v read and written
    Op op;
    op.name = optimizer == Optimizer::adam ? "optimizer.adam" : "optimizer.sgd";
    op.kind = OpKind::memory_bound;
    op.bytes = parameters * (grad + weights + state);
    op.time = cm.memory_bound(op.bytes);
    return op;
}

} // namespace clustersim::strategies::models
