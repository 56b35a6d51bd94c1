#pragma once
/// \file
/// A model turned into GPU work: the kernels of one layer's forward, backward and recompute
/// on one tensor-parallel rank, each with its FLOPs, HBM bytes and time from the kernel cost
/// model, plus the tensor-parallel collectives the layer needs, the activations it keeps for
/// its backward, and the parameters it holds. The schedule builders (strategies/parallel/) turn
/// these into tasks; nothing here knows about pipelines or data parallelism.
///
/// API (every function is pure and cheap: no allocation, no global state; a transformer layer
/// costs a few microseconds, so a sweep can call it per configuration):
///
///     ComputeModel cm(load_hardware("dgx-a100"));
///     ModelSpec gpt = load_model("gpt3-175B");
///     LayerConfig cfg{.tp = 8, .sequence_parallel = true, .micro_batch = 1,
///                     .dtype = Dtype::fp16, .recompute = Recompute::selective};
///     LayerWork layer = layer_work(gpt, cfg, cm);   // one transformer (or MLP) layer
///     LayerWork first = embedding_work(gpt, cfg, cm); // extra work of the first stage
///     LayerWork last = head_work(gpt, cfg, cm);       // final norm, LM head and loss
///     layer.forward.time, layer.backward.time, layer.recompute.time;  // compute only
///     for (const TpCollective& c : layer.collectives) ...;  // op, bytes, pass, after, needed_by
///     layer.activation_bytes;   // kept from forward to backward, per micro-batch
///     layer.parameters;         // held by this tensor-parallel rank
///     Op step = optimizer_step(params, Dtype::fp16, Optimizer::adam, /*zero=*/0, cm);
///
/// Conventions:
/// - A pass is an ordered list of kernels on the compute stream. `backward` is in execution
///   order (last forward op first); each GEMM Y = X W of the forward has a data-gradient GEMM
///   (dX = dY W^T) and a weight-gradient GEMM (dW = X^T dY) in that order, so the data-gradient
///   collective overlaps the weight-gradient GEMM as in Megatron.
/// - `recompute` holds what the backward must run first: nothing (none), the attention core
///   (selective; nothing with FlashAttention, which recomputes inside its backward), or the
///   whole forward with its collectives (full).
/// - A collective is issued when op `after` of its pass ends (-1: at the start of the pass) and
///   op `needed_by` waits for it (the pass's op count: only the end of the pass, i.e. the next
///   layer, waits). Sizes follow nccl-tests: `bytes` is the per-rank buffer of an all-reduce
///   and the whole (gathered) buffer of an all-gather or reduce-scatter; with the Megatron
///   split every one is s * b * h * element bytes.
/// - Tensor parallelism (Megatron, Shoeybi et al. 2019): per layer 2 all-reduces forward (after
///   the attention projection and fc2) and 2 backward (of the QKV and fc1 data gradients).
///   With sequence parallelism (Korthikanti et al. 2022) each becomes an all-gather before the
///   column-parallel GEMM and a reduce-scatter after the row-parallel one; the backward also
///   re-gathers the sequence-sharded GEMM inputs for the weight gradients (`regather`), as
///   Megatron does instead of storing them whole. The lecture's MLP split (each rank holds
///   W[:, dim/t]) all-gathers the activations after every layer and all-reduces the data
///   gradient in backward.
/// - FP8 and FP4 (`dtype` fp8, fp4): Transformer Engine's fp8_autocast (fp8.h): the linear
///   layers' GEMMs in FP8 (delayed, tensorwise or MXFP8 scaling) or NVFP4, everything else in
///   bf16 (activations, attention, norms, the LM head and the router), with the casts of their
///   inputs.
/// - Unequal stages: `embedding_work` (vocabulary-parallel lookup, position embedding, dropout;
///   its weight gradient is a dense V/t x h accumulate) and `head_work` (final norm, LM head
///   GEMM over the padded vocabulary, vocabulary-parallel cross entropy with its three small
///   all-reduces) are separate, for the first and last pipeline stages.

#include "hardware/compute_model.h"
#include "hardware/dtype.h"
#include "sim/time.h"
#include "strategies/models/fp8.h"
#include "strategies/models/model_spec.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>

