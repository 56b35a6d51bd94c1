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
#include <vector>

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
/// What follows the last layer. `lm`: the final norm, the LM head over the vocabulary and the
/// loss (GPT). `classification`: a sequence classifier as Hugging Face's
/// BertForSequenceClassification builds it (AutoModelForSequenceClassification; Megatron's
/// BertModel with add_binary_head is the 2-label case): the pooler, a dense h -> h and tanh on
/// the first ([CLS]) token, dropout, and a classifier h -> num_labels with a cross-entropy over
/// the labels; no vocabulary-sized logits.
enum class ModelHead : std::uint8_t { lm, classification };
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
std::string_view to_string(ModelHead h);

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
    /// Causal (decoder) attention, each token attending to the ones before it; false: an
    /// encoder's bidirectional attention over the whole sequence (BERT), whose attention
    /// kernels visit every score (no half from the mask).
    bool causal = true;
    /// What follows the last layer (ModelHead), and with `classification` its labels
    /// (Hugging Face's num_labels; 2 for a binary head).
    ModelHead head = ModelHead::lm;
    int num_labels = 2;
    /// Token-type (segment) embeddings: a type_vocab_size x hidden table added to the word
    /// embeddings (Hugging Face's BertConfig.type_vocab_size, 2 for BERT; Megatron's
    /// --num-tokentypes). 0: none.
    int type_vocab_size = 0;

    /// Per-head query/key/value dimensions (Megatron's --kv-channels); 0: hidden / heads.
    /// Qwen3, GPT-OSS and Gemma 3 set it apart from hidden / heads (Qwen3-30B-A3B: 128 with
    /// hidden 2048 and 32 heads), so the queries and the output projection's input are heads x
    /// kv_channels wide, not hidden.
    int kv_channels = 0;
    /// RMSNorm of each head's queries and keys before the rotary embedding (Megatron's
    /// --qk-layernorm; Qwen3, Gemma 3): two norms of kv_channels weights per layer.
    bool qk_layernorm = false;
    /// Sliding-window attention (Megatron-Core's window_size and window_attn_skip_freq): with
    /// window_size > 0 a query attends to itself and the window_size tokens before it, on
    /// every layer but each window_attn_skip_freq-th (1-based), which attends to the whole
    /// causal prefix (0: every layer windowed). GPT-OSS: 128 and 2 (alternating).
    int window_size = 0;
    int window_attn_skip_freq = 0;
    /// Learned attention sinks (Megatron-Core's softmax_type "learnable"; GPT-OSS): a learned
    /// logit per head added to each softmax's denominator; heads parameters per layer, its
    /// compute inside the attention kernel.
    bool attention_sinks = false;
    /// YaRN's extension of the rotary embedding (Megatron-Core's position_embedding_type
    /// "yarn" with yarn_rotary_scaling_factor; GPT-OSS: 32). 0: plain RoPE. Above 1 the
    /// attention passes YaRN's concentration factor mscale = 0.1 ln(factor) + 1 to
    /// apply_rotary_pos_emb, which refuses Transformer Engine's fused RoPE for mscale != 1 and
    /// runs its unfused chain instead (megatron/core/models/common/embeddings/rope_utils.py,
    /// apply_rotary_pos_emb and _apply_rotary_pos_emb_bshd; yarn_rotary_pos_embedding.py,
    /// _yarn_get_mscale; NVIDIA/Megatron-LM@2edffadb528ea07e261b0c02cdc42a7bb9c3197a).
    double yarn_rotary_scaling_factor = 0;
    /// The gated activation's clamp (Megatron-Core's activation_func_clamp_value; GPT-OSS:
    /// 7.0, with its quick-GeLU gate and glu_linear_offset 1, which cost as SwiGLU does). 0:
    /// none. Unfused experts clamp the two halves of fc1's output apart and concatenate them
    /// before the fused activation (layer_work_moe.cpp, expert_clamp).
    double activation_func_clamp_value = 0;

    /// Multi-head latent attention (DeepSeek-V2/V3; Megatron-Core's --multi-latent-attention
    /// with the same names): with kv_lora_rank > 0 the keys and values are projected up from a
    /// per-token latent of kv_lora_rank (normalised), the queries from one of q_lora_rank; each
    /// head's query and key have qk_head_dim dimensions plus qk_pos_emb_head_dim rotary ones
    /// (the rotary key shared by all heads, projected with the latent), its value v_head_dim.
    int q_lora_rank = 0;
    int kv_lora_rank = 0;
    int qk_head_dim = 0;
    int qk_pos_emb_head_dim = 0;
    int v_head_dim = 0;

    /// Mixture of experts (Megatron-Core's names): with num_experts > 0 every layer from
    /// `first_k_dense_replace` on replaces its MLP by `num_experts` routed experts of
    /// moe_ffn_hidden_size (each an MLP with this model's activation), of which a learned
    /// router (a linear layer h -> experts, softmax, top-k) picks moe_router_topk per token,
    /// plus always-on shared experts of moe_shared_expert_intermediate_size in all (0: none).
    int num_experts = 0;
    int moe_router_topk = 2;
    int moe_ffn_hidden_size = 0;
    int moe_shared_expert_intermediate_size = 0;
    /// The first layers keep a dense MLP of `ffn` (DeepSeek-V3: 3; Megatron-Core's
    /// --moe-layer-freq "([0]*3+[1]*58)").
    int first_k_dense_replace = 0;
    /// Expert capacity as a multiple of the mean tokens per expert; tokens above it are dropped
    /// (--moe-expert-capacity-factor with --moe-token-drop-policy probs). 0: dropless.
    double moe_expert_capacity_factor = 0;
    /// Tokens of the busiest expert-parallel rank over the mean (>= 1): with experts spread over
    /// GPUs the busiest sets the pace. With every expert on each GPU (no expert parallelism)
    /// every rank routes all its tokens and the factor does not apply.
    double moe_load_imbalance = 1.0;
    /// Group-limited routing (--moe-router-num-groups, --moe-router-group-topk; DeepSeek-V3's
    /// n_group 8, topk_group 4): the experts in `moe_router_num_groups` equal groups, each
    /// token's top-k chosen within its best `moe_router_group_topk` groups. With the groups
    /// laid out one per node of the expert-parallel group this is DeepSeek-V3's node-limited
    /// routing (technical report, section 2.1.2: each token to at most 4 nodes). 0: none.
    int moe_router_num_groups = 0;
    int moe_router_group_topk = 0;
    /// Which layers have experts (Megatron-Core's --moe-layer-freq), the others a dense MLP of
    /// ffn: a pattern repeated over the layers, layer i (0-based) has experts when
    /// moe_layer_pattern[i % size] is 1 (and i >= first_k_dense_replace). The integer form k
    /// is 1 followed by k - 1 zeros (i % k == 0); the list form ([0]+[1])*24, Llama 4
    /// Maverick's, is [0, 1]. Empty: every layer.
    std::vector<std::uint8_t> moe_layer_pattern;
    /// Multi-token prediction (DeepSeek-V3; Megatron-Core's --mtp-num-layers): after the last
    /// layer, this many extra blocks each predict one more token: a norm of the hidden state
    /// and of the next token's embedding, a 2h -> h projection, one transformer layer (of the
    /// model's last kind) and the shared LM head and loss again. 0: none.
    int mtp_num_layers = 0;

    bool is_transformer() const { return kind == ModelKind::transformer; }
    bool is_moe() const { return is_transformer() && num_experts > 0; }
    bool is_mla() const { return is_transformer() && kv_lora_rank > 0; }
    /// Per-head query/key dimensions of latent attention (non-rotary + rotary).
    std::int64_t mla_qk_dim() const {
        return std::int64_t{qk_head_dim} + std::int64_t{qk_pos_emb_head_dim};
    }
    /// Whether layer `i` (0-based) has experts.
    bool is_moe_layer(int i) const {
        return is_moe() && i >= first_k_dense_replace &&
               (moe_layer_pattern.empty() ||
                moe_layer_pattern[static_cast<std::size_t>(i) % moe_layer_pattern.size()] != 0);
    }
    /// Layers with experts.
    int moe_layers() const { return moe_layers_below(layers); }
    /// Layers with experts among the first `n`.
    int moe_layers_below(int n) const {
        if (!is_moe() || n <= first_k_dense_replace)
            return 0;
        // Layers with experts in [0, x): whole periods of the pattern, then the rest.
        const auto below = [&](int x) {
            if (moe_layer_pattern.empty())
                return x;
            const int period = static_cast<int>(moe_layer_pattern.size());
            int per_period = 0, rest = 0;
            for (int j = 0; j < period; ++j) {
                per_period += moe_layer_pattern[static_cast<std::size_t>(j)];
                rest += j < x % period ? moe_layer_pattern[static_cast<std::size_t>(j)] : 0;
            }
            return x / period * per_period + rest;
        };
        return below(n) - below(first_k_dense_replace);
    }
    /// Whether layer `i` (0-based) attends within a sliding window.
    bool is_window_layer(int i) const {
        return window_size > 0 &&
               (window_attn_skip_freq == 0 || (i + 1) % window_attn_skip_freq != 0);
    }
    /// Output columns of one expert's fc1 (2 x its ffn for SwiGLU).
    std::int64_t expert_fc1_out() const {
        return (activation == Activation::swiglu ? 2 : 1) * std::int64_t{moe_ffn_hidden_size};
    }
    /// Output columns of the shared experts' fc1.
    std::int64_t shared_fc1_out() const {
        return (activation == Activation::swiglu ? 2 : 1) *
               std::int64_t{moe_shared_expert_intermediate_size};
    }
    int head_dim() const { return kv_channels > 0 ? kv_channels : hidden / heads; }
    /// Columns of the queries (and rows of the output projection): heads x head_dim.
    std::int64_t q_dim() const { return std::int64_t{heads} * head_dim(); }
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
    /// Mixture of experts: one layer with experts (all of them; per_layer is a dense layer).
    std::int64_t per_moe_layer = 0;
    /// Parameters a token passes through: the dense parts, the router, top-k routed experts
    /// and the shared ones (= total for a dense model). Counts the input embedding, as
    /// Mixtral's and DeepSeek-V3's published "active" figures do.
    std::int64_t active = 0;
    /// Multi-token prediction's blocks (mtp_num_layers), not in `total`: DeepSeek-V3's 671B
    /// leaves its 14B of MTP out, as the report counts.
    std::int64_t mtp = 0;
};
/// With the tokenizer's vocabulary as given (padded_vocab(m, 1) would add Megatron's padding).
ParameterCounts parameter_counts(const ModelSpec& m);

