#include "hardware/hardware_loader.h"

#include "base/error.h"
#include "config/preset.h"
#include "config/yaml_map.h"
#include "hardware/collective_tuning_loader.h"
#include "hardware/hardware_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <utility>

namespace clustersim::hardware {

using config::YamlMap;
namespace fs = std::filesystem;

namespace {

void apply_link(YamlMap m, LinkSpec& link) {
    config::read_keys(m, link_keys(), link);
    m.finish();
}

void apply_gpu(YamlMap m, GpuSpec& gpu) {
    config::read_keys(m, gpu_keys(), gpu);
    if (m.has("power_cap_w") && gpu.power_limit_w <= 0)
        m.fail("power_cap_w", "needs the board's power_limit_w (its datasheet TDP) to scale from");
    if (gpu.power_cap_w > gpu.power_limit_w && m.has("power_cap_w"))
        m.fail("power_cap_w", "is above power_limit_w (" + std::to_string(gpu.power_limit_w) +
                                  " W): a cap can only lower the limit; give at most that");
    if (gpu.sustained_clock_mhz > gpu.clock_mhz && m.has("sustained_clock_mhz"))
        m.fail("sustained_clock_mhz",
               "is above the boost clock clock_mhz (" + std::to_string(gpu.clock_mhz) +
                   " MHz); give the clock measured under sustained load, at most the boost clock");
    if (gpu.power_clock_exponent > 1 && m.has("power_clock_exponent"))
        m.fail("power_clock_exponent",
               "is above 1: at the voltage floor the clock goes in proportion to the power "
               "(exponent 1), above it as its cube root (1/3); give a value in (0, 1]");
    if (m.has("peak_flops")) {
        YamlMap p = m.map("peak_flops");
        for (Dtype d : kAllDtypes)
            p.read_flop_rate(to_string(d), gpu.peak_flops[static_cast<std::size_t>(d)], false);
        p.finish();
    }
    if (m.has("hbm")) {
        YamlMap h = m.map("hbm");
        // A layer that sets the capacity (another GPU extending a preset) without what its
        // device reports does not inherit the base GPU's report.
        if (h.has("capacity") && !h.has("reported"))
            gpu.hbm_reported_bytes = 0;
        config::read_keys(h, hbm_keys(), gpu);
        h.finish();
    }
    m.finish();
}

void apply_node(YamlMap m, NodeSpec& node) {
    config::read_keys(m, node_keys(), node);
    if (m.has("nvlink"))
        apply_link(m.map("nvlink"), node.nvlink);
    if (m.has("xgmi"))
        apply_link(m.map("xgmi"), node.xgmi);
    if (m.has("nvswitch")) {
        YamlMap s = m.map("nvswitch");
        config::read_keys(s, nvswitch_keys(), node);
        s.finish();
    }
    if (m.has("pcie")) {
        YamlMap p = m.map("pcie");
        config::read_keys(p, pcie_keys(), node);
        p.finish();
    }
    if (m.has("host_link"))
        apply_link(m.map("host_link"), node.host_link);
    if (m.has("nics")) {
        // Checked here, where the line is known: the layers below have set the GPUs and PCIe
        // switches (validate() repeats the check on the merged file, without a line).
        node.nics = static_cast<int>(m.integer("nics", 0, 1 << 16));
        node.nics_at = config::format_mark(m.file(), m.raw("nics").Mark());
        const int switches =
            node.gpus_per_pcie_switch > 0 && node.gpus % node.gpus_per_pcie_switch == 0
                ? node.gpus / node.gpus_per_pcie_switch
                : 0;
        if (node.nics == 0 && m.has("nic"))
            m.fail("nics", "expected at least 1 NIC where node.nic is given (a node without "
                           "NICs cannot reach the network; remove node.nic or give nics: 1 or "
                           "more)");
        if (switches > 0 && node.nics > node.nic_slots())
            m.fail("nics",
                   "expected at most " + std::to_string(node.nic_slots()) +
                       " NICs: " + std::to_string(switches) + " PCIe switches hold " +
                       std::to_string(node.nic_slots() / switches) +
                       " each (node.pcie.nics_per_switch; default: as many as their GPUs); give "
                       "fewer NICs or raise node.pcie.nics_per_switch");
        if (node.nics > 0 && node.gpus > 0 && node.gpus % node.nics != 0 &&
            node.nics % node.gpus != 0)
            m.fail("nics", "expected a divisor or a multiple of node.gpus (" +
                               std::to_string(node.gpus) + "), got " + std::to_string(node.nics) +
                               ": GPUs share NICs evenly through their PCIe switches");
    }
    if (m.has("nic"))
        apply_link(m.map("nic"), node.nic);
    m.finish();
}

/// A price is a planner's input: a positive amount and the day it was read (YYYY-MM-DD), since
/// list prices change and a reader must see how old one is.
void apply_price(YamlMap m, ListPrice& price) {
    // A layer's price is whole: none of its keys comes from the layer below.
    price = {};
    config::read_keys(m, price_keys(), price);
    m.finish();
    for (const auto& k : price_keys()) {
        if (!m.has(k.info.name))
            m.fail(k.info.name, "missing: a price states its amount, region, date and source");
    }
    if (!(price.per_gpu_hour > 0))
        m.fail("per_gpu_hour",
               "expected a positive price in dollars, got " + m.str("per_gpu_hour"));
    const std::string& d = price.date;
    const bool iso =
        d.size() == 10 && d[4] == '-' && d[7] == '-' &&
        std::all_of(d.begin(), d.end(), [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
    if (!iso)
        m.fail("date", "expected the day the price was read as YYYY-MM-DD, got '" + d + "'");
}

/// "4x4x8" or "4x2" as a shape of `dims` axes (1 to 4096 chips each), at `key` of `m`.
TorusShape read_shape(YamlMap& m, std::string_view key, const YAML::Node& node, int dims) {
    const std::string text = node.IsScalar() ? node.Scalar() : std::string();
    TorusShape s{1, 1, 1};
    std::size_t at = 0;
    int axes = 0;
    bool ok = !text.empty();
    while (ok && at <= text.size()) {
        const std::size_t x = std::min(text.find('x', at), text.size());
        std::size_t used = 0;
        int v = 0;
        try {
            v = std::stoi(text.substr(at, x - at), &used);
        } catch (const std::exception&) {
            used = 0;
        }
        ok = axes < 3 && used == x - at && used > 0 && v >= 1 && v <= 4096;
        if (ok)
            s[static_cast<std::size_t>(axes++)] = v;
        at = x + 1;
    }
    if (!ok || axes != dims)
        m.fail_at(node, key,
                  "expected a shape of " + std::to_string(dims) + " axes (torus.dims) like " +
                      (dims == 2 ? "16x16" : "4x4x8") + ", got '" + text + "'");
    return s;
}

/// The torus: section of one layer. Shapes need the dimensions: a layer that gives shapes
/// without dims reads them with the dims of the layers below.
void apply_torus(YamlMap m, TorusSpec& t) {
    config::read_keys(m, torus_keys(), t);
    const bool shapes_given = m.has("slice") || m.has("host") || m.has("pod") || m.has("shapes");
    if (shapes_given && t.dims < 2)
        m.fail("dims", "expected 2 or 3 (the torus's dimensions) before any shape");
    if (m.has("slice"))
        t.shape = read_shape(m, "slice", m.raw("slice"), t.dims);
    if (m.has("host"))
        t.host = read_shape(m, "host", m.raw("host"), t.dims);
    if (m.has("pod"))
        t.pod = read_shape(m, "pod", m.raw("pod"), t.dims);
    if (m.has("shapes")) {
        const YAML::Node list = m.raw("shapes");
        if (!list.IsSequence())
            m.fail("shapes", "expected a list of shapes like [2x2x1, 2x2x2]");
        t.shapes.clear();
        for (const auto& item : list)
            t.shapes.push_back(read_shape(m, "shapes", item, t.dims));
    }
    if (m.has("link"))
        apply_link(m.map("link"), t.link);
    if (m.has("die_link"))
        apply_link(m.map("die_link"), t.die_link);
    m.finish();
}

void apply_network(YamlMap m, NetworkSpec& net) {
    // The transport's setter sets its defaults, before the keys that override them.
    config::read_keys(m, network_keys(), net);
    if (m.has("link"))
        apply_link(m.map("link"), net.link);
    if (m.has("transport_efficiency")) {
        const double v = m.number("transport_efficiency", 0);
        if (!(v > 0 && v <= 1.5))
            m.fail("transport_efficiency",
                   "expected the payload rate relative to InfiniBand's, in (0, 1.5], got " +
                       m.str("transport_efficiency"));
        net.transport_efficiency = v;
    }
    if (m.has("oversubscription")) {
        const double v = m.number("oversubscription");
        if (!(v >= 1) || v > 1024)
            m.fail("oversubscription",
                   "expected the leaf's downlink to uplink ratio, 1 (non-blocking) to 1024, got " +
                       m.str("oversubscription") +
                       " (2 means 2:1; a fabric cannot carry more up than its nodes send)");
        net.oversubscription = v;
    }
    m.finish();
}

/// A fraction in (0, 1], read only when present.
void read_fraction(YamlMap& m, std::string_view key, double& out) {
    if (!m.has(key))
        return;
    const double v = m.number(key, 0);
    if (!(v > 0 && v <= 1))
        m.fail(key, "expected a fraction in (0, 1], got " + m.str(key));
    out = v;
}

/// "128x256" -> {128, 256}.
GemmTile parse_tile(const YamlMap& m, std::string_view key, const YAML::Node& node) {
    const std::string text = node.IsScalar() ? node.Scalar() : std::string();
    const auto x = text.find('x');
    GemmTile t;
    try {
        std::size_t used_m = 0, used_n = 0;
        if (x != std::string::npos) {
            t.m = std::stoi(text.substr(0, x), &used_m);
            t.n = std::stoi(text.substr(x + 1), &used_n);
        }
        if (x == std::string::npos || used_m != x || used_n != text.size() - x - 1)
            t = {};
    } catch (const std::exception&) {
        t = {};
    }
    if (t.m < 1 || t.n < 1 || t.m > 4096 || t.n > 4096)
        m.fail_at(node, key,
                  "expected a tile like '128x256' (M x N, 1 to 4096), got '" + text + "'");
    return t;
}

void apply_compute(YamlMap m, ComputeSpec& c) {
    config::read_keys(m, compute_keys(), c);
    if (m.has("gemm")) {
        YamlMap g = m.map("gemm");
        if (g.has("tiles")) {
            const YAML::Node list = g.raw("tiles");
            if (!list.IsSequence() || list.size() == 0 ||
                list.size() > static_cast<std::size_t>(kMaxGemmTiles))
                g.fail("tiles", "expected a list of 1 to " + std::to_string(kMaxGemmTiles) +
                                    " tiles like [256x128, 128x128]");
            c.gemm_tile_count = 0;
            for (const auto& item : list)
                c.gemm_tiles[static_cast<std::size_t>(c.gemm_tile_count++)] =
                    parse_tile(g, "tiles", item);
        }
        if (g.has("full_rate_tile"))
            c.gemm_full_rate_tile = parse_tile(g, "full_rate_tile", g.raw("full_rate_tile"));
        config::read_keys(g, gemm_keys(), c);
        if (g.has("efficiency")) {
            YamlMap e = g.map("efficiency");
            for (Dtype d : kAllDtypes)
                read_fraction(e, to_string(d), c.gemm_efficiency[static_cast<std::size_t>(d)]);
            e.finish();
        }
        if (g.has("roofline_sharpness")) {
            c.roofline_sharpness = g.number("roofline_sharpness", 0);
            if (c.roofline_sharpness < 1)
                g.fail("roofline_sharpness", "expected a number >= 1 (1 adds compute and memory "
                                             "time, large values take the larger)");
        }
        g.finish();
    }
    if (m.has("fused_attention")) {
        YamlMap a = m.map("fused_attention");
        read_fraction(a, "efficiency", c.fused_attention_efficiency);
        config::read_keys(a, fused_attention_keys(), c);
        if (c.fused_attention_exposed_exp > 1)
            a.fail("exposed_exp", "expected a share in [0, 1]");
        a.finish();
    }
    if (m.has("memory")) {
        YamlMap mem = m.map("memory");
        read_fraction(mem, "efficiency", c.memory_efficiency);
        config::read_keys(mem, memory_keys(), c);
        mem.finish();
    }
    m.finish();
}

/// One layer of a hardware file read as hardware only. The sections of the layer above
/// (strategies/parallel/platform.h: the framework's settings and the calibration provenance)
/// are skipped on purpose, unread: they are not hardware, and the commands that need only the
/// hardware (collective, transfer, hardware, the compute model) must accept every hardware file,
/// calibrated ones included. Asking for them marks them known so that `finish()` still refuses
/// any other unknown key; their content is checked where it is read, by load_platform.
void read_layer(YamlMap& root, ClusterSpec& spec, bool extended) {
    read_hardware_layer(root, spec, extended);
    for (std::string_view upper : platform_section_names())
        (void)root.has(upper);
    root.finish();
}

ClusterSpec load_layers(const YAML::Node& doc, const std::string& file) {
    return config::load_layered<ClusterSpec>(hardware_presets(), doc, file, read_layer);
}

} // namespace

void read_hardware_layer(YamlMap& root, ClusterSpec& spec, bool extended) {
    if (extended) {
        spec.description.clear();
        spec.price = {};
    } else
        spec.name = fs::path(root.file()).stem().string();
    config::read_keys(root, hardware_root_keys(), spec);
    if (root.has("gpu"))
        apply_gpu(root.map("gpu"), spec.node.gpu);
    if (root.has("node"))
        apply_node(root.map("node"), spec.node);
    if (root.has("network"))
        apply_network(root.map("network"), spec.network);
    if (root.has("torus"))
        apply_torus(root.map("torus"), spec.torus);
    if (root.has("collectives"))
        apply_collectives(root.map("collectives"), spec.collectives);
    if (root.has("compute"))
        apply_compute(root.map("compute"), spec.compute);
    if (root.has("price"))
        apply_price(root.map("price"), spec.price);
}

const config::PresetKind& hardware_presets() {
    static const config::PresetKind kind{"hardware", "hardware", "or give a path to a YAML file"};
    return kind;
}

namespace {
/// A torus and node.fabric: torus go together; the torus's links, hosts and shapes are whole.
void validate_torus(const ClusterSpec& s, const std::string& file) {
    const TorusSpec& t = s.torus;
    auto require = [&](bool ok, const std::string& key, const std::string& what) {
        if (!ok)
            throw InputError(file + ": missing or invalid key '" + key + "' (" + what + ")");
    };
    require(t.present() == (s.node.fabric == IntraNodeFabric::torus), "node.fabric",
            "torus exactly where a torus: section is given");
    if (!t.present())
        return;
    require(t.links_per_chip > 0, "torus.links_per_chip", "ICI ports per chip");
    require(t.link.bandwidth > 0, "torus.link.bandwidth", "an ICI link's bandwidth per direction");
    require(t.devices_per_chip == 1 || t.die_link.bandwidth > 0, "torus.die_link.bandwidth",
            "the link between a chip's devices");
    require(t.max_chips > 0, "torus.max_chips", "the largest slice");
    require(!t.shapes.empty() || t.whole_cubes, "torus.shapes", "the slices offered");
    require(t.nics_per_host > 0 && s.node.nic.bandwidth > 0, "node.nic.bandwidth",
            "a DCN NIC's bandwidth");
    const std::string why = why_not_offered(t, t.shape);
    require(why.empty(), "torus.slice", why);
}
} // namespace

void validate(const ClusterSpec& s, const std::string& file) {
    auto require = [&](bool ok, const std::string& key, const std::string& what) {
        if (!ok)
            throw InputError(file + ": missing or invalid key '" + key + "' (" + what + ")");
    };
    const NodeSpec& n = s.node;
    require(!n.gpu.name.empty(), "gpu.name", "the GPU's name");
    require(n.gpu.sm_count > 0, "gpu.sm_count", "a positive SM count");
    require(n.gpu.clock_mhz > 0, "gpu.clock_mhz", "the boost clock in MHz");
    require(std::any_of(n.gpu.peak_flops.begin(), n.gpu.peak_flops.end(),
                        [](double f) { return f > 0; }),
            "gpu.peak_flops", "at least one dtype's peak, e.g. fp16: 312TFLOPS");
    require(n.gpu.hbm_bytes > 0, "gpu.hbm.capacity", "a size like '80GiB'");
    require(n.gpu.hbm_bandwidth > 0, "gpu.hbm.bandwidth", "a bandwidth like '2039GB/s'");
    require(n.gpu.l2_bytes > 0, "gpu.l2", "a size like '40MiB'");
    require(n.gpus > 0, "node.gpus", "GPUs per node");
    require(n.gpus_per_tray == 0 || n.gpus % n.gpus_per_tray == 0, "node.gpus_per_tray",
            "a divisor of node.gpus");
    if (n.fabric == IntraNodeFabric::nvswitch)
        require(n.nvlink.bandwidth > 0, "node.nvlink.bandwidth", "NVLink bandwidth per GPU");
    if (n.fabric == IntraNodeFabric::xgmi_mesh)
        require(n.xgmi.bandwidth > 0, "node.xgmi.bandwidth", "the bandwidth of one xGMI link");
    // RCCL's tuning model 5 is what RCCL's rome models select for a full xGMI mesh of 8 GPUs
    // (strategies/collectives/rccl_tuning.h; on fewer GPUs the cheapest predicted runs).
    require(s.collectives.library != CollectiveLibrary::rccl ||
                n.fabric == IntraNodeFabric::xgmi_mesh,
            "collectives.library",
            "rccl models RCCL's choice on AMD Instinct nodes, an xGMI mesh (node.fabric: xgmi), "
            "which this node is not: use nccl");
    require(n.pcie.bandwidth > 0, "node.pcie.bandwidth", "PCIe bandwidth per direction");
    require(n.gpus_per_pcie_switch > 0 && n.gpus % n.gpus_per_pcie_switch == 0,
            "node.pcie.gpus_per_switch", "a divisor of node.gpus");
    if (n.fabric != IntraNodeFabric::torus) // a TPU host is the PCIe switch of its chips
        require(n.host_link.bandwidth > 0, "node.host_link.bandwidth",
                "PCIe switch to host bandwidth");
    validate_torus(s, file);
    if (n.nics > 0) {
        require(n.nic.bandwidth > 0, "node.nic.bandwidth", "NIC bandwidth like '400Gb/s'");
        require(n.gpus % n.nics == 0 || n.nics % n.gpus == 0, "node.nics",
                "a divisor or multiple of node.gpus");
        require(n.nics <= n.nic_slots(), "node.nics",
                "at most " + std::to_string(n.nic_slots()) +
                    " NICs: what the PCIe switches hold (node.pcie.nics_per_switch)");
    }
    const ComputeSpec& c = s.compute;
    require(c.launch_overhead > sim::Time::zero(), "compute.launch_overhead",
            "the fixed cost of a kernel, like '2us'");
    require(c.gemm_tile_count > 0, "compute.gemm.tiles",
            "the CTA tiles of the GEMM library, e.g. [256x128, 128x128]");
    require(c.gemm_full_rate_tile.m > 0, "compute.gemm.full_rate_tile",
            "the smallest tile that runs at the full rate, e.g. 128x128");
    require(c.gemm_ctas_per_sm > 0, "compute.gemm.ctas_per_sm", "CTAs resident per SM");
    for (Dtype d : kAllDtypes) {
        if (n.gpu.supports(d))
            require(c.gemm_eff(d) > 0, "compute.gemm.efficiency." + std::string(to_string(d)),
                    "the sustained fraction of the " + std::string(to_string(d)) + " peak");
    }
    require(c.gemm_half_efficiency_flops >= 0, "compute.gemm.half_efficiency_flops",
            "the work in FLOPs at which a GEMM reaches half its efficiency");
    require(c.roofline_sharpness >= 1, "compute.gemm.roofline_sharpness", "a number >= 1");
    require(c.fused_attention_efficiency > 0, "compute.fused_attention.efficiency",
            "the sustained fraction of the dense peak of FlashAttention");
    require(c.memory_efficiency > 0, "compute.memory.efficiency",
            "the sustained fraction of HBM bandwidth");
    require(c.memory_half_efficiency_bytes >= 0, "compute.memory.half_efficiency_bytes",
            "the size at which a memory-bound kernel reaches half its bandwidth");
    if (s.nodes > 1) {
        require(n.nics > 0, "node.nics", "at least one NIC to connect several nodes");
        require(s.network.switch_radix >= 2, "network.switch_radix", "ports per switch");
        require(s.network.link.bandwidth > 0, "network.link.bandwidth",
                "switch-to-switch bandwidth");
    }
}

namespace {
/// `node.gpus_used`: the node becomes that many GPUs, and a spare tray idles with its NICs
/// (the node keeps the NICs of the GPUs it uses).
void apply_gpus_used(ClusterSpec& s, const std::string& file) {
    NodeSpec& n = s.node;
    if (n.gpus_used == 0)
        return;
    const int used = std::exchange(n.gpus_used, 0);
    auto fail = [&](const std::string& what) {
        throw InputError(file + ": invalid key 'node.gpus_used' (" + what + ")");
    };
    if (used > n.gpus)
        fail(fmt::format("{} GPUs used of a node of {}: at most node.gpus", used, n.gpus));
    if (n.gpus_per_tray > 0 && used % n.gpus_per_tray != 0)
        fail(fmt::format("{} is not a whole number of trays of {} GPUs (node.gpus_per_tray): use "
                         "{}",
                         used, n.gpus_per_tray, whole_trays_near(used, n.gpus_per_tray)));
    if (static_cast<std::int64_t>(n.nics) * used % n.gpus != 0)
        fail(fmt::format("the node's {} NICs do not split over {} of its {} GPUs", n.nics, used,
                         n.gpus));
    n.nics = static_cast<int>(static_cast<std::int64_t>(n.nics) * used / n.gpus);
    n.gpus = used;
}
} // namespace

void complete(ClusterSpec& spec, const std::string& file) {
    apply_gpus_used(spec, file);
    // A torus's node is its slice: its devices, hosts and NICs follow from the shape.
    if (spec.torus.present() && why_not_offered(spec.torus, spec.torus.shape).empty())
        spec = with_slice(std::move(spec), spec.torus.shape, spec.nodes * spec.torus.devices());
    validate(spec, file);
}

namespace {
ClusterSpec load_hardware_from(const std::string& name_or_path, const fs::path& relative_to) {
    const fs::path path = config::resolve_preset(hardware_presets(), name_or_path, relative_to);
    ClusterSpec spec = config::load_layered_file<ClusterSpec>(hardware_presets(), path, read_layer);
    complete(spec, path.string());
    return spec;
}
} // namespace

ClusterSpec load_hardware(const std::string& name_or_path) {
    return load_hardware_from(name_or_path, {});
}

ClusterSpec parse_hardware_yaml(const std::string& text, const std::string& file) {
    const YAML::Node doc = config::parse_yaml(text, file);
    ClusterSpec spec = load_layers(doc, file);
    complete(spec, file);
    return spec;
}

ClusterSpec load_hardware_node(const YAML::Node& node, const std::string& file) {
    // A relative path is relative to the file that names it, as `extends:` is.
    if (node.IsScalar())
        return load_hardware_from(node.Scalar(), fs::path(file).parent_path());
    ClusterSpec spec = load_layers(node, file);
    complete(spec, file);
    return spec;
}

} // namespace clustersim::hardware
