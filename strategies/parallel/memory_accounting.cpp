#include "strategies/parallel/memory_accounting.h"

namespace clustersim::strategies::parallel::detail {

void account_memory(const StepPlan& plan, StepResult& r) {
    r.capacity_bytes = plan.capacity_bytes;
    for (const RankPlan& rp : plan.ranks) {
        StageMemory m;
        m.stage = rp.rank;
        m.weights_bytes = rp.weights_bytes;
        m.grads_bytes = plan.shape.forward_only ? 0 : rp.grads_bytes;
        m.optimizer_bytes = plan.shape.forward_only ? 0 : rp.optimizer_bytes;
        m.activations_bytes = peak_activation_bytes(plan, rp.rank);
        m.gathered_bytes = peak_gathered_bytes(plan, rp.rank);
        m.runtime_bytes = plan.runtime_bytes;
        m.peak_bytes = m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes +
                       m.gathered_bytes + m.runtime_bytes;
        for (int c = 0; c < plan.shape.virtual_stages; ++c)
            m.recompute += plan.stage(virtual_stage(c, rp.rank, plan.shape)).recompute;
        if (m.peak_bytes > r.peak_bytes_max)
            r.peak_bytes_max = m.peak_bytes;
        const std::int64_t excess = m.peak_bytes - plan.capacity_bytes;
        if (excess > 0 && (!r.oom || excess > r.oom->excess_bytes))
            r.oom = OutOfMemory{rp.rank, excess};
        r.memory.push_back(m);
    }
    r.automatic_recompute = plan.automatic_recompute;
}

} // namespace clustersim::strategies::parallel::detail
