#include "strategies/models/expert_parallel.h"

#include "base/error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace clustersim::strategies::models {

namespace {

/// C(s - x, k) / C(s, k): the chance that k of s items drawn without replacement miss x given
/// ones.
double miss_all(std::int64_t s, std::int64_t x, std::int64_t k) {
    double p = 1;
    for (std::int64_t i = 0; i < k; ++i) {
        if (s - x - i <= 0)
            return 0;
        p *= static_cast<double>(s - x - i) / static_cast<double>(s - i);
    }
    return p;
}

/// log C(n, k) as a sum (not std::lgamma, which writes glibc's global signgam: a data race
/// when sweep threads evaluate MoE layouts at once).
double log_choose(std::int64_t n, std::int64_t k) {
    k = std::min(k, n - k);
    double sum = 0;
    for (std::int64_t i = 1; i <= k; ++i)
        sum += std::log(static_cast<double>(n - k + i) / static_cast<double>(i));
    return sum;
}

} // namespace

double expected_bins_per_token(const ModelSpec& m, int bins) {
    if (!m.is_moe() || bins <= 1)
        return 1;
    const std::int64_t E = m.num_experts;
    const std::int64_t k = m.moe_router_topk;
    const std::int64_t per_bin = E / bins;
    const std::int64_t G = m.moe_router_num_groups;
    const std::int64_t Gt = m.moe_router_group_topk;
    if (G > 0 && Gt < G && G % bins == 0) {
        // Each bin holds G / bins whole groups; j of them chosen with probability
        // C(a, j) C(G - a, Gt - j) / C(G, Gt).
        const std::int64_t a = G / bins;
        const std::int64_t S = Gt * (E / G);
        double hit = 0;
        for (std::int64_t j = 1; j <= std::min(a, Gt); ++j) {
            if (Gt - j > G - a)
                continue;
            const double pj =
                std::exp(log_choose(a, j) + log_choose(G - a, Gt - j) - log_choose(G, Gt));
            hit += pj * (1 - miss_all(S, j * (E / G), k));
        }
        return static_cast<double>(bins) * hit;
    }
    if (G > 0 && Gt < G && bins % G == 0) {
        // Each group spans bins / G bins: a bin can be reached when its group is chosen.
        const std::int64_t S = Gt * (E / G);
        return static_cast<double>(bins) * static_cast<double>(Gt) / static_cast<double>(G) *
               (1 - miss_all(S, per_bin, k));
    }
    return static_cast<double>(bins) * (1 - miss_all(E, per_bin, k));
}

std::int64_t flex_dispatch_bytes(const ModelSpec& m, int ep, int nodes, std::int64_t tokens,
                                 hardware::Dtype dtype) {
    const double destinations =
        nodes > 1 ? expected_bins_per_token(m, nodes) : expected_bins_per_token(m, ep);
    return static_cast<std::int64_t>(std::llround(static_cast<double>(tokens) * destinations)) *
           m.hidden * hardware::bytes_per_element(dtype);
}

void check_expert_parallel(const ModelSpec& m, int ep) {
    if (ep < 1)
        throw InputError("expert-parallel size must be at least 1, got " + std::to_string(ep));
    if (ep == 1)
        return;
    if (!m.is_moe())
        throw InputError("expert parallelism ep=" + std::to_string(ep) +
                         " needs a model with "
                         "experts; model '" +
                         m.name + "' is dense: set ep to 1");
    if (m.num_experts % ep == 0)
        return;
    std::string fits;
    for (int e = 1; e <= m.num_experts; ++e) {
        if (m.num_experts % e == 0)
            fits += (fits.empty() ? "" : ", ") + std::to_string(e);
    }
    throw InputError("expert parallelism ep=" + std::to_string(ep) + " does not divide " +
                     "num_experts=" + std::to_string(m.num_experts) + " of model '" + m.name +
                     "'; ep values that split the experts: " + fits);
}

ExpertParallelWork expert_parallel_work(const ModelSpec& m, int ep, int tp, bool sequence_parallel,
                                        int micro_batch, hardware::Dtype dtype) {
    check_expert_parallel(m, ep);
    check_tensor_parallel(m, tp, sequence_parallel && tp > 1);
    if (!m.is_moe())
        throw InputError("model '" + m.name + "' has no experts to distribute");
    const std::int64_t e = hardware::bytes_per_element(dtype);
    const std::int64_t h = m.hidden;
    const std::int64_t tokens =
        std::int64_t{micro_batch} * m.seq / (sequence_parallel && tp > 1 ? tp : 1);
    ExpertParallelWork w;
    w.local_experts = m.num_experts / ep;
    w.routed_copies = tokens * m.moe_router_topk;
    // Every GPU receives the mean (its routed copies) from the group; the busiest the
    // imbalance factor times that, at most the capacity its experts keep.
    double factor = ep > 1 ? m.moe_load_imbalance : 1.0;
    if (m.moe_expert_capacity_factor > 0)
        factor = std::min(factor, m.moe_expert_capacity_factor);
    w.busiest_copies = static_cast<std::int64_t>(static_cast<double>(w.routed_copies) * factor);
    w.tokens_per_expert = (w.busiest_copies + w.local_experts - 1) / w.local_experts;
    w.dispatch_bytes = w.routed_copies * h * e;
    w.combine_bytes = w.dispatch_bytes;
    w.busiest_receive_bytes = w.busiest_copies * (ep - 1) / ep * h * e;
    const std::int64_t expert = h * m.expert_fc1_out() + std::int64_t{m.moe_ffn_hidden_size} * h;
    w.expert_parameters = std::int64_t{w.local_experts} * expert / tp;
    return w;
}

} // namespace clustersim::strategies::models
