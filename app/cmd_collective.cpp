// clustersim collective: a size sweep of one collective, printed as nccl-tests prints it
// (or as CSV / JSON), in analytic or flow fidelity; --show-values runs the schedule on numbers.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "base/error.h"
#include "base/units.h"
#include "hardware/topology.h"
#include "results/collective_table.h"
#include "results/uncertainty.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/collectives/values.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string_view>

namespace clustersim::app {
namespace {

namespace cl = strategies::collectives;
using Row = results::CollectiveRow;

struct CollectiveOptions {
    ClusterOptions cluster;
    std::string op;
    std::string bytes;
    std::string min_bytes = "8";
    std::string max_bytes = "1GiB";
    int factor = 2;
    std::string algo = "auto";
    std::string protocol = "auto";
    std::string fidelity = "analytic";
    std::string dtype = "fp32";
    std::string redop = "sum";
    int iters = 20, warmup_iters = 5; ///< nccl-tests' -n and -w: accepted, nothing to repeat
    std::string format = "table";
    int root = 0;
    bool show_values = false;
    bool estimate = false;
    double max_seconds = results::CollectiveRequest{}.max_seconds;
};

std::string time_column(double us) {
    // nccl-tests: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f.
    if (us >= 10000)
        return fmt::format("{:7.0f}", us);
    if (us >= 100)
        return fmt::format("{:7.1f}", us);
    return fmt::format("{:7.2f}", us);
}

std::string format_list(const std::vector<double>& v, cl::View view) {
    if (view.count == 0)
        return "-";
    std::string s = "[";
    for (std::int64_t i = 0; i < view.count; ++i)
        s += fmt::format("{}{:g}", i ? ", " : "", v[size_t(view.offset + i)]);
    return s + "]";
}

std::string show_values(const cl::Communicator& comm, cl::Collective c, bool bytes_given) {
    const int n = comm.size();
    const std::int64_t elem = hardware::bytes_per_element(c.dtype);
    // The lecture's demo: as many elements as ranks, value = rank + index.
    if (!bytes_given)
        c.bytes = n * elem;
    const std::int64_t E = c.bytes / elem;
    if (cl::buffer_elements(c.op, E) > 64)
        throw InputError(fmt::format("--show-values prints at most 64 elements per rank; {} B of "
                                     "{} is {} elements",
                                     c.bytes, hardware::to_string(c.dtype), E));
    comm.validate(c);
    const cl::Choice choice = comm.choose(c);
    const cl::Buffers in = cl::make_inputs(
        c.op, E, n, c.root, [](int rank, std::int64_t i) { return static_cast<double>(rank + i); });
    const cl::Buffers out = cl::run_values(comm, c, choice.algorithm, choice.protocol, in);
    const cl::Buffers want = cl::expected_outputs(c.op, E, n, c.root, in);
    const auto& spec = comm.topology().spec();
    std::string s = fmt::format(
        "# {} on {} x {} ({}): {}/{}, {} {} element{}, rank r starts with r + index\n",
        cl::to_string(c.op), n, spec.node.gpu.name, spec.name, cl::to_string(choice.algorithm),
        hardware::to_string(choice.protocol), E, hardware::to_string(c.dtype), E == 1 ? "" : "s");
    for (const char* when : {"before", "after"}) {
        for (int r = 0; r < n; ++r) {
            const bool before = std::string(when) == "before";
            const cl::View v = before ? cl::input_view(c.op, E, n, r, c.root)
                                      : cl::output_view(c.op, E, n, r, c.root);
            const auto& buf = before ? in[size_t(r)] : out[size_t(r)];
            s += fmt::format("rank {} (gpu{}) {:<8}{}\n", r, comm.gpus()[size_t(r)],
                             std::string(when) + ":", format_list(buf, v));
            if (!before) {
                const std::vector<double> got(buf.begin() + v.offset,
                                              buf.begin() + v.offset + v.count);
                if (got != want[size_t(r)])
                    throw std::logic_error("the " + std::string(cl::to_string(choice.algorithm)) +
                                           " schedule left a wrong result on rank " +
                                           std::to_string(r));
            }
        }
    }
    s += fmt::format("# every rank holds what {} defines\n", cl::to_string(c.op));
    return s;
}

std::string render(const CollectiveOptions& o, const results::CollectiveSweep& sweep,
                   const std::vector<Row>& rows) {
    if (o.format == "json")
        return results::collective_json(sweep, rows).dump(2) + "\n";
    const cl::Communicator& comm = sweep.communicator();
    const cl::Collective& base = sweep.collective();
    const std::string_view fidelity = sweep.fidelity_name();
    const strategies::parallel::Uncertainty& u = sweep.platform().provenance.uncertainty;
    const int n = comm.size();
    const auto& spec = comm.topology().spec();
    // The reduction does not change the time (NCCL's kernels reduce at the same rate); the
    // column says which one was asked for, as nccl-tests' does.
    const std::string redop = cl::reduces(base.op) ? o.redop : "none";
    const int root = cl::has_root(base.op) ? base.root : -1;
    auto algbw = [](const Row& r) { return results::algbw_gbps(r); };
    auto busbw = [&](const Row& r) { return results::busbw_gbps(r, base.op, n); };
    auto algo = [](const Row& r) {
        // XLA's torus collectives have no NCCL protocol to name.
        if (r.choice.algorithm == cl::Algorithm::torus)
            return std::string(cl::to_string(r.choice.algorithm));
        return std::string(cl::to_string(r.choice.algorithm)) + "/" +
               std::string(hardware::to_string(r.choice.protocol));
    };
    std::string s;
    // A calibrated hardware file gives each time its p10-p90 band (results/uncertainty.h).
    auto band = [&](const Row& r) {
        return results::time_band(u, results::PredictionKind::collective, r.time.seconds(),
                                  {r.regime, n});
    };
    const bool calibrated = u.collectives.present();
    if (o.format == "csv") {
        s = "op,algo,protocol,gpus,bytes,count,dtype,redop,root,fidelity,time_us,algbw_gbps,"
            "busbw_gbps";
        s += calibrated ? ",time_p10_us,time_p90_us\n" : "\n";
        for (const Row& r : rows) {
            s += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f}",
                             cl::to_string(base.op), cl::to_string(r.choice.algorithm),
                             hardware::to_string(r.choice.protocol), n, r.bytes,
                             cl::nccl_count(base.op, r.bytes, base.dtype, n),
                             hardware::to_string(base.dtype), redop, root, fidelity,
                             r.time.microseconds(), algbw(r), busbw(r));
            s += calibrated
                     ? fmt::format(",{:.3f},{:.3f}\n", band(r)->low_s * 1e6, band(r)->high_s * 1e6)
                     : "\n";
        }
        return s;
    }
    s += fmt::format("# clustersim collective: {} on {} x {} ({}, {} node{}), {} fidelity, "
                     "--algo {}\n#\n",
                     cl::to_string(base.op), n, spec.node.gpu.name, spec.name, comm.node_count(),
                     comm.node_count() == 1 ? "" : "s", fidelity, o.algo);
    s += fmt::format("#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {}\n", "size",
                     "count", "type", "redop", "root", "time", "algbw", "busbw",
                     calibrated ? fmt::format("{:<13}  time p10-p90 (us)", "algorithm")
                                : std::string("algorithm"));
    s += fmt::format("#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}\n", "(B)",
                     "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
    double sum = 0;
    for (const Row& r : rows) {
        s += fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {}  {:6.2f}  {:6.2f}  {}", r.bytes,
                         cl::nccl_count(base.op, r.bytes, base.dtype, n),
                         hardware::nccl_type_name(base.dtype), redop, root,
                         time_column(r.time.microseconds()), algbw(r), busbw(r),
                         calibrated ? fmt::format("{:<13}", algo(r)) : algo(r));
        s += calibrated ? fmt::format("  {} - {}\n", time_column(band(r)->low_s * 1e6),
                                      time_column(band(r)->high_s * 1e6))
                        : "\n";
        sum += busbw(r);
    }
    s += fmt::format("# Avg bus bandwidth    : {:g}\n", sum / static_cast<double>(rows.size()));
    if (!calibrated)
        return s + fmt::format("# uncertainty: uncalibrated (hardware '{}' has no uncertainty: "
                               "section; clustersim calibrate fit writes one)\n",
                               spec.name);
    // Each band the rows used, once, in the order of the rows (small sizes first).
    std::vector<std::string> lines;
    for (const Row& r : rows) {
        const auto b = band(r);
        const std::string line = fmt::format(
            "# uncertainty: p10-p90 of measured / predicted - 1 is {:+.1f}% .. {:+.1f}% ({})\n",
            100 * b->p10, 100 * b->p90,
            results::band_basis_text(*b, results::PredictionKind::collective));
        if (std::find(lines.begin(), lines.end(), line) == lines.end())
            lines.push_back(line);
    }
    for (const auto& l : lines)
        s += l;
    return s;
}