/// Parameters of one layer held by each of `tp` tensor-parallel ranks (Megatron's split: QKV
/// and fc1 by columns, the projections by rows; norms and the row-parallel biases replicated).
std::int64_t layer_parameters_per_rank(const ModelSpec& m, int tp);
/// A transformer layer's attention block and its two norms, held by each of `tp` ranks (a
/// layer without its MLP).
std::int64_t attention_block_parameters_per_rank(const ModelSpec& m, int tp);
/// The same for a layer with experts, every expert on this rank (no expert parallelism) and
/// split over `tp` as Megatron-Core's expert tensor parallelism does (= tp by default); the
/// router is replicated. With `active`, only the top-k routed experts.
std::int64_t moe_layer_parameters_per_rank(const ModelSpec& m, int tp, bool active = false);

/// The routed experts' weights of one layer held by each GPU with the experts spread over `ep`
/// GPUs and each split over `etp` (Megatron-Core's expert_model_parallel_size and
/// expert_tensor_parallel_size): num_experts / ep experts, 1/etp of each.
std::int64_t routed_expert_parameters_per_rank(const ModelSpec& m, int ep, int etp);

/// Forward FLOPs of one layer for one sample (seq tokens): GEMMs plus the attention products,
/// counted over the full s x s scores as Megatron and Narayanan et al. do (2 FLOPs per MAC).
double layer_forward_flops(const ModelSpec& m);
/// The same for a layer with experts: attention, the router GEMM (2 s h E), top-k routed
/// experts and the shared ones per token (no tokens dropped).
double moe_layer_forward_flops(const ModelSpec& m);
/// Forward FLOPs of the LM head (logits) for one sample: 2 s h V.
double head_forward_flops(const ModelSpec& m);

