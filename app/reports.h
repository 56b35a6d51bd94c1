#pragma once
/// \file
/// Human-readable reports shared by several commands (and the demo).

#include "hardware/topology.h"

#include <cstdint>
#include <iosfwd>

namespace clustersim::app {

/// `clustersim hardware show`: GPUs, nodes, links by kind, bisection bandwidth.
void print_hardware_summary(std::ostream& out, const hardware::Topology& topo);

/// `clustersim transfer`: simulates one transfer and prints path, time and bandwidth.
void print_transfer(std::ostream& out, const hardware::Topology& topo, int from, int to,
                    std::int64_t bytes);

} // namespace clustersim::app
