#pragma once
/// \file
/// How many layers of a model chunk (or of a pipeline rank) recompute what: the step plan
/// decides it per virtual stage, the step result reports it per rank (the app words it).

namespace clustersim::strategies::parallel {

/// Recompute of a group of layers: how many recompute nothing, the attention core
/// (selective) or the whole layer (full).
struct RecomputePlan {
    int none = 0;
    int selective = 0;
    int full = 0;

    RecomputePlan& operator+=(const RecomputePlan& o) {
        none += o.none;
        selective += o.selective;
        full += o.full;
        return *this;
    }
    bool operator==(const RecomputePlan&) const = default;
};

} // namespace clustersim::strategies::parallel
