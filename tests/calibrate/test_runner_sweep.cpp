// The host-side arithmetic of the CUDA runners (built only with CUDA; needs no GPU).
#ifdef CLUSTERSIM_HAVE_CUDA
#include "calibrate/cuda/sweep.h"
#include "calibrate/device.h"

#include <catch2/catch.hpp>

using namespace clustersim::calibrate;
using cuda::layout_for;

TEST_CASE("runner: the sweep is nccl-tests' -b 8 -e 8G -f 2", "[calibrate][runner]") {
    const auto sizes = cuda::sweep(8, std::int64_t{8} << 30, 2);
    REQUIRE(sizes.size() == 31);
    CHECK(sizes.front() == 8);
    CHECK(sizes.back() == std::size_t{8} << 30);
    CHECK(cuda::sweep(8, 100, 4) == std::vector<std::size_t>{8, 32});
}

TEST_CASE("runner: buffer sizes follow nccl-tests", "[calibrate][runner]") {
    // all_reduce: the whole buffer on every rank.
    auto l = layout_for(CollectiveOp::all_reduce, 1 << 20, 4, 8);
    CHECK(l.count == 262144);
    CHECK(l.bytes == 1u << 20);
    CHECK(l.send == 262144);
    CHECK(l.recv == 262144);
    // all_gather: each rank sends a block; the size is the gathered buffer.
    l = layout_for(CollectiveOp::all_gather, 1 << 20, 4, 8);
    CHECK(l.count == 32768);
    CHECK(l.send == 32768);
    CHECK(l.recv == 262144);
    CHECK(l.bytes == 1u << 20);
    // reduce_scatter: the reverse.
    l = layout_for(CollectiveOp::reduce_scatter, 1 << 20, 4, 8);
    CHECK(l.send == 262144);
    CHECK(l.recv == 32768);
    // all_to_all: a block to every peer, from a whole buffer.
    l = layout_for(CollectiveOp::all_to_all, 1 << 20, 4, 8);
    CHECK(l.count == 32768);
    CHECK(l.send == 262144);
    CHECK(l.recv == 262144);
    // Sizes that do not split evenly are rounded down; too small ones become 0 (skipped, as
    // nccl-tests' size-0 rows).
    l = layout_for(CollectiveOp::all_gather, 100, 4, 6);
    CHECK(l.bytes == 96);
    CHECK(layout_for(CollectiveOp::all_gather, 8, 4, 8).bytes == 0);
    CHECK(layout_for(CollectiveOp::send_recv, 8, 4, 8).bytes == 8);
}

TEST_CASE("runner: without a GPU the CUDA build sees none", "[calibrate][runner]") {
    CHECK(built_with_cuda());
    if (!visible_gpus().empty())
        WARN("a GPU is visible here");
}
#endif
