#pragma once
/// \file
/// What the files of layer_work.h's implementation share, internal to strategies/models/: the
/// quantities of one layer on one rank and its kernel constructors (`Ctx`), the sizes a
/// transformer layer's blocks share (`LayerShape`), the collectives' bookkeeping, eager
/// PyTorch's elementwise chains, and the blocks each file builds: attention
/// (layer_work_attention.cpp), the dense MLP (layer_work_mlp.cpp), experts
/// (layer_work_moe.cpp), recompute and activations (layer_work_recompute.cpp). layer_work.cpp
/// puts a layer together from them; layer_work_embedding_head.cpp does the first and last
/// stages' extra work.

#include "hardware/compute_model.h"
#include "strategies/models/context_parallel.h"
#include "strategies/models/fp8.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_spec.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace clustersim::strategies::models::layer_detail {

using hardware::ComputeModel;
using hardware::Dtype;

/// Shared quantities of one layer on one rank and the kernel constructors.
struct Ctx {
    const ModelSpec& m;
    const LayerConfig& cfg;
    const ComputeModel& cm;
    Dtype dtype;       ///< of activations and of the GEMMs that do not run quantized
    bool fp8;          ///< the linear layers' GEMMs quantized, FP8 or FP4 (fp8.h)
    Dtype gemm_low;    ///< their operand type (fp8 or fp4), when fp8
    Fp8Recipe recipe;  ///< their recipe (nvfp4 with fp4), when fp8
    std::int64_t elem; ///< bytes per activation element
    std::int64_t t;    ///< tensor-parallel size
    bool sp;           ///< sequence parallel in effect (t > 1)
    std::int64_t b;    ///< micro-batch
    std::int64_t s;    ///< sequence
    int cp;            ///< context-parallel size: this rank runs s / cp tokens
    std::int64_t h;    ///< hidden
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
        , dtype(hardware::is_quantized(config.dtype) ? Dtype::bf16 : config.dtype)
        , fp8(hardware::is_quantized(config.dtype))
        , gemm_low(config.dtype)
        , recipe(config.dtype == Dtype::fp4 ? Fp8Recipe::nvfp4 : config.fp8_recipe)
        , elem(hardware::bytes_per_element(dtype))
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

