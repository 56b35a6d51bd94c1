// NCCL's algorithms across nodes: closed forms of simple cases (parameters read from the
// presets, so these check the formulas), the algorithms that cannot run, and the automatic
// choice against every forced algorithm.
#include "collectives_test_util.h"

#include "base/error.h"
#include "hardware/hardware_loader.h"
#include "strategies/collectives/communicator.h"
#include "strategies/collectives/plan.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

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

Collective coll(Op op, std::int64_t bytes, Algorithm a = Algorithm::automatic,
                std::optional<Protocol> p = Protocol::simple) {
    Collective c;
    c.op = op;
    c.bytes = bytes;
    c.algorithm = a;
    c.protocol = p;
    return c;
}

/// Bytes/s of payload all NICs of a node carry one way, Simple protocol.
double nic_total(const hardware::ClusterSpec& spec) {
    return spec.node.nic_ports() * spec.node.nic_port_bandwidth() *
           spec.collectives.protocol(Protocol::simple).level(LinkLevel::network).efficiency *
           spec.network.transport_efficiency;
}

} // namespace

TEST_CASE("across nodes: ring all-reduce is NCCL's latency + 2(n-1)/n S / (all NICs of a node)",
          "[collectives][multinode][closed-form]") {
    for (const char* preset : {"dgx-h100", "dgx-a100", "aws-p4d", "oci-bm-gpu4.8", "aws-p5"}) {
        for (int nodes : {2, 4}) {
            INFO(preset << ", " << nodes << " nodes");
            const auto& topo = topology(preset, 8 * nodes);
            const auto& spec = topo.spec();
            const auto comm = Communicator::first(topo, 8 * nodes);
            const double n = 8 * nodes;
            const double S = 4.0 * GiB;
            const auto& t = spec.collectives;
            const auto& simple = t.protocol(Protocol::simple);
            // tuning.cc: 2(n-1) steps, 2(N-1) of them across the network; the others at the
            // NVLink step latency, at least 3 us of network proxy overhead (Simple).
            // The network plugin's latency twice under Simple (its flush), as tuning.cc adds it.
            const double alpha_net = s(simple.level(LinkLevel::network).step_latency) +
                                     s(spec.network.transport_latency) +
                                     2 * s(spec.network.net_latency);
            const double lat = s(t.launch_latency) + s(simple.base_latency) +
                               (2 * (n - 1) - 2 * (nodes - 1)) *
                                   std::max(s(simple.level(LinkLevel::nvlink).step_latency), 3e-6) +
                               2 * (nodes - 1) * alpha_net;
            const double body = 2 * (n - 1) / n * S / nic_total(spec);
            const double local = t.memory_passes * S / spec.node.gpu.hbm_bandwidth;
            REQUIRE(body > local); // the network sets the pace; the kernel's copies overlap it
            CHECK(s(comm.predict(coll(Op::all_reduce, std::int64_t(S), Algorithm::ring),
                                 Algorithm::ring, Protocol::simple)) ==
                  Approx(lat + body).epsilon(1e-9));
            // all_gather: half the steps, (n-1)/n S.
            const double lat_ag =
                s(t.launch_latency) + s(simple.base_latency) +
                ((n - 1) - (nodes - 1)) *
                    std::max(s(simple.level(LinkLevel::nvlink).step_latency), 3e-6) +
                (nodes - 1) * alpha_net;
            CHECK(s(comm.predict(coll(Op::all_gather, std::int64_t(S), Algorithm::ring),
                                 Algorithm::ring, Protocol::simple)) ==
                  Approx(lat_ag + std::max((n - 1) / n * S / nic_total(spec),
                                           t.memory_passes * S / spec.node.gpu.hbm_bandwidth))
                      .epsilon(1e-9));
        }
    }
}

