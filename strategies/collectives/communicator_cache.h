#pragma once
/// \file
/// Communicators of one topology, built once per group of GPUs and shared: a sweep simulates
/// thousands of configurations whose tensor-, data- and pipeline-parallel groups repeat, and a
/// communicator's precomputation (rings, trees, routes) costs far more than its predictions.

#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"

#include <atomic>
#include <boost/container_hash/hash.hpp>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace clustersim::strategies::collectives {

class CommunicatorCache {
public:
    /// The topology must outlive the cache.
    explicit CommunicatorCache(const hardware::Topology& topology)
        : topology_(topology) {}

    const hardware::Topology& topology() const { return topology_; }

    /// The communicator over `gpus` (ranks in that order), built on first use. Thread-safe; the
    /// reference stays valid as long as the cache. Throws InputError as the Communicator does.
    const Communicator& get(const std::vector<int>& gpus);

    /// Communicators built so far.
    std::size_t size() const;

private:
    /// A group's communicator once built; entries are never removed, so a pointer to one stays
    /// valid as long as the cache.
    struct Entry {
        std::atomic<const Communicator*> communicator{nullptr};
        Entry() = default;
        Entry(const Entry&) = delete;
        Entry& operator=(const Entry&) = delete;
        ~Entry() { delete communicator.load(); }
    };
    const hardware::Topology& topology_;
    mutable std::shared_mutex mutex_; ///< guards the map only, never a build
    /// Hashed: a sweep looks up every rank's groups per configuration, and an ordered map
    /// compared whole GPU lists, sharing long prefixes, at every level of its tree.
    std::unordered_map<std::vector<int>, std::unique_ptr<Entry>, boost::hash<std::vector<int>>>
        built_;
};

} // namespace clustersim::strategies::collectives
