#pragma once
/// \file
/// A minimal synchronous signal: observers (tracing, statistics, memory timelines) subscribe
/// to model events without the model knowing about them.

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace clustersim::sim {

template <typename... Args>
class Signal {
public:
    using Slot = std::function<void(Args...)>;

    /// Adds an observer; observers are called in the order they connected.
    void connect(Slot slot) { slots_.push_back(std::move(slot)); }

    void emit(Args... args) const {
        for (const auto& slot : slots_)
            slot(args...);
    }

    bool empty() const { return slots_.empty(); }
    std::size_t size() const { return slots_.size(); }

private:
    std::vector<Slot> slots_;
};

} // namespace clustersim::sim