TEST_CASE("across nodes: NVLSTree is NVLS latency + 2 log2(N) network latencies + the slowest "
          "of its pipelined parts",
          "[collectives][multinode][closed-form]") {
    const double S = 8.0 * GiB;
    for (int nodes : {2, 4, 8}) {
        INFO(nodes << " nodes");
        const auto& topo = topology("dgx-h100", 8 * nodes);
        const auto& spec = topo.spec();
        const auto comm = Communicator::first(topo, 8 * nodes);
        const double n = 8 * nodes;
        const auto& t = spec.collectives;
        const double log2n = nodes == 2 ? 1 : nodes == 4 ? 2 : 3;
        const double lat =
            s(t.launch_latency) + s(t.nvls.latency) +
            2 * log2n * s(t.protocol(Protocol::simple).level(LinkLevel::network).step_latency);
        // Intra: every GPU moves (1 + 1/8) S each way through its NVLink port at the NVLS
        // efficiency. Inter: a head's double binary tree moves S/8 (2 nodes: one parent, one
        // child) or 2 S/8 (an inner node) each way over its NIC. Cap: 8 channels of
        // perChMaxNVLSTreeBw, in bus bandwidth.
        const double intra = (1 + 1.0 / 8) * S / (t.nvls.efficiency * spec.node.nvlink.bandwidth);
        const double inter = (nodes == 2 ? 1 : 2) * S / nic_total(spec);
        const double cap = 2 * (n - 1) / n * S / (8 * t.nvls_tree_channel.at(nodes));
        // Pipeline fill (nvls.cc, enqueue.cc): 2 log2(N) steps of 16 channels x 8 heads x one
        // chunk (128 KiB; 64 KiB from 4 nodes), at the pace of the slowest part.
        REQUIRE(t.nvls_tree_pipeline.channels == 16);
        const double chunk = nodes >= 4 ? 64 * 1024 : 128 * 1024;
        const double fill = 2 * log2n * 16 * 8 * chunk;
        CHECK(s(comm.predict(coll(Op::all_reduce, std::int64_t(S), Algorithm::nvls_tree),
                             Algorithm::nvls_tree, Protocol::simple)) ==
              Approx(lat + std::max({intra, inter, cap}) * (S + fill) / S).epsilon(1e-6));
    }
}

TEST_CASE("across nodes: NVLSTree's fill shrinks with NCCL's chunk for small buffers",
          "[collectives][multinode][closed-form]") {
    // 2 nodes of dgx-h100: 16 channels x 8 heads = 128 concurrent chunks of 128 KiB (16 MiB a
    // step). enqueue.cc: below 4 x 16 MiB the chunk is 64 KiB, below 128 x 64 KiB = 8 MiB it
    // is 32 KiB; a step never moves more than the buffer.
    const auto& topo = topology("dgx-h100", 16);
    const auto comm = Communicator::first(topo, 16);
    const double per_byte = 2.0 * 15 / 16 / (8 * topo.spec().collectives.nvls_tree_channel.at(2));
    auto fill = [&](double S) {
        const auto c = coll(Op::all_reduce, std::int64_t(S), Algorithm::nvls_tree);
        // latency + fill x pace: the time less the buffer at the pace (the cap here: 8 heads
        // of perChMaxNVLSTreeBw are slower than the NVLS and NIC parts)
        return s(comm.predict(c, Algorithm::nvls_tree, Protocol::simple)) - per_byte * S;
    };
    const double lat = fill(1024.0 * GiB) - per_byte * 2 * 16 * MiB; // 128 KiB chunks
    CHECK(fill(64.0 * MiB) - lat == Approx(per_byte * 2 * 16 * MiB).epsilon(1e-6));
    CHECK(fill(32.0 * MiB) - lat == Approx(per_byte * 2 * 8 * MiB).epsilon(1e-6));
    CHECK(fill(6.0 * MiB) - lat == Approx(per_byte * 2 * 4 * MiB).epsilon(1e-6));
    CHECK(fill(2.0 * MiB) - lat == Approx(per_byte * 2 * 2 * MiB).epsilon(1e-6));
}

TEST_CASE("across nodes: CollNet moves 1/heads of S per NIC whatever the node count",
          "[collectives][multinode][closed-form]") {
    const double S = 4.0 * GiB;
    for (int nodes : {2, 8}) {
        const auto& topo = topology("dgx-superpod-h100", 8 * nodes);
        const auto& spec = topo.spec();
        const auto comm = Communicator::first(topo, 8 * nodes);
        const auto& simple = spec.collectives.protocol(Protocol::simple);
        const double nvlink =
            simple.level(LinkLevel::nvlink).efficiency * spec.node.nvlink.bandwidth;
        const double net = S / nic_total(spec);
        const double alpha_net = s(simple.level(LinkLevel::network).step_latency);
        const double alpha_nvl = s(simple.level(LinkLevel::nvlink).step_latency);
        const double launch = s(spec.collectives.launch_latency);
        // Chain: 8 chains of S/8, one from each head through the other 7 GPUs; a GPU sends
        // its part up and down in the 6 chains it is inside, down only in its own (the head),
        // up only in the one it ends: 14 S/8 through its NVLink port.
        CHECK(
            s(comm.predict(coll(Op::all_reduce, std::int64_t(S), Algorithm::collnet_chain),
                           Algorithm::collnet_chain, Protocol::simple)) ==
            Approx(launch + 2 * 7 * alpha_nvl + alpha_net + std::max(2 * 7.0 / 8 * S / nvlink, net))
                .epsilon(1e-6));
        // Direct: each GPU sends 7/8 S to the other heads and 7/8 S back out as a head.
        CHECK(s(comm.predict(coll(Op::all_reduce, std::int64_t(S), Algorithm::collnet_direct),
                             Algorithm::collnet_direct, Protocol::simple)) ==
              Approx(launch + 2 * (alpha_nvl + 7 * 0.4e-6) + alpha_net +
                     std::max(2 * 7.0 / 8 * S / nvlink, net))
                  .epsilon(1e-6));
    }
}

