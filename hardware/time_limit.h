#pragma once
/// \file
/// The longest duration a model may hand the engine: a quarter of sim::Time's range (26.7
/// days), so that `now + duration` and the sums of a step's durations cannot overflow. Longer
/// predictions are refused where they arise (a kernel: compute_model.cpp; a collective or a
/// transfer: strategies/collectives/size_limit.h), never saturated and summed.

#include "sim/time.h"

namespace clustersim::hardware {

inline constexpr sim::Time kLongestPrediction = sim::Time::ps(sim::Time::max().picoseconds() / 4);

} // namespace clustersim::hardware
