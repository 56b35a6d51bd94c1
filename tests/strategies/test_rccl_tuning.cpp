// RCCL's choice of algorithm and protocol on MI300X nodes (strategies/collectives/rccl_tuning.h):
// the closed forms of its cost model (RCCL 2.21.5 src/graph/tuning.cc, tuning_model_5) at the
// sizes around its switching points, and what `collectives.library: rccl` does to a
// communicator's automatic choice.
#include "base/error.h"
#include "collectives_test_util.h"
#include "hardware/hardware_loader.h"
#include "strategies/collectives/rccl_tuning.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <string>

using namespace clustersim;
using namespace clustersim::strategies::collectives;
using collectives_test::MiB;
using collectives_test::topology;
using detail::RcclCall;

namespace {
constexpr double kTotal = 7 * 48.0; // GFX94X_XGMI_WIDTH on each of a GPU's 7 xGMI links

RcclCall call(int ranks, int nodes, double bytes, double overhead = 2.0, Op op = Op::all_reduce) {
    return RcclCall{op, bytes, ranks, nodes, kTotal, overhead, false};
}

std::string pick(const RcclCall& c) {
    const auto p = detail::rccl_choose(c);
    if (!p)
        return "none";
    return std::string(to_string(p->algorithm)) + "/" +
           std::string(hardware::to_string(p->protocol));
}
} // namespace

TEST_CASE("rccl tuning: the closed forms of RCCL's model on 2 nodes of 8 MI300X",
          "[collectives][rccl][xgmi]") {
    CHECK(detail::rccl_total_bw_gbps(8) == Approx(kTotal));
    const RcclCall c = call(16, 2, 64 * MiB);
    // Ring/Simple: baseLat 17 + 26 intra steps at max(2.1, 3 x 2 us of proxy overhead) + 4
    // network steps at 320 us; algbw = 336 x 1.0 x 16/30.
    auto ring_simple = detail::rccl_cost(c, Algorithm::ring, Protocol::simple);
    CHECK(ring_simple.latency_us == Approx(17 + 26 * 6.0 + 4 * 320.0));
    CHECK(ring_simple.bandwidth_gbps == Approx(kTotal * 16 / 30));
    // Ring/LL: 12 + 26 x max(0.8, 2) + 4 x 9.5; x 0.08.
    auto ring_ll = detail::rccl_cost(c, Algorithm::ring, Protocol::ll);
    CHECK(ring_ll.latency_us == Approx(12 + 26 * 2.0 + 4 * 9.5));
    CHECK(ring_ll.bandwidth_gbps == Approx(kTotal * 0.08 * 16 / 30));
    // Tree: 2 ((8 - 1) intraLat + log2(2) netLat) over the base; busBw x bwRatio x 1/2.
    auto tree_simple = detail::rccl_cost(c, Algorithm::tree, Protocol::simple);
    CHECK(tree_simple.latency_us == Approx(17 + 2 * (7 * 2.3 + 25.0)));
    CHECK(tree_simple.bandwidth_gbps == Approx(kTotal * 0.11 * 0.5));
    auto tree_ll = detail::rccl_cost(c, Algorithm::tree, Protocol::ll);
    CHECK(tree_ll.latency_us == Approx(12 + 2 * (7 * 0.9 + 10.5)));
    CHECK(tree_ll.bandwidth_gbps == Approx(kTotal * 0.06 * 0.5));
    // LL128 is off on gfx942.
    CHECK(detail::rccl_cost(c, Algorithm::ring, Protocol::ll128).bandwidth_gbps == 0);
    CHECK(!detail::rccl_model_time_us(c, Algorithm::tree, Protocol::ll128));
    // The time: latency + bytes / (bandwidth x the correction of log2(bytes / 64)): at 64 MiB
    // (index 20) the ring's Simple factor is 0.1, the tree's 1.0.
    CHECK(*detail::rccl_model_time_us(c, Algorithm::ring, Protocol::simple) ==
          Approx(1453 + 64 * MiB / (1000 * kTotal * 16 / 30 * 0.1)));
    CHECK(*detail::rccl_model_time_us(c, Algorithm::tree, Protocol::simple) ==
          Approx(99.2 + 64 * MiB / (1000 * kTotal * 0.11 * 0.5)));
}