namespace clustersim::strategies::models {

/// How the elementwise chains of a transformer block run. The names are Megatron-Core's
/// TransformerConfig fusion knobs (megatron/core/transformer/transformer_config.py:
/// apply_rope_fusion, bias_activation_fusion, masked_softmax_fusion; its GPT and Llama
/// recipes turn them on) and one for the norm, which Megatron-Core always runs fused
/// (Transformer Engine's, or Apex's, norm kernels). true (the default): each chain is one
/// kernel, as Megatron-Core's fused kernels run it and as torch.compile's Inductor runs it (it
/// fuses every chain of pointwise ops, forward and backward, into one kernel). false: eager
/// PyTorch, every op of the chain its own kernel reading and writing HBM, forward and
/// autograd's backward, as torchtitan's Llama model writes the block (torchtitan/models/llama/
/// model.py and models/norms.py at commit 9dec370ad26b5f8e9a7333a0e36165018262644b; the
/// kernel-by-kernel counts are in layer_work_context.cpp, eager_*).
struct Fusions {
    /// RoPE. false: apply_rotary_emb (to fp32, complex multiply, back to 16 bits, for queries
    /// and keys) and repeat_kv's copies of the keys and values to every query head for
    /// scaled_dot_product_attention (grouped-query attention).
    bool apply_rope_fusion = true;
    /// The MLP's activation. false: SwiGLU as F.silu(w1(x)) * w3(x), two kernels and three
    /// backward (GeLU is one ATen kernel either way).
    bool bias_activation_fusion = true;
    /// Unfused attention's softmax: Megatron's scale-mask-softmax kernel where it applies
    /// (megatron_fused_softmax). false: PyTorch's fp32 softmax always.
    bool masked_softmax_fusion = true;
    /// RMSNorm in one kernel. false: torchtitan's RMSNorm op by op (x.float(), pow(2),
    /// mean, rsqrt, multiply, type_as, times the weight) with autograd's backward of each, and
    /// the sum autograd forms of the gradients of the projections the norm's output feeds
    /// (wq, wk, wv; w1, w3). LayerNorm is one ATen kernel either way.
    bool norm_fusion = true;
    /// A layer's routed experts as Transformer Engine's op fuser runs them (Megatron-Core's
    /// use_transformer_engine_op_fuser with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: TEGroupedMLP's
    /// _make_fused_ops, fc1, the scaled (clamped) GLU and fc2 with its bias scaled by the
    /// router's probabilities as one fused grouped MLP; megatron/core/transformer/moe/
    /// experts.py at NVIDIA/Megatron-LM@cd4afffa648426a959dc7cb1e24b5ce7d0c3ff54). false
    /// (Megatron-Core's default): TEGroupedMLP's eager path, whose activation clamp and fc2
    /// bias run as their own kernels (expert_clamp, expert_fc2_bias).
    bool fused_grouped_mlp = false;
    /// Grouped-query attention as PyTorch-native models run it under torch.compile: the keys
    /// and values still copied to every query head (repeat_kv's expand and reshape, which
    /// cannot be a view) before scaled_dot_product_attention, an extern kernel that keeps its
    /// inputs for its backward; Inductor fuses the copy into RoPE's kernel but writes the copies
    /// (torchtitan/models/llama/model.py, repeat_kv, at 9dec370; torchtune/modules/
    /// attention.py at meta-pytorch/torchtune@1814feb17). The eager chain (apply_rope_fusion
    /// false) counts the copies with RoPE; Transformer Engine's attention takes the groups as
    /// they are.
    bool gqa_copies = false;

    bool all() const {
        return apply_rope_fusion && bias_activation_fusion && masked_softmax_fusion && norm_fusion;
    }

