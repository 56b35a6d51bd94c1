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
    std::uint32_t generation = 0;
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
    // A heap entry is small (24 bytes) and carries no callable, so sifting moves little; the
    // callable lives in a slab slot that is reused after the event runs.
    struct Entry {
        Time time;
        std::uint64_t seq;
        std::uint32_t slot;
        std::uint32_t generation;
    };
    struct Later {
        bool operator()(const Entry& a, const Entry& b) const {
            return a.time != b.time ? a.time > b.time : a.seq > b.seq;
        }
    };
    struct Slot {
        Callback fn;
        std::uint32_t generation = 0;
        bool live = false;
    };

    std::uint32_t acquire_slot();
    void release_slot(std::uint32_t slot);

    Time now_ = Time::zero();
    std::uint64_t next_seq_ = 0;
    std::uint64_t processed_ = 0;
    std::size_t pending_ = 0;
    std::vector<Entry> heap_;
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> free_slots_;
};

} // namespace clustersim::sim
