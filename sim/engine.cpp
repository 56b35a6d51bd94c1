#include "sim/engine.h"

#include <stdexcept>
#include <string>

namespace clustersim::sim {

std::uint32_t Engine::acquire_slot() {
    if (!free_slots_.empty()) {
        const std::uint32_t s = free_slots_.back();
        free_slots_.pop_back();
        return s;
    }
    if (slots_.size() > kSlotMask)
        throw std::length_error("more than 16 million events pending");
    slots_.emplace_back();
    return static_cast<std::uint32_t>(slots_.size() - 1);
}

void Engine::release_slot(std::uint32_t slot) {
    // Its callable is gone already: moved out to run, or dropped when cancelled.
    slots_[slot].seq = kNoEvent;
    free_slots_.push_back(slot);
}

EventId Engine::at(Time t, Callback fn) {
    if (t < now_)
        throw std::logic_error("event scheduled in the past: at " +
                               std::to_string(t.picoseconds()) + " ps, now " +
                               std::to_string(now_.picoseconds()) + " ps");
    if (!fn)
        throw std::invalid_argument("event scheduled without a callable");
    const std::uint64_t seq = next_seq_++;
    if (seq >> (64 - kSlotBits))
        throw std::length_error("event sequence numbers exhausted");
    const std::uint32_t slot = acquire_slot();
    Slot& s = slots_[slot];
    s.fn = std::move(fn);
    s.seq = seq;
    queue_.push(Entry{static_cast<std::uint64_t>(t.picoseconds()), (seq << kSlotBits) | slot});
    ++pending_;
    return EventId{slot, seq};
}

void Engine::cancel(EventId id) {
    if (id.slot >= slots_.size())
        return;
    Slot& s = slots_[id.slot];
    if (s.seq != id.seq)
        return;
    // The queue entry stays and is skipped when taken out; the slot is freed only then, so that a
    // reused slot cannot be mistaken for the cancelled event.
    s.fn = nullptr;
    s.seq = kNoEvent;
    --pending_;
}

bool Engine::step() {
    while (!queue_.empty()) {
        const Entry e = queue_.pop();
        const auto slot = static_cast<std::uint32_t>(e.key & kSlotMask);
        Slot& s = slots_[slot];
        if (s.seq != (e.key >> kSlotBits)) {
            release_slot(slot); // a cancelled event: its slot can go back now
            continue;
        }
        now_ = Time::ps(static_cast<std::int64_t>(e.time));
        Callback fn = std::move(s.fn);
        release_slot(slot);
        --pending_;
        ++processed_;
        fn();
        return true;
    }
    // Only cancelled events were left, maybe later than the clock: what comes next may be
    // scheduled before them.
    queue_.rebase_if_empty(static_cast<std::uint64_t>(now_.picoseconds()));
    return false;
}

void Engine::run() {
    while (step()) {
    }
}

void Engine::run_until(Time limit) {
    while (!queue_.empty()) {
        const Entry top = queue_.top();
        if (top.time > static_cast<std::uint64_t>(limit.picoseconds()))
            break;
        if (!is_live(top)) {
            // A cancelled event at the top must not stop the loop, nor may step() skip past it
            // to a live event beyond the limit: drop it here (it is not past the limit, so
            // neither is the queue's base, and the clock goes to the limit).
            release_slot(static_cast<std::uint32_t>(queue_.pop().key & kSlotMask));
            continue;
        }
        step();
    }
    if (now_ < limit)
        now_ = limit;
    queue_.rebase_if_empty(static_cast<std::uint64_t>(now_.picoseconds()));
}

} // namespace clustersim::sim