/// `--estimate`: what each size's flow simulation would hold and take, counted from its
/// schedule, none run (what flow fidelity compares with the memory limit and --max-seconds).
std::string render_estimates(const results::CollectiveSweep& sweep,
                             const std::vector<results::CollectiveEstimate>& estimates) {
    const cl::Communicator& comm = sweep.communicator();
    const auto& spec = comm.topology().spec();
    std::string s = fmt::format(
        "# clustersim collective --estimate: {} on {} x {} ({}, {} node{}), {} fidelity: what "
        "each size's flow simulation would take, not run\n#\n",
        cl::to_string(sweep.collective().op), comm.size(), spec.node.gpu.name, spec.name,
        comm.node_count(), comm.node_count() == 1 ? "" : "s", sweep.fidelity_name());
    s += fmt::format("#{:>11}  {:<16}  {:>8}  {:>12}  {:>12}  {:>11}  {:>11}\n", "size",
                     "algorithm", "rounds", "flows listed", "most in one", "memory", "CPU");
    s += fmt::format("#{:>11}  {:<16}  {:>8}  {:>12}  {:>12}  {:>11}  {:>11}\n", "(B)", "", "", "",
                     "round", "(MiB, <=)", "(s, >=)");
    for (const results::CollectiveEstimate& e : estimates)
        s += fmt::format("{:>12}  {:<16}  {:>8.0f}  {:>12.0f}  {:>12.0f}  {:>11.1f}  {:>11.3f}\n",
                         e.bytes,
                         std::string(cl::to_string(e.choice.algorithm)) + "/" +
                             std::string(hardware::to_string(e.choice.protocol)),
                         e.footprint.rounds, e.footprint.flows, e.footprint.peak_round,
                         e.heap_bytes / (1 << 20), e.cpu_seconds);
    return s;
}