TEST_CASE("rccl tuning: RCCL's switching points on 2 nodes, in one node and on 4 nodes",
          "[collectives][rccl][xgmi]") {
    // 2 nodes: tree/LL to 2 MiB (253.6 us against tree/Simple's 99.2 + 2 MiB / (18.48 x 0.7)
    // = 261.3), tree/Simple from 4 MiB (tree/LL's factor falls to 0.1), ring/Simple from 512
    // MiB, where the ring's factor rises from 0.1 to 0.8.
    CHECK(*detail::rccl_model_time_us(call(16, 2, 2 * MiB), Algorithm::tree, Protocol::ll) ==
          Approx(45.6 + 2 * MiB / (1000 * 10.08)));
    CHECK(*detail::rccl_model_time_us(call(16, 2, 2 * MiB), Algorithm::tree, Protocol::simple) ==
          Approx(99.2 + 2 * MiB / (1000 * 18.48 * 0.7)));
    CHECK(pick(call(16, 2, 1 * MiB)) == "tree/LL");
    CHECK(pick(call(16, 2, 2 * MiB)) == "tree/LL");
    CHECK(pick(call(16, 2, 4 * MiB)) == "tree/Simple");
    // NCCL_PROTO=Simple: the pick among Simple's alone (tree/Simple at 2 MiB, 261.3 us).
    RcclCall simple = call(16, 2, 2 * MiB);
    simple.simple_only = true;
    CHECK(pick(simple) == "tree/Simple");
    CHECK(pick(call(16, 2, 128 * MiB)) == "tree/Simple");
    CHECK(pick(call(16, 2, 256 * MiB)) == "tree/Simple");
    CHECK(pick(call(16, 2, 512 * MiB)) == "ring/Simple");
    CHECK(pick(call(16, 2, 16384.0 * MiB)) == "ring/Simple");
    // One node: tree/Simple is skipped on gfx94; ring/LL (23.2 us, 15.36 GB/s) against
    // ring/Simple (46.4 us, 192 GB/s) cross at 23.2 / (1/15.36 - 1/192) = 387 kB.
    CHECK(!detail::rccl_model_time_us(call(8, 1, 64 * MiB), Algorithm::tree, Protocol::simple));
    CHECK(detail::rccl_cost(call(8, 1, 0), Algorithm::ring, Protocol::simple).latency_us ==
          Approx(17 + 14 * 2.1));
    CHECK(pick(call(8, 1, 256 * 1024)) == "ring/LL");
    CHECK(pick(call(8, 1, 512 * 1024)) == "ring/Simple");
    CHECK(pick(call(8, 1, 8192.0 * MiB)) == "ring/Simple");
    // 4 nodes: the tree's Simple ratio is 0.59 beyond 2 nodes: tree/Simple to 512 MiB.
    CHECK(pick(call(32, 4, 512 * MiB)) == "tree/Simple");
    CHECK(pick(call(32, 4, 1024 * MiB)) == "ring/Simple");
    // NCCL_ALGO=Ring leaves the protocol: Simple at the sizes of the forced runs.
    const auto forced = detail::rccl_choose(call(64, 8, 4096.0 * MiB), Algorithm::ring);
    REQUIRE(forced);
    CHECK(forced->algorithm == Algorithm::ring);
    CHECK(forced->protocol == Protocol::simple);
    // Ops RCCL's model does not cover here.
    CHECK(!detail::rccl_choose(call(16, 2, MiB, 2.0, Op::all_to_all)));
    CHECK(!detail::rccl_choose(call(16, 2, MiB, 2.0, Op::broadcast)));
}