TEST_CASE("across nodes: algorithms the hardware cannot run are refused with the fix",
          "[collectives][multinode][errors]") {
    const auto& a100 = topology("dgx-a100", 16);
    const auto ca = Communicator::first(a100, 16);
    CHECK_THAT(ca.why_not(Algorithm::nvls_tree, Op::all_reduce),
               Catch::Contains("NVLink SHARP") && Catch::Contains("dgx-a100"));
    const auto& h100 = topology("dgx-h100", 16);
    const auto ch = Communicator::first(h100, 16);
    for (Algorithm a : {Algorithm::collnet_direct, Algorithm::collnet_chain})
        CHECK_THAT(ch.why_not(a, Op::all_reduce),
                   Catch::Contains("network.in_network_reduction") && Catch::Contains("nvls_tree"));
    CHECK(ch.why_not(Algorithm::nvls_tree, Op::all_reduce).empty());
    CHECK_THAT(ch.why_not(Algorithm::nvls_tree, Op::all_gather), Catch::Contains("all_reduce"));
    const auto one = Communicator::first(h100, 8);
    CHECK_THAT(one.why_not(Algorithm::nvls_tree, Op::all_reduce), Catch::Contains("use nvls"));
    CHECK_THROWS_AS(ch.validate(coll(Op::all_reduce, MiB, Algorithm::collnet_chain)), InputError);
    CHECK_THROWS_WITH(ch.validate(coll(Op::all_reduce, MiB, Algorithm::nvls_tree, Protocol::ll)),
                      Catch::Contains("Simple protocol only"));
    const auto& pod = topology("dgx-superpod-h100", 16);
    CHECK(Communicator::first(pod, 16).why_not(Algorithm::collnet_chain, Op::all_reduce).empty());
}

TEST_CASE("across nodes: auto is never slower than the best algorithm forced",
          "[collectives][multinode][invariant]") {
    int checked = 0;
    for (const char* preset : {"dgx-h100", "dgx-a100", "dgx-superpod-h100", "aws-p4d"}) {
        for (int nodes : {2, 4}) {
            const auto& topo = topology(preset, 8 * nodes);
            const auto comm = Communicator::first(topo, 8 * nodes);
            for (Op op : {Op::all_reduce, Op::all_gather, Op::reduce_scatter, Op::broadcast,
                          Op::all_to_all}) {
                for (std::int64_t size = 1024; size <= 8 * GiB; size *= 16) {
                    Collective c =
                        coll(op, round_bytes(op, size, hardware::Dtype::fp32, comm.size()),
                             Algorithm::automatic, std::nullopt);
                    const Choice best = comm.choose(c);
                    for (Algorithm a : kConcreteAlgorithms) {
                        if (!comm.why_not(a, op).empty() || a == Algorithm::hierarchical ||
                            (a == Algorithm::direct && op != Op::all_to_all))
                            continue;
                        for (Protocol p : hardware::kAllProtocols) {
                            // aws-p4d runs Simple only (NCCL_PROTO=Simple, as AWS's plugin
                            // sets it): the others are not NCCL's to choose.
                            if ((simple_only(a) || a == Algorithm::nvls ||
                                 topo.spec().collectives.simple_protocol_only) &&
                                p != Protocol::simple)
                                continue;
                            INFO(preset << " " << nodes << " nodes " << to_string(op) << " " << size
                                        << " B: " << to_string(a) << "/" << hardware::to_string(p));
                            CHECK(best.time <= comm.predict(c, a, p));
                            ++checked;
                        }
                    }
                }
            }
        }
    }
    CHECK(checked > 500);
}

