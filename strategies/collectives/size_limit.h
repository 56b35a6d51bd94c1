#pragma once
/// \file
/// The largest buffer a collective may be asked to move. Two bounds, both of the machine's
/// arithmetic rather than of the hardware: time is int64 picoseconds (sim::Time, 106 days), and
/// the flow engine schedules events at now + duration, so a prediction must stay well inside
/// that range (kLongestPrediction, a quarter of it: 26.7 days); and the plans split a buffer
/// as `i * bytes / parts`, so bytes times the GPU count must stay below 2^62. A size past
/// either is refused with the largest that works, instead of a clamped time (algbw 500 GB/s
/// printed for 4 EiB) or "event scheduled in the past".

#include "hardware/time_limit.h"
#include "strategies/collectives/communicator.h"

#include <cstdint>

namespace clustersim::strategies::collectives {

/// The longest time a prediction may reach.
using hardware::kLongestPrediction;

/// Whether `c` is within both bounds.
bool within_limits(const Communicator& comm, const Collective& c);

/// The largest size (as round_bytes rounds it) of `c` on `comm` within both bounds: its
/// closed-form time at most kLongestPrediction, bytes x GPUs below 2^62. `c.bytes` is ignored.
std::int64_t largest_bytes(const Communicator& comm, Collective c);

} // namespace clustersim::strategies::collectives