    bool operator==(const Fusions&) const = default;
};
/// What Megatron-Core's selective recompute recomputes (TransformerConfig.recompute_modules,
/// --recompute-modules; megatron/core/transformer/transformer_config.py): "core_attn" the core
/// attention (nothing with FlashAttention, which recomputes inside its backward; the default),
/// "moe_act" the routed experts' activation, "layernorm" the two norms, "mla_up_proj" latent
/// attention's up projections and rotary parts, "mlp" a dense layer's MLP, "moe" a layer's
/// whole mixture of experts, "shared_experts" its shared experts. Beside Megatron's: "mlpwi",
/// a dense layer's MLP input projections and activation only, what MaxText's remat policies
/// save_dot_except_mlp and save_dot_except_mlpwi recompute (src/maxtext/layers/decoders.py,
/// get_remat_policy: the down projection's output only enters the residual sum, so nothing
/// needs it again).
enum class RecomputeModule : std::uint8_t {
    core_attn,
    moe_act,
    layernorm,
    mla_up_proj,
    mlp,
    moe,
    shared_experts,
    mlpwi
};
inline constexpr int kRecomputeModules = 8;
/// The bit of `m` in a set of modules.
constexpr std::uint8_t recompute_bit(RecomputeModule m) {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(m));
}
std::string_view to_string(RecomputeModule m);
/// Megatron-Core's name of a module; nullopt otherwise.
std::optional<RecomputeModule> parse_recompute_module(std::string_view s);

/// The linear layers a LoRA adapter can wrap, by Megatron-Bridge's names
/// (src/megatron/bridge/peft/lora.py, LoRA.target_modules; Megatron-Core's module names):
/// the attention's QKV projection and output projection, the MLP's first and second linear.
enum class LoraTarget : std::uint8_t { linear_qkv, linear_proj, linear_fc1, linear_fc2 };
inline constexpr int kLoraTargets = 4;
constexpr std::uint8_t lora_bit(LoraTarget t) {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(t));
}
std::string_view to_string(LoraTarget t);
/// Megatron-Bridge's name of a target module; nullopt otherwise.
std::optional<LoraTarget> parse_lora_target(std::string_view s);

/// LoRA fine-tuning (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models",
/// arXiv 2106.09685, section 4.1): every base weight frozen, and each targeted linear
/// Y = X W gains a trainable low-rank branch (alpha / dim) X A B, A in x dim, B dim x out.
/// As Megatron-Bridge runs it (peft/lora.py, LoRALinear; peft/utils.py, ParallelLinearAdapter):
/// the adapter's linear_in (A) and linear_out (B) are each split over the tensor-parallel
/// ranks (a column-parallel base: A column-parallel with its output gathered, B
/// column-parallel; a row-parallel base: A row-parallel, B column-parallel), so a rank holds
/// dim x (in + out) / tp of each adapter. alpha scales the branch's output only (no cost).
struct Lora {
    int dim = 0;              ///< the rank r; 0: no LoRA (full training)
    double alpha = 0;         ///< the branch's scale is alpha / dim
    std::uint8_t targets = 0; ///< lora_bit()s of the wrapped linears
    bool on() const { return dim > 0; }
    bool operator==(const Lora&) const = default;
};

/// The loss's cross-entropy as the framework runs it, for the memory it holds around the head's
/// backward (layer_work_embedding_head.cpp, head_work). The kernels are costed as `fused`'s
/// whatever this says.
enum class CrossEntropy : std::uint8_t {
    /// Megatron's vocab_parallel_cross_entropy: the fp32 softmax kept, its gradient computed in
    /// place (megatron/core/tensor_parallel/cross_entropy.py).
    fused,
    /// torch.nn.functional.cross_entropy on the logits upcast to fp32 (torchtitan's loss_fn
    /// without [training] compile, and with it from e8977b0, 2024-12-18, to bbb1b61,
    /// 2025-04-02, which left the loss eager): log_softmax then nll_loss, each backward
    /// allocating a gradient of the fp32 logits.
    eager,
    /// The same under torch.compile (torchtitan with [training] compile from e10cb94,
    /// 2024-10-22, to e8977b0, and from bbb1b61 on, build_cross_entropy_loss):
    /// Inductor fuses the upcast, the softmax and the loss and saves the 16-bit logits.
    compiled,
    /// torchtune's compiled loss (training.compile_loss) on the logits its model upcast
    /// outside it (TransformerDecoder.forward: `self.output(h).float()`): the compiled graph
    /// saves its fp32 input and writes an fp32 gradient.
    compiled_fp32,
    /// torchtune's CEWithChunkedOutputLoss (torchtune/modules/loss/ce_chunked_output_loss.py):
    /// the output layer run on LayerConfig::cross_entropy_chunks slices of the tokens, each
    /// slice's logits upcast to fp32 and its cross-entropy computed one slice at a time (the
    /// upcast and the loss compiled together under compile).
    chunked,
};

