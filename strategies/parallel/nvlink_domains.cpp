#include "strategies/parallel/nvlink_domains.h"

#include <algorithm>
#include <array>

namespace clustersim::strategies::parallel {

namespace {
constexpr std::array<std::string_view, 5> kGroupNames{"tp", "cp", "ep", "dp", "pp"};
} // namespace

std::string_view to_string(ParallelGroup g) {
    return kGroupNames[static_cast<std::size_t>(g)];
}

std::optional<ParallelGroup> parse_parallel_group(std::string_view s) {
    for (std::size_t i = 0; i < kGroupNames.size(); ++i)
        if (kGroupNames[i] == s)
            return static_cast<ParallelGroup>(i);
    return std::nullopt;
}

std::vector<GroupPlacement> nvlink_placement(const ExperimentSpec& e) {
    const long long domain = std::max(1, e.cluster.node.gpus);
    const ParallelSpec& p = e.parallel;
    std::vector<GroupPlacement> out;
    const auto place = [&](ParallelGroup g, int n, long long inner) {
        if (n <= 1)
            return;
        const long long block = inner * n;
        long long blocks = 0, straddling = 0;
        for (long long first = 0; first + block <= e.gpus; first += block, ++blocks)
            straddling += first / domain != (first + block - 1) / domain ? 1 : 0;
        out.push_back({g, n, block,
                       straddling == 0        ? DomainFit::inside
                       : straddling == blocks ? DomainFit::across
                                              : DomainFit::some});
    };
    place(ParallelGroup::tp, p.tp, 1);
    place(ParallelGroup::cp, p.cp, p.tp);
    if (p.expert_layout() && e.model.is_moe())
        place(ParallelGroup::ep, p.ep, p.expert_tp());
    place(ParallelGroup::dp, p.dp, static_cast<long long>(p.tp) * p.cp);
    place(ParallelGroup::pp, p.pp, static_cast<long long>(p.tp) * p.cp * p.dp);
    return out;
}

} // namespace clustersim::strategies::parallel
