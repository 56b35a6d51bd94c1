#include "strategies/parallel/oom_advice.h"

#include <utility>
#include <vector>

namespace clustersim::strategies::parallel::detail {

OomSuggestion find_fix(const ExperimentSpec& e,
                       const std::shared_ptr<const hardware::Topology>& topology,
                       collectives::CommunicatorCache* communicators) {
    auto fits = [&](ExperimentSpec variant) {
        StepOptions o;
        o.oom_advice = false;
        return !simulate_step_on(variant, o, topology, communicators).oom;
    };
    // In order of cost: recompute trades time for memory within a GPU, ZeRO adds collectives.
    std::vector<std::pair<OomSuggestion, ExperimentSpec>> tries;
    if (e.parallel.recompute != RecomputePolicy::full &&
        e.parallel.recompute != RecomputePolicy::automatic) {
        ExperimentSpec v = e;
        v.parallel.recompute = RecomputePolicy::selective;
        if (e.parallel.recompute == RecomputePolicy::none)
            tries.emplace_back(OomSuggestion{RecomputePolicy::selective, std::nullopt}, v);
        v.parallel.recompute = RecomputePolicy::full;
        tries.emplace_back(OomSuggestion{RecomputePolicy::full, std::nullopt}, v);
    }
    if (e.parallel.dp_cp() > 1) {
        // ZeRO-3 with the experts laid out apart is refused (validate_experiment): not offered.
        const int top = e.parallel.expert_layout() && e.model.is_moe() ? 2 : 3;
        for (int z = e.parallel.zero + 1; z <= top; ++z) {
            ExperimentSpec v = e;
            v.parallel.zero = z;
            tries.emplace_back(OomSuggestion{std::nullopt, z}, v);
        }
    }
    for (auto& [suggestion, v] : tries) {
        if (fits(v))
            return suggestion;
    }
    return {};
}

} // namespace clustersim::strategies::parallel::detail
