// clustersim hardware show|dot H: what a hardware file describes, as text or Graphviz.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/output.h"
#include "base/units.h"
#include "hardware/topology.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace clustersim::app {
namespace {

/// `clustersim hardware show`: GPUs, nodes, links by kind, bisection bandwidth.
void print_hardware_summary(std::ostream& out, const hardware::Topology& topo) {
    using namespace hardware;
    const ClusterSpec& s = topo.spec();
    const GpuSpec& g = s.node.gpu;
    fmt::print(out, "{}", s.name);
    if (!s.description.empty())
        fmt::print(out, ": {}", s.description);
    fmt::print(out, "\n\n");
    fmt::print(out, "  {:<12}{} x {} ({} node{} of {}", "GPUs", s.gpu_count(), g.name, s.nodes,
               s.nodes == 1 ? "" : "s", s.node.gpus);
    if (s.node.gpus_per_tray > 0 && s.node.gpus_per_tray < s.node.gpus)
        fmt::print(out, ", each one NVLink domain of {} trays of {}",
                   s.node.gpus / s.node.gpus_per_tray, s.node.gpus_per_tray);
    fmt::print(out, ")\n");
    fmt::print(out, "  {:<12}{} SMs at {} MHz, L2 {}\n", "GPU", g.sm_count, g.clock_mhz,
               base::format_bytes(g.l2_bytes));
    fmt::print(out, "  {:<12}{} at {}\n", "HBM", base::format_bytes(g.hbm_bytes),
               base::format_bandwidth(g.hbm_bandwidth));
    std::string peaks;
    for (Dtype d : kAllDtypes) {
        if (g.supports(d))
            peaks += fmt::format("{}{} {}", peaks.empty() ? "" : ", ", to_string(d),
                                 base::format_flop_rate(g.peak(d)));
    }
    fmt::print(out, "  {:<12}{}\n", "peak", peaks);
    const hardware::TorusSpec& torus = s.torus;
    fmt::print(out, "  {:<12}{}\n", "intra-node",
               torus.present() ? fmt::format(
                                     "a slice {} ({} chips, {} device(s) each; {} wraparound), ICI "
                                     "{} per link per direction, {} per hop; {} chips per host",
                                     hardware::to_string(torus.shape, torus.dims), torus.chips(),
                                     torus.devices_per_chip,
                                     [&] {
                                         std::string w;
                                         for (int a = 0; a < torus.dims; ++a)
                                             w += torus.wraps(a) ? std::string(1, "xyz"[a]) : "";
                                         return w.empty() ? std::string("no") : w;
                                     }(),
                                     base::format_bandwidth(torus.link.bandwidth),
                                     base::format_time(torus.link.latency), torus.chips_per_host())
               : s.node.fabric == IntraNodeFabric::nvswitch
                   ? fmt::format("NVSwitch, {} per GPU per direction{}",
                                 base::format_bandwidth(s.node.nvlink.bandwidth),
                                 s.node.nvls ? ", NVLS in-switch reduction" : "")
               : s.node.fabric == IntraNodeFabric::xgmi_mesh
                   ? fmt::format("xGMI mesh, {} links per GPU at {} per direction", s.node.gpus - 1,
                                 base::format_bandwidth(s.node.xgmi.bandwidth))
                   : std::string("PCIe switches and host"));
    if (s.node.nics > 0)
        fmt::print(out, "  {:<12}{} NICs per node at {}, {}{}\n", "network", s.node.nics,
                   base::format_bandwidth(s.node.nic.bandwidth), to_string(s.network.transport),
                   s.node.nics < s.node.gpus
                       ? fmt::format(" ({} GPUs share each)", s.node.gpus / s.node.nics)
                   : s.node.nics > s.node.gpus
                       ? fmt::format(" ({} per GPU, striped)", s.node.nics / s.node.gpus)
                       : std::string());
    if (s.nodes > 1)
        fmt::print(out, "  {:<12}rail-optimised fat tree, {}-port switches{}{}\n", "fabric",
                   s.network.switch_radix,
                   s.network.oversubscription > 1
                       ? fmt::format(", {:g}:1 oversubscribed", s.network.oversubscription)
                       : std::string(),
                   s.network.in_network_reduction ? ", in-network reduction (SHARP)" : "");
    if (s.price.per_gpu_hour > 0)
        fmt::print(out, "  {:<12}${:.2f} per GPU-hour on demand in {}, read {} ({})\n", "price",
                   s.price.per_gpu_hour, s.price.region, s.price.date, s.price.source);

    // Links by kind: physical links are pairs of directed edges.
    struct Tally {
        std::size_t edges = 0;
        std::set<double> bandwidths;
    };
    std::map<LinkKind, Tally> by_kind;
    for (EdgeIndex e = 0; e < topo.edge_count(); ++e) {
        auto& t = by_kind[topo.edge(e).kind];
        ++t.edges;
        t.bandwidths.insert(topo.edge(e).bandwidth);
    }
    std::map<VertexKind, int> vertices;
    for (std::size_t v = 0; v < topo.vertex_count(); ++v)
        ++vertices[topo.vertex(v).kind];
    fmt::print(out, "\n  {:<12}{:>8}  {}\n", "links", "count", "bandwidth per direction");
    for (const auto& [kind, t] : by_kind) {
        std::string bws;
        for (double bw : t.bandwidths)
            bws += (bws.empty() ? "" : ", ") + base::format_bandwidth(bw);
        fmt::print(out, "  {:<12}{:>8}  {}\n", to_string(kind), t.edges / 2, bws);
    }
    fmt::print(out, "\n  {:<12}{:>8}\n", "vertices", topo.vertex_count());
    for (const auto& [kind, n] : vertices)
        fmt::print(out, "  {:<12}{:>8}\n", to_string(kind), n);
    if (topo.gpu_count() > 1)
        fmt::print(out, "\n  {:<12}{} (GPUs 0-{} to GPUs {}-{}, one direction)\n", "bisection",
                   base::format_bandwidth(topo.bisection_bandwidth()), topo.gpu_count() / 2 - 1,
                   topo.gpu_count() / 2, topo.gpu_count() - 1);
}

} // namespace

