// Collectives on a TPU slice's torus (strategies/collectives/torus.h): the analytic fidelity
// equals the closed forms of the JAX scaling book exactly (an all-gather over a ring of n chips
// with links of bidirectional bandwidth W: V / W plus a hop latency per step; all-reduce twice
// that; a line without wraparound 2 (n-1)/n V / W; an all-to-all V / 4W of the whole array),
// flow fidelity on the torus graph agrees where no link is shared, the schedules leave the
// right values, and what cannot run on a torus is refused.
#include "base/error.h"
#include "collectives_test_util.h"
#include "hardware/hardware_loader.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/collectives/values.h"

#include <catch2/catch.hpp>

#include <map>
#include <memory>

using namespace clustersim;
using namespace clustersim::strategies::collectives;
using clustersim::hardware::TorusPlace;
using clustersim::hardware::TorusShape;
using collectives_test::GiB;
using collectives_test::MiB;

namespace {

/// A slice (or several) of a preset, built once per shape and count.
const hardware::Topology& slice(const std::string& preset, const TorusShape& shape, int gpus = 0) {
    static std::map<std::tuple<std::string, TorusShape, int>, std::unique_ptr<hardware::Topology>>
        cache;
    auto& slot = cache[{preset, shape, gpus}];
    if (!slot)
        slot = std::make_unique<hardware::Topology>(
            hardware::with_slice(hardware::load_hardware(preset), shape, gpus));
    return *slot;
}

/// The devices of slice 0 at the chips `chips` (core 0), in that order.
std::vector<int> devices(const hardware::Topology& t, const std::vector<TorusShape>& chips) {
    std::vector<int> out;
    for (const TorusShape& c : chips)
        out.push_back(hardware::device_at(t.spec().torus, TorusPlace{c, 0}));
    return out;
}

/// The chips of one axis through the origin.
std::vector<TorusShape> axis_line(int axis, int n) {
    std::vector<TorusShape> out;
    for (int i = 0; i < n; ++i) {
        TorusShape c{0, 0, 0};
        c[static_cast<std::size_t>(axis)] = i;
        out.push_back(c);
    }
    return out;
}

double seconds(const Communicator& comm, Op op, std::int64_t bytes,
               Fidelity f = Fidelity::analytic) {
    Collective c;
    c.op = op;
    c.bytes = bytes;
    return simulate(comm, c, f).time.seconds();
}

constexpr double kHop = 1e-6; // the presets' ICI hop latency (the book's ~1 us)

} // namespace

TEST_CASE("torus: one axis costs the scaling book's closed forms exactly", "[collectives][torus]") {
    const double V = static_cast<double>(GiB);
    SECTION("a ring (v5p 4x4x4, axis x wraps): all-gather V / W, all-reduce 2 V / W") {
        const auto& t = slice("tpu-v5p", {4, 4, 4});
        const Communicator comm(t, devices(t, axis_line(0, 4)));
        const double W = 2 * 90e9; // bidirectional bandwidth of one link
        CHECK(seconds(comm, Op::all_gather, GiB) == Approx(2 * kHop + V / W).epsilon(1e-9));
        CHECK(seconds(comm, Op::reduce_scatter, GiB) == Approx(2 * kHop + V / W).epsilon(1e-9));
        CHECK(seconds(comm, Op::all_reduce, GiB) == Approx(2 * (2 * kHop + V / W)).epsilon(1e-9));
        // All-to-all: V / 4W of the whole array (n x the per-rank buffer), n/2 hops.
        CHECK(seconds(comm, Op::all_to_all, GiB) ==
              Approx(2 * kHop + 4 * V / (4 * W)).epsilon(1e-9));
    }
    SECTION("a 16-long ring (v5e 16x16): V / W whatever n") {
        const auto& t = slice("tpu-v5e", {16, 16});
        const Communicator comm(t, devices(t, axis_line(1, 16)));
        CHECK(seconds(comm, Op::all_gather, GiB) == Approx(8 * kHop + V / 90e9).epsilon(1e-9));
        CHECK(seconds(comm, Op::all_to_all, 64 * MiB) ==
              Approx(8 * kHop + 16.0 * 64 * MiB / (4 * 90e9)).epsilon(1e-9));
    }
    SECTION("a line (v5p 2x4x4: no wraparound below a cube): 2 (n-1)/n V / W, n - 1 hops") {
        const auto& t = slice("tpu-v5p", {2, 4, 4});
        const Communicator comm(t, devices(t, axis_line(1, 4)));
        const double W = 2 * 90e9;
        CHECK(seconds(comm, Op::all_gather, GiB) ==
              Approx(3 * kHop + 2 * 3.0 / 4 * V / W).epsilon(1e-9));
        CHECK(seconds(comm, Op::all_reduce, GiB) ==
              Approx(2 * (3 * kHop + 2 * 3.0 / 4 * V / W)).epsilon(1e-9));
    }
}

