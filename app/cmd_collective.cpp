// clustersim collective: a size sweep of one collective, printed as nccl-tests prints it
// (or as CSV / JSON), in analytic or flow fidelity; --show-values runs the schedule on numbers.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/uncertainty.h"
#include "base/error.h"
#include "base/units.h"
#include "hardware/topology.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/collectives/size_limit.h"
#include "strategies/collectives/values.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <numeric>

namespace clustersim::app {
namespace {

namespace cl = strategies::collectives;

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
    std::string format = "table";
    int root = 0;
    bool show_values = false;
};

struct Row {
    std::int64_t bytes = 0;
    cl::Choice choice;
    sim::Time time;
};

std::int64_t size_flag(const std::string& flag, const std::string& text) {
    std::int64_t v = 0;
    try {
        v = base::parse_bytes(text);
    } catch (const InputError& e) {
        throw InputError(flag + ": " + e.what());
    }
    if (v <= 0)
        throw InputError(flag + ": expected a positive size, got '" + text + "'");
    return v;
}

/// The requested size rounded as nccl-tests does; refuses sizes that round to nothing.
std::int64_t rounded(const std::string& flag, std::int64_t bytes, cl::Op op, hardware::Dtype d,
                     int n) {
    const std::int64_t r = cl::round_bytes(op, bytes, d, n);
    if (r <= 0) {
        const std::int64_t unit =
            cl::round_bytes(op, std::int64_t(1) << 40, d, n) > 0
                ? hardware::bytes_per_element(d) * (cl::splits_per_rank(op) ? n : 1)
                : 0;
        throw InputError(fmt::format("{}: {} B is less than one {} element{} ({} B needed for {} "
                                     "on {} GPUs)",
                                     flag, bytes, hardware::to_string(d),
                                     cl::splits_per_rank(op) ? " per GPU" : "", unit,
                                     cl::to_string(op), n));
    }
    return r;
}

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

std::string render(const CollectiveOptions& o, const cl::Communicator& comm,
                   const strategies::parallel::Uncertainty& u, const cl::Collective& base,
                   cl::Fidelity fidelity, const std::vector<Row>& rows) {
    const int n = comm.size();
    const auto& spec = comm.topology().spec();
    const std::string redop = cl::reduces(base.op) ? "sum" : "none";
    const int root = cl::has_root(base.op) ? base.root : -1;
    auto algbw = [](const Row& r) { return static_cast<double>(r.bytes) / r.time.seconds() / 1e9; };
    auto busbw = [&](const Row& r) { return algbw(r) * cl::bus_factor(base.op, n); };
    auto algo = [](const Row& r) {
        return std::string(cl::to_string(r.choice.algorithm)) + "/" +
               std::string(hardware::to_string(r.choice.protocol));
    };
    std::string s;
    if (o.format == "json") {
        nlohmann::ordered_json arr = nlohmann::ordered_json::array();
        for (const Row& r : rows) {
            arr.push_back(
                {{"op", cl::to_string(base.op)},
                 {"algo", cl::to_string(r.choice.algorithm)},
                 {"protocol", hardware::to_string(r.choice.protocol)},
                 {"gpus", n},
                 {"bytes", r.bytes},
                 {"count", cl::nccl_count(base.op, r.bytes, base.dtype, n)},
                 {"dtype", hardware::to_string(base.dtype)},
                 {"root", root},
                 {"fidelity", cl::to_string(fidelity)},
                 {"time_us", r.time.microseconds()},
                 {"algbw_gbps", algbw(r)},
                 {"busbw_gbps", busbw(r)},
                 {"time_band", band_json(u, PredictionKind::collective, r.time.seconds())}});
        }
        return arr.dump(2) + "\n";
    }
    // A calibrated hardware file gives each time its p10-p90 band (app/uncertainty.h).
    auto band = [&](const Row& r) {
        return time_band(u, PredictionKind::collective, r.time.seconds());
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
                             hardware::to_string(base.dtype), redop, root, cl::to_string(fidelity),
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
                     comm.node_count() == 1 ? "" : "s", cl::to_string(fidelity), o.algo);
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
    s += calibrated
             ? fmt::format("# uncertainty: p10-p90 of measured / predicted - 1 is {:+.1f}% .. "
                           "{:+.1f}% ({} {} collectives)\n",
                           100 * u.collectives.p10, 100 * u.collectives.p90, u.collectives.points,
                           u.basis)
             : fmt::format("# uncertainty: uncalibrated (hardware '{}' has no uncertainty: "
                           "section; clustersim calibrate fit writes one)\n",
                           spec.name);
    return s;
}

void run(const CollectiveOptions& o, Io io, bool bytes_given, bool range_given) {
    cl::Collective base;
    const auto op = cl::parse_op(o.op);
    if (!op)
        throw InputError("--op: unknown collective '" + o.op + "' (ops: " + cl::op_names() + ")");
    base.op = *op;
    const auto algo = cl::parse_algorithm(o.algo);
    if (!algo)
        throw InputError("--algo: expected auto, ring, tree, direct, nvls or hierarchical, got '" +
                         o.algo + "'");
    base.algorithm = *algo;
    if (o.protocol != "auto") {
        base.protocol = hardware::parse_protocol(o.protocol);
        if (!base.protocol)
            throw InputError("--protocol: expected auto, ll, ll128 or simple, got '" + o.protocol +
                             "'");
    }
    const auto fidelity = cl::parse_fidelity(o.fidelity);
    if (!fidelity)
        throw InputError("--fidelity: expected analytic or flow, got '" + o.fidelity + "'");
    const auto dtype = hardware::parse_dtype(o.dtype);
    if (!dtype || (*dtype != hardware::Dtype::fp32 && *dtype != hardware::Dtype::fp16 &&
                   *dtype != hardware::Dtype::bf16))
        throw InputError("--dtype: expected fp32, fp16 or bf16, got '" + o.dtype + "'");
    base.dtype = *dtype;
    if (o.format != "table" && o.format != "csv" && o.format != "json")
        throw InputError("--format: expected table, csv or json, got '" + o.format + "'");
    if (o.factor < 2)
        throw InputError("--factor: expected an integer >= 2 (nccl-tests' -f), got " +
                         std::to_string(o.factor));
    base.root = o.root;

    // The platform, not the hardware alone: its provenance gives each time its band.
    const strategies::parallel::Platform platform = o.cluster.load_platform();
    const hardware::Topology topo(platform.cluster);
    const int n = o.cluster.gpus > 0 ? o.cluster.gpus : topo.gpu_count();
    if (n > topo.gpu_count())
        throw InputError(fmt::format("--gpus {}: the cluster has {} GPUs", n, topo.gpu_count()));
    const auto comm = cl::Communicator::first(topo, n);
    if (cl::has_root(base.op) && (o.root < 0 || o.root >= n))
        throw InputError(fmt::format("--root {}: ranks are 0 to {}", o.root, n - 1));
    if (!cl::has_root(base.op) && o.root != 0)
        throw InputError("--root: " + std::string(cl::to_string(base.op)) + " has no root");
    if (const std::string why = comm.why_not(base.algorithm, base.op); !why.empty())
        throw InputError(why);

    if (o.show_values) {
        if (range_given)
            throw InputError("--show-values runs one size: give --bytes (or nothing), not a range");
        cl::Collective c = base;
        if (bytes_given)
            c.bytes = rounded("--bytes", size_flag("--bytes", o.bytes), base.op, base.dtype, n);
        io.out << show_values(comm, c, bytes_given);
        return;
    }

    std::vector<std::int64_t> sizes;
    if (bytes_given) {
        sizes.push_back(rounded("--bytes", size_flag("--bytes", o.bytes), base.op, base.dtype, n));
    } else {
        const std::int64_t lo = size_flag("--min-bytes", o.min_bytes);
        const std::int64_t hi = size_flag("--max-bytes", o.max_bytes);
        if (lo > hi)
            throw InputError(fmt::format("--min-bytes {} is larger than --max-bytes {}",
                                         o.min_bytes, o.max_bytes));
        rounded("--min-bytes", lo, base.op, base.dtype, n);
        for (std::int64_t s = lo; s <= hi; s *= o.factor) {
            sizes.push_back(cl::round_bytes(base.op, s, base.dtype, n));
            if (s > hi / o.factor)
                break;
        }
    }
    // Everything is computed before anything is printed: an error leaves no partial table.
    std::vector<Row> rows;
    for (std::int64_t bytes : sizes) {
        cl::Collective c = base;
        c.bytes = bytes;
        if (!cl::within_limits(comm, c))
            throw InputError(fmt::format(
                "{}: {} B of {} on {} GPUs is past what the simulator can time (at most {:.1f} "
                "days, and bytes x GPUs below 2^62); the largest size it takes here is {} B",
                bytes_given ? "--bytes" : "--max-bytes", bytes, cl::to_string(base.op), n,
                cl::kLongestPrediction.seconds() / 86400, cl::largest_bytes(comm, c)));
        const cl::Outcome out = cl::simulate(comm, c, *fidelity);
        rows.push_back({bytes, out.choice, out.time});
    }
    io.out << render(o, comm, platform.provenance.uncertainty, base, *fidelity, rows);
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
    auto* bytes = cmd->add_option("--bytes,-b", o->bytes, "One size, e.g. 100MiB");
    auto* lo = cmd->add_option("--min-bytes", o->min_bytes, "Smallest size of the sweep")
                   ->capture_default_str();
    auto* hi = cmd->add_option("--max-bytes,-e", o->max_bytes, "Largest size of the sweep")
                   ->capture_default_str();
    auto* f = cmd->add_option("--factor,-f", o->factor, "Size multiplication factor")
                  ->capture_default_str();
    bytes->excludes(lo)->excludes(hi)->excludes(f);
    cmd->add_option("--algo", o->algo, "auto, ring, tree, direct, nvls, hierarchical")
        ->capture_default_str();
    cmd->add_option("--protocol", o->protocol, "auto, ll, ll128, simple")->capture_default_str();
    cmd->add_option("--fidelity", o->fidelity, "analytic (closed forms) or flow (flow network)")
        ->capture_default_str();
    cmd->add_option("--dtype", o->dtype, "fp32, fp16, bf16")->capture_default_str();
    cmd->add_option("--root,-r", o->root, "Root rank of broadcast, reduce, gather, scatter")
        ->capture_default_str();
    cmd->add_option("--format", o->format, "table (nccl-tests), csv or json")
        ->capture_default_str();
    cmd->add_flag("--show-values", o->show_values,
                  "Run the schedule on numbers and print every rank's buffer before and after");
    cmd->callback([o, io, bytes, lo, hi, f] {
        run(*o, io, bytes->count() > 0, lo->count() + hi->count() + f->count() > 0);
    });
}

} // namespace clustersim::app