/// How one layer is run.
struct LayerConfig {
    int tp = 1;                     ///< tensor-parallel size t
    bool sequence_parallel = false; ///< Megatron --sequence-parallel (needs tp > 1 to matter)
    int micro_batch = 1;            ///< b: samples (the MLP: rows) per micro-batch
    hardware::Dtype dtype = hardware::Dtype::bf16; ///< activations and GEMM inputs
    Recompute recompute = Recompute::none;
    /// A mixture of experts' dense layer (its first_k_dense_replace): the dense MLP of `ffn`.
    /// Otherwise every layer of a model with experts is a layer with experts.
    bool dense_layer = false;
    /// A layer of sliding-window attention (ModelSpec::window_size): its attention kernel
    /// visits only each query's window. Otherwise the whole causal prefix.
    bool window = false;
    /// Expert parallelism (strategies/parallel/experiment.h): the experts spread over `ep` GPUs,
    /// each split over `etp` (0: = tp). With ep > 1 or etp != tp a layer with experts runs
    /// Megatron-Core's alltoall token dispatcher (moe_a2a_forward in layer_work_moe.cpp); otherwise
    /// the all-gather dispatcher with every expert on every GPU.
    int ep = 1;
    int etp = 0;
    /// Megatron-Core's flex token dispatcher on DeepEP (--moe-token-dispatcher-type flex,
    /// --moe-flex-dispatcher-backend deepep) instead of alltoall: each token sent once per
    /// destination node across nodes (over its rail, CommGroup::ep_rail) and once per
    /// destination GPU inside one (expert_parallel.h, flex_dispatch_bytes). `ep_nodes`: the
    /// nodes the expert-parallel group spans (1: inside one node).
    bool flex_dispatcher = false;
    /// The flex dispatcher on HybridEP (--moe-flex-dispatcher-backend hybridep): its dispatch
    /// permutes the tokens into the local experts' order and pads each expert's rows for
    /// quantization, its combine unpermutes and sums them (Megatron-Core's _HybridEPManager,
    /// dispatch_with_permute and combine_with_unpermute): no Megatron kernels for them, but
    /// HybridEP's own permute and unpermute kernels beside its communication kernels
    /// (layer_work_moe.cpp, moe_a2a_forward).
    bool hybridep = false;
    int ep_nodes = 1;
    /// Context-parallel size: each rank runs seq / cp tokens, attention as the ring's steps
    /// (context_parallel.h; its communication is the step plan's).
    int cp = 1;
    /// Selective recompute as torchtitan's op-level activation checkpointing runs it
    /// (torchtitan/distributed/activation_checkpoint.py, selective_ac_option "op"): per block,
    /// the outputs of matmuls, SDPA and reduce-scatters are saved except every second matmul's,
    /// so the backward reruns the 2nd, 4th and 6th matmul of the block (Llama: wk, wo, w3) and
    /// every elementwise and normalisation op. false: Megatron's selective recompute (the core
    /// attention; nothing with flash attention).
    bool selective_op = false;
    /// Tensor parallelism as PyTorch's DTensor runs it (torchtitan's parallelize_llama:
    /// PrepareModuleInput, ColwiseParallel, RowwiseParallel) instead of Megatron's linear
    /// layers: autograd saves the gathered input of a column-parallel GEMM, so the backward
    /// does not re-gather it for the weight gradient, and the input gradient's reduce-scatter
    /// (or all-reduce) is the backward of the all-gather, run once every GEMM that read the
    /// gathered input has finished its backward, weight gradient included.
    bool dtensor_tp = false;
    /// The block's elementwise chains fused or eager (Fusions).
    Fusions fusions;
    /// With dtype fp8: how the scales are found and what the casts cost (fp8.h); dtype fp4
    /// runs nvfp4 whatever this says.
    Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
    /// With dtype fp8 under a per-tensor Transformer Engine recipe (delayed, current): the
    /// casts write a transposed copy beside the FP8 data (Hopper's FP8 GEMMs take only TN);
    /// false on a GPU whose FP8 GEMMs take any layout (GpuSpec::fp8_any_layout, fp8.h).
    bool fp8_transposes = true;
    /// With dtype fp8: Transformer Engine's FP8 attention (Megatron-Core's
    /// fp8_dot_product_attention, the recipe's fp8_dpa): Q, K, V quantized before the fused
    /// attention kernel and its output gradient before its backward, the kernel's products in
    /// FP8 (hardware/compute_model.h), its output and input gradients in bf16 (Ctx::flash).
    bool fp8_dot_product_attention = false;
    /// With dtype fp8 and the mxfp8 recipe: the LM head's GEMMs quantized too (Megatron-Core's
    /// fp8_output_proj, TrainingSpec::fp8_output_proj); its input's cast is its own kernel
    /// (the final norm is not fused with it), its weight gradient's input saved quantized.
    bool fp8_output_proj = false;
    /// Megatron's selective recompute (recompute selective, selective_op false): the modules
    /// recomputed, a set of recompute_bit()s; Megatron-Core's default is the core attention.
    std::uint8_t recompute_modules = recompute_bit(RecomputeModule::core_attn);
    /// Full recompute as JAX's remat runs it (jax.checkpoint, MaxText's remat_policy) rather
    /// than as a checkpointed module's forward run again (Megatron, torch.utils.checkpoint):
    /// only the values the backward reads are recomputed, so the layer's last GEMM (the MLP's
    /// down projection), its reduction and the residual add after it, whose output only feeds
    /// the next layer, are not (layer_work_recompute.cpp, full_recompute).
    bool remat_backward_reads = false;
    /// LoRA fine-tuning (Lora): the base weights frozen (no weight-gradient GEMMs), the
    /// targeted linears' adapters added (layer_work_lora.cpp). Off by default.
    Lora lora;
    /// The loss's cross-entropy (the head's memory only).
    CrossEntropy cross_entropy = CrossEntropy::fused;
    /// With CrossEntropy::chunked: the slices (torchtune's num_output_chunks, 8 by default).
    int cross_entropy_chunks = 8;
    /// torch.compile (the chunked cross-entropy's upcast and loss compiled together).
    bool compile = false;
    /// torch.cuda.amp's autocast (TrainingSpec::autocast): what autograd keeps follows its
    /// casts (layer_work_recompute.cpp, autocast_activations): each linear layer saves its own
    /// `dtype` copy of its input, softmax and the norms run in fp32.
    bool autocast = false;
};

