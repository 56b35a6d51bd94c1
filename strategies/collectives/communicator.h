#pragma once
/// \file
/// A communicator: a group of GPUs of a Topology that collectives run over, with everything
/// the closed forms need precomputed (rings, trees, route bottlenecks), so that `predict` costs
/// a few arithmetic operations and allocates nothing.

#include "hardware/topology.h"
#include "sim/time.h"
#include "strategies/collectives/collective.h"

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace clustersim::strategies::collectives {

namespace detail {
class Plan;
}

/// What `choose` settles: the algorithm and protocol, and the predicted time.
struct Choice {
    Algorithm algorithm = Algorithm::ring;
    Protocol protocol = Protocol::simple;
    sim::Time time = sim::Time::zero();
};

class Communicator {
public:
    /// Ranks are the positions in `gpus` (GPU indices of `topology`, distinct). The topology
    /// must outlive the communicator. Throws InputError for bad GPUs or hardware without a
    /// `collectives:` section.
    Communicator(const hardware::Topology& topology, std::vector<int> gpus);
    /// The first `count` GPUs of the topology.
    static Communicator first(const hardware::Topology& topology, int count);
    ~Communicator();
    Communicator(Communicator&&) noexcept;
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int size() const;
    const std::vector<int>& gpus() const;
    const hardware::Topology& topology() const;
    /// Nodes the communicator spans.
    int node_count() const;

    /// Why `algorithm` cannot run `op` on this communicator; empty when it can.
    std::string why_not(Algorithm algorithm, Op op) const;
    /// why_not(algorithm, op).empty(), without formatting the reason (precomputed).
    bool runs(Algorithm algorithm, Op op) const {
        return runs_[static_cast<size_t>(algorithm)][static_cast<size_t>(op)];
    }
    /// Throws InputError when `c` cannot run: size not a positive multiple of what the op needs,
    /// dtype other than fp32/fp16/bf16, root out of range, algorithm or protocol that does not
    /// apply.
    void validate(const Collective& c) const;
    /// The algorithm and protocol `c` runs with (the cheapest predicted ones where `c` leaves
    /// them open, among the algorithms NCCL offers for the op) and the predicted time.
    /// Does not validate. The automatic choice (algorithm and protocol open) is remembered per
    /// (op, bytes, dtype, root), for the first kMemoEntries of them: a sweep's configurations
    /// share their communicators (CommunicatorCache) and ask for the same collectives again.
    /// Thread-safe.
    Choice choose(const Collective& c) const;
    static constexpr std::size_t kMemoEntries = 4096;
    /// choose(c).time.
    sim::Time predict(const Collective& c) const { return choose(c).time; }
    /// The closed form of one algorithm and protocol (which must apply).
    sim::Time predict(const Collective& c, Algorithm algorithm, Protocol protocol) const;

    /// Internal precomputation, for the decompositions and the flow runner.
    const detail::Plan& plan() const { return *plan_; }

private:
    struct Memo; ///< the remembered automatic choices, behind a lock
    /// choose() without the memo.
    Choice choose_now(const Collective& c) const;
    /// predict() on a communicator that spans nodes.
    sim::Time predict_across_nodes(const Collective& c, Algorithm algorithm,
                                   Protocol protocol) const;
    std::unique_ptr<detail::Plan> plan_;
    /// runs(): why_not(a, op).empty() for every algorithm and op, filled at construction so
    /// that choose(), called per collective of every configuration of a sweep, formats no
    /// reasons nobody reads.
    std::array<std::array<bool, kAllOps.size()>, kConcreteAlgorithms.size() + 1> runs_{};
    std::unique_ptr<Memo> memo_;
};

} // namespace clustersim::strategies::collectives
