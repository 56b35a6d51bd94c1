#pragma once
/// \file
/// Values mode: a decomposition carries real numbers through its steps, so that a schedule can
/// be shown (the lecture's "rank 0 before/after" demo) and proven: every rank ends with what the
/// collective defines, whatever the algorithm, GPU count and root.
///
/// Buffers follow nccl-tests' layouts, in elements: all_reduce, broadcast, reduce: the buffer;
/// all_gather, gather: n blocks, rank r's input in block r; reduce_scatter, scatter: n blocks,
/// rank r's output in block r; all_to_all: a send region of n blocks then a receive region;
/// send_recv: a send region then a receive region.

#include "strategies/collectives/communicator.h"
#include "strategies/collectives/schedule.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace clustersim::strategies::collectives {

using Buffers = std::vector<std::vector<double>>;

/// A range of a rank's buffer.
struct View {
    std::int64_t offset = 0;
    std::int64_t count = 0;
};

/// The part of rank `rank`'s buffer the op reads as its input (empty where the op ignores it:
/// the non-roots of broadcast and scatter).
View input_view(Op op, std::int64_t elements, int ranks, int rank, int root);
/// The part the op defines as its output (empty for the non-roots of reduce and gather).
View output_view(Op op, std::int64_t elements, int ranks, int rank, int root);

/// Buffers whose input views hold value(rank, i) (i counts from the view's start), zeros
/// elsewhere. `elements` is the op's size in elements.
Buffers make_inputs(Op op, std::int64_t elements, int ranks, int root,
                    const std::function<double(int rank, std::int64_t i)>& value);

/// What each rank's output view must hold, from the op's definition alone.
Buffers expected_outputs(Op op, std::int64_t elements, int ranks, int root, const Buffers& inputs);

/// Applies the decomposition of `c` (algorithm and protocol resolved) to `buffers`, step by
/// step; returns the rank buffers after the last step.
Buffers run_values(const Communicator& comm, const Collective& c, Algorithm algorithm,
                   Protocol protocol, Buffers buffers, const DecomposeOptions& options = {});

} // namespace clustersim::strategies::collectives
