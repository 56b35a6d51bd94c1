#include "sim/engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace clustersim::sim {

std::uint32_t Engine::acquire_slot() {
    if (!free_slots_.empty()) {
        const std::uint32_t s = free_slots_.back();
        free_slots_.pop_back();
        return s;
    }
    slots_.emplace_back();
    return static_cast<std::uint32_t>(slots_.size() - 1);
}

void Engine::release_slot(std::uint32_t slot) {
    Slot& s = slots_[slot];
    s.fn = nullptr;
    s.live = false;
    ++s.generation; // any EventId still naming this slot is now stale
    free_slots_.push_back(slot);
}

EventId Engine::at(Time t, Callback fn) {
    if (t < now_)
        throw std::logic_error("event scheduled in the past: at " +
                               std::to_string(t.picoseconds()) + " ps, now " +
                               std::to_string(now_.picoseconds()) + " ps");
    const std::uint32_t slot = acquire_slot();
    Slot& s = slots_[slot];
    s.fn = std::move(fn);
    s.live = true;
    heap_.push_back(Entry{t, next_seq_++, slot, s.generation});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    ++pending_;
    return EventId{slot, s.generation};
}

void Engine::cancel(EventId id) {
    if (id.slot >= slots_.size())
        return;
    Slot& s = slots_[id.slot];
    if (!s.live || s.generation != id.generation)
        return;
    // The heap entry stays and is skipped when popped; the slot is freed only then, so that a
    // reused slot cannot be mistaken for the cancelled event.
    s.fn = nullptr;
    s.live = false;
    --pending_;
}

bool Engine::step() {
    while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), Later{});
        const Entry e = heap_.back();
        heap_.pop_back();
        Slot& s = slots_[e.slot];
        if (!s.live || s.generation != e.generation) {
            release_slot(e.slot); // a cancelled event: its slot can go back now
            continue;
        }
        now_ = e.time;
        Callback fn = std::move(s.fn);
        release_slot(e.slot);
        --pending_;
        ++processed_;
        fn();
        return true;
    }
    return false;
}

void Engine::run() {
    while (step()) {
    }
}

void Engine::run_until(Time limit) {
    while (!heap_.empty()) {
        const Entry& top = heap_.front();
        const Slot& s = slots_[top.slot];
        if (!s.live || s.generation != top.generation) {
            // A cancelled event at the top must not stop the loop, nor may step() skip past it
            // to a live event beyond the limit: drop it here.
            const std::uint32_t slot = top.slot;
            std::pop_heap(heap_.begin(), heap_.end(), Later{});
            heap_.pop_back();
            release_slot(slot);
            continue;
        }
        if (top.time > limit)
            break;
        step();
    }
    if (now_ < limit)
        now_ = limit;
}

} // namespace clustersim::sim
