// Closed forms of the collectives against hand-derived formulas (parameters read from the
// presets, so these check the formulas, not the calibration), and nccl-tests' conventions.
#include "collectives_test_util.h"

#include "base/error.h"
#include "strategies/collectives/communicator.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::strategies::collectives;
using collectives_test::GiB;
using collectives_test::MiB;
using collectives_test::topology;
using hardware::LinkLevel;

namespace {

double s(sim::Time t) {
    return t.seconds();
}

struct Params {
    const hardware::ClusterSpec& spec;
    Protocol p;
    double launch() const {
        return s(spec.collectives.launch_latency) + s(spec.collectives.protocol(p).base_latency);
    }
    double alpha(LinkLevel l) const {
        return s(spec.collectives.protocol(p).level(l).step_latency);
    }
    double eff(LinkLevel l) const { return spec.collectives.protocol(p).level(l).efficiency; }
    double mem(double bytes) const {
        return spec.collectives.memory_passes * bytes / spec.node.gpu.hbm_bandwidth;
    }
    double adds(double bytes) const { // fp32 reduction arithmetic
        return bytes / 4 / spec.node.gpu.peak(hardware::Dtype::fp32);
    }
};

Collective coll(Op op, std::int64_t bytes, Algorithm a, Protocol p, int root = 0) {
    Collective c;
    c.op = op;
    c.bytes = bytes;
    c.algorithm = a;
    c.protocol = p;
    c.root = root;
    return c;
}

} // namespace

TEST_CASE("collectives: ring all-reduce is 2(n-1)a + 2(n-1)/n S/B + kernel memory",
          "[collectives][closed-form]") {
    for (int n : {2, 4, 8}) {
        const auto& topo = topology("dgx-h100", 8);
        const auto comm = Communicator::first(topo, n);
        for (Protocol p : hardware::kAllProtocols) {
            const Params P{topo.spec(), p};
            const double S = 256.0 * MiB;
            const double B = P.eff(LinkLevel::nvlink) * topo.spec().node.nvlink.bandwidth;
            const double expected = P.launch() + 2 * (n - 1) * P.alpha(LinkLevel::nvlink) +
                                    2.0 * (n - 1) / n * S / B +
                                    std::max(P.mem(S), (n - 1.0) / n * P.adds(S));
            CHECK(s(comm.predict(coll(Op::all_reduce, 256 * MiB, Algorithm::ring, p),
                                 Algorithm::ring, p)) == Approx(expected).epsilon(1e-8));
        }
    }
}

TEST_CASE("collectives: ring all-gather and reduce-scatter move (n-1)/n S",
          "[collectives][closed-form]") {
    const auto& topo = topology("dgx-a100", 8);
    const auto comm = Communicator::first(topo, 8);
    const Params P{topo.spec(), Protocol::simple};
    const double S = 1.0 * GiB;
    const double B = P.eff(LinkLevel::nvlink) * 300e9;
    const double bw = P.launch() + 7 * P.alpha(LinkLevel::nvlink) + 7.0 / 8 * S / B;
    CHECK(s(comm.predict(coll(Op::all_gather, GiB, Algorithm::ring, Protocol::simple),
                         Algorithm::ring, Protocol::simple)) ==
          Approx(bw + P.mem(S)).epsilon(1e-8));
    CHECK(s(comm.predict(coll(Op::reduce_scatter, GiB, Algorithm::ring, Protocol::simple),
                         Algorithm::ring, Protocol::simple)) ==
          Approx(bw + std::max(P.mem(S), 7.0 / 8 * P.adds(S))).epsilon(1e-8));
}