enum class Pass : std::uint8_t { forward, backward, recompute };
std::string_view to_string(Pass p);

enum class OpKind : std::uint8_t {
    gemm,            ///< one matrix product
    batched_gemm,    ///< the attention products over (micro-batch x heads)
    fused_attention, ///< FlashAttention forward or backward
    memory_bound,    ///< elementwise, normalisation, softmax, dropout, embedding, loss
};
std::string_view to_string(OpKind k);

/// One kernel. GEMM shapes are M x N = (M x K)(K x N), `batch` products.
struct Op {
    std::string_view name; ///< "attention.qkv", "mlp.fc1.wgrad", ... (static strings)
    OpKind kind = OpKind::memory_bound;
    double flops = 0;       ///< executed FLOPs (0 for memory-bound kernels)
    std::int64_t bytes = 0; ///< HBM bytes read and written
    sim::Time time;
    std::int64_t m = 0, n = 0, k = 0, batch = 0; ///< GEMM shape (0 otherwise)
    /// Kernels the host launches for this op: an eager chain's ops, a GEMM with torchao's
    /// tensorwise amax and cast kernels before it; 1 otherwise.
    int kernels = 1;
    /// The host waits for this op to finish before it issues anything after it: a
    /// device-to-host copy whose value the next launches need (Megatron-Core's alltoall
    /// dispatcher's split sizes), or a blocking host-to-device copy (PyTorch synchronises the
    /// stream after copying pageable memory). The GPU then waits for the host to issue the next
    /// kernels; nothing waits inside a whole-iteration CUDA graph.
    bool host_sync = false;
};

enum class TpOp : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all };

/// The group a layer's collective runs on: the tensor-parallel ranks, the expert-parallel ranks
/// (dispatch and combine all-to-alls) or the expert tensor-parallel ranks (the gather and
/// scatter of the routed tokens around the experts when etp > 1).
/// The group a collective runs over: tensor-parallel, expert-parallel, expert tensor-parallel,
/// or the expert-parallel group's GPUs of one local rank on each of its nodes (a rail).
enum class CommGroup : std::uint8_t { tp, ep, etp, ep_rail };
std::string_view to_string(TpOp op);

