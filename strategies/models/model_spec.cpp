#include "strategies/models/model_spec.h"

#include "base/error.h"

#include <string>
#include <vector>

namespace clustersim::strategies::models {

std::string_view to_string(Recompute r) {
    switch (r) {
    case Recompute::none:
        return "none";
    case Recompute::selective:
        return "selective";
    case Recompute::full:
        return "full";
    }
    return "?";
}

std::optional<Recompute> parse_recompute(std::string_view s) {
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        if (to_string(r) == s)
            return r;
    }
    return std::nullopt;
}

std::string_view to_string(ModelKind k) {
    return k == ModelKind::mlp ? "mlp" : "transformer";
}
std::string_view to_string(AttentionKind k) {
    return k == AttentionKind::flash ? "flash" : "unfused";
}
std::string_view to_string(Activation a) {
    return a == Activation::swiglu ? "swiglu" : "gelu";
}
std::string_view to_string(Norm n) {
    return n == Norm::rmsnorm ? "rmsnorm" : "layernorm";
}
std::string_view to_string(PositionEmbedding p) {
    return p == PositionEmbedding::rope ? "rope" : "learned";
}
std::string_view to_string(ModelHead h) {
    return h == ModelHead::classification ? "classification" : "lm";
}

std::int64_t padded_vocab(const ModelSpec& m, int tp) {
    const std::int64_t multiple = std::int64_t{m.vocab_divisible_by} * tp;
    return (m.vocab + multiple - 1) / multiple * multiple;
}

namespace {
std::int64_t norm_params(const ModelSpec& m) {
    return m.norm == Norm::layernorm ? 2 * std::int64_t{m.hidden} : m.hidden;
}
} // namespace

ParameterCounts parameter_counts(const ModelSpec& m) {
    ParameterCounts c;
    const std::int64_t h = m.hidden;
    if (!m.is_transformer()) {
        c.per_layer = h * h;
        c.layers = c.per_layer * m.layers;
        c.total = c.layers;
        return c;
    }
    c.per_layer = layer_parameters_per_rank(m, 1);
    c.layers = c.per_layer * m.layers;
    c.embedding =
        std::int64_t{m.vocab} * h +
        (m.position_embedding == PositionEmbedding::learned ? std::int64_t{m.seq} * h : 0) +
        std::int64_t{m.type_vocab_size} * h;
    // A classification head (Hugging Face's BertPooler and the classifier of
    // BertForSequenceClassification): dense h -> h with its bias, then h -> num_labels with
    // its bias. Its one norm is the embeddings' LayerNorm (BERT normalises after each block,
    // so no norm follows the last one): the same count as a final norm.
    c.head = m.head == ModelHead::classification ? h * h + h + (h + 1) * std::int64_t{m.num_labels}
             : m.tied_embeddings                 ? 0
                                                 : std::int64_t{m.vocab} * h;
    c.final_norm = norm_params(m);
    const std::int64_t outside = c.embedding + c.head + c.final_norm;
    if (m.is_moe()) {
        const std::int64_t dense = m.layers - m.moe_layers();
        c.per_moe_layer = moe_layer_parameters_per_rank(m, 1);
        c.layers = c.per_layer * dense + c.per_moe_layer * m.moe_layers();
        c.active = c.per_layer * dense +
                   moe_layer_parameters_per_rank(m, 1, true) * m.moe_layers() + outside;
    }
    c.total = c.layers + outside;
    if (!m.is_moe())
        c.active = c.total;
    // Multi-token prediction (Megatron-Core's MultiTokenPredictionLayer): two norms of h, the
    // 2h -> h projection, one layer of the last layer's kind and a final norm per block; the
    // embedding and the LM head are the model's.
    const std::int64_t mtp_layer = m.is_moe_layer(m.layers - 1) ? c.per_moe_layer : c.per_layer;
    c.mtp = m.mtp_num_layers * (3 * norm_params(m) + 2 * h * h + mtp_layer);
    return c;
}

namespace {
/// Latent attention's weights held by each of `tp` ranks: the down projections and their
/// norms replicated (Megatron-Core builds them "duplicated"), the up projections split by
/// heads (columns), the output projection by rows.
std::int64_t mla_parameters_per_rank(const ModelSpec& m, int tp) {
    const std::int64_t h = m.hidden;
    const std::int64_t a = m.heads;
    const std::int64_t norm = m.norm == Norm::layernorm ? 2 : 1;
    const std::int64_t replicated = h * m.q_lora_rank + norm * m.q_lora_rank +
                                    h * (std::int64_t{m.kv_lora_rank} + m.qk_pos_emb_head_dim) +
                                    norm * m.kv_lora_rank;
    // Without a query latent (q_lora_rank 0) the queries come from the hidden state through a
    // column-parallel linear_q_proj (Megatron-Core MLASelfAttention).
    const std::int64_t q_in = m.q_lora_rank > 0 ? m.q_lora_rank : h;
    const std::int64_t split = q_in * a * m.mla_qk_dim() +
                               std::int64_t{m.kv_lora_rank} * a * (m.qk_head_dim + m.v_head_dim) +
                               a * m.v_head_dim * h;
    return replicated + split / tp;
}
} // namespace

