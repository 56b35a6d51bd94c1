// A collective's size sweep (results/collective_table.h): the request checked, the rows
// predicted, their JSON. The checks and their messages are the command's (`--op`, `--root`, ...).
#include "results/collective_table.h"

#include "base/error.h"
#include "base/units.h"
#include "hardware/topology.h"
#include "results/uncertainty.h"
#include "strategies/collectives/size_limit.h"
#include "strategies/parallel/collective_regime.h"

#include <fmt/format.h>

namespace clustersim::results {

namespace cl = strategies::collectives;

namespace {

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

} // namespace

CollectiveSweep::CollectiveSweep(const CollectiveRequest& request)
    : request_(request) {
    const CollectiveRequest& o = request_;
    const auto op = cl::parse_op(o.op);
    if (!op)
        throw InputError("--op: unknown collective '" + o.op + "' (ops: " + cl::op_names() + ")");
    base_.op = *op;
    const auto algo = cl::parse_algorithm(o.algo);
    if (!algo)
        throw InputError("--algo: expected auto, ring, tree, direct, nvls or hierarchical, got '" +
                         o.algo + "'");
    base_.algorithm = *algo;
    if (o.protocol != "auto") {
        base_.protocol = hardware::parse_protocol(o.protocol);
        if (!base_.protocol)
            throw InputError("--protocol: expected auto, ll, ll128 or simple, got '" + o.protocol +
                             "'");
    }
    // As `run` takes it: flow folds identical flows into representatives (exact), flow-full
    // simulates every one.
    const auto fidelity = cl::parse_fidelity(o.fidelity);
    if (!fidelity)
        throw InputError("--fidelity: expected analytic, flow or flow-full, got '" + o.fidelity +
                         "'");
    fidelity_ = fidelity->fidelity;
    flow_options_.symmetry = fidelity->symmetry;
    flow_options_.max_seconds = cl::checked_max_seconds(o.max_seconds);
    // nccl-tests' -d names (float, half, bfloat16) beside ours.
    const std::string dtype_name = o.dtype == "float"      ? "fp32"
                                   : o.dtype == "half"     ? "fp16"
                                   : o.dtype == "bfloat16" ? "bf16"
                                                           : o.dtype;
    const auto dtype = hardware::parse_dtype(dtype_name);
    if (!dtype || (*dtype != hardware::Dtype::fp32 && *dtype != hardware::Dtype::fp16 &&
                   *dtype != hardware::Dtype::bf16))
        throw InputError("--dtype (-d): expected fp32, fp16 or bf16 (nccl-tests' float, half, "
                         "bfloat16), got '" +
                         o.dtype + "'");
    base_.dtype = *dtype;
    if (o.factor < 2)
        throw InputError("--factor: expected an integer >= 2 (nccl-tests' -f), got " +
                         std::to_string(o.factor));
    if (o.gpus < 0)
        throw InputError("--gpus: expected a GPU count of at least 1, got " +
                         std::to_string(o.gpus));
    base_.root = o.root;

    // The platform, not the hardware alone: its provenance gives each time its band.
    platform_ = strategies::parallel::load_platform(o.hardware);
    if (!o.slice.empty()) {
        const hardware::TorusShape shape =
            hardware::parse_slice(platform_.cluster.torus, o.slice, "--slice");
        platform_.cluster = hardware::with_slice(std::move(platform_.cluster), shape, o.gpus);
    } else if (o.gpus > 0) {
        platform_ = strategies::parallel::with_gpu_count(std::move(platform_), o.gpus);
    }
    topology_ = std::make_unique<hardware::Topology>(platform_.cluster);
    const int n = o.gpus > 0 ? o.gpus : topology_->gpu_count();
    if (n > topology_->gpu_count())
        throw InputError(
            fmt::format("--gpus {}: the cluster has {} GPUs", n, topology_->gpu_count()));
    comm_ = std::make_unique<cl::Communicator>(cl::Communicator::first(*topology_, n));
    if (cl::has_root(base_.op) && (o.root < 0 || o.root >= n))
        throw InputError(fmt::format("--root {}: ranks are 0 to {}", o.root, n - 1));
    if (!cl::has_root(base_.op) && o.root != 0)
        throw InputError("--root: " + std::string(cl::to_string(base_.op)) + " has no root");
    if (const std::string why = comm_->why_not(base_.algorithm, base_.op); !why.empty())
        throw InputError(why);
}

CollectiveSweep::~CollectiveSweep() = default;

std::vector<std::int64_t> CollectiveSweep::sizes() const {
    const CollectiveRequest& o = request_;
    const int n = comm_->size();
    std::vector<std::int64_t> sizes;
    if (o.bytes) {
        sizes.push_back(
            rounded("--bytes", size_flag("--bytes", *o.bytes), base_.op, base_.dtype, n));
        return sizes;
    }
    const std::int64_t lo = size_flag("--min-bytes", o.min_bytes);
    const std::int64_t hi = size_flag("--max-bytes", o.max_bytes);
    if (lo > hi)
        throw InputError(
            fmt::format("--min-bytes {} is larger than --max-bytes {}", o.min_bytes, o.max_bytes));
    rounded("--min-bytes", lo, base_.op, base_.dtype, n);
    for (std::int64_t s = lo; s <= hi; s *= o.factor) {
        sizes.push_back(cl::round_bytes(base_.op, s, base_.dtype, n));
        if (s > hi / o.factor)
            break;
    }
    return sizes;
}

std::string_view CollectiveSweep::fidelity_name() const {
    return cl::to_string(cl::FidelityChoice{fidelity_, flow_options_.symmetry});
}

cl::Collective CollectiveSweep::sized(std::int64_t bytes) const {
    cl::Collective c = base_;
    c.bytes = bytes;
    if (!cl::within_limits(*comm_, c))
        throw InputError(fmt::format(
            "{}: {} B of {} on {} GPUs is past what the simulator can time (at most {:.1f} "
            "days, and bytes x GPUs below 2^62); the largest size it takes here is {} B",
            request_.bytes ? "--bytes" : "--max-bytes", bytes, cl::to_string(base_.op),
            comm_->size(), cl::kLongestPrediction.seconds() / 86400, cl::largest_bytes(*comm_, c)));
    return c;
}

std::vector<CollectiveRow> CollectiveSweep::rows() const {
    std::vector<CollectiveRow> rows;
    for (std::int64_t bytes : sizes()) {
        const cl::Collective c = sized(bytes);
        const cl::Outcome out = cl::simulate(*comm_, c, fidelity_, flow_options_);
        rows.push_back({bytes, out.choice, out.time,
                        strategies::parallel::message_regime(*comm_, c, out.choice)});
    }
    return rows;
}

std::vector<CollectiveEstimate> CollectiveSweep::estimates() const {
    std::vector<CollectiveEstimate> out;
    const double resources = static_cast<double>(topology_->edge_count());
    for (std::int64_t bytes : sizes()) {
        const cl::Collective c = sized(bytes);
        CollectiveEstimate e;
        e.bytes = bytes;
        e.choice = comm_->choose(c);
        e.footprint = cl::flow_footprint(*comm_, c, flow_options_);
        e.heap_bytes = cl::flow_bytes(e.footprint.peak_round, resources);
        e.cpu_seconds = cl::flow_seconds(e.footprint);
        out.push_back(e);
    }
    return out;
}

double algbw_gbps(const CollectiveRow& row) {
    return static_cast<double>(row.bytes) / row.time.seconds() / 1e9;
}

double busbw_gbps(const CollectiveRow& row, cl::Op op, int gpus) {
    return algbw_gbps(row) * cl::bus_factor(op, gpus);
}

nlohmann::ordered_json collective_json(const CollectiveSweep& sweep,
                                       const std::vector<CollectiveRow>& rows) {
    const cl::Collective& base = sweep.collective();
    const int n = sweep.communicator().size();
    const int root = cl::has_root(base.op) ? base.root : -1;
    const auto& u = sweep.platform().provenance.uncertainty;
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const CollectiveRow& r : rows) {
        arr.push_back({{"op", cl::to_string(base.op)},
                       {"algo", cl::to_string(r.choice.algorithm)},
                       {"protocol", hardware::to_string(r.choice.protocol)},
                       {"gpus", n},
                       {"bytes", r.bytes},
                       {"count", cl::nccl_count(base.op, r.bytes, base.dtype, n)},
                       {"dtype", hardware::to_string(base.dtype)},
                       {"root", root},
                       {"fidelity", std::string(sweep.fidelity_name())},
                       {"time_us", r.time.microseconds()},
                       {"algbw_gbps", algbw_gbps(r)},
                       {"busbw_gbps", busbw_gbps(r, base.op, n)},
                       {"time_band", band_json(u, PredictionKind::collective, r.time.seconds(),
                                               {r.regime, n})}});
    }
    return arr;
}

} // namespace clustersim::results
