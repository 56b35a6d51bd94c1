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
    Slot& s = slots_[slot];
    s.fn = nullptr;
    s.live = false;
    free_slots_.push_back(slot);
}

void Engine::push(Entry e) {
    std::size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
        const std::size_t parent = (i - 1) / 4;
        if (!before(e, heap_[parent]))
            break;
        heap_[i] = heap_[parent];
        i = parent;
    }
    heap_[i] = e;
}

Engine::Entry Engine::pop() {
    // Floyd's bottom-up deletion: the hole left by the top walks down to a leaf along the
    // smaller child (one comparison per child, none against the moved element), then the last
    // element climbs back from there. In a hold pattern the last element belongs near the
    // bottom, so the climb is short; this halves the comparisons of the textbook sift-down.
    const Entry top = heap_.front();
    const Entry last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0)
        return top;
    std::size_t i = 0;
    for (;;) {
        const std::size_t first = 4 * i + 1;
        if (first >= n)
            break;
        std::size_t best = first;
        if (first + 4 <= n) {
            // All four children: two pairs, then the winners (no loop, fewer branches).
            const std::size_t a = before(heap_[first + 1], heap_[first]) ? first + 1 : first;
            const std::size_t b =
                before(heap_[first + 3], heap_[first + 2]) ? first + 3 : first + 2;
            best = before(heap_[b], heap_[a]) ? b : a;
        } else {
            for (std::size_t c = first + 1; c < n; ++c) {
                if (before(heap_[c], heap_[best]))
                    best = c;
            }
        }
        heap_[i] = heap_[best];
        i = best;
    }
    while (i > 0) {
        const std::size_t parent = (i - 1) / 4;
        if (!before(last, heap_[parent]))
            break;
        heap_[i] = heap_[parent];
        i = parent;
    }
    heap_[i] = last;
    return top;
}

EventId Engine::at(Time t, Callback fn) {
    if (t < now_)
        throw std::logic_error("event scheduled in the past: at " +
                               std::to_string(t.picoseconds()) + " ps, now " +
                               std::to_string(now_.picoseconds()) + " ps");
    const std::uint64_t seq = next_seq_++;
    if (seq >> (64 - kSlotBits))
        throw std::length_error("event sequence numbers exhausted");
    const std::uint32_t slot = acquire_slot();
    Slot& s = slots_[slot];
    s.fn = std::move(fn);
    s.seq = seq;
    s.live = true;
    push(Entry{t.picoseconds(), (seq << kSlotBits) | slot});
    ++pending_;
    return EventId{slot, seq};
}

void Engine::cancel(EventId id) {
    if (id.slot >= slots_.size())
        return;
    Slot& s = slots_[id.slot];
    if (!s.live || s.seq != id.seq)
        return;
    // The heap entry stays and is skipped when popped; the slot is freed only then, so that a
    // reused slot cannot be mistaken for the cancelled event.
    s.fn = nullptr;
    s.live = false;
    --pending_;
}

bool Engine::top_is_live() const {
    const Entry& e = heap_.front();
    const Slot& s = slots_[e.key & kSlotMask];
    return s.live && s.seq == (e.key >> kSlotBits);
}

bool Engine::step() {
    while (!heap_.empty()) {
        // The top's callable lives in a slot somewhere in the slab: ask for its cache line now,
        // and the heap's reordering hides the wait.
        __builtin_prefetch(&slots_[heap_.front().key & kSlotMask]);
        const Entry e = pop();
        const auto slot = static_cast<std::uint32_t>(e.key & kSlotMask);
        Slot& s = slots_[slot];
        if (!s.live || s.seq != (e.key >> kSlotBits)) {
            release_slot(slot); // a cancelled event: its slot can go back now
            continue;
        }
        now_ = Time::ps(e.time);
        Callback fn = std::move(s.fn);
        release_slot(slot);
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
        if (!top_is_live()) {
            // A cancelled event at the top must not stop the loop, nor may step() skip past it
            // to a live event beyond the limit: drop it here.
            release_slot(static_cast<std::uint32_t>(pop().key & kSlotMask));
            continue;
        }
        if (heap_.front().time > limit.picoseconds())
            break;
        step();
    }
    if (now_ < limit)
        now_ = limit;
}

} // namespace clustersim::sim