void register_hardware(CLI::App& app, Io io, int& /*exit_code*/) {
    auto* cmd = app.add_subcommand("hardware", "Show a hardware description or its graph");
    cmd->require_subcommand(1);

    auto show_opts = std::make_shared<ClusterOptions>();
    auto* show_cmd = cmd->add_subcommand("show", "Summary: GPUs, nodes, links by kind, bisection");
    show_opts->add_to(*show_cmd, true);
    show_cmd->callback([show_opts, io] {
        hardware::Topology topo(show_opts->load());
        print_hardware_summary(io.out, topo);
        // A cluster is whole nodes: say so rather than silently show more GPUs than asked for.
        const int asked = show_opts->gpus;
        if (asked > 0 && asked != topo.gpu_count())
            fmt::print(io.out,
                       "\n  note: --gpus {} is not a whole number of {}-GPU nodes: the cluster "
                       "above is {} node{} ({} GPUs); collective --gpus {} runs on its first "
                       "{}\n",
                       asked, topo.spec().node.gpus, topo.spec().nodes,
                       topo.spec().nodes == 1 ? "" : "s", topo.gpu_count(), asked, asked);
    });

    auto dot_opts = std::make_shared<ClusterOptions>();
    auto dot_out = std::make_shared<std::string>();
    auto* dot_cmd = cmd->add_subcommand("dot", "The topology graph in Graphviz DOT");
    dot_opts->add_to(*dot_cmd, true);
    dot_cmd->add_option("--out,-o", *dot_out, "Write to this file instead of standard output");
    dot_cmd->callback([dot_opts, dot_out, io] {
        hardware::Topology topo(dot_opts->load());
        std::ostringstream dot;
        hardware::write_dot(dot, topo);
        if (dot_out->empty())
            io.out << dot.str();
        else
            write_file_atomically(*dot_out, dot.str());
    });
}

} // namespace clustersim::app
