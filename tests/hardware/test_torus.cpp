// TPU slices (hardware/torus.h) and their graph: the presets' figures, the shapes each generation
// offers and refuses, wraparound only on full axes, the ICI links and hosts Topology builds, and
// several slices over the DCN.
#include "base/error.h"
#include "hardware/graph_size.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

using namespace clustersim;
using namespace clustersim::hardware;

namespace {
ClusterSpec slice(const std::string& preset, const TorusShape& shape, int gpus = 0) {
    return with_slice(load_hardware(preset), shape, gpus);
}

/// ICI edges leaving each chip's router toward other routers (its links in use).
std::map<int, int> ici_degree(const Topology& t) {
    std::map<int, int> out;
    for (EdgeIndex e = 0; e < t.edge_count(); ++e) {
        const VertexInfo& a = t.vertex(t.edge_source(e));
        const VertexInfo& b = t.vertex(t.edge_target(e));
        if (a.kind == VertexKind::ici && b.kind == VertexKind::ici)
            ++out[a.index];
    }
    return out;
}
} // namespace

TEST_CASE("TPU presets carry the documented chip, ICI and host figures", "[hardware][torus]") {
    struct Row {
        const char* preset;
        double bf16_tflops;
        int dims, links, per_host, devices_per_chip;
        double link_gbps; // per direction
    };
    for (const Row& r : {Row{"tpu-v4", 275, 3, 6, 4, 1, 45}, Row{"tpu-v5e", 197, 2, 4, 8, 1, 45},
                         Row{"tpu-v5p", 459, 3, 6, 4, 1, 90}, Row{"tpu-v6e", 918, 2, 4, 8, 1, 90},
                         Row{"tpu-7x", 2307.0 / 2, 3, 6, 4, 2, 100}}) {
        INFO(r.preset);
        const ClusterSpec s = load_hardware(r.preset);
        CHECK(s.node.fabric == IntraNodeFabric::torus);
        CHECK(s.node.gpu.peak(Dtype::bf16) == Approx(r.bf16_tflops * 1e12));
        CHECK(s.torus.dims == r.dims);
        CHECK(s.torus.links_per_chip == r.links);
        CHECK(s.torus.devices_per_chip == r.devices_per_chip);
        CHECK(s.torus.link.bandwidth == Approx(r.link_gbps * 1e9));
        CHECK(s.torus.link.latency == sim::Time::us(1));
        // The preset's own slice is built whole: devices, hosts, one node.
        CHECK(s.node.gpus == s.torus.devices());
        CHECK(s.nodes == 1);
        const ClusterSpec big = with_gpu_count(s, s.torus.devices_per_chip * 256);
        CHECK(big.torus.chips() == 256);
        CHECK(big.torus.chips_per_host() == r.per_host);
        CHECK(big.node.gpus_per_pcie_switch == r.per_host * r.devices_per_chip);
    }
    // TPU7x's device is half a chip: 2 x 96 GiB and 2 x 3,690 GB/s, fp8 twice bf16.
    const ClusterSpec ironwood = load_hardware("tpu-7x");
    CHECK(ironwood.node.gpu.hbm_bytes == std::int64_t(96) << 30);
    CHECK(ironwood.node.gpu.peak(Dtype::fp8) == Approx(2307e12));
    // DCN per chip ([v5p] 50 Gbps, [v6e] 100 Gbps; v5e 2 x 100 Gbps per 8-chip host).
    const auto dcn_per_chip = [](const std::string& p) {
        const ClusterSpec s = with_gpu_count(load_hardware(p), 64);
        return s.node.nics * s.node.nic.bandwidth / s.torus.chips();
    };
    CHECK(dcn_per_chip("tpu-v5p") == Approx(50e9 / 8));
    CHECK(dcn_per_chip("tpu-v6e") == Approx(100e9 / 8));
    CHECK(dcn_per_chip("tpu-v5e") == Approx(2 * 100e9 / 8 / 8));
}