void run(const CollectiveOptions& o, Io io, bool bytes_given, bool range_given) {
    if (o.redop != "sum" && o.redop != "prod" && o.redop != "min" && o.redop != "max" &&
        o.redop != "avg")
        throw InputError("--redop (-o): expected sum, prod, min, max or avg (nccl-tests' -o), "
                         "got '" +
                         o.redop + "'");
    if (o.iters < 1 || o.warmup_iters < 0)
        throw InputError("--iters (-n) must be at least 1 and --warmup-iters (-w) at least 0");
    if (o.format != "table" && o.format != "csv" && o.format != "json")
        throw InputError("--format: expected table, csv or json, got '" + o.format + "'");
    results::CollectiveRequest request;
    request.hardware = o.cluster.hardware;
    request.gpus = o.cluster.gpus;
    request.slice = o.cluster.slice;
    request.op = o.op;
    if (bytes_given)
        request.bytes = o.bytes;
    request.min_bytes = o.min_bytes;
    request.max_bytes = o.max_bytes;
    request.factor = o.factor;
    request.algo = o.algo;
    request.protocol = o.protocol;
    request.fidelity = o.fidelity;
    request.dtype = o.dtype;
    request.root = o.root;
    request.max_seconds = o.max_seconds;
    const results::CollectiveSweep sweep(request);
    if (o.estimate) {
        if (o.show_values || sweep.fidelity() != cl::Fidelity::flow)
            throw InputError("--estimate: counts what a flow simulation would take; give "
                             "--fidelity flow or flow-full (and not --show-values)");
        io.out << render_estimates(sweep, sweep.estimates());
        return;
    }

    if (o.show_values) {
        if (range_given)
            throw InputError("--show-values runs one size: give --bytes (or nothing), not a range");
        cl::Collective c = sweep.collective();
        if (bytes_given)
            c.bytes = sweep.sizes().front();
        io.out << show_values(sweep.communicator(), c, bytes_given);
        return;
    }
    // Everything is computed before anything is printed: an error leaves no partial table.
    io.out << render(o, sweep, sweep.rows());
}

} // namespace