/// A tensor-parallel collective among the `tp` ranks of a layer.
struct TpCollective {
    std::string_view name; ///< "attention.all_reduce", "mlp.fc1.regather", ...
    TpOp op = TpOp::all_reduce;
    Pass pass = Pass::forward;
    std::int64_t bytes = 0; ///< nccl-tests size (see the file comment)
    int after = -1;         ///< issued when this op of the pass ends; -1: at its start
    int needed_by = 0;      ///< this op of the pass waits for it; == op count: the pass's end
    /// A re-gather of a sequence-sharded input for a weight gradient (sequence parallelism
    /// in backward); Korthikanti et al. count 4 all-gathers + 4 reduce-scatters per layer
    /// without these.
    bool regather = false;
    CommGroup group = CommGroup::tp;
};

/// Kernels one pass holds at most (FixedList refuses more).
inline constexpr std::size_t kMaxOpsPerPass = 40;

/// A list of fixed capacity: no allocation, so LayerWork is a plain value. The slots past
/// size() are left uninitialised and are not copied: a LayerWork holds ~12 KiB of slots, most
/// unused, and a sweep builds and copies several per configuration (zeroing and copying them
/// whole was ~13% of a GPT-3 sweep's instructions).
template <typename T, std::size_t N>
class FixedList {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

public:
    FixedList() noexcept {} // user-provided: value-initialisation does not zero the slots
    FixedList(const FixedList& o) noexcept
        : size_(o.size_) {
        std::memcpy(static_cast<void*>(storage_), o.storage_, size_ * sizeof(T));
    }
    FixedList& operator=(const FixedList& o) noexcept {
        if (this != &o) {
            size_ = o.size_;
            std::memcpy(static_cast<void*>(storage_), o.storage_, size_ * sizeof(T));
        }
        return *this;
    }
    ~FixedList() = default;

    /// Appends and returns the index of the new item.
    int push_back(const T& v) {
        if (size_ == N)
            throw std::logic_error("FixedList capacity exceeded");
        ::new (static_cast<void*>(storage_ + size_ * sizeof(T))) T(v);
        return static_cast<int>(size_++);
    }
    std::size_t size() const { return size_; }
    int count() const { return static_cast<int>(size_); }
    bool empty() const { return size_ == 0; }
    const T& operator[](std::size_t i) const { return data()[i]; }
    T& operator[](std::size_t i) { return data()[i]; }
    const T* begin() const { return data(); }
    const T* end() const { return data() + size_; }

private:
    const T* data() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
    T* data() { return std::launder(reinterpret_cast<T*>(storage_)); }

    alignas(T) unsigned char storage_[N * sizeof(T)];
    std::size_t size_ = 0;
};

/// Collectives one LayerWork holds at most (a layer with experts laid out apart, shared experts,
/// etp > 1 and full recompute needs 26); the step plan keeps them in 32-bit masks.
inline constexpr std::size_t kMaxLayerCollectives = 32;

/// The kernels of one pass, in order, with their totals.
struct PassWork {
    FixedList<Op, kMaxOpsPerPass> ops;
    sim::Time time;         ///< sum of the kernels' times (compute stream only)
    double flops = 0;       ///< sum of executed FLOPs
    std::int64_t bytes = 0; ///< sum of HBM bytes

    int add(const Op& op) {
        time += op.time;
        flops += op.flops;
        bytes += op.bytes;
        return ops.push_back(op);
    }
};

