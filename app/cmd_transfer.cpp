// clustersim transfer: one flow between two GPUs, with its path, time and bandwidth.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "base/error.h"
#include "base/units.h"
#include "strategies/transfer.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <memory>

namespace clustersim::app {
namespace {

int parse_gpu(const std::string& text, int gpu_count) {
    std::string digits = text.rfind("gpu", 0) == 0 ? text.substr(3) : text;
    int v = -1;
    try {
        std::size_t used = 0;
        v = std::stoi(digits, &used);
        if (used != digits.size())
            v = -1;
    } catch (const std::exception&) {
        v = -1;
    }
    if (v < 0)
        throw InputError("expected a GPU like 'gpu3' or '3', got '" + text + "'");
    if (v >= gpu_count)
        throw InputError("GPU '" + text + "' is out of range: the cluster has gpu0 to gpu" +
                         std::to_string(gpu_count - 1) + " (use --gpus for more nodes)");
    return v;
}

struct TransferOptions {
    ClusterOptions cluster;
    std::string from = "gpu0";
    std::string to = "gpu1";
    std::string bytes = "1GiB";
};

} // namespace

namespace {

/// `clustersim transfer`: simulates one transfer and prints path, time and bandwidth.
void print_transfer(std::ostream& out, const hardware::Topology& topo, int from, int to,
                    std::int64_t bytes) {
    const auto r = strategies::simulate_transfer(topo, from, to, bytes);
    const auto& s = topo.spec();
    fmt::print(out, "{:<11}{} ({} node{} x {} {} = {} GPUs)\n", "hardware", s.name, s.nodes,
               s.nodes == 1 ? "" : "s", s.node.gpus, s.node.gpu.name, s.gpu_count());
    fmt::print(out, "{:<11}gpu{} -> gpu{}, {} ({} B)\n", "transfer", from, to,
               base::format_bytes(bytes), bytes);
    fmt::print(out, "{:<11}{}\n", "path", topo.describe(r.route, topo.gpu_hbm(from)));
    fmt::print(out, "{:<11}{} ({})\n", "bottleneck", base::format_bandwidth(r.route.bottleneck),
               [&] {
                   for (auto e : r.route.edges) {
                       if (topo.edge(e).bandwidth == r.route.bottleneck)
                           return std::string(hardware::to_string(topo.edge(e).kind));
                   }
                   return std::string("?");
               }());
    fmt::print(out, "{:<11}{}\n", "latency", base::format_time(r.route.latency));
    fmt::print(out, "{:<11}{}\n", "time", base::format_time(r.time));
    fmt::print(out, "{:<11}{}\n", "achieved", base::format_bandwidth(r.achieved_bandwidth));
}

} // namespace

void register_transfer(CLI::App& app, Io io, int& /*exit_code*/) {
    auto opts = std::make_shared<TransferOptions>();
    auto* cmd = app.add_subcommand("transfer", "Simulate one transfer between two GPUs");
    opts->cluster.add_to(*cmd);
    cmd->add_option("--from", opts->from, "Source GPU (gpuI)")->capture_default_str();
    cmd->add_option("--to", opts->to, "Destination GPU (gpuJ)")->capture_default_str();
    cmd->add_option("--bytes,-b", opts->bytes, "Size, e.g. 1GiB or 100MB")->capture_default_str();
    cmd->callback([opts, io] {
        const std::int64_t bytes = base::parse_bytes(opts->bytes);
        if (bytes <= 0)
            throw InputError("--bytes: expected a positive size, got '" + opts->bytes + "'");
        hardware::Topology topo(opts->cluster.load());
        const int from = parse_gpu(opts->from, topo.gpu_count());
        const int to = parse_gpu(opts->to, topo.gpu_count());
        print_transfer(io.out, topo, from, to, bytes);
    });
}

} // namespace clustersim::app
