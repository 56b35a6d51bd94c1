#include "strategies/collectives/collective.h"

#include "base/text.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace clustersim::strategies::collectives {

std::string_view to_string(Op op) {
    switch (op) {
    case Op::broadcast:
        return "broadcast";
    case Op::reduce:
        return "reduce";
    case Op::all_reduce:
        return "all_reduce";
    case Op::all_gather:
        return "all_gather";
    case Op::reduce_scatter:
        return "reduce_scatter";
    case Op::all_to_all:
        return "all_to_all";
    case Op::gather:
        return "gather";
    case Op::scatter:
        return "scatter";
    case Op::send_recv:
        return "send_recv";
    }
    return "?";
}

std::string_view to_string(Algorithm a) {
    switch (a) {
    case Algorithm::automatic:
        return "auto";
    case Algorithm::ring:
        return "ring";
    case Algorithm::tree:
        return "tree";
    case Algorithm::direct:
        return "direct";
    case Algorithm::nvls:
        return "nvls";
    case Algorithm::hierarchical:
        return "hierarchical";
    case Algorithm::nvls_tree:
        return "nvls_tree";
    case Algorithm::collnet_direct:
        return "collnet_direct";
    case Algorithm::collnet_chain:
        return "collnet_chain";
    case Algorithm::torus:
        return "torus";
    }
    return "?";
}

std::string_view to_string(Fidelity f) {
    return f == Fidelity::analytic ? "analytic" : "flow";
}

namespace {
std::string normalise(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '-')
            c = '_';
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}
} // namespace

std::optional<Op> parse_op(std::string_view s) {
    // Compare without separators and case, so all_reduce, all-reduce, allreduce, AllReduce
    // and nccl-tests' alltoall / sendrecv all match.
    std::string key;
    for (char c : s) {
        if (c == '_' || c == '-' || c == ' ')
            continue;
        key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (key.empty())
        return std::nullopt;
    for (Op op : kAllOps) {
        std::string name(to_string(op));
        name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
        if (key == name)
            return op;
    }
    return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
    const std::string n = normalise(s);
    if (n == "auto" || n == "automatic")
        return Algorithm::automatic;
    for (Algorithm a : kConcreteAlgorithms) {
        std::string bare(to_string(a));
        bare.erase(std::remove(bare.begin(), bare.end(), '_'), bare.end());
        if (n == to_string(a) || n == bare) // NCCL_ALGO spells them NVLSTree, CollNetDirect
            return a;
    }
    return std::nullopt;
}

std::optional<FidelityChoice> parse_fidelity(std::string_view s) {
    if (s == kFidelityNames[0])
        return FidelityChoice{Fidelity::analytic, true};
    if (s == kFidelityNames[1])
        return FidelityChoice{Fidelity::flow, true};
    if (s == kFidelityNames[2])
        return FidelityChoice{Fidelity::flow, false};
    return std::nullopt;
}

std::string_view to_string(FidelityChoice c) {
    if (c.fidelity == Fidelity::analytic)
        return kFidelityNames[0];
    return c.symmetry ? kFidelityNames[1] : kFidelityNames[2];
}

std::string op_names() {
    std::vector<std::string> names;
    for (Op op : kAllOps)
        names.emplace_back(to_string(op));
    return base::join(names, ", ");
}

bool reduces(Op op) {
    return op == Op::all_reduce || op == Op::reduce || op == Op::reduce_scatter;
}

bool has_root(Op op) {
    return op == Op::broadcast || op == Op::reduce || op == Op::gather || op == Op::scatter;
}

bool splits_per_rank(Op op) {
    return op == Op::all_gather || op == Op::reduce_scatter || op == Op::all_to_all ||
           op == Op::gather || op == Op::scatter;
}

double bus_factor(Op op, int ranks) {
    const double n = ranks;
    switch (op) {
    case Op::all_reduce:
        return 2 * (n - 1) / n;
    case Op::all_gather:
    case Op::reduce_scatter:
    case Op::all_to_all:
    case Op::gather:
    case Op::scatter:
        return (n - 1) / n;
    case Op::broadcast:
    case Op::reduce:
    case Op::send_recv:
        return 1;
    }
    return 1;
}

std::int64_t round_bytes(Op op, std::int64_t bytes, hardware::Dtype dtype, int ranks) {
    const std::int64_t unit =
        hardware::bytes_per_element(dtype) * (splits_per_rank(op) ? ranks : 1);
    return bytes / unit * unit;
}

std::int64_t nccl_count(Op op, std::int64_t bytes, hardware::Dtype dtype, int ranks) {
    const std::int64_t elements = bytes / hardware::bytes_per_element(dtype);
    return splits_per_rank(op) ? elements / ranks : elements;
}

double rank_buffer_bytes(Op op, std::int64_t bytes, int ranks, bool is_root) {
    if ((op == Op::gather || op == Op::scatter) && !is_root)
        return static_cast<double>(bytes) / ranks;
    return static_cast<double>(bytes);
}

} // namespace clustersim::strategies::collectives