    /// Bytes of `elements` elements of a GEMM input saved for the weight gradient: bf16, or
    /// the quantized copy the recipe keeps (fp8.h saved_input_bytes).
    std::int64_t saved(std::int64_t elements) const {
        return fp8 ? saved_input_bytes(elements, recipe) : elem * elements;
    }

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
        const bool in_fp8 =
            fp8 && (runs_in_fp8(name) || (cfg.fp8_output_proj && name.starts_with("lm_head")));
        const Dtype gemm_dtype = in_fp8 ? gemm_low : dtype;
        op.bytes = ComputeModel::gemm_bytes(M, N, K, gemm_dtype, batch);
        op.time = cm.gemm(M, N, K, gemm_dtype, batch);
        // The casts (with transposes) of its inputs, charged to the GEMM they feed.
        if (in_fp8) {
            const Fp8CastBytes cast =
                fp8_gemm_cast_bytes(name, M, N, K, batch, recipe, elem, cfg.fp8_transposes);
            op.bytes += cast.total();
            for (const std::int64_t kernel : {cast.amax, cast.cast, cast.copies})
                if (kernel > 0) {
                    op.time += cm.memory_bound(kernel);
                    // Transformer Engine's delayed and MXFP8 casts are fused into the kernels
                    // before them or launched with the GEMM's module; torchao's and NVFP4's
                    // wait for a whole tensor's amax and are launched apart.
                    if (casts_launched_apart(recipe))
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
    /// Transformer Engine's FP8 attention in effect (LayerConfig::fp8_dot_product_attention,
    /// dtype fp8; experiment_checks.cpp refuses it elsewhere): the fused attention kernel in
    /// fp8, its operands scaled as the linear layers' recipe scales them (TE 2.16 and 2.17 run
    /// MXFP8 attention under the MXFP8 recipe and FP8 current scaling under current scaling:
    /// dot_product_attention.py's recipe table at TransformerEngine@4329ff84).
    bool fp8_attention() const {
        return fp8 && gemm_low == Dtype::fp8 && cfg.fp8_dot_product_attention;
    }
    Dtype attention_dtype() const { return fp8_attention() ? Dtype::fp8 : dtype; }
    hardware::AttentionScaling attention_scaling() const {
        return recipe == Fp8Recipe::mxfp8 ? hardware::AttentionScaling::mxfp8
                                          : hardware::AttentionScaling::per_tensor;
    }
    /// The quantization of `elements` bf16 elements before an FP8 attention kernel: Q, K and V
    /// before the forward (FusedAttnFunc.forward, combine_and_quantize), the output gradient
    /// before the backward (FusedAttnFunc.backward's dO quantizer), at
    /// TransformerEngine@4329ff84bfbdaa778a33cba02a15fb0807c64689:transformer_engine/pytorch/
    /// attention/dot_product_attention/backends.py and utils.py. MXFP8: one kernel writing
    /// both copies, along rows and along columns, the backward's products reading each
    /// operand both ways (mxfp8_quantize_fast_path with rowwise and columnwise usage in
    /// training): e read, 2 x (1 + 1/32) written per element. Current scaling: an amax pass
    /// (e read) and the cast (e read, 1 written), two kernels; delayed scaling the cast alone.
    /// The kernel writes O and dQ, dK, dV in bf16 and reads the bf16 dO besides (MXFP8's
    /// row sums of dO * O), as the bf16 kernel does.
    Op attention_quantize(std::string_view name, std::int64_t elements) const {
        if (recipe == Fp8Recipe::mxfp8)
            return memory(name, elements * elem + elements * 66 / 32);
        if (recipe == Fp8Recipe::current)
            return chain(name, {elements * elem, elements * (elem + 1)});
        return memory(name, elements * (elem + 1));
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
            const CpAttention a =
                cp_attention(bh, s, d, cp, attention_dtype(), backward, cm, attention_scaling());
            op.flops = a.flops;
            op.bytes = a.bytes;
            op.time = sim::Time::from_seconds(a.seconds(cp));
            op.m = s / cp;
            op.n = s;
            op.k = d;
            op.batch = bh;
            return op;
        }
        const std::int64_t window = cfg.window ? m.window_size : 0;
        // An encoder's bidirectional attention (ModelSpec::causal false) visits every score.
        op.flops = ComputeModel::fused_attention_flops(
            bh, s, d, m.causal, backward,
            ComputeModel::window_visited(attention_dtype(), backward, window));
        op.bytes = ComputeModel::fused_attention_bytes(bh, s, d, attention_dtype(), backward);
        op.time = cm.fused_attention(bh, s, d, attention_dtype(), m.causal, backward, window,
                                     attention_scaling());
        op.m = s;
        op.n = s;
        op.k = d;
        op.batch = bh;
        return op;
    }
    /// The next op's index in `pass` (what a collective issued now is `after` of, plus one).
    static int next(const PassWork& pass) { return pass.ops.count(); }
};

/// The sizes and switches of one transformer layer on one rank that its attention and MLP
/// blocks share.
struct LayerShape {
    std::int64_t e;       ///< bytes per activation element
    std::int64_t T;       ///< tokens
    std::int64_t sharded; ///< elements of an [s/t, b, h] tensor
    std::int64_t bh;      ///< micro-batch x heads per rank
    std::int64_t d;       ///< head dimension
    std::int64_t qkv_n;   ///< columns of the QKV projection per rank
    std::int64_t fc1_n;   ///< columns of fc1 per rank
    std::int64_t f;       ///< ffn / t
    bool drop;
    bool flash;
    bool swiglu;
    bool rope;
    bool tp;             ///< t > 1
    std::int64_t scores; ///< attention score elements, unfused
    bool fused_softmax;  ///< megatron_fused_softmax and the fusion switched on
    bool norm_eager;     ///< RMSNorm as eager PyTorch's chain
    bool rope_eager;     ///< RoPE as eager PyTorch's chain
    bool swiglu_eager;   ///< SwiGLU as eager PyTorch's chain
    /// Compiled, the keys and values copied to every query head all the same (Fusions::
    /// gqa_copies): their elements written beside RoPE's and kept for SDPA's backward.
    bool gqa_copies;
    std::int64_t q_elems;    ///< query elements of this rank
    std::int64_t kv_elems;   ///< key (or value) elements of this rank
    std::int64_t gathered;   ///< the projections' input
    std::int64_t comm;       ///< bytes of every TP collective: s b h elements
    TpOp exit_op;            ///< the reduction at the end of a block
    std::int64_t rope_bytes; ///< fused RoPE's bytes read and written
    /// RoPE as Megatron-Core's unfused chain (_apply_rotary_pos_emb_bshd): YaRN's mscale != 1
    /// refuses the fused kernel (ModelSpec::yarn_rotary_scaling_factor)
    bool rope_unfused;
};

LayerShape layer_shape(const Ctx& c);

void add_collective(LayerWork& w, std::string_view name, TpOp op, Pass pass, std::int64_t bytes,
                    int after, int needed_by, bool regather = false);
void add_group_collective(LayerWork& w, std::string_view name, TpOp op, CommGroup group, Pass pass,
                          std::int64_t bytes, int after, int needed_by);

/// Throws InputError when the layer configuration does not fit the model.
void check_config(const ModelSpec& m, const LayerConfig& cfg);

// Eager PyTorch's elementwise chains (layer_work_context.cpp says what each counts).
Op eager_rmsnorm(const Ctx& c, std::string_view name, std::int64_t n);
Op eager_rmsnorm_backward(const Ctx& c, std::string_view name, std::int64_t n,
                          std::int64_t projections, int k);
Op eager_rope(const Ctx& c, std::string_view name, std::int64_t q, std::int64_t k);
Op eager_rope_backward(const Ctx& c, std::string_view name, std::int64_t q, std::int64_t k);
Op megatron_unfused_rope(const Ctx& c, std::string_view name, std::int64_t q, std::int64_t k);
Op megatron_unfused_rope_backward(const Ctx& c, std::string_view name, std::int64_t q,
                                  std::int64_t k);
Op eager_swiglu(const Ctx& c, std::string_view name, std::int64_t n);
Op eager_swiglu_backward(const Ctx& c, std::string_view name, std::int64_t n);

// ---- attention (layer_work_attention.cpp)

/// The forward ops [begin, end) of the core attention (scores, softmax, context).
struct CoreAttention {
    int begin = 0;
    int end = 0;
};

/// Multi-head (or grouped-query) attention's forward after the first norm (op `ln1`): QKV
/// projection, RoPE, the core attention, the output projection and its reduction.
CoreAttention attention_forward(const Ctx& c, const LayerShape& s, LayerWork& w, int ln1);
/// Its backward, up to the QKV projection's gradients.
void attention_backward(const Ctx& c, const LayerShape& s, LayerWork& w);
void mla_forward(const Ctx& c, LayerWork& w, int ln1);
void mla_backward(const Ctx& c, LayerWork& w);

// ---- LoRA (layer_work_lora.cpp)

/// A transformer layer under LoRA (cfg.lora on): base weights frozen (no weight-gradient
/// GEMMs, frozen_parameters), the targeted linears' adapters added. Nothing otherwise.
void apply_lora(const Ctx& c, LayerWork& w);
/// The embedding or the head under LoRA: frozen, no weight gradients; `whole_backward`: no
/// backward at all (the embedding, with nothing trainable before it).
void freeze_lora(const LayerConfig& cfg, LayerWork& w, bool whole_backward);

// ---- the dense MLP (layer_work_mlp.cpp)

/// fc1, activation, fc2 after the second norm (op `ln2`), with the tensor-parallel collectives.
void dense_mlp_forward(const Ctx& c, const LayerShape& s, LayerWork& w, int ln2);
void dense_mlp_backward(const Ctx& c, const LayerShape& s, LayerWork& w);
/// The lecture's MLP layer, x = gelu(x @ W), each rank holding W[:, dim/t].
LayerWork mlp_layer(const Ctx& c);

// ---- experts (layer_work_moe.cpp)

void moe_forward(const Ctx& c, LayerWork& w, int ln2);
void moe_backward(const Ctx& c, LayerWork& w);
void moe_a2a_forward(const Ctx& c, LayerWork& w);
void moe_a2a_backward(const Ctx& c, LayerWork& w);
/// Parameters of a layer with experts laid out apart on one GPU: {all, routed experts'}.
std::pair<std::int64_t, std::int64_t> moe_a2a_parameters(const Ctx& c);
/// Whether the routed experts clamp their activation with kernels of their own (TEGroupedMLP's
/// eager path with activation_func_clamp_value; not under the fused grouped MLP).
bool clamp_apart(const Ctx& c);

// ---- recompute and activations (layer_work_recompute.cpp)

/// Where a layer's forward puts what the recompute modules cover.
struct ModuleOps {
    int core_begin, core_end; ///< the core attention
    int mlp_begin, mlp_end;   ///< the MLP block: dense MLP or mixture of experts, shared included
};

/// The recompute pass of a transformer layer as LayerConfig::recompute asks, and its
/// activation bytes (kept and recomputed).
void recompute_layer(const Ctx& c, const LayerShape& s, LayerWork& w, ModuleOps at);

} // namespace clustersim::strategies::models::layer_detail