TEST_CASE("across many nodes: the tree's sample never costs more than the tree, and auto picks "
          "what weighing every algorithm picks",
          "[collectives][multinode][invariant]") {
    int tree_chosen = 0;
    for (const char* preset : {"dgx-h100", "dgx-a100", "aws-p4d"}) {
        for (int nodes : {64, 97}) {
            const auto& topo = topology(preset, 8 * nodes);
            const auto comm = Communicator::first(topo, 8 * nodes);
            const detail::Plan& plan = comm.plan();
            const detail::TreeData& sample = plan.tree_sample();
            const detail::TreeData& tree = plan.tree();
            INFO(preset << " " << nodes << " nodes");
            REQUIRE(sample.depth == tree.depth);
            REQUIRE(sample.stages.size() == tree.stages.size());
            CHECK(sample.parts() == tree.parts());
            CHECK(plan.tree_parts() == tree.parts());
            std::size_t sampled = 0, hops = 0;
            for (std::size_t o = 0; o < tree.stages.size(); ++o) {
                sampled += sample.stages[o].size();
                hops += tree.stages[o].size();
            }
            // One rail's hops between nodes and the chains of a few nodes: under an eighth of
            // the tree (a 64th of its hops between nodes on 8 NIC ports, a 32nd on 4).
            CHECK(sampled * 8 < hops);
            const auto S = static_cast<std::int64_t>(tree.stages.size());
            for (Protocol p : hardware::kAllProtocols) {
                for (std::int64_t K :
                     {std::int64_t{1}, std::int64_t{3}, S - 2, S, S + 7, std::int64_t{4096}}) {
                    INFO(hardware::to_string(p) << " K " << K);
                    const double lower = plan.pipeline_rounds(sample, p, K);
                    CHECK(lower > 0);
                    CHECK(lower <= plan.tree_rounds(p, K) * (1 + 1e-12));
                }
            }
            for (std::int64_t size = 1024; size <= 8 * GiB; size *= 8) {
                const Collective c = coll(Op::all_reduce, size, Algorithm::automatic, std::nullopt);
                const Choice best = comm.choose(c);
                std::optional<Choice> brute;
                for (Algorithm a : {Algorithm::ring, Algorithm::tree, Algorithm::nvls_tree}) {
                    if (!comm.why_not(a, c.op).empty())
                        continue;
                    for (Protocol p : hardware::kAllProtocols) {
                        if ((simple_only(a) || topo.spec().collectives.simple_protocol_only) &&
                            p != Protocol::simple)
                            continue;
                        const sim::Time t = comm.predict(c, a, p);
                        if (!brute || t < brute->time)
                            brute = Choice{a, p, t};
                    }
                }
                REQUIRE(brute);
                INFO(size << " B");
                CHECK(best.algorithm == brute->algorithm);
                CHECK(best.protocol == brute->protocol);
                CHECK(best.time == brute->time);
                tree_chosen += best.algorithm == Algorithm::tree ? 1 : 0;
            }
        }
    }
    CHECK(tree_chosen > 0); // the bound let the tree through where it wins
}

TEST_CASE("across nodes: NVLSTree wins at large sizes on H100 nodes, ring on A100 nodes",
          "[collectives][multinode]") {
    const auto h = Communicator::first(topology("dgx-h100", 16), 16);
    CHECK(h.choose(coll(Op::all_reduce, 4 * GiB, Algorithm::automatic, std::nullopt)).algorithm ==
          Algorithm::nvls_tree);
    const auto a = Communicator::first(topology("dgx-a100", 16), 16);
    CHECK(a.choose(coll(Op::all_reduce, 4 * GiB, Algorithm::automatic, std::nullopt)).algorithm ==
          Algorithm::ring);
    // A slower transport slows what crosses the network by its efficiency.
    const auto& ib = topology("dgx-a100", 16);
    auto roce_spec = ib.spec();
    roce_spec.network.transport_efficiency = 0.5;
    const hardware::Topology roce(roce_spec);
    const auto cr = Communicator::first(roce, 16);
    const auto ci = Communicator::first(ib, 16);
    const auto c = coll(Op::all_reduce, 8 * GiB, Algorithm::ring);
    CHECK(s(cr.predict(c, Algorithm::ring, Protocol::simple)) ==
          Approx(2 * s(ci.predict(c, Algorithm::ring, Protocol::simple))).epsilon(0.01));
}

