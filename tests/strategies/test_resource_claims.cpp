// Which communicators' flows can cross each resource (strategies/collectives/resource_claims.h):
// a resource said to be one claimant's is crossed by no route of another, and a fabric of
// another shape leaves the switches' links to nobody.
#include "collectives_test_util.h"

#include "hardware/hardware_loader.h"
#include "strategies/collectives/resource_claims.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace clustersim;
using clustersim::strategies::collectives::detail::ResourceClaims;
using collectives_test::topology;

namespace {

/// Nodes [first, first + count).
std::vector<int> nodes(int first, int count) {
    std::vector<int> out;
    for (int n = first; n < first + count; ++n)
        out.push_back(n);
    return out;
}

/// GPU `local` of each of `ns`.
std::vector<int> gpus_of(const std::vector<int>& ns, int local = 0) {
    std::vector<int> out;
    for (int n : ns)
        out.push_back(n * 8 + local);
    return out;
}

/// Every edge of every route between two of `gpus` (both ways).
std::vector<hardware::EdgeIndex> route_edges(const hardware::Topology& topo,
                                             const std::vector<int>& gpus) {
    std::vector<hardware::EdgeIndex> out;
    for (int a : gpus)
        for (int b : gpus)
            if (a != b)
                for (auto e : topo.gpu_route(a, b).edges)
                    out.push_back(e);
    return out;
}

bool crosses_spine(const hardware::Topology& topo, hardware::EdgeIndex e) {
    return topo.vertex(topo.edge_source(e)).kind == hardware::VertexKind::spine ||
           topo.vertex(topo.edge_target(e)).kind == hardware::VertexKind::spine;
}

} // namespace

TEST_CASE("resource claims: a leaf's links to the spines go with the nodes under it",
          "[collectives][flow][symmetry]") {
    // 80 DGX A100 nodes: leaves of 20 nodes per rail (radix 40), 20 spines.
    const auto& topo = topology("dgx-a100", 8 * 80);
    SECTION("groups that fill their leaves own every link their routes cross") {
        ResourceClaims claims(topo);
        const auto a = nodes(0, 40), b = nodes(40, 40);
        claims.claim(0, a);
        claims.claim(1, b);
        REQUIRE(claims.fabric_claimed());
        bool spine_seen = false;
        for (auto e : route_edges(topo, gpus_of(a, 3))) {
            CHECK(claims.own(0, e));
            CHECK_FALSE(claims.own(1, e));
            spine_seen = spine_seen || crosses_spine(topo, e);
        }
        CHECK(spine_seen); // nodes 0..39 span two leaves per rail
        for (auto e : route_edges(topo, gpus_of(b, 5))) {
            CHECK(claims.own(1, e));
            CHECK_FALSE(claims.own(0, e));
        }
    }
    SECTION("a leaf under both groups is neither's; no route of one crosses the other's links") {
        ResourceClaims claims(topo);
        const auto a = nodes(0, 30), b = nodes(30, 30); // leaf 1 holds nodes 20..39
        claims.claim(0, a);
        claims.claim(1, b);
        int shared = 0;
        for (auto e : route_edges(topo, gpus_of(a))) {
            CHECK_FALSE(claims.own(1, e));
            shared += claims.own(0, e) ? 0 : 1;
        }
        CHECK(shared > 0);
        for (auto e : route_edges(topo, gpus_of(b)))
            CHECK_FALSE(claims.own(0, e));
    }
    SECTION("unclaimed nodes' routes cross nothing a claimant owns") {
        ResourceClaims claims(topo);
        claims.claim(0, nodes(0, 20));
        for (auto e : route_edges(topo, gpus_of(nodes(20, 60), 2)))
            CHECK_FALSE(claims.own(0, e));
    }
}

TEST_CASE("resource claims: one leaf per rail, and an oversubscribed fabric",
          "[collectives][flow][symmetry]") {
    SECTION("4 nodes: one leaf per rail, no spine") {
        const auto& topo = topology("dgx-a100", 8 * 4);
        ResourceClaims claims(topo);
        claims.claim(0, nodes(0, 4));
        CHECK(claims.fabric_claimed());
        for (auto e : route_edges(topo, gpus_of(nodes(0, 4))))
            CHECK(claims.own(0, e));
    }
    SECTION("uplinks at half the rate: the same shape, every route within two leaves") {
        auto spec = hardware::with_gpu_count(hardware::load_hardware("dgx-a100"), 8 * 60);
        spec.network.oversubscription = 2;
        const hardware::Topology topo(spec);
        ResourceClaims claims(topo);
        claims.claim(0, nodes(0, 40));
        claims.claim(1, nodes(40, 20));
        REQUIRE(claims.fabric_claimed());
        for (auto e : route_edges(topo, gpus_of(nodes(0, 40), 1))) {
            CHECK(claims.own(0, e));
            CHECK_FALSE(claims.own(1, e));
        }
        for (auto e : route_edges(topo, gpus_of(nodes(40, 20), 1)))
            CHECK_FALSE(claims.own(0, e));
    }
}