TEST_CASE("torus: several axes one after another, slices over the DCN", "[collectives][torus]") {
    const double V = static_cast<double>(GiB);
    const double w = 90e9; // one direction of a v5p link
    // The whole 4x4x4: reduce-scatter over x (V), y (V/4), z (V/16), all-gather back.
    const auto& cube = slice("tpu-v5p", {4, 4, 4});
    const Communicator all = Communicator::first(cube, 64);
    const double rs = 3 * 2 * kHop + V / (2 * w) * (1 + 1.0 / 4 + 1.0 / 16);
    CHECK(seconds(all, Op::reduce_scatter, GiB) == Approx(rs).epsilon(1e-9));
    CHECK(seconds(all, Op::all_reduce, GiB) == Approx(2 * rs).epsilon(1e-9));
    // TPU7x: each chip's two devices are an axis of their own (the die link), and share the
    // chip's ICI links: a ring of one device per chip gets half of each link.
    const auto& ironwood = slice("tpu-7x", {4, 4, 4});
    const Communicator dies = Communicator::first(ironwood, 128);
    const double die = 3690e9;
    const double rs7 =
        (1 * 0.1e-6 + V / 2 / die) + 3 * 2 * kHop + (V / 2) / (2 * 50e9) * (1 + 1.0 / 4 + 1.0 / 16);
    CHECK(seconds(dies, Op::reduce_scatter, GiB) == Approx(rs7).epsilon(1e-9));
    // Two slices: the ICI reduce-scatter, an all-reduce of each device's 1/64 over the DCN (one
    // step each way on 2 slices, at each chip's 50 Gbps NIC), the ICI all-gather.
    const auto& two = slice("tpu-v5p", {4, 4, 4}, 128);
    const Communicator both = Communicator::first(two, 128);
    Collective gib;
    gib.bytes = GiB;
    const Choice choice = both.choose(gib);
    CHECK(choice.algorithm == Algorithm::torus);
    const double dcn_latency =
        two.gpu_route(0, 64).latency.seconds(); // the route's latency, one step each way
    const double dcn = dcn_latency + V / 64 / 2 / (50e9 / 8);
    CHECK(seconds(both, Op::all_reduce, GiB) == Approx(2 * (rs + dcn)).epsilon(1e-9));
}

TEST_CASE("torus: flow fidelity on the torus graph agrees with the closed forms",
          "[collectives][torus][flow]") {
    struct Case {
        const char* preset;
        TorusShape shape;
        int gpus;
        Op op;
    };
    for (const Case& k :
         {Case{"tpu-v5p", {4, 4, 8}, 0, Op::all_reduce},
          Case{"tpu-v5p", {2, 4, 4}, 0, Op::all_gather},
          Case{"tpu-v5e", {16, 16}, 0, Op::reduce_scatter},
          Case{"tpu-v5e", {4, 8}, 0, Op::all_to_all}, Case{"tpu-v5p", {4, 4, 4}, 0, Op::all_to_all},
          Case{"tpu-7x", {4, 4, 4}, 0, Op::all_reduce},
          Case{"tpu-v5p", {4, 4, 4}, 192, Op::all_reduce},
          Case{"tpu-v5e", {16, 16}, 512, Op::all_gather}}) {
        const auto& t = slice(k.preset, k.shape, k.gpus);
        const Communicator comm = Communicator::first(t, t.gpu_count());
        for (std::int64_t bytes : {std::int64_t(1) << 16, 256 * MiB}) {
            const std::int64_t b = round_bytes(k.op, bytes, hardware::Dtype::fp32, comm.size());
            INFO(k.preset << " " << hardware::to_string(k.shape, t.spec().torus.dims) << " x "
                          << t.node_count() << " " << to_string(k.op) << " " << b << " B");
            const double analytic = seconds(comm, k.op, b);
            CHECK(seconds(comm, k.op, b, Fidelity::flow) == Approx(analytic).epsilon(0.02));
        }
    }
    // With symmetry (identical flows left to one representative, as --fidelity flow runs): the
    // same.
    const auto& t = slice("tpu-v5p", {4, 4, 4});
    const Communicator comm = Communicator::first(t, 64);
    Collective c;
    c.bytes = 64 * MiB;
    FlowOptions symmetry;
    symmetry.symmetry = true;
    const double full = simulate(comm, c, Fidelity::flow, symmetry).time.seconds();
    CHECK(full == Approx(seconds(comm, Op::all_reduce, 64 * MiB)).epsilon(0.02));
}