TEST_CASE("across nodes: NCCL's tree is a chain per NIC port in each node under two trees of "
          "nodes, paced by NCCL's per-channel cap",
          "[collectives][multinode]") {
    const auto& topo = topology("dgx-a100", 16);
    const auto& t = topo.spec().collectives;
    const auto comm = Communicator::first(topo, 16);
    REQUIRE(topo.spec().node.nic_ports() == 8);
    // Small: no bandwidth to speak of; the latency is tuning.cc's 2 ((ppn - 1) intraLat +
    // log2i(2) interLat) over the Tree row (2 nodes: the chain of 8 hangs from the other
    // node's first rank), on top of the launch and the protocol's base latency.
    const double expect_ll = s(t.launch_latency) + s(t.protocol(Protocol::ll).base_latency) +
                             2 * (7 * s(t.tree.step_latency[0][0]) + s(t.tree.step_latency[0][2]));
    REQUIRE(t.tree.step_latency[0][0] > sim::Time::zero());
    CHECK(s(comm.predict(coll(Op::all_reduce, 1024, Algorithm::tree, Protocol::ll), Algorithm::tree,
                         Protocol::ll)) == Approx(expect_ll).epsilon(0.01));
    // Large: each NIC carries 1/8 of S each way (its channel's two trees), at 8 x 25 GB/s x
    // 0.94 = 188 GB/s of algbw; NCCL's cap (8 channels x perChMaxTreeBw 23.6 GB/s of busBw,
    // algbw = busBw / 2) is half that and sets the slope.
    auto at = [&](double S) {
        return s(comm.predict(coll(Op::all_reduce, std::int64_t(S), Algorithm::tree),
                              Algorithm::tree, Protocol::simple));
    };
    const double S = 2.0 * GiB;
    CHECK(at(2 * S) - at(S) == Approx(2 * S / (8 * t.tree.channel.at(2))).epsilon(0.01));
    // 4 H100 nodes: the cap from 3 nodes on (perChMaxTreeBw 36.0 GB/s); ring beats it.
    const auto h = Communicator::first(topology("dgx-h100", 32), 32);
    const auto& th = topology("dgx-h100", 32).spec().collectives;
    auto ath = [&](double bytes) {
        return s(h.predict(coll(Op::all_reduce, std::int64_t(bytes), Algorithm::tree),
                           Algorithm::tree, Protocol::simple));
    };
    CHECK(ath(2 * S) - ath(S) == Approx(2 * S / (8 * th.tree.channel.at(4))).epsilon(0.01));
    CHECK(h.choose(coll(Op::all_reduce, 4 * GiB, Algorithm::automatic, std::nullopt)).algorithm !=
          Algorithm::tree);
    // Without the cap (hardware that gives none) NVLink sets the pace: in each channel's
    // chain a rank sends its part up and down, the chain's ends one way only (2 (g - 1) parts
    // of a node's g ranks), over 8 channels x 2 trees of S / 16 each: 1.75 S out of every GPU,
    // more than the 1/8 of S each NIC carries at a twelfth of NVLink's rate.
    auto spec = topo.spec();
    spec.collectives.tree.channel = {};
    const hardware::Topology uncapped(spec);
    const auto u = Communicator::first(uncapped, 16);
    auto atu = [&](double bytes) {
        return s(u.predict(coll(Op::all_reduce, std::int64_t(bytes), Algorithm::tree),
                           Algorithm::tree, Protocol::simple));
    };
    const double nvlink = spec.node.nvlink.bandwidth *
                          t.protocol(Protocol::simple).level(LinkLevel::nvlink).efficiency;
    CHECK(atu(2 * S) - atu(S) == Approx(1.75 * S / nvlink).epsilon(0.01));
    CHECK(atu(2 * S) - atu(S) > S / 8 / (nic_total(spec) / 8));
}

TEST_CASE("across nodes: broadcast, reduce, all-gather and reduce-scatter use every NIC of a "
          "node, one ring channel per NIC port",
          "[collectives][multinode]") {
    const double S = 1.0 * GiB;
    auto slope = [&](const Communicator& comm, Op op) {
        auto at = [&](double bytes) {
            Collective c = coll(op, std::int64_t(bytes), Algorithm::ring);
            c.root = 3;
            return s(comm.predict(c, Algorithm::ring, Protocol::simple));
        };
        return at(2 * S) - at(S);
    };
    // 2 DGX A100 (8 x 200 Gb/s HDR): a chain per channel from the root, 1/8 of S each; each
    // NIC carries its channel's 1/8 one way, the NVLink ports 1/8 per channel (S in all, at
    // 12 times a NIC's rate): the NICs together set the pace, 8 times one NIC's.
    const auto& a100 = topology("dgx-a100", 16);
    const auto a = Communicator::first(a100, 16);
    CHECK(slope(a, Op::broadcast) == Approx(S / nic_total(a100.spec())).epsilon(0.02));
    CHECK(slope(a, Op::reduce) == Approx(S / nic_total(a100.spec())).epsilon(0.02));
    // The same on 128 nodes: a chain of 1,023 hops per channel, longer than the pipeline of
    // chunks, whose windows of stages are slid along (plan.cpp: sliding_middle_windows), not
    // summed afresh; the slope is still the NICs'.
    const auto& big = topology("dgx-a100", 1024);
    const auto b = Communicator::first(big, 1024);
    CHECK(slope(b, Op::broadcast) == Approx(S / nic_total(big.spec())).epsilon(0.02));
    CHECK(slope(b, Op::reduce) == Approx(S / nic_total(big.spec())).epsilon(0.02));
    // All-gather and reduce-scatter: n - 1 steps of S / n over 8 rail rings, each NIC one.
    const double n = 16;
    CHECK(slope(a, Op::all_gather) ==
          Approx((n - 1) / n * S / nic_total(a100.spec())).epsilon(0.02));
    CHECK(slope(a, Op::reduce_scatter) ==
          Approx((n - 1) / n * S / nic_total(a100.spec())).epsilon(0.02));
    // Fewer NICs than GPUs (AWS p4d: 4 x 100 Gb/s EFA for 8 A100): 4 channels, one per NIC.
    const auto& p4d = topology("aws-p4d", 16);
    REQUIRE(p4d.spec().node.nic_ports() == 4);
    const auto p = Communicator::first(p4d, 16);
    CHECK(slope(p, Op::broadcast) == Approx(S / nic_total(p4d.spec())).epsilon(0.02));
    CHECK(slope(p, Op::all_gather) ==
          Approx((n - 1) / n * S / nic_total(p4d.spec())).epsilon(0.02));
}

