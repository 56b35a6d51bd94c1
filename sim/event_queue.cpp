#include "sim/event_queue.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

void EventQueue::place(const Entry& e) {
    const std::uint64_t diff = e.time ^ base_;
    if (diff == 0) {
        current_.push_back(e);
        return;
    }
    const int level = (63 - __builtin_clzll(diff)) / kDigitBits;
    const auto digit = static_cast<int>((e.time >> (level * kDigitBits)) & (kDigits - 1));
    buckets_[static_cast<std::size_t>(level * kDigits + digit)].push_back(e);
    occupied_[level] |= std::uint64_t{1} << digit;
    levels_ |= 1U << level;
}

void EventQueue::push(Entry e) {
    if (e.time < base_)
        throw std::logic_error("event queue: an entry at " + std::to_string(e.time) +
                               " is earlier than the last taken out, at " + std::to_string(base_));
    if (buckets_.empty())
        buckets_.resize(static_cast<std::size_t>(kLevels * kDigits));
    place(e);
    ++size_;
}

void EventQueue::refill() {
    // The first non-empty bucket holds the smallest times: its minimum is the new base, and
    // each of its entries moves to a lower level around it (or to current_, at the base).
    current_.clear();
    current_head_ = 0;
    const int level = __builtin_ctz(levels_);
    const int digit = __builtin_ctzll(occupied_[level]);
    std::vector<Entry>& bucket = buckets_[static_cast<std::size_t>(level * kDigits + digit)];
    std::uint64_t smallest = bucket.front().time;
    for (const Entry& e : bucket)
        smallest = std::min(smallest, e.time);
    base_ = smallest;
    occupied_[level] &= ~(std::uint64_t{1} << digit);
    if (occupied_[level] == 0)
        levels_ &= ~(1U << level);
    for (const Entry& e : bucket)
        place(e);
    // A bucket keeps its storage for the next entries, unless it is far larger than the queue
    // (a burst long gone): the memory held stays a small multiple of what is pending.
    if (bucket.capacity() > 4096 && bucket.capacity() > 4 * size_)
        std::vector<Entry>().swap(bucket);
    else
        bucket.clear();
    if (current_.size() > 1)
        std::sort(current_.begin(), current_.end(),
                  [](const Entry& a, const Entry& b) { return a.key < b.key; });
}

EventQueue::Entry EventQueue::pop() {
    if (current_head_ == current_.size())
        refill();
    const Entry e = current_[current_head_++];
    if (current_head_ == current_.size()) {
        current_.clear();
        current_head_ = 0;
    }
    --size_;
    return e;
}

EventQueue::Entry EventQueue::top() const {
    if (current_head_ < current_.size())
        return current_[current_head_];
    const int level = __builtin_ctz(levels_);
    const int digit = __builtin_ctzll(occupied_[level]);
    const std::vector<Entry>& bucket = buckets_[static_cast<std::size_t>(level * kDigits + digit)];
    Entry best = bucket.front();
    for (const Entry& e : bucket) {
        if (e.time < best.time || (e.time == best.time && e.key < best.key))
            best = e;
    }
    return best;
}

} // namespace clustersim::sim
