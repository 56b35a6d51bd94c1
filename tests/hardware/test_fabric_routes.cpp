// The routing shortcuts (hardware/fabric_routes.h) against a plain search: Dijkstra over the whole
// graph, nothing confined, GPUs and NICs never transit, the same deterministic ECMP walk. Every
// route must be the same edge for edge.
#include "hardware/fabric_routes.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <queue>
#include <thread>

using namespace clustersim;
using namespace clustersim::hardware;

namespace {

std::vector<std::int64_t> weights(const Topology& t) {
    std::vector<std::int64_t> w;
    for (EdgeIndex e = 0; e < t.edge_count(); ++e)
        w.push_back(static_cast<std::int64_t>(std::llround(1e18 / t.edge(e).bandwidth)));
    return w;
}

bool endpoint_only(VertexKind k) {
    return k == VertexKind::gpu_sm || k == VertexKind::gpu_hbm || k == VertexKind::nic;
}

/// The reference: a full Dijkstra from `to` over reversed edges, then the ECMP walk.
std::vector<EdgeIndex> plain_route(const Topology& t, const std::vector<std::int64_t>& w,
                                   std::size_t from, std::size_t to) {
    constexpr std::int64_t inf = std::numeric_limits<std::int64_t>::max();
    std::vector<std::int64_t> dist(t.vertex_count(), inf);
    using Item = std::pair<std::int64_t, std::size_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
    dist[to] = 0;
    heap.emplace(0, to);
    while (!heap.empty()) {
        auto [d, v] = heap.top();
        heap.pop();
        if (d != dist[v] || (v != to && endpoint_only(t.vertex(v).kind)))
            continue;
        for (const EdgeIndex e : t.in_edges(v)) {
            const std::size_t u = t.edge_source(e);
            if (d + w[e] < dist[u]) {
                dist[u] = d + w[e];
                heap.emplace(dist[u], u);
            }
        }
    }
    std::vector<EdgeIndex> path;
    std::size_t v = from;
    for (std::uint64_t hop = 0; v != to; ++hop) {
        std::vector<EdgeIndex> next;
        for (const EdgeIndex e : t.out_edges(v)) {
            const std::size_t x = t.edge_target(e);
            if (dist[x] != inf && dist[v] == w[e] + dist[x] &&
                (x == to || !endpoint_only(t.vertex(x).kind)))
                next.push_back(e);
        }
        std::sort(next.begin(), next.end());
        REQUIRE(!next.empty());
        const EdgeIndex e = next[detail::ecmp_choice(from, to, hop, next.size())];
        path.push_back(e);
        v = t.edge_target(e);
    }
    return path;
}

std::vector<EdgeIndex> plain_gpu_route(const Topology& t, const std::vector<std::int64_t>& w, int a,
                                       int b) {
    if (t.node_of(a) == t.node_of(b))
        return plain_route(t, w, t.gpu_hbm(a), t.gpu_hbm(b));
    std::vector<EdgeIndex> r = plain_route(t, w, t.gpu_hbm(a), t.gpu_nic(a));
    for (const auto& part : {plain_route(t, w, t.gpu_nic(a), t.gpu_nic(b)),
                             plain_route(t, w, t.gpu_nic(b), t.gpu_hbm(b))})
        r.insert(r.end(), part.begin(), part.end());
    return r;
}

} // namespace

TEST_CASE("fabric routes: the closed form and the confined search equal a plain search",
          "[hardware][topology][fabric]") {
    struct Case {
        const char* preset;
        int gpus;
        int radix; // small radices give several leaves per rail, so routes cross spines
    };
    for (const Case c : {Case{"dgx-h100", 48, 4}, Case{"dgx-a100", 40, 6}, Case{"pcie-4gpu", 12, 4},
                         Case{"dgx-h100", 16, 64}, Case{"hgx-h200", 8, 64}}) {
        ClusterSpec s = with_gpu_count(load_hardware(c.preset), c.gpus);
        s.network.switch_radix = c.radix;
        const Topology t(s);
        INFO(c.preset << " x " << c.gpus << ", radix " << c.radix);
        const auto w = weights(t);
        const detail::FabricIndex index(t, w);
        CHECK(index.closed_nodes());
        CHECK(index.clos() == (t.node_count() > 1));
        for (int a = 0; a < t.gpu_count(); ++a) {
            for (int b = 0; b < t.gpu_count(); ++b) {
                if (a != b)
                    REQUIRE(t.gpu_route(a, b).edges == plain_gpu_route(t, w, a, b));
            }
            REQUIRE(t.memory_route(a).edges == plain_route(t, w, t.gpu_hbm(a), t.gpu_sm(a)));
        }
        // Every NIC to every NIC, also within a node (searched: PCIe and the fabric compete).
        for (std::size_t u = 0; u < t.vertex_count(); ++u) {
            for (std::size_t v = 0; v < t.vertex_count(); ++v) {
                if (u != v && t.vertex(u).kind == VertexKind::nic &&
                    t.vertex(v).kind == VertexKind::nic)
                    REQUIRE(t.route(u, v).edges == plain_route(t, w, u, v));
            }
        }
    }
}

TEST_CASE("fabric routes: a closed-form route carries the path's bottleneck and latency",
          "[hardware][topology][fabric]") {
    ClusterSpec s = with_gpu_count(load_hardware("dgx-h100"), 32);
    s.network.switch_radix = 4; // two nodes per leaf: GPU 0 and GPU 31 are two leaves apart
    const Topology t(s);
    const Route r = t.route(t.gpu_nic(0), t.gpu_nic(31));
    REQUIRE(r.edges.size() == 4); // NIC, leaf, spine, leaf, NIC
    double bottleneck = std::numeric_limits<double>::infinity();
    sim::Time latency = sim::Time::zero();
    for (EdgeIndex e : r.edges) {
        bottleneck = std::min(bottleneck, t.edge(e).bandwidth);
        latency += t.edge(e).latency;
    }
    CHECK(r.bottleneck == bottleneck);
    CHECK(r.latency == latency);
    CHECK(t.vertex(t.edge_target(r.edges[1])).kind == VertexKind::spine);
}

TEST_CASE("fabric routes: routes within a node, found once and shifted, are the same from any "
          "thread and in any order",
          "[hardware][topology][fabric]") {
    // Two threads route every pair of a fresh topology at once, one forwards and one backwards
    // (so each finds some of the within-node routes first and shifts the other's); a third
    // topology routes them alone. Every route must be the same edge for edge.
    ClusterSpec s = with_gpu_count(load_hardware("dgx-h100"), 32);
    s.network.switch_radix = 4;
    const Topology alone(s);
    const Topology shared(s);
    const int n = alone.gpu_count();
    std::vector<std::vector<EdgeIndex>> expected;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
            expected.push_back(a == b ? alone.memory_route(a).edges : alone.gpu_route(a, b).edges);
    std::vector<std::vector<EdgeIndex>> got[2];
    auto work = [&](int which) {
        auto& out = got[which];
        out.resize(expected.size());
        for (int i = 0; i < n * n; ++i) {
            const int k = which == 0 ? i : n * n - 1 - i;
            const int a = k / n;
            const int b = k % n;
            out[static_cast<std::size_t>(k)] =
                a == b ? shared.memory_route(a).edges : shared.gpu_route(a, b).edges;
        }
    };
    std::thread t0(work, 0);
    std::thread t1(work, 1);
    t0.join();
    t1.join();
    CHECK(got[0] == expected);
    CHECK(got[1] == expected);
}