TEST_CASE("torus: the schedules leave the right values", "[collectives][torus][values]") {
    auto check = [](const Communicator& comm, Op op, std::int64_t E) {
        const int n = comm.size();
        Collective c;
        c.op = op;
        c.bytes = 4 * E;
        const auto input = [](int rank, std::int64_t i) { return rank * 1000.0 + double(i); };
        const Buffers in = make_inputs(op, E, n, 0, input);
        const Buffers out = run_values(comm, c, Algorithm::torus, Protocol::simple, in);
        const Buffers want = expected_outputs(op, E, n, 0, in);
        for (int r = 0; r < n; ++r) {
            const View v = output_view(op, E, n, r, 0);
            INFO(to_string(op) << " on " << n << " devices, " << E << " elements, rank " << r);
            REQUIRE(std::vector<double>(out[size_t(r)].begin() + v.offset,
                                        out[size_t(r)].begin() + v.offset + v.count) ==
                    want[size_t(r)]);
        }
    };
    // Rings of 4 and 16, lines of 2 and 4, the die axis, two slices over the DCN: all-reduce.
    for (const auto* t :
         {&slice("tpu-v5p", {4, 4, 4}), &slice("tpu-v5p", {2, 4, 4}), &slice("tpu-v5e", {16, 16}),
          &slice("tpu-7x", {2, 2, 1}), &slice("tpu-v5p", {2, 2, 2}, 24)}) {
        const Communicator comm = Communicator::first(*t, t->gpu_count());
        check(comm, Op::all_reduce, 7);
        check(comm, Op::all_reduce, 3 * comm.size() + 1);
    }
    // Reduce-scatter and all-gather own blocks in the order of the axes (the first most
    // significant), as ranks ordered so: one axis, and two.
    for (int axis : {0, 1}) {
        for (const auto* t : {&slice("tpu-v5p", {4, 4, 4}), &slice("tpu-v5p", {2, 4, 4}),
                              &slice("tpu-v5e", {16, 16})}) {
            const int n = t->spec().torus.shape[static_cast<std::size_t>(axis)];
            const Communicator line(*t, devices(*t, axis_line(axis, n)));
            for (Op op : {Op::reduce_scatter, Op::all_gather}) {
                check(line, op, n);
                check(line, op, 5 * n);
            }
        }
    }
    const auto& cube = slice("tpu-v5p", {4, 4, 4});
    std::vector<TorusShape> plane;
    for (int x = 0; x < 4; ++x)
        for (int y = 0; y < 4; ++y)
            plane.push_back({x, y, 0});
    const Communicator xy(cube, devices(cube, plane));
    check(xy, Op::reduce_scatter, 16 * 3);
    check(xy, Op::all_gather, 16 * 3);
}

TEST_CASE("torus: what cannot run on a torus is refused", "[collectives][torus]") {
    const auto& t = slice("tpu-v5p", {4, 4, 4});
    const Communicator all = Communicator::first(t, 64);
    CHECK_THAT(all.why_not(Algorithm::ring, Op::all_reduce),
               Catch::Contains("NCCL's") && Catch::Contains("--algo torus"));
    CHECK_THAT(all.why_not(Algorithm::torus, Op::broadcast), Catch::Contains("not broadcast"));
    // Not a sub-grid: two chips of one axis and one of another.
    const Communicator odd(t, devices(t, {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}));
    CHECK_THAT(odd.why_not(Algorithm::torus, Op::all_reduce), Catch::Contains("sub-grid"));
    // Chips apart on an axis.
    const Communicator gap(t, devices(t, {{0, 0, 0}, {2, 0, 0}}));
    CHECK_THAT(gap.why_not(Algorithm::torus, Op::all_reduce), Catch::Contains("neighbouring"));
    // No torus on GPUs.
    const Communicator gpus = Communicator::first(collectives_test::topology("dgx-h100", 8), 8);
    CHECK_THAT(gpus.why_not(Algorithm::torus, Op::all_reduce), Catch::Contains("GPU cluster"));
    Collective c;
    c.bytes = MiB;
    c.protocol = Protocol::ll;
    CHECK_THROWS_WITH(all.validate(c), Catch::Contains("no NCCL protocol"));
}