void register_collective(CLI::App& app, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<CollectiveOptions>();
    auto* cmd = app.add_subcommand(
        "collective", "Predict a collective over a size sweep, printed as nccl-tests prints it");
    o->cluster.add_to(*cmd);
    cmd->add_option("--op", o->op,
                    "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, "
                    "gather, scatter, send_recv")
        ->required();
    // nccl-tests' flags with nccl-tests' meanings: -b the smallest size, -e the largest, -f the
    // factor between sizes, -g the GPUs, -o the reduction, -d the type, -n and -w iterations.
    auto* bytes = cmd->add_option("--bytes", o->bytes, "One size, e.g. 100MiB");
    auto* lo = cmd->add_option("--min-bytes,-b", o->min_bytes,
                               "Smallest size of the sweep (nccl-tests' -b)")
                   ->capture_default_str();
    auto* hi = cmd->add_option("--max-bytes,-e", o->max_bytes,
                               "Largest size of the sweep (nccl-tests' -e)")
                   ->capture_default_str();
    auto* f =
        cmd->add_option("--factor,-f", o->factor, "Size multiplication factor (nccl-tests' -f)")
            ->capture_default_str();
    bytes->excludes(lo)->excludes(hi)->excludes(f);
    cmd->add_option("--redop,-o", o->redop,
                    "Reduction: sum, prod, min, max, avg (nccl-tests' -o; the time is the same)")
        ->capture_default_str();
    cmd->add_option("--iters,-n", o->iters,
                    "Iterations (nccl-tests' -n; accepted: a prediction is the same every time)")
        ->capture_default_str();
    cmd->add_option("--warmup-iters,-w", o->warmup_iters,
                    "Warm-up iterations (nccl-tests' -w; accepted, as -n)")
        ->capture_default_str();
    cmd->add_option("--algo", o->algo, "auto, ring, tree, direct, nvls, hierarchical, torus (TPU)")
        ->capture_default_str();
    cmd->add_option("--protocol", o->protocol, "auto, ll, ll128, simple")->capture_default_str();
    cmd->add_option("--fidelity", o->fidelity,
                    "analytic (closed forms), flow (network contention; identical flows by "
                    "symmetry, exact) or flow-full (every flow simulated)")
        ->capture_default_str();
    cmd->add_option("--dtype,-d", o->dtype,
                    "fp32, fp16, bf16 (or nccl-tests' -d names float, half, bfloat16)")
        ->capture_default_str();
    cmd->add_option("--root,-r", o->root, "Root rank of broadcast, reduce, gather, scatter")
        ->capture_default_str();
    cmd->add_option("--format", o->format, "table (nccl-tests), csv or json")
        ->capture_default_str();
    cmd->add_flag("--show-values", o->show_values,
                  "Run the schedule on numbers and print every rank's buffer before and after");
    cmd->add_flag("--estimate", o->estimate,
                  "Flow fidelity: print what each size's simulation would take (rounds, flows, "
                  "memory at most, CPU time at least) without running it");
    cmd->add_option("--max-seconds", o->max_seconds,
                    "Flow fidelity: refuse a size whose simulation would take at least this "
                    "many CPU seconds (0: no bound)")
        ->capture_default_str();
    cmd->callback([o, io, bytes, lo, hi, f] {
        run(*o, io, bytes->count() > 0, lo->count() + hi->count() + f->count() > 0);
    });
}

} // namespace clustersim::app