TEST_CASE("across nodes: broadcast and reduce chains built by racing threads predict what one "
          "thread does",
          "[collectives][multinode][threads]") {
    // Plan::chains builds a root's chains outside every lock: two threads asking for the same
    // root at once may both build them, and the first published is kept. Each must see the time
    // a communicator used by one thread gives, whichever build won.
    const auto& topo = topology("dgx-a100", 32);
    const auto alone = Communicator::first(topo, 32);
    for (const Op op : {Op::broadcast, Op::reduce}) {
        const auto shared = Communicator::first(topo, 32);
        for (int root = 0; root < 32; root += 5) {
            Collective c = coll(op, std::int64_t(256 * MiB), Algorithm::ring);
            c.root = root;
            const double expected = s(alone.predict(c, Algorithm::ring, Protocol::simple));
            double seen[2] = {0, 0};
            std::thread t0(
                [&] { seen[0] = s(shared.predict(c, Algorithm::ring, Protocol::simple)); });
            std::thread t1(
                [&] { seen[1] = s(shared.predict(c, Algorithm::ring, Protocol::simple)); });
            t0.join();
            t1.join();
            INFO("root " << root);
            CHECK(seen[0] == expected);
            CHECK(seen[1] == expected);
        }
    }
}

namespace {

/// dgx-h100 on `nodes` nodes, PXN on or off, the fabric oversubscribed k:1.
hardware::Topology h100_fabric(int nodes, bool pxn, double oversubscription) {
    auto spec = hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), 8 * nodes);
    spec.collectives.pxn = pxn;
    spec.network.oversubscription = oversubscription;
    return hardware::Topology(spec);
}

} // namespace

TEST_CASE("PXN: a send to another node relays through the local GPU with the peer's device "
          "index, where NCCL does",
          "[collectives][multinode][pxn]") {
    const auto topo = h100_fabric(2, true, 1);
    // GPUs 0, 1 on node 0 and 8, 9 on node 1 (ranks 0-3).
    const detail::Plan plan(topo, {0, 1, 8, 9});
    CHECK(plan.pxn_relay(0, 3) == 1); // GPU 0 -> GPU 9: over NVLink to GPU 1, out on rail 1
    CHECK(plan.pxn_relay(1, 2) == 0);
    CHECK(plan.pxn_relay(0, 2) == -1); // GPU 8 is on GPU 0's own rail
    CHECK(plan.pxn_relay(0, 1) == -1); // same node: NVLink
    // No rank with the peer's device index on the sender's node: its own NIC (NCCL finds no
    // local rank for the peer's nvmlDev).
    const detail::Plan sparse(topo, {0, 9});
    CHECK(sparse.pxn_relay(0, 1) == -1);
    // Off (NCCL_PXN_DISABLE=1), and on nodes without NVLink between the GPUs.
    const auto off = h100_fabric(2, false, 1);
    CHECK(detail::Plan(off, {0, 1, 8, 9}).pxn_relay(0, 3) == -1);
    const auto& pcie = topology("pcie-4gpu", 8);
    REQUIRE(pcie.spec().node.nics > 0);
    CHECK(detail::Plan(pcie, {0, 1, 4, 5}).pxn_relay(0, 3) == -1);
    std::vector<detail::PFlow> flows;
    plan.add_p2p(0, 3, 2.0, flows);
    REQUIRE(flows.size() == 2);
    CHECK((flows[0].src == 0 && flows[0].dst == 1 && flows[0].bytes == 2.0));
    CHECK((flows[1].src == 1 && flows[1].dst == 3 && flows[1].bytes == 2.0));
}

