#pragma once
/// \file
/// A link of the hardware graph: its bandwidth per direction and its latency (specs.h and
/// torus.h both describe links with it).

#include "sim/time.h"

namespace clustersim::hardware {

/// A link: bandwidth per direction (bytes/s) and the latency before the first byte arrives.
struct LinkSpec {
    double bandwidth = 0;
    sim::Time latency = sim::Time::zero();
};

} // namespace clustersim::hardware
