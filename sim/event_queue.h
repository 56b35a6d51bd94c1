#pragma once
/// \file
/// The engine's priority queue: entries (time, key) taken out in increasing order of time, then
/// of key, where time never goes back: nothing is put in earlier than the last entry taken out
/// (a discrete-event simulation never schedules in the past). That monotony allows a radix
/// heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path problem",
/// J. ACM 37(2), 1990) in place of a comparison heap.
///
/// Entries are kept in buckets by the highest base-64 digit in which their time differs from
/// `base_`, the time of the last entry taken out (level), and by their time's digit there. All
/// of a bucket's times are below those of any later bucket in (level, digit) order, so the
/// smallest entry is in the first non-empty bucket; taking it out empties that bucket into
/// lower levels around its minimum, the new base. An entry descends at most 11 levels in its
/// life (three or four for times within a microsecond of each other), each step a sequential
/// append: no chain of dependent loads down a tree, which is what a 4-ary heap of 10^4
/// entries spent its time waiting on. The entries whose time equals the base wait in
/// `current_` in key order: a bucket emptied there is sorted by key (the ties of a simulation
/// are few and small), and an entry put in at the base has the largest key so far.

#include <cstdint>
#include <vector>

namespace clustersim::sim {

class EventQueue {
public:
    struct Entry {
        std::uint64_t time;
        std::uint64_t key; ///< unique: ties in time are taken out in increasing key
    };

    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    /// Puts `e` in; `e.time` must be >= the time of the last entry taken out (std::logic_error
    /// otherwise), and when an entry of equal time is in, `e.key` must be the largest.
    void push(Entry e);
    /// Takes out the smallest entry (the queue must not be empty).
    Entry pop();
    /// The smallest entry, without taking it out (the queue must not be empty).
    Entry top() const;
    /// The base may drop to `t` while the queue is empty (the clock of a run that stopped
    /// before a dropped entry's time; see Engine::step).
    void rebase_if_empty(std::uint64_t t) {
        if (size_ == 0)
            base_ = t;
    }

private:
    static constexpr int kDigitBits = 6;
    static constexpr int kDigits = 1 << kDigitBits;
    static constexpr int kLevels = (64 + kDigitBits - 1) / kDigitBits;

    void place(const Entry& e);
    void refill();

    std::uint64_t base_ = 0;
    std::size_t size_ = 0;
    std::vector<Entry> current_; ///< entries at time base_, in key order, from current_head_
    std::size_t current_head_ = 0;
    std::vector<std::vector<Entry>> buckets_; ///< kLevels * kDigits, allocated on first use
    std::uint64_t occupied_[kLevels] = {};    ///< per level, a bit per non-empty digit's bucket
    std::uint32_t levels_ = 0;                ///< a bit per level with a non-empty bucket
};

} // namespace clustersim::sim