TEST_CASE("PXN: all-to-all across an oversubscribed fabric stays on the rails, a balanced "
          "one costs the NICs the same either way",
          "[collectives][multinode][pxn][closed-form]") {
    const double k = 4; // 4:1: each leaf's uplinks carry a quarter of the NIC rate
    const auto on = h100_fabric(2, true, k);
    const auto off = h100_fabric(2, false, k);
    const auto& spec = on.spec();
    const detail::Plan p_on(on, {0, 1, 8, 9});
    const detail::Plan p_off(off, {0, 1, 8, 9});
    const double e = p_on.efficiency(LinkLevel::network, Protocol::simple);
    const double nic = spec.node.nic_port_bandwidth();
    const double uplink = spec.network.link.bandwidth / k;
    // Per byte to each peer: with PXN NIC 0 of node 0 carries the sends of ranks 0 and 1 to GPU
    // 8 (rank 1's through its NVLink relay), 2 / (e nic), and nothing crosses a spine.
    const double pxn = p_on.direct().all_pairs_cost[detail::idx(Protocol::simple)];
    CHECK(pxn == Approx(2 / (e * nic)).epsilon(1e-9));
    // Without it GPU 0's send to GPU 9 climbs rail 0's leaf to a spine at the uplink's rate.
    const double plain = p_off.direct().all_pairs_cost[detail::idx(Protocol::simple)];
    CHECK(plain >= 1 / (e * uplink) * (1 - 1e-9));
    CHECK(plain > 1.9 * pxn);
    // Whole nodes on a non-blocking fabric (Azure's all-to-all row): every NIC carries 8 peers'
    // bytes either way; PXN adds NVLink hops, which do not bind.
    for (bool pxn_on : {true, false}) {
        const auto topo = h100_fabric(2, pxn_on, 1);
        std::vector<int> gpus(16);
        for (int g = 0; g < 16; ++g)
            gpus[size_t(g)] = g;
        const detail::Plan plan(topo, gpus);
        INFO("pxn " << pxn_on);
        CHECK(plan.direct().all_pairs_cost[detail::idx(Protocol::simple)] ==
              Approx(8 / (e * nic)).epsilon(1e-9));
    }
}

TEST_CASE("PXN: a scatter's root spreads its sends to other nodes over the node's NICs",
          "[collectives][multinode][pxn][closed-form]") {
    const double S = 1.0 * GiB;
    const auto on = h100_fabric(2, true, 1);
    const auto off = h100_fabric(2, false, 1);
    const auto& spec = on.spec();
    const detail::Plan plan(on, {0});
    const double nvl =
        1 / (plan.efficiency(LinkLevel::nvlink, Protocol::simple) * spec.node.nvlink.bandwidth);
    const double net = 1 / (plan.efficiency(LinkLevel::network, Protocol::simple) *
                            std::min(spec.node.nic.bandwidth, spec.node.pcie.bandwidth));
    Collective c = coll(Op::scatter, static_cast<std::int64_t>(S), Algorithm::direct);
    c.root = 0;
    const double t_on =
        s(Communicator::first(on, 16).predict(c, Algorithm::direct, Protocol::simple));
    const double t_off =
        s(Communicator::first(off, 16).predict(c, Algorithm::direct, Protocol::simple));
    // S/16 to each peer. Without PXN the root's NIC carries all 8 remote peers'; with it each
    // NIC one peer's (the root's own the peer on its rail) and the root's NVLink port its 7
    // local peers' and the 7 relayed.
    const double body_off = std::max(7 * nvl, 8 * net) * S / 16;
    const double body_on = std::max(14 * nvl, 1 * net) * S / 16;
    CHECK(t_off - t_on == Approx(body_off - body_on).epsilon(1e-6));
    CHECK(t_on < 0.5 * t_off);
    // Gather's root receives: NCCL has no PXN on that side, so nothing moves.
    c.op = Op::gather;
    CHECK(s(Communicator::first(on, 16).predict(c, Algorithm::direct, Protocol::simple)) ==
          s(Communicator::first(off, 16).predict(c, Algorithm::direct, Protocol::simple)));
}

TEST_CASE("hardware file: collectives.pxn turns PXN off, a value that is no boolean is refused "
          "at its line",
          "[collectives][pxn][errors]") {
    const std::string base = "extends: dgx-h100\ncollectives:\n";
    CHECK(hardware::load_hardware("dgx-h100").collectives.pxn);
    CHECK_FALSE(hardware::parse_hardware_yaml(base + "  pxn: false\n", "off.yaml").collectives.pxn);
    CHECK_THROWS_WITH(hardware::parse_hardware_yaml(base + "  pxn: sometimes\n", "bad.yaml"),
                      Catch::Contains("bad.yaml:3") && Catch::Contains("pxn"));
}

