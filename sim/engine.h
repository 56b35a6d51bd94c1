#pragma once
/// \file
/// The discrete-event engine: a clock and an event queue ordered by (time, sequence number).
///
/// Events scheduled for the same time run in the order they were scheduled, so a run is fully
/// determined by its inputs. There are no globals: every simulation (and every test) owns its
/// engine.

#include "sim/callback.h"
#include "sim/event_queue.h"
#include "sim/time.h"

#include <cstdint>
#include <vector>

namespace clustersim::sim {

/// Identifies a scheduled event so that it can be cancelled.
struct EventId {
    std::uint32_t slot = 0;
    std::uint64_t seq = 0;
};

class Engine {
public:
    using Callback = sim::Callback;

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
    /// Events scheduled so far (cancelled ones included): a caller that sees it unchanged since
    /// its own last at() knows that event is the last one queued, and may add to it what it
    /// would otherwise have queued as the next event at the same time.
    std::uint64_t scheduled() const { return next_seq_; }

private:
    // A queue entry carries no callable: the time, and a key that packs the insertion sequence
    // number (high 40 bits, the tie-break) with the slab slot holding the callable (low 24).
    using Entry = EventQueue::Entry;
    static constexpr int kSlotBits = 24;
    static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
    static constexpr std::uint64_t kNoEvent = ~std::uint64_t{0};
    /// One cache line: the callable and the sequence number of the event waiting in the slot,
    /// kNoEvent once it has run or been cancelled (a sequence number is below 2^40).
    struct alignas(64) Slot {
        Callback fn;
        std::uint64_t seq = kNoEvent;
    };

    std::uint32_t acquire_slot();
    void release_slot(std::uint32_t slot);
    bool is_live(Entry e) const { return slots_[e.key & kSlotMask].seq == (e.key >> kSlotBits); }

    Time now_ = Time::zero();
    std::uint64_t next_seq_ = 0;
    std::uint64_t processed_ = 0;
    std::size_t pending_ = 0;
    EventQueue queue_;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_slots_;
};

} // namespace clustersim::sim