TEST_CASE("A generation offers its slices and refuses others, naming those it offers",
          "[hardware][torus]") {
    const ClusterSpec v5p = load_hardware("tpu-v5p");
    // --gpus N picks the documented shape: the most cubic of whole cubes, or a listed one.
    CHECK(shape_for_chips(v5p.torus, 32) == TorusShape{2, 4, 4});
    CHECK(shape_for_chips(v5p.torus, 128) == TorusShape{4, 4, 8});
    CHECK(shape_for_chips(v5p.torus, 512) == TorusShape{8, 8, 8});
    CHECK(shape_for_chips(v5p.torus, 2048) == TorusShape{8, 16, 16});
    CHECK(shape_for_chips(v5p.torus, 6144) == TorusShape{16, 16, 24});
    CHECK(shape_for_chips(load_hardware("tpu-v4").torus, 192) == TorusShape{4, 4, 12});
    CHECK(shape_for_chips(load_hardware("tpu-v5e").torus, 128) == TorusShape{8, 16, 1});
    CHECK(parse_slice(v5p.torus, "8x4x4", "slice") == TorusShape{8, 4, 4});
    auto refused = [](const ClusterSpec& s, const std::string& text) {
        try {
            (void)parse_slice(s.torus, text, "slice");
        } catch (const InputError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK_THAT(refused(v5p, "3x4x4"), Catch::Contains("slice: 3x4x4 is not a slice") &&
                                          Catch::Contains("2x4x4 (32)") &&
                                          Catch::Contains("whole 4x4x4 cubes"));
    CHECK_THAT(refused(v5p, "16x16x32"), Catch::Contains("up to 6144 chips"));
    CHECK_THAT(refused(v5p, "4x4"), Catch::Contains("has 2 axes; this generation's torus has 3"));
    CHECK_THAT(refused(load_hardware("tpu-v5e"), "32x8"), Catch::Contains("16x16 (256)"));
    CHECK_THAT(refused(v5p, "4x4x"), Catch::Contains("expected a slice shape like 4x4x8"));
    CHECK_THROWS_WITH(with_gpu_count(v5p, 100),
                      Catch::Contains("gpus: 100 devices") && Catch::Contains("2x2x2 (8)"));
    CHECK_THROWS_WITH(with_slice(v5p, {4, 4, 4}, 100), Catch::Contains("use 64 or 128"));
    // TPU7x counts devices: 2 a chip.
    CHECK(with_gpu_count(load_hardware("tpu-7x"), 128).torus.shape == TorusShape{4, 4, 4});
    CHECK_THROWS_AS(with_gpu_count(load_hardware("tpu-7x"), 63), InputError);
}

TEST_CASE("Wraparound only on full axes, as each generation has it", "[hardware][torus]") {
    // v5p: a mesh below one cube, every axis a ring from one cube up.
    const Topology small(slice("tpu-v5p", {2, 4, 4}));
    const Topology cube(slice("tpu-v5p", {4, 4, 4}));
    CHECK_FALSE(small.spec().torus.wraps(1));
    for (const auto& [chip, links] : ici_degree(cube))
        CHECK(links == 6); // a torus: every chip on 6 links
    std::set<int> degrees;
    for (const auto& [chip, links] : ici_degree(small))
        degrees.insert(links);
    CHECK(degrees == std::set<int>{3, 4, 5}); // a 2x4x4 mesh: corners 3, edges 4, faces 5
    // v5e: only an axis of 16 wraps (8x16: the long one).
    const TorusSpec v5e = slice("tpu-v5e", {8, 16}).torus;
    CHECK_FALSE(v5e.wraps(0));
    CHECK(v5e.wraps(1));
    CHECK(v5e.ici_links() == 16 * 7 + 8 * 16);
    CHECK(slice("tpu-v5e", {16, 16}).torus.ici_links() == 2 * 16 * 16);
    // The graph's ICI links are the spec's, and graph_size counts what Topology builds.
    for (const ClusterSpec& s : {slice("tpu-v5p", {4, 4, 8}), slice("tpu-v5p", {2, 2, 1}),
                                 slice("tpu-v5e", {4, 8}), slice("tpu-v5e", {16, 16}, 512),
                                 slice("tpu-7x", {4, 4, 4}, 256), slice("tpu-v4", {4, 4, 12})}) {
        const Topology t(s);
        int ici = 0;
        for (const auto& [chip, links] : ici_degree(t))
            ici += links;
        INFO(s.name << " " << to_string(s.torus.shape, s.torus.dims) << " x " << s.nodes);
        CHECK(ici == 2 * s.torus.ici_links() * s.nodes);
        CHECK(graph_size(s).vertices == static_cast<double>(t.vertex_count()));
        CHECK(graph_size(s).edges == static_cast<double>(t.edge_count()));
    }
}

TEST_CASE("A slice's devices sit on the torus host by host, and slices join over the DCN",
          "[hardware][torus]") {
    const ClusterSpec s = slice("tpu-v5p", {4, 4, 4}, 128);
    const Topology t(s);
    const TorusSpec& torus = s.torus;
    // Every place once, and back.
    std::set<std::tuple<int, int, int>> seen;
    for (int d = 0; d < torus.devices(); ++d) {
        const TorusPlace p = coordinates(torus, d);
        seen.insert({p.chip[0], p.chip[1], p.chip[2]});
        CHECK(device_at(torus, p) == d);
    }
    CHECK(seen.size() == 64u);
    // Host 0 is the 2x2x1 block at the origin.
    CHECK(coordinates(torus, 3).chip == TorusShape{1, 1, 0});
    CHECK(coordinates(torus, 4).chip == TorusShape{2, 0, 0});
    // Neighbours on the torus are one ICI hop apart; the wraparound too.
    const auto hops = [&](int a, int b) {
        int ici = 0;
        for (EdgeIndex e : t.gpu_route(a, b).edges)
            ici += t.edge(e).kind == LinkKind::ici ? 1 : 0;
        return ici;
    };
    const int origin = device_at(torus, {{0, 0, 0}, 0});
    CHECK(hops(origin, device_at(torus, {{1, 0, 0}, 0})) == 3); // in, across, out
    CHECK(hops(origin, device_at(torus, {{3, 0, 0}, 0})) == 3); // the wraparound
    CHECK(hops(origin, device_at(torus, {{2, 2, 0}, 0})) == 6); // 4 links, the shortest way
    // The second slice is reached over the hosts' NICs and the DCN, never over ICI.
    const Route across = t.gpu_route(0, 64);
    bool nic = false;
    for (EdgeIndex e : across.edges) {
        CHECK(t.edge(e).kind != LinkKind::ici);
        nic = nic || t.edge(e).kind == LinkKind::nic;
    }
    CHECK(nic);
    CHECK(across.bottleneck == Approx(50e9 / 8));
}
