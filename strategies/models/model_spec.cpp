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
        (m.position_embedding == PositionEmbedding::learned ? std::int64_t{m.seq} * h : 0);
    c.head = m.tied_embeddings ? 0 : std::int64_t{m.vocab} * h;
    c.final_norm = norm_params(m);
    c.total = c.layers + c.embedding + c.head + c.final_norm;
    return c;
}

std::int64_t layer_parameters_per_rank(const ModelSpec& m, int tp) {
    const std::int64_t h = m.hidden;
    if (!m.is_transformer())
        return h * h / tp;
    const std::int64_t b = m.bias ? 1 : 0;
    const std::int64_t qkv = (h * m.qkv_out() + b * m.qkv_out()) / tp;
    const std::int64_t proj = h * h / tp + b * h; // row-parallel: bias replicated
    const std::int64_t fc1 = (h * m.fc1_out() + b * m.fc1_out()) / tp;
    const std::int64_t fc2 = std::int64_t{m.ffn} * h / tp + b * h;
    return 2 * norm_params(m) + qkv + proj + fc1 + fc2;
}

double layer_forward_flops(const ModelSpec& m) {
    const double h = m.hidden;
    if (!m.is_transformer())
        return 2.0 * h * h; // one row of the batch through one dim x dim layer
    const double s = m.seq;
    const double gemms = h * static_cast<double>(m.qkv_out()) + h * h +
                         h * static_cast<double>(m.fc1_out()) + static_cast<double>(m.ffn) * h;
    return 2.0 * s * gemms + 4.0 * s * s * h; // QK^T and attention-over-V: 2 s^2 h each
}

double head_forward_flops(const ModelSpec& m) {
    if (!m.is_transformer())
        return 0;
    return 2.0 * m.seq * static_cast<double>(m.hidden) * m.vocab;
}

double model_flops_per_iteration(const ModelSpec& m, std::int64_t global_batch,
                                 bool count_recompute) {
    const double layer_passes = count_recompute ? 4.0 : 3.0;
    return static_cast<double>(global_batch) *
           (layer_passes * m.layers * layer_forward_flops(m) + 3.0 * head_forward_flops(m));
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
