#pragma once
/// \file
/// The size of the graph Topology builds for a cluster, counted from its spec without building
/// it, and the heap it takes: what the size refusal (Topology's constructor) compares with the
/// machine's memory, before anything is allocated.

#include "hardware/specs.h"

namespace clustersim::hardware {

struct GraphSize {
    double vertices = 0;
    double edges = 0; ///< directed: two per physical link
};

/// Exactly Topology(spec).vertex_count() and edge_count() (tests/hardware/test_graph_size.cpp).
GraphSize graph_size(const ClusterSpec& spec);

/// Peak heap bytes of the graph: its building, the built graph, its routing and the bisection's
/// maximum flow (`hardware show`, the most memory any command spends on the graph alone).
/// Measured by scripts/measure-graph-memory.sh (massif at 2,048-65,536 GPUs of DGX A100 and AWS
/// p4d nodes): 119 bytes per vertex and 114 per directed edge, linear within 0.1% (the graph in
/// its own compressed rows; Boost's CSR graph had cost 134 and 141); rounded up here to 125 and
/// 120.
double graph_bytes(const GraphSize& size);

} // namespace clustersim::hardware
