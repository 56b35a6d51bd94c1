#include "strategies/collectives/communicator_cache.h"

#include <mutex>

namespace clustersim::strategies::collectives {

const Communicator& CommunicatorCache::get(const std::vector<int>& gpus) {
    Entry* entry = nullptr;
    {
        std::shared_lock<std::shared_mutex> lock(mutex_); // readers look up side by side
        auto it = built_.find(gpus);
        if (it != built_.end())
            entry = it->second.get();
    }
    if (entry == nullptr) {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        auto& slot = built_[gpus];
        if (!slot)
            slot = std::make_unique<Entry>();
        entry = slot.get();
    }
    if (const Communicator* built = entry->communicator.load(std::memory_order_acquire))
        return *built;
    // Built outside every lock and published: a thread that asks for a group another thread is
    // still building builds it too rather than wait (the same communicator: construction is
    // deterministic), and the first published is kept. A constructor that throws publishes
    // nothing, and the next call tries again.
    auto made = std::make_unique<Communicator>(topology_, gpus);
    const Communicator* first = nullptr;
    if (entry->communicator.compare_exchange_strong(first, made.get(), std::memory_order_acq_rel,
                                                    std::memory_order_acquire))
        return *made.release();
    return *first;
}

std::size_t CommunicatorCache::size() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& [gpus, entry] : built_)
        n += entry->communicator.load(std::memory_order_acquire) != nullptr ? 1 : 0;
    return n;
}

} // namespace clustersim::strategies::collectives
