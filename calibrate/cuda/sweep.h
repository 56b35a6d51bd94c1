#pragma once
/// \file
/// The sizes of the NCCL runner's sweep, as nccl-tests computes them (host-only arithmetic,
/// kept apart from the CUDA headers so that tests can check it; compiled with the runners).

#include "calibrate/measurements.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace clustersim::calibrate::cuda {

/// nccl-tests' buffers for one collective at a nominal size: `count` elements per call (the
/// per-rank block for gathers, scatters and all-to-all), elements used in the send and
/// receive buffers, and the size reported (rounded down to a multiple of GPUs x element for
/// the collectives that split the buffer; 0 when too small to split).
struct Layout {
    std::size_t count = 0;
    std::size_t bytes = 0;
    std::size_t send = 0;
    std::size_t recv = 0;
};
Layout layout_for(CollectiveOp op, std::size_t nominal, std::size_t elem, int n);
/// The nominal sizes of a sweep: min, min x factor, ... up to max (nccl-tests' -b -e -f).
std::vector<std::size_t> sweep(std::int64_t min, std::int64_t max, int factor);

} // namespace clustersim::calibrate::cuda
