#pragma once
/// \file
/// Where the NVLink domains (a node: 8 GPUs of a DGX, 72 of a GB200 NVL72 rack) put each
/// parallel group of an experiment, in Megatron-Core's rank order (tp fastest, then cp, dp and
/// pp; the experts' etp, then ep): the groups of n ranks `inner` apart fill blocks of
/// inner x n consecutive GPUs, and a block that straddles two domains has its groups across
/// them. The run report says it; `parallel.inside_nvlink` asks for groups that must not cross.

#include "strategies/parallel/experiment.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace clustersim::strategies::parallel {

/// The groups `parallel.inside_nvlink` may name, as bits of ParallelSpec::inside_nvlink.
enum class ParallelGroup : std::uint8_t { tp, cp, ep, dp, pp };
std::string_view to_string(ParallelGroup g);
/// "tp", "cp", "ep", "dp", "pp"; nullopt otherwise.
std::optional<ParallelGroup> parse_parallel_group(std::string_view s);
constexpr std::uint8_t group_bit(ParallelGroup g) {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(g));
}

/// Whether a kind of group stays inside one domain: every group, none, or some.
enum class DomainFit : std::uint8_t { inside, across, some };

struct GroupPlacement {
    ParallelGroup group;
    int size = 0; ///< ranks per group (> 1: groups of one rank are left out)
    /// Consecutive GPUs one group's block covers: size x the stride between its ranks.
    long long span = 0;
    DomainFit fit = DomainFit::inside;
};

/// The groups of `e` with more than one rank, in the order tp, cp, ep, dp, pp, on NVLink
/// domains of e.cluster.node.gpus GPUs.
std::vector<GroupPlacement> nvlink_placement(const ExperimentSpec& e);

} // namespace clustersim::strategies::parallel