TEST_CASE("collectives: NVLS all-reduce moves (n+1)/n S through each switch port",
          "[collectives][closed-form]") {
    const auto& topo = topology("hgx-h200", 8);
    const auto comm = Communicator::first(topo, 8);
    const auto& t = topo.spec().collectives;
    const Params P{topo.spec(), Protocol::simple};
    const double S = 4.0 * GiB;
    const double B = t.nvls.efficiency * 450e9;
    const double expected = P.launch() + s(t.nvls.latency) + 9.0 / 8 * S / B + P.mem(S);
    CHECK(s(comm.predict(coll(Op::all_reduce, 4 * GiB, Algorithm::nvls, Protocol::simple),
                         Algorithm::nvls, Protocol::simple)) == Approx(expected).epsilon(1e-8));
    // all_gather: each port receives all n blocks; reduce_scatter: each port sends them.
    for (Op op : {Op::all_gather, Op::reduce_scatter}) {
        CHECK(s(comm.predict(coll(op, 4 * GiB, Algorithm::nvls, Protocol::simple), Algorithm::nvls,
                             Protocol::simple)) ==
              Approx(P.launch() + s(t.nvls.latency) + S / B + P.mem(S)).epsilon(1e-8));
    }
}

TEST_CASE("collectives: a 2-GPU double binary tree costs what a 2-GPU ring does",
          "[collectives][closed-form]") {
    // Two trees, each the mirror of the other: every round after the first each GPU sends one
    // chunk up one tree and one down the other, K + 1 rounds of S/2K bytes, 2 latency steps.
    const auto& topo = topology("dgx-a100", 8);
    const auto comm = Communicator::first(topo, 2);
    for (Protocol p : hardware::kAllProtocols) {
        const Params P{topo.spec(), p};
        const double S = 64.0 * MiB;
        const double B = P.eff(LinkLevel::nvlink) * 300e9;
        const double expected =
            P.launch() + 2 * P.alpha(LinkLevel::nvlink) + S / B + std::max(P.mem(S), P.adds(S) / 2);
        const auto c = coll(Op::all_reduce, 64 * MiB, Algorithm::tree, p);
        CHECK(s(comm.predict(c, Algorithm::tree, p)) == Approx(expected).epsilon(1e-8));
        CHECK(s(comm.predict(c, Algorithm::ring, p)) == Approx(expected).epsilon(1e-8));
    }
}

TEST_CASE("collectives: pipelined chain broadcast is (n-1)a + (K+n-2) S/K / B",
          "[collectives][closed-form]") {
    const auto& topo = topology("dgx-h100", 8);
    const auto comm = Communicator::first(topo, 8);
    const Params P{topo.spec(), Protocol::simple};
    const double S = 100.0 * MiB;
    const double K = std::ceil(
        S / static_cast<double>(topo.spec().collectives.protocol(Protocol::simple).chunk_bytes));
    const double B = P.eff(LinkLevel::nvlink) * 450e9;
    for (int root : {0, 3, 7}) {
        const double expected =
            P.launch() + 7 * P.alpha(LinkLevel::nvlink) + (K + 6) * S / K / B + P.mem(S);
        CHECK(
            s(comm.predict(coll(Op::broadcast, 100 * MiB, Algorithm::ring, Protocol::simple, root),
                           Algorithm::ring, Protocol::simple)) == Approx(expected).epsilon(1e-8));
    }
}

TEST_CASE("collectives: direct all-to-all and send/recv on one NVSwitch node",
          "[collectives][closed-form]") {
    const auto& topo = topology("dgx-h100", 8);
    const auto comm = Communicator::first(topo, 8);
    const Params P{topo.spec(), Protocol::simple};
    const double S = 512.0 * MiB;
    const double B = P.eff(LinkLevel::nvlink) * 450e9;
    CHECK(
        s(comm.predict(coll(Op::all_to_all, 512 * MiB, Algorithm::direct, Protocol::simple),
                       Algorithm::direct, Protocol::simple)) ==
        Approx(P.launch() + P.alpha(LinkLevel::nvlink) + 7.0 / 8 * S / B + P.mem(S)).epsilon(1e-8));
    CHECK(s(comm.predict(coll(Op::send_recv, 512 * MiB, Algorithm::direct, Protocol::simple),
                         Algorithm::direct, Protocol::simple)) ==
          Approx(P.launch() + P.alpha(LinkLevel::nvlink) + S / B + P.mem(S)).epsilon(1e-8));
    // gather: the root's port receives n-1 blocks of S/n.
    CHECK(
        s(comm.predict(coll(Op::gather, 512 * MiB, Algorithm::direct, Protocol::simple, 2),
                       Algorithm::direct, Protocol::simple)) ==
        Approx(P.launch() + P.alpha(LinkLevel::nvlink) + 7.0 / 8 * S / B + P.mem(S)).epsilon(1e-8));
}