std::int64_t layer_parameters_per_rank(const ModelSpec& m, int tp) {
    const std::int64_t h = m.hidden;
    if (!m.is_transformer())
        return h * h / tp;
    const std::int64_t b = m.bias ? 1 : 0;
    const std::int64_t qkv =
        m.is_mla() ? mla_parameters_per_rank(m, tp) : (h * m.qkv_out() + b * m.qkv_out()) / tp;
    // row-parallel: bias replicated
    const std::int64_t proj = m.is_mla() ? 0 : m.q_dim() * h / tp + b * h;
    const std::int64_t fc1 = (h * m.fc1_out() + b * m.fc1_out()) / tp;
    const std::int64_t fc2 = std::int64_t{m.ffn} * h / tp + b * h;
    // Per-head query and key norms (replicated, as Megatron-Core's TENorm over kv_channels);
    // attention sinks: one logit per head, split with the heads.
    const std::int64_t qk_norms = m.qk_layernorm ? 2 * std::int64_t{m.head_dim()} : 0;
    const std::int64_t sinks = m.attention_sinks ? std::int64_t{m.heads} / tp : 0;
    return 2 * norm_params(m) + qkv + proj + fc1 + fc2 + qk_norms + sinks;
}

std::int64_t attention_block_parameters_per_rank(const ModelSpec& m, int tp) {
    // A dense layer without its MLP (whose fc2 bias, h, a layer without fc2 does not have).
    ModelSpec attention_only = m;
    attention_only.ffn = 0;
    return layer_parameters_per_rank(attention_only, tp) - (m.bias ? m.hidden : 0);
}

std::int64_t moe_layer_parameters_per_rank(const ModelSpec& m, int tp, bool active) {
    const std::int64_t h = m.hidden;
    const std::int64_t experts = active ? m.moe_router_topk : m.num_experts;
    // With linear biases (GPT-OSS) each expert's fc1 and fc2 and the router have theirs.
    const std::int64_t b = m.bias ? 1 : 0;
    const std::int64_t expert = h * m.expert_fc1_out() + std::int64_t{m.moe_ffn_hidden_size} * h +
                                b * (m.expert_fc1_out() + h);
    const std::int64_t shared = m.moe_shared_expert_intermediate_size > 0
                                    ? h * m.shared_fc1_out() +
                                          std::int64_t{m.moe_shared_expert_intermediate_size} * h +
                                          b * (m.shared_fc1_out() + h)
                                    : 0;
    const std::int64_t router = std::int64_t{m.num_experts} * (h + b);
    return attention_block_parameters_per_rank(m, tp) + router + (experts * expert + shared) / tp;
}

std::int64_t routed_expert_parameters_per_rank(const ModelSpec& m, int ep, int etp) {
    const std::int64_t h = m.hidden;
    const std::int64_t b = m.bias ? 1 : 0;
    const std::int64_t expert = h * m.expert_fc1_out() + std::int64_t{m.moe_ffn_hidden_size} * h +
                                b * (m.expert_fc1_out() + h);
    return std::int64_t{m.num_experts / ep} * expert / etp;
}

double moe_layer_forward_flops(const ModelSpec& m) {
    ModelSpec attention_only = m;
    attention_only.ffn = 0;
    const double h = m.hidden;
    const double s = m.seq;
    const double expert = h * static_cast<double>(m.expert_fc1_out()) +
                          static_cast<double>(m.moe_ffn_hidden_size) * h;
    const double shared = h * static_cast<double>(m.shared_fc1_out()) +
                          static_cast<double>(m.moe_shared_expert_intermediate_size) * h;
    return layer_forward_flops(attention_only) +
           2.0 * s * (h * m.num_experts + m.moe_router_topk * expert + shared);
}

double layer_forward_flops(const ModelSpec& m) {
    const double h = m.hidden;
    if (!m.is_transformer())
        return 2.0 * h * h; // one row of the batch through one dim x dim layer
    const double s = m.seq;
    const double mlp = h * static_cast<double>(m.fc1_out()) + static_cast<double>(m.ffn) * h;
    if (m.is_mla()) {
        // Down projections to the latents, up projections per head, the output projection;
        // QK^T over qk + rotary dimensions and attention over v_head_dim per head.
        const double a = m.heads;
        const double qk = static_cast<double>(m.mla_qk_dim());
        const double q_in = m.q_lora_rank > 0 ? m.q_lora_rank : h; // linear_q_proj without one
        const double gemms =
            h * m.q_lora_rank + q_in * a * qk + h * (m.kv_lora_rank + m.qk_pos_emb_head_dim) +
            m.kv_lora_rank * a * (m.qk_head_dim + m.v_head_dim) + a * m.v_head_dim * h + mlp;
        return 2.0 * s * gemms + 2.0 * s * s * a * (qk + m.v_head_dim);
    }
    const double q = static_cast<double>(m.q_dim());
    const double gemms = h * static_cast<double>(m.qkv_out()) + q * h +
                         h * static_cast<double>(m.fc1_out()) + static_cast<double>(m.ffn) * h;
    return 2.0 * s * gemms + 4.0 * s * s * q; // QK^T and attention-over-V: 2 s^2 (heads d) each
}