// AWS's NCCL plugin (aws/aws-ofi-nccl src/platform-aws.cpp): the latency it reports joins
// NCCL's every network step, twice under Simple; where EFA cannot deliver 128-byte pieces in
// order it sets NCCL_PROTO=Simple for the whole process.
TEST_CASE("EFA: the plugin's latency joins the network steps NCCL's tuning times, twice under "
          "Simple",
          "[collectives][multinode][efa][closed-form]") {
    const std::string base = "extends: dgx-a100\nnetwork:\n  transport: efa\n";
    const auto with = [&](const std::string& extra) {
        return hardware::parse_hardware_yaml(base + extra, "efa.yaml");
    };
    const hardware::ClusterSpec none = with("  net_latency: 0us\n");
    const hardware::ClusterSpec some = with("  net_latency: 50us\n");
    CHECK(with("").network.net_latency == sim::Time::us(35)); // the transport's default
    for (int nodes : {2, 4}) {
        INFO(nodes << " nodes");
        const hardware::Topology t0(hardware::with_gpu_count(none, 8 * nodes));
        const hardware::Topology t1(hardware::with_gpu_count(some, 8 * nodes));
        const auto c0 = Communicator::first(t0, 8 * nodes);
        const auto c1 = Communicator::first(t1, 8 * nodes);
        const std::int64_t S = 64 * MiB;
        // Ring all-reduce: 2(N-1) network steps.
        for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
            const double per_step = (p == Protocol::simple ? 2 : 1) * 50e-6;
            CHECK(s(c1.predict(coll(Op::all_reduce, S, Algorithm::ring, p), Algorithm::ring, p)) -
                      s(c0.predict(coll(Op::all_reduce, S, Algorithm::ring, p), Algorithm::ring,
                                   p)) ==
                  Approx(2 * (nodes - 1) * per_step).epsilon(1e-6));
        }
        // NCCL's tuning times no point-to-point transfer, all-to-all or broadcast chain with
        // it: those are unchanged.
        for (Op op : {Op::send_recv, Op::all_to_all, Op::broadcast}) {
            INFO(to_string(op));
            const Algorithm a = op == Op::broadcast ? Algorithm::ring : Algorithm::direct;
            const Collective c =
                coll(op, round_bytes(op, S, hardware::Dtype::fp32, 8 * nodes), a, Protocol::simple);
            CHECK(c1.predict(c, a, Protocol::simple) == c0.predict(c, a, Protocol::simple));
        }
        // The tree: NCCL's 2 log2(N) network latencies, whatever the depth of its shape.
        const Collective t = coll(Op::all_reduce, S, Algorithm::tree, Protocol::ll128);
        CHECK(s(c1.predict(t, Algorithm::tree, Protocol::ll128)) -
                  s(c0.predict(t, Algorithm::tree, Protocol::ll128)) ==
              Approx(2 * (nodes == 2 ? 1 : 2) * 50e-6).epsilon(1e-6));
    }
}

TEST_CASE("EFA: collectives.protocols simple runs Simple at every size, in every communicator",
          "[collectives][efa][errors]") {
    const auto& topo = topology("aws-p4d", 16);
    CHECK(topo.spec().collectives.simple_protocol_only);
    CHECK(topo.spec().network.net_latency == sim::Time::us(75));
    CHECK(hardware::load_hardware("aws-p4de").collectives.simple_protocol_only); // extends aws-p4d
    CHECK_FALSE(hardware::load_hardware("aws-p5").collectives.simple_protocol_only);
    CHECK(hardware::load_hardware("aws-p6-b200").network.net_latency == sim::Time::us(35));
    for (int gpus : {8, 16}) { // NVLink only, and across the network
        const auto comm = Communicator::first(topo, gpus);
        for (std::int64_t bytes : {std::int64_t(8), 64 * std::int64_t(1024), 4 * MiB, GiB}) {
            INFO(gpus << " GPUs, " << bytes << " bytes");
            CHECK(comm.choose(coll(Op::all_reduce, bytes, Algorithm::automatic, std::nullopt))
                      .protocol == Protocol::simple);
        }
        CHECK_THROWS_WITH(
            comm.validate(coll(Op::all_reduce, 4 * MiB, Algorithm::ring, Protocol::ll128)),
            Catch::Contains("collectives.protocols"));
    }
    // The same board with all protocols: LL wins small messages, so the choice is a real one.
    const auto& open = topology("dgx-a100", 16);
    CHECK(Communicator::first(open, 16)
              .choose(coll(Op::all_reduce, 4096, Algorithm::automatic, std::nullopt))
              .protocol != Protocol::simple);
    CHECK_THROWS_WITH(hardware::parse_hardware_yaml(
                          "extends: dgx-a100\ncollectives:\n  protocols: ll\n", "bad.yaml"),
                      Catch::Contains("bad.yaml:3") && Catch::Contains("protocols"));
}