/// The work of one layer (or of the embedding, or of the head) on one tensor-parallel rank for
/// one micro-batch.
struct LayerWork {
    PassWork forward;
    PassWork backward;
    PassWork recompute; ///< runs before `backward` (see the file comment)
    FixedList<TpCollective, kMaxLayerCollectives> collectives;
    /// Activations kept from the forward to the backward of this micro-batch (bytes).
    std::int64_t activation_bytes = 0;
    /// Activations the recompute pass re-materialises, held only during this layer's backward
    /// (the head: the loss's gradients allocated at the start of its backward).
    std::int64_t recomputed_activation_bytes = 0;
    /// Blocks this layer's forward frees that PyTorch's caching allocator still holds, unused,
    /// at its backward's peak: each too small for the requests made until then (the head: the
    /// 16-bit logits of an eager cross-entropy). Reserved, not allocated.
    std::int64_t cached_bytes = 0;
    /// Parameters held by this rank (elements; the model-state bytes follow from
    /// model_state_bytes in memory_formulas.h).
    std::int64_t parameters = 0;
    /// Of `parameters`, the routed experts' weights when the experts are laid out apart
    /// (LayerConfig::ep > 1 or etp != tp): their gradients are reduced over the
    /// expert-data-parallel group. 0 otherwise.
    std::int64_t expert_parameters = 0;
    /// Of `parameters`, the frozen ones (LoRA's base weights): held in the training dtype
    /// only, with no gradient, no optimizer state and no data-parallel reduction. 0 otherwise.
    std::int64_t frozen_parameters = 0;
    /// The head's weights are the word embeddings (tied): with one pipeline stage they are the
    /// embedding's parameters, not extra ones; on separate stages Megatron keeps a copy on the
    /// last stage and all-reduces the two gradients.
    bool shares_embedding_weights = false;

    const PassWork& pass(Pass p) const {
        return p == Pass::forward ? forward : p == Pass::backward ? backward : recompute;
    }
    /// Total bytes of the collectives of one pass (nccl-tests sizes).
    std::int64_t collective_bytes(Pass p) const;
    /// Number of collectives of one kind in one pass.
    int collective_count(Pass p, TpOp op) const;
};

/// One transformer layer, or one layer of the lecture's MLP. Throws InputError when `tp` does
/// not split the model (check_tensor_parallel) or the micro-batch is not positive.
LayerWork layer_work(const ModelSpec& m, const LayerConfig& cfg, const hardware::ComputeModel& cm);

/// Whether Megatron-LM's fused scale-mask-softmax kernel takes causal attention scores of
/// `attn_batches` (micro-batch x heads per rank) rows of `sq` x `sk` in `dtype`; when it does
/// not, an unfused-attention layer runs PyTorch's softmax in fp32 (five kernels each way).
bool megatron_fused_softmax(std::int64_t attn_batches, std::int64_t sq, std::int64_t sk,
                            hardware::Dtype dtype);

/// The first stage's extra work: embedding lookup, position embedding, dropout (empty for the
/// MLP, whose input is given).
LayerWork embedding_work(const ModelSpec& m, const LayerConfig& cfg,
                         const hardware::ComputeModel& cm);

/// The last stage's extra work: final norm, LM head over the padded vocabulary, cross entropy
/// (for the MLP: its loss, mean(x^2)).
LayerWork head_work(const ModelSpec& m, const LayerConfig& cfg, const hardware::ComputeModel& cm);

enum class Optimizer : std::uint8_t {
    adam, ///< Adam / AdamW: fp32 moments m and v
    sgd,  ///< plain SGD: no optimizer state
    /// 8-bit AdamW (bitsandbytes' AdamW8bit, torchao's AdamW8bit): m and v in one byte each
    /// with an fp32 scale per block of 256 (memory_formulas.h, adam8bit_state_bytes)
    adam8bit,
};
std::string_view to_string(Optimizer o);
/// "adam", "adamw", "sgd", "adamw8bit"; nullopt otherwise.
std::optional<Optimizer> parse_optimizer(std::string_view s);

/// The optimizer update of `parameters` (those this rank updates: all it holds, or its 1/dp
/// shard under ZeRO) as one fused memory-bound kernel: Adam in mixed precision reads the
/// gradient and the fp32 master weights, m and v, writes them back and writes the 16-bit
/// weights (30 bytes per parameter with fp32 gradients, 28 with 16-bit ones under ZeRO).
/// Without master weights (pure 16-bit training, TrainingSpec::master_weights false) the
/// weights, gradients and Adam's moments are all 16-bit: 14 bytes per parameter.
Op optimizer_step(std::int64_t parameters, hardware::Dtype dtype, Optimizer optimizer,
                  int zero_stage, const hardware::ComputeModel& cm, bool master_weights = true);

} // namespace clustersim::strategies::models
