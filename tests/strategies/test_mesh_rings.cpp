// RCCL's rings over a fully connected (xGMI) mesh: which links they load, and what that does to
// a ring all-reduce on an MI300X node.
#include "collectives_test_util.h"

#include "strategies/collectives/mesh_rings.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

using namespace clustersim;
using namespace clustersim::strategies::collectives;
using collectives_test::GiB;
using collectives_test::topology;

namespace {
bool is_permutation_of_positions(std::vector<int> v, int g) {
    std::sort(v.begin(), v.end());
    std::vector<int> want(static_cast<std::size_t>(g));
    std::iota(want.begin(), want.end(), 0);
    return v == want;
}
/// How many times each directed link (a, b) is a hop of the cycles (closed) or paths (open).
std::map<std::pair<int, int>, int> link_loads(const std::vector<std::vector<int>>& seqs,
                                              bool closed) {
    std::map<std::pair<int, int>, int> load;
    for (const auto& s : seqs) {
        const std::size_t hops = closed ? s.size() : s.size() - 1;
        for (std::size_t i = 0; i < hops && s.size() > 1; ++i)
            ++load[{s[i], s[(i + 1) % s.size()]}];
    }
    return load;
}
} // namespace

TEST_CASE("mesh rings: each ring visits every GPU once, the 8-GPU set is RCCL's and loads each "
          "of the 56 links twice",
          "[collectives][xgmi]") {
    for (int g = 1; g <= 9; ++g) {
        INFO(g << " GPUs");
        const auto rings = detail::mesh_rings(g);
        REQUIRE(!rings.empty());
        for (const auto& r : rings)
            CHECK(is_permutation_of_positions(r, g));
        if (g < 3)
            continue;
        const auto load = link_loads(rings, true);
        int lo = 1 << 30, hi = 0;
        for (const auto& [link, count] : load) {
            lo = std::min(lo, count);
            hi = std::max(hi, count);
        }
        if (g == 8) {
            CHECK(rings.size() == 14); // rome_model_79
            CHECK(load.size() == 56);
            CHECK(lo == 2);
            CHECK(hi == 2);
        } else if (g % 2 == 1) {
            CHECK(load.size() == std::size_t(g * (g - 1))); // Walecki: every link once
            CHECK(lo == 1);
            CHECK(hi == 1);
        } else {
            CHECK(load.size() == std::size_t(g * (g - 1)));
            CHECK(hi == 2); // the closing perfect matching carries twice the load
        }
    }
}

TEST_CASE("mesh chains across nodes: distinct entry and exit GPUs, every link at most once",
          "[collectives][xgmi]") {
    const auto chains = detail::mesh_chains(8, 8); // rome_model_81
    REQUIRE(chains.size() == 8);
    std::set<int> entries, exits;
    for (const auto& c : chains) {
        CHECK(is_permutation_of_positions(c, 8));
        entries.insert(c.front());
        exits.insert(c.back());
    }
    CHECK(entries.size() == 8);
    CHECK(exits.size() == 8);
    const auto load = link_loads(chains, false);
    CHECK(load.size() == 56);
    for (const auto& [link, count] : load)
        CHECK(count == 1);
    for (int g : {3, 4, 5}) {
        const auto other = detail::mesh_chains(g, g);
        REQUIRE(other.size() == std::size_t(g));
        for (const auto& c : other)
            CHECK(is_permutation_of_positions(c, g));
    }
}

TEST_CASE("mesh rings: a ring all_reduce on 8 MI300X moves data on all 7 links of each GPU",
          "[collectives][xgmi]") {
    const auto& topo = topology("mi300x", 8);
    const auto& node = topo.spec().node;
    const double eff = topo.spec()
                           .collectives.protocol(hardware::Protocol::simple)
                           .level(hardware::LinkLevel::nvlink)
                           .efficiency;
    const Communicator all(topo, {0, 1, 2, 3, 4, 5, 6, 7});
    const Communicator pair(topo, {0, 5});
    Collective c;
    c.op = Op::all_reduce;
    c.bytes = 8 * GiB;
    c.algorithm = Algorithm::ring;
    c.protocol = hardware::Protocol::simple;
    const double S = static_cast<double>(c.bytes);
    const double t8 = all.predict(c, Algorithm::ring, hardware::Protocol::simple).seconds();
    // Closed form: 2(n-1)/n S over 7 links' payload rate, plus the latencies and the kernel's
    // HBM passes: busbw stays within 10% of 7 x link x efficiency, never near one link's.
    const double busbw = 2.0 * 7 / 8 * S / t8;
    const double seven_links = 7 * node.xgmi.bandwidth * eff;
    CHECK(busbw <= seven_links);
    CHECK(busbw >= 0.9 * seven_links);
    // Two GPUs have one link between them.
    const Collective two = c;
    const double t2 = pair.predict(two, Algorithm::ring, hardware::Protocol::simple).seconds();
    CHECK(S / t2 <= node.xgmi.bandwidth * eff);
    CHECK(S / t2 >= 0.9 * node.xgmi.bandwidth * eff);
}

TEST_CASE("mesh: a direct all_to_all on 8 MI300X sends to every peer over its own link at once",
          "[collectives][xgmi]") {
    const auto& topo = topology("mi300x", 8);
    const double link =
        topo.spec().node.xgmi.bandwidth * topo.spec()
                                              .collectives.protocol(hardware::Protocol::simple)
                                              .level(hardware::LinkLevel::nvlink)
                                              .efficiency;
    const Communicator comm(topo, {0, 1, 2, 3, 4, 5, 6, 7});
    Collective c;
    c.op = Op::all_to_all;
    c.bytes = GiB;
    const Choice choice = comm.choose(c);
    CHECK(choice.algorithm == Algorithm::direct);
    // Each rank sends 1/8 of its buffer to each of 7 peers, each over its own link: the time is
    // one block over one link (plus latency and the kernel's HBM passes), not 7 blocks.
    const double block_seconds = static_cast<double>(c.bytes) / 8 / link;
    CHECK(choice.time.seconds() >= block_seconds);
    CHECK(choice.time.seconds() <= 1.15 * block_seconds);
}
