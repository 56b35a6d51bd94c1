#pragma once
/// \file
/// The discrete-event engine: a clock and an event queue ordered by (time, sequence number).
///
/// Events scheduled for the same time run in the order they were scheduled, so a run is fully
/// determined by its inputs. There are no globals: every simulation (and every test) owns its
/// engine.

#include "sim/time.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace clustersim::sim {

/// Identifies a scheduled event so that it can be cancelled.
struct EventId {
    std::uint32_t slot = 0;
    std::uint64_t seq = 0;
};

class Engine {
public:
    using Callback = std::function<void()>;

    Engine() = default;
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    Time now() const { return now_; }

    /// Schedules `fn` at absolute time `t` (>= now()).
    EventId at(Time t, Callback fn);
    /// Schedules `fn` after `delay` (>= 0).
    EventId after(Time delay, Callback fn) { return at(now_ + delay, std::move(fn)); }
    /// Cancels a pending event; cancelling one that already ran or was cancelled is a no-op.
    void cancel(EventId id);

    /// Runs until no event is pending.
    void run();
    /// Runs every event with time <= `limit`, then sets the clock to `limit`.
    void run_until(Time limit);
    /// Runs the next event; false when none is pending.
    bool step();

    std::size_t pending() const { return pending_; }
    std::uint64_t events_processed() const { return processed_; }

private:
    // A heap entry is 16 bytes and carries no callable: the time, and a key that packs the
    // insertion sequence number (high 40 bits, the tie-break) with the slab slot holding the
    // callable (low 24 bits). The heap is 4-ary: shallower than a binary heap, and the four
    // children of a node share a cache line.
    struct Entry {
        std::int64_t time;
        std::uint64_t key;
    };
    static constexpr int kSlotBits = 24;
    static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
    static bool before(const Entry& a, const Entry& b) {
        return a.time != b.time ? a.time < b.time : a.key < b.key;
    }
    struct Slot {
        Callback fn;
        std::uint64_t seq = 0; ///< sequence number of the event in this slot
        bool live = false;
    };

    std::uint32_t acquire_slot();
    void release_slot(std::uint32_t slot);
    void push(Entry e);
    Entry pop();
    bool top_is_live() const;

    Time now_ = Time::zero();
    std::uint64_t next_seq_ = 0;
    std::uint64_t processed_ = 0;
    std::size_t pending_ = 0;
    std::vector<Entry> heap_;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_slots_;
};

} // namespace clustersim::sim
