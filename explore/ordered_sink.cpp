#include "explore/ordered_sink.h"

#include <utility>

namespace clustersim::explore {

OrderedSink::OrderedSink(std::vector<std::int64_t> order,
                         std::function<void(std::int64_t, const std::string&)> emit)
    : order_(std::move(order))
    , emit_(std::move(emit)) {
}

void OrderedSink::submit(std::int64_t index, std::string row) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (next_ < order_.size() && index == order_[next_]) {
        emit_(index, row);
        ++next_;
    } else {
        waiting_.emplace(index, std::move(row));
    }
    for (auto it = waiting_.begin();
         next_ < order_.size() && it != waiting_.end() && it->first == order_[next_];
         it = waiting_.erase(it), ++next_)
        emit_(it->first, it->second);
}

std::int64_t OrderedSink::emitted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::int64_t>(next_);
}

std::size_t OrderedSink::pending() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_.size();
}

} // namespace clustersim::explore