TEST_CASE("collectives: hierarchical all-reduce on two DGX H100 nodes",
          "[collectives][closed-form]") {
    // NVLS reduce-scatter and all-gather in each node (S through every switch port each), and
    // 8 rings of 2 nodes, one per rail, each all-reducing S/8 over its NIC.
    const auto& topo = topology("dgx-h100", 16);
    const auto comm = Communicator::first(topo, 16);
    const auto& spec = topo.spec();
    const auto& t = spec.collectives;
    const Params P{spec, Protocol::simple};
    const double S = 1.0 * GiB;
    const double nvls = t.nvls.efficiency * 450e9;
    const double nic = P.eff(LinkLevel::network) * spec.node.nic.bandwidth;
    // Across nodes the kernel's memory work overlaps the transfers (the larger counts).
    const double expected =
        P.launch() + 2 * s(t.nvls.latency) + 2 * P.alpha(LinkLevel::network) +
        std::max(2 * S / nvls + 2 * S / 16 / nic, std::max(P.mem(S), 0.5 / 8 * P.adds(S)));
    CHECK(s(comm.predict(coll(Op::all_reduce, GiB, Algorithm::hierarchical, Protocol::simple),
                         Algorithm::hierarchical, Protocol::simple)) ==
          Approx(expected).epsilon(1e-8));
}

TEST_CASE("collectives: a multi-node ring is bound by its rail-aligned NICs",
          "[collectives][closed-form]") {
    // 4 DGX H100 nodes: 8 channels, each NIC carries one channel each way, so a step moves
    // S/n through 8 NICs per node; NVLink carries 7/8 of it.
    const auto& topo = topology("dgx-h100", 32);
    const auto comm = Communicator::first(topo, 32);
    const Params P{topo.spec(), Protocol::simple};
    const double S = 1.0 * GiB;
    const double nic = P.eff(LinkLevel::network) * topo.spec().node.nic.bandwidth;
    const double nvl = P.eff(LinkLevel::nvlink) * 450e9;
    const double step = std::max(S / 32 / 8 / nic, S / 32 * 7 / 8 / nvl);
    // NCCL's latency (tuning.cc): 6 of the 62 steps cross the network, the others pay the
    // NVLink step latency, at least 3 us of proxy overhead; the kernel's memory work overlaps.
    const double expected = P.launch() + 56 * std::max(P.alpha(LinkLevel::nvlink), 3e-6) +
                            6 * P.alpha(LinkLevel::network) +
                            std::max(62 * step, std::max(P.mem(S), 31.0 / 32 * P.adds(S)));
    CHECK(s(comm.predict(coll(Op::all_reduce, GiB, Algorithm::ring, Protocol::simple),
                         Algorithm::ring, Protocol::simple)) == Approx(expected).epsilon(1e-8));
}

TEST_CASE("collectives: auto takes the cheapest applicable algorithm and protocol",
          "[collectives][closed-form]") {
    for (const char* preset : {"dgx-a100", "dgx-h100"}) {
        const auto& topo = topology(preset, 8);
        const auto comm = Communicator::first(topo, 8);
        for (std::int64_t bytes : {std::int64_t(8), 64 * 1024 * std::int64_t(1), 16 * MiB, GiB}) {
            Collective c;
            c.bytes = bytes;
            const Choice best = comm.choose(c);
            for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls}) {
                if (!comm.why_not(a, Op::all_reduce).empty())
                    continue;
                for (Protocol p : hardware::kAllProtocols) {
                    if (a == Algorithm::nvls && p != Protocol::simple)
                        continue;
                    CHECK(best.time <= comm.predict(c, a, p));
                }
            }
        }
    }
    // Large all-reduces on an H100 node go to NVLS, on an A100 node to the ring, as in NCCL.
    Collective big;
    big.bytes = 4 * GiB;
    CHECK(Communicator::first(topology("dgx-h100", 8), 8).choose(big).algorithm == Algorithm::nvls);
    CHECK(Communicator::first(topology("dgx-a100", 8), 8).choose(big).algorithm == Algorithm::ring);
    CHECK(Communicator::first(topology("dgx-a100", 8), 8).choose(big).protocol == Protocol::simple);
}