double head_forward_flops(const ModelSpec& m) {
    if (!m.is_transformer())
        return 0;
    // A classification head runs on the first token alone: the pooler and the classifier.
    if (m.head == ModelHead::classification)
        return 2.0 * m.hidden * (static_cast<double>(m.hidden) + m.num_labels);
    return 2.0 * m.seq * static_cast<double>(m.hidden) * m.vocab;
}

double model_flops_per_iteration(const ModelSpec& m, std::int64_t global_batch,
                                 bool count_recompute) {
    const double layer_passes = count_recompute ? 4.0 : 3.0;
    const double layers = m.is_moe() ? (m.layers - m.moe_layers()) * layer_forward_flops(m) +
                                           m.moe_layers() * moe_layer_forward_flops(m)
                                     : m.layers * layer_forward_flops(m);
    // Each multi-token-prediction block: its 2h -> h projection, one layer of the last
    // layer's kind, and the LM head again.
    const double mtp_layer =
        m.is_moe_layer(m.layers - 1) ? moe_layer_forward_flops(m) : layer_forward_flops(m);
    const double mtp =
        m.mtp_num_layers *
        (3.0 * (2.0 * m.seq * 2.0 * m.hidden * static_cast<double>(m.hidden) + mtp_layer) +
         3.0 * head_forward_flops(m));
    return static_cast<double>(global_batch) *
           (layer_passes * layers + 3.0 * head_forward_flops(m) + mtp);
}

double attention_score_flops(const ModelSpec& m) {
    if (!m.is_transformer())
        return 0;
    const double s = m.seq;
    if (m.is_mla())
        return 2.0 * s * s * m.heads * (static_cast<double>(m.mla_qk_dim()) + m.v_head_dim);
    return 4.0 * s * s * static_cast<double>(m.q_dim());
}

double causal_model_flops_per_iteration(const ModelSpec& m, std::int64_t global_batch) {
    // An encoder's bidirectional attention computes every score: nothing to halve.
    if (!m.causal)
        return model_flops_per_iteration(m, global_batch, false);
    return model_flops_per_iteration(m, global_batch, false) -
           static_cast<double>(global_batch) * 3.0 * m.layers * attention_score_flops(m) / 2;
}

double narayanan_iteration_flops(double global_batch, double seq, double layers, double hidden,
                                 double vocab) {
    return 96.0 * global_batch * seq * layers * hidden * hidden *
           (1.0 + seq / (6.0 * hidden) + vocab / (16.0 * layers * hidden));
}

void check_tensor_parallel(const ModelSpec& m, int tp, bool sequence_parallel) {
    if (tp < 1)
        throw InputError("tensor-parallel size must be at least 1, got " + std::to_string(tp));
    struct Constraint {
        const char* name;
        std::int64_t value;
    };
    std::vector<Constraint> cs;
    if (m.is_transformer()) {
        cs = {{"heads", m.heads}, {"kv_heads", m.kv_heads}, {"ffn", m.ffn}, {"hidden", m.hidden}};
        if (m.is_moe()) {
            cs.push_back({"moe_ffn_hidden_size", m.moe_ffn_hidden_size});
            if (m.moe_shared_expert_intermediate_size > 0)
                cs.push_back(
                    {"moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size});
        }
        if (sequence_parallel)
            cs.push_back({"seq (sequence parallelism splits the sequence)", m.seq});
    } else {
        if (sequence_parallel)
            throw InputError("sequence parallelism applies to transformers; model '" + m.name +
                             "' is an MLP");
        cs = {{"dim", m.hidden}};
    }
    for (const auto& c : cs) {
        if (c.value % tp == 0)
            continue;
        std::string fits;
        for (int t = 1; t <= 1024; ++t) {
            bool ok = true;
            for (const auto& d : cs)
                ok = ok && d.value % t == 0;
            if (ok)
                fits += (fits.empty() ? "" : ", ") + std::to_string(t);
        }
        throw InputError("tensor parallelism tp=" + std::to_string(tp) + " does not divide " +
                         c.name + "=" + std::to_string(c.value) + " of model '" + m.name +
                         "'; tp values that split this model: " + fits);
    }
}

} // namespace clustersim::strategies::models