TEST_CASE("rccl tuning: the host's proxy overhead (1 or 2 us) changes no choice of the rccl-tests "
          "sizes",
          "[collectives][rccl][xgmi]") {
    for (int nodes : {1, 2, 4, 8})
        for (int e = 20; e <= 34; ++e) {
            const double bytes = static_cast<double>(std::int64_t(1) << e);
            INFO(nodes << " nodes, 2^" << e << " B");
            CHECK(pick(call(8 * nodes, nodes, bytes, 1.0)) == pick(call(8 * nodes, nodes, bytes)));
        }
}

TEST_CASE("rccl tuning: collectives.library rccl picks by RCCL's model and costs the pick by "
          "clustersim's closed form",
          "[collectives][rccl][xgmi]") {
    const Communicator two_nodes = Communicator::first(topology("mi300x", 16), 16);
    for (std::int64_t mib : {8, 32, 128, 256, 512, 1024}) {
        INFO(mib << " MiB");
        Collective c;
        c.op = Op::all_reduce;
        c.bytes = mib * MiB;
        const Choice choice = two_nodes.choose(c);
        const detail::RcclCall rc{Op::all_reduce, static_cast<double>(c.bytes), 16, 2, kTotal, 2.0};
        const auto want = detail::rccl_choose(rc);
        REQUIRE(want);
        CHECK(choice.algorithm == want->algorithm);
        CHECK(choice.protocol == want->protocol);
        CHECK(choice.time == two_nodes.predict(c, want->algorithm, want->protocol));
    }
    // One node: MSCCL++ and MSCCL's all-pairs programs take all_reduce to 16 MiB (not
    // modelled: the cheapest predicted), RCCL's model above it.
    const Communicator one_node = Communicator::first(topology("mi300x", 8), 8);
    Collective small;
    small.bytes = 8 * MiB;
    Choice at8 = one_node.choose(small);
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple})
        CHECK(at8.time <= one_node.predict(small, Algorithm::ring, p));
    small.bytes = 64 * MiB;
    CHECK(one_node.choose(small).algorithm == Algorithm::ring);
    CHECK(one_node.choose(small).protocol == Protocol::simple);
    // Not a whole 8-GPU node: RCCL's rome models do not match; the cheapest predicted runs.
    const Communicator four = Communicator::first(topology("mi300x", 8), 4);
    Collective c;
    c.bytes = 64 * MiB;
    Choice cheapest = four.choose(c);
    for (Algorithm a : {Algorithm::ring, Algorithm::tree})
        for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple})
            CHECK(cheapest.time <= four.predict(c, a, p));
    // mi355x (RCCL 2.26 on gfx950: other tables) keeps the cheapest predicted.
    CHECK(hardware::load_hardware("mi355x").collectives.library ==
          hardware::CollectiveLibrary::nccl);
    CHECK(hardware::load_hardware("mi300x").collectives.library ==
          hardware::CollectiveLibrary::rccl);
}

TEST_CASE("rccl tuning: collectives.library is validated at load",
          "[collectives][rccl][hardware]") {
    test::TempDir dir("rccl-library");
    auto error = [&](const std::string& text) {
        const auto path = dir.write("hw.yaml", text);
        try {
            (void)hardware::load_hardware(path.string());
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    const std::string nvswitch = error("extends: dgx-h100\ncollectives:\n  library: rccl\n");
    CHECK(nvswitch.find("collectives.library") != std::string::npos);
    CHECK(nvswitch.find("xGMI") != std::string::npos);
    const std::string bad = error("extends: mi300x\ncollectives:\n  library: msccl\n");
    CHECK(bad.find("library") != std::string::npos);
    CHECK(bad.find("rccl") != std::string::npos);
    CHECK(error("extends: mi300x\ncollectives:\n  library: nccl\n") == "(no error)");
}
