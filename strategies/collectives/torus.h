#pragma once
/// \file
/// Internal to strategies/collectives: collectives on a TPU slice's torus as XLA runs them.
///
/// A communicator on a torus (hardware/torus.h) is a sub-grid: the product of a range of chips
/// on each ICI axis it spans, of some of each chip's devices, and of some slices. Each of those
/// is an axis of the collective, and a collective over several runs one axis after another
/// (XLA decomposes a multi-axis all-reduce so): a reduce-scatter over the first, then over the
/// next on the shard the first left, and so on; an all-gather in the reverse order; an
/// all-reduce both. On each axis:
/// - an ICI axis that wraps around is a bidirectional ring: each device's shard travels both
///   ways at once, floor(n/2) hops of one shard per link and direction (the JAX scaling book,
///   chapter "sharding", "How is an AllGather actually performed?": T_hop = 2V / (n W) with W the
///   link's bidirectional bandwidth, ceil-ish n/2 hops, so T = V / W for even n; odd n takes
///   (n-1)/2 hops, (n-1)/n V / W). A reduce-scatter runs the same hops the other way, adding as
///   it goes; an all-reduce is one and then the other: 2 V / W.
/// - an axis without wraparound (a mesh: slices below a cube, a v5e axis shorter than 16, the
///   two devices of a TPU7x chip) is a line: shards travel both ways, the farthest n - 1 hops,
///   2 (n-1)/n V / W (the book's v5e 4x4 example: "3 hops for data from the edges").
/// - across slices the DCN: a ring through the hosts' NICs, one direction (a NIC's two
///   neighbours would share it), n - 1 steps of V / n.
/// - all-to-all: per axis, each device's buffer forwarded hop by hop along the axis, the
///   shorter way round (half each way where both are as short): on a ring of even n, n/2 steps
///   whose links carry n^2/8 chunks in all, the book's V / (4 W) with V the whole array; across
///   slices every pair directly.
/// Every hop pays the link's latency (the book's ~1 us per ICI hop), so an axis costs
/// steps x (hop latency + shard / link bandwidth). There is no launch or protocol term: XLA
/// compiles the collectives into the step's program (nothing is launched from the host per op)
/// and the chips' DMA engines move the shards (no CUDA-core copy or reduction kernel in series).
/// Which axis goes first: the die axis (fastest), then the ICI axes by their cost per byte
/// (rings before lines, x before y before z at a tie), then the DCN, so that the slowest links
/// carry the smallest shards.

#include "hardware/topology.h"
#include "sim/time.h"
#include "strategies/collectives/collective.h"

#include <memory>
#include <string>
#include <vector>

namespace clustersim::strategies::collectives {

struct Decomposition;

namespace detail {

class Plan;

/// One axis of a communicator on the torus.
struct TorusAxis {
    enum class Kind : std::uint8_t { die, ici, dcn };
    enum class Mode : std::uint8_t {
        ring,         ///< bidirectional ring (an ICI axis with wraparound)
        line,         ///< both directions, no wraparound
        one_way_ring, ///< a ring in one direction (the DCN)
    };
    Kind kind = Kind::ici;
    Mode mode = Mode::line;
    int axis = 0; ///< ICI: 0, 1, 2 (x, y, z)
    int size = 1;
    double bandwidth = 0; ///< bytes/s per direction from one device to its neighbour
    sim::Time hop_latency = sim::Time::zero();
    /// The ranks of each line along the axis, in order.
    std::vector<std::vector<int>> lines;
    /// Each rank's position on the axis.
    std::vector<int> position;

    /// Steps of an all-gather or a reduce-scatter over the axis.
    int steps() const;
    /// Hops forward and backward (a line's are n - 1 both).
    int hops_forward() const;
    int hops_backward() const;
};

/// What a communicator is on the torus.
struct TorusGrid {
    std::vector<TorusAxis> axes; ///< in the order a reduce-scatter runs them
    std::string why_not;         ///< empty: a sub-grid (else why it is not)
};

/// The communicator `gpus` of `topology` (a torus) as axes.
TorusGrid torus_grid(const hardware::Topology& topology, const std::vector<int>& gpus);

/// The closed form of `op` of nccl-tests size `bytes` (collective.h) on the grid, seconds.
double torus_seconds(const TorusGrid& grid, Op op, double bytes, int ranks);

/// The schedule (phases per axis) of `c`; `elements` = c.bytes / element size.
void add_torus_phases(Decomposition& d, const Plan& plan, const Collective& c,
                      std::int64_t elements);

} // namespace detail
} // namespace clustersim::strategies::collectives
