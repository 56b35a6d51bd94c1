#include "strategies/models/expert_parallel.h"

#include "base/error.h"

#include <algorithm>
#include <string>

namespace clustersim::strategies::models {

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
