#pragma once
/// \file
/// What a model is: the lecture's deep MLP or a GPT-style decoder-only transformer, as a plain
/// value (loaded and validated by model_loader.h), with its parameter counts and FLOPs.
///
/// Names follow the experiment file (strategies/parallel/experiment.h) and map onto Megatron-LM's
/// arguments: layers (--num-layers), hidden (--hidden-size), heads (--num-attention-heads),
/// kv_heads
/// (--num-query-groups, GQA), ffn (--ffn-hidden-size), seq (--seq-length), vocab (the tokenizer's
/// size, padded to a multiple of vocab_divisible_by * tp as --make-vocab-size-divisible-by does),
/// attention (flash: --use-flash-attn), activation swiglu (--swiglu), norm rmsnorm
/// (--normalization RMSNorm), position_embedding rope (--position-embedding-type rope),
/// tied_embeddings false (--untie-embeddings-and-output-weights), bias false
/// (--disable-bias-linear), dropout (--hidden-dropout and --attention-dropout).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clustersim::strategies::models {

enum class ModelKind : std::uint8_t {
    mlp,         ///< the lecture's x = gelu(x @ W), layers x (dim x dim), no bias
    transformer, ///< GPT-style decoder: attention + MLP blocks, embedding, LM head and loss
};
enum class AttentionKind : std::uint8_t {
    unfused, ///< QK^T, softmax, dropout and attention-over-V as separate kernels (s^2 stored)
    flash,   ///< FlashAttention: one fused kernel, no s^2 tensor in memory
};
enum class Activation : std::uint8_t {
    gelu,   ///< fc1 -> GeLU -> fc2
    swiglu, ///< gated: fc1 produces 2 x ffn (gate, up), SiLU(gate) * up -> fc2 (Llama)
};
enum class Norm : std::uint8_t { layernorm, rmsnorm };
enum class PositionEmbedding : std::uint8_t {
    learned, ///< a seq x hidden table added to the word embeddings (GPT-2/3)
    rope,    ///< rotary, applied to Q and K; no parameters (Llama)
};

/// Activation recomputation (Korthikanti et al. 2022): keep every activation, recompute the
/// attention core (QK^T, softmax, dropout, attention over V) in the backward pass, or keep only
/// each layer's input and recompute the whole layer.
enum class Recompute : std::uint8_t { none, selective, full };

std::string_view to_string(Recompute r);
/// "none", "selective", "full"; nullopt otherwise.
std::optional<Recompute> parse_recompute(std::string_view s);

std::string_view to_string(ModelKind k);
std::string_view to_string(AttentionKind k);
std::string_view to_string(Activation a);
std::string_view to_string(Norm n);
std::string_view to_string(PositionEmbedding p);

/// A model. For `mlp` only `layers` and `hidden` (the lecture's dim) matter.
struct ModelSpec {
    std::string name;        ///< preset name or file stem
    std::string description; ///< free text, with the source of the numbers
    ModelKind kind = ModelKind::transformer;
    int layers = 0;
    int hidden = 0;   ///< h; the MLP's dim
    int heads = 0;    ///< a
    int kv_heads = 0; ///< g, key/value heads (GQA groups); = heads without GQA
    int ffn = 0;      ///< f, inner size of the MLP block (4h for GPT)
    int seq = 0;      ///< s, tokens per sample
    int vocab = 0;    ///< V, the tokenizer's vocabulary
    int vocab_divisible_by = 128;
    AttentionKind attention = AttentionKind::unfused;
    Activation activation = Activation::gelu;
    Norm norm = Norm::layernorm;
    PositionEmbedding position_embedding = PositionEmbedding::learned;
    bool tied_embeddings = true; ///< the LM head reuses the word embeddings
    bool bias = true;            ///< linear layers have biases
    double dropout = 0.1;        ///< hidden and attention dropout probability; 0 = no dropout

    bool is_transformer() const { return kind == ModelKind::transformer; }
    int head_dim() const { return hidden / heads; }
    /// Output columns of fc1: ffn, or 2 ffn for SwiGLU (gate and up projections).
    std::int64_t fc1_out() const {
        return activation == Activation::swiglu ? 2 * std::int64_t{ffn} : ffn;
    }
    /// Output columns of the fused QKV projection: (heads + 2 kv_heads) * head_dim.
    std::int64_t qkv_out() const {
        return (std::int64_t{heads} + 2 * std::int64_t{kv_heads}) * head_dim();
    }
};

/// The vocabulary as Megatron pads it for `tp` ranks: the smallest multiple of
/// vocab_divisible_by * tp that holds `vocab`.
std::int64_t padded_vocab(const ModelSpec& m, int tp);

/// Parameter counts of the whole model (no parallelism).
struct ParameterCounts {
    std::int64_t per_layer = 0;  ///< one transformer layer (or one MLP layer)
    std::int64_t layers = 0;     ///< all layers
    std::int64_t embedding = 0;  ///< word (+ learned position) embeddings
    std::int64_t head = 0;       ///< LM head weights when not tied to the embedding, else 0
    std::int64_t final_norm = 0; ///< the norm after the last layer
    std::int64_t total = 0;
};
/// With the tokenizer's vocabulary as given (padded_vocab(m, 1) would add Megatron's padding).
ParameterCounts parameter_counts(const ModelSpec& m);

/// Parameters of one layer held by each of `tp` tensor-parallel ranks (Megatron's split: QKV
/// and fc1 by columns, the projections by rows; norms and the row-parallel biases replicated).
std::int64_t layer_parameters_per_rank(const ModelSpec& m, int tp);

/// Forward FLOPs of one layer for one sample (seq tokens): GEMMs plus the attention products,
/// counted over the full s x s scores as Megatron and Narayanan et al. do (2 FLOPs per MAC).
double layer_forward_flops(const ModelSpec& m);
/// Forward FLOPs of the LM head (logits) for one sample: 2 s h V.
double head_forward_flops(const ModelSpec& m);

/// Model FLOPs of one training iteration of `global_batch` samples: 3 x forward (forward and a
/// backward of twice its cost) for every layer and the head, plus one more forward of every
/// layer when `count_recompute` (full recompute, as Narayanan et al. 2021 count it). For
/// GPT-style models with recompute this is their Eq. 3.
double model_flops_per_iteration(const ModelSpec& m, std::int64_t global_batch,
                                 bool count_recompute);

/// Narayanan et al. 2021, Eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double narayanan_iteration_flops(double global_batch, double seq, double layers, double hidden,
                                 double vocab);

/// Refuses a tensor-parallel size the model cannot be split by (heads, kv_heads, ffn, hidden
/// and, with sequence parallelism, seq must divide), with a message naming the numbers and a
/// fix. Throws InputError.
void check_tensor_parallel(const ModelSpec& m, int tp, bool sequence_parallel);

} // namespace clustersim::strategies::models
