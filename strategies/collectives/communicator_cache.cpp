#include "strategies/collectives/communicator_cache.h"

namespace clustersim::strategies::collectives {

const Communicator& CommunicatorCache::get(const std::vector<int>& gpus) {
    std::shared_ptr<Entry> entry;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& slot = built_[gpus];
        if (!slot)
            slot = std::make_shared<Entry>();
        entry = slot;
    }
    // Built outside the cache's lock (a large communicator takes a while and other groups need
    // not wait), once: threads asking for the same group wait for the first. A constructor that
    // throws leaves the entry unbuilt, and the next call tries again.
    std::call_once(entry->once, [&] {
        entry->communicator = std::make_unique<Communicator>(topology_, gpus);
        entry->ready = true;
    });
    return *entry->communicator;
}

std::size_t CommunicatorCache::size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& [gpus, entry] : built_)
        n += entry->ready ? 1 : 0;
    return n;
}

} // namespace clustersim::strategies::collectives