/// Model FLOPs of one training iteration of `global_batch` samples: 3 x forward (forward and a
/// backward of twice its cost) for every layer and the head, plus one more forward of every
/// layer when `count_recompute` (full recompute, as Narayanan et al. 2021 count it). For
/// GPT-style models with recompute this is their Eq. 3.
double model_flops_per_iteration(const ModelSpec& m, std::int64_t global_batch,
                                 bool count_recompute);

/// Forward FLOPs of one layer's attention scores and their product with the values for one
/// sample, over the full s x s (QK^T and attention-over-V; part of layer_forward_flops).
double attention_score_flops(const ModelSpec& m);

/// model_flops_per_iteration without recompute, but with causal attention's scores counted at
/// half, as MaxText counts them (src/maxtext/utils/maxtext_utils.py,
/// calculate_tflops_training_per_device: "Divide attention flops by 2 due to causal mask").
double causal_model_flops_per_iteration(const ModelSpec& m, std::int64_t global_batch);

/// Narayanan et al. 2021, Eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double narayanan_iteration_flops(double global_batch, double seq, double layers, double hidden,
                                 double vocab);

/// Refuses a tensor-parallel size the model cannot be split by (heads, kv_heads, ffn, hidden
/// and, with sequence parallelism, seq must divide), with a message naming the numbers and a
/// fix. Throws InputError.
void check_tensor_parallel(const ModelSpec& m, int tp, bool sequence_parallel);

} // namespace clustersim::strategies::models