TEST_CASE("collectives: nccl-tests conventions", "[collectives]") {
    CHECK(bus_factor(Op::all_reduce, 8) == Approx(1.75));
    CHECK(bus_factor(Op::all_gather, 8) == Approx(0.875));
    CHECK(bus_factor(Op::reduce_scatter, 4) == Approx(0.75));
    CHECK(bus_factor(Op::all_to_all, 4) == Approx(0.75));
    CHECK(bus_factor(Op::broadcast, 8) == 1);
    CHECK(bus_factor(Op::send_recv, 8) == 1);
    CHECK(nccl_count(Op::all_reduce, 1024, hardware::Dtype::fp32, 8) == 256);
    CHECK(nccl_count(Op::all_gather, 1024, hardware::Dtype::fp32, 8) == 32);
    CHECK(nccl_count(Op::all_reduce, 1024, hardware::Dtype::bf16, 8) == 512);
    CHECK(round_bytes(Op::all_gather, 100, hardware::Dtype::fp32, 8) == 96);
    CHECK(round_bytes(Op::all_reduce, 10, hardware::Dtype::fp32, 8) == 8);
    CHECK(round_bytes(Op::reduce_scatter, 16, hardware::Dtype::fp32, 8) == 0);
    CHECK(parse_op("allreduce") == Op::all_reduce);
    CHECK(parse_op("reduce-scatter") == Op::reduce_scatter);
    CHECK(parse_op("sendrecv") == Op::send_recv);
    CHECK(!parse_op("allreduce2"));
    CHECK(parse_algorithm("auto") == Algorithm::automatic);
    CHECK(!parse_algorithm("nccl"));
}

TEST_CASE("collectives: what does not apply is an InputError naming why", "[collectives]") {
    const auto comm_a100 = Communicator::first(topology("dgx-a100", 8), 8);
    const auto one = Communicator::first(topology("dgx-a100", 8), 1);
    const auto two_nodes = Communicator::first(topology("dgx-h100", 16), 16);
    Collective c;
    c.bytes = MiB;
    SECTION("nvls on A100") {
        c.algorithm = Algorithm::nvls;
        CHECK_THROWS_WITH(comm_a100.validate(c), Catch::Contains("NVLink SHARP"));
    }
    SECTION("nvls across nodes") {
        c.algorithm = Algorithm::nvls;
        CHECK_THROWS_WITH(two_nodes.validate(c), Catch::Contains("within one node"));
    }
    SECTION("tree on one GPU") {
        c.algorithm = Algorithm::tree;
        CHECK_THROWS_WITH(one.validate(c), Catch::Contains("at least 2 GPUs"));
    }
    SECTION("ring all_to_all") {
        c.op = Op::all_to_all;
        c.algorithm = Algorithm::ring;
        CHECK_THROWS_WITH(comm_a100.validate(c), Catch::Contains("direct"));
    }
    SECTION("hierarchical on one node") {
        c.algorithm = Algorithm::hierarchical;
        CHECK_THROWS_WITH(comm_a100.validate(c), Catch::Contains("2 nodes"));
    }
    SECTION("size not divisible") {
        c.op = Op::all_gather;
        c.bytes = 36;
        CHECK_THROWS_WITH(comm_a100.validate(c), Catch::Contains("multiple of 32 B"));
    }
    SECTION("zero size") {
        c.bytes = 0;
        CHECK_THROWS_AS(comm_a100.validate(c), InputError);
    }
    SECTION("root out of range") {
        c.op = Op::broadcast;
        c.root = 8;
        CHECK_THROWS_WITH(comm_a100.validate(c), Catch::Contains("ranks are 0 to 7"));
    }
    SECTION("dtype") {
        c.dtype = hardware::Dtype::fp64;
        CHECK_THROWS_WITH(comm_a100.validate(c), Catch::Contains("fp32, fp16 and bf16"));
    }
    SECTION("duplicate GPU") {
        CHECK_THROWS_WITH(Communicator(topology("dgx-a100", 8), {0, 1, 1}),
                          Catch::Contains("twice"));
    }
}
