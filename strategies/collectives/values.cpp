#include "strategies/collectives/values.h"

#include "strategies/collectives/plan.h"

#include <stdexcept>

namespace clustersim::strategies::collectives {

namespace {
std::int64_t block(Op op, std::int64_t elements, int ranks) {
    return splits_per_rank(op) ? elements / ranks : elements;
}
} // namespace

View input_view(Op op, std::int64_t E, int n, int rank, int root) {
    const std::int64_t m = block(op, E, n);
    switch (op) {
    case Op::all_gather:
    case Op::gather:
        return {rank * m, m};
    case Op::broadcast:
    case Op::scatter:
        return rank == root ? View{0, E} : View{0, 0};
    default:
        return {0, E};
    }
}

View output_view(Op op, std::int64_t E, int n, int rank, int root) {
    const std::int64_t m = block(op, E, n);
    switch (op) {
    case Op::reduce_scatter:
    case Op::scatter:
        return {rank * m, m};
    case Op::reduce:
    case Op::gather:
        return rank == root ? View{0, E} : View{0, 0};
    case Op::all_to_all:
    case Op::send_recv:
        return {E, E};
    default:
        return {0, E};
    }
}

Buffers make_inputs(Op op, std::int64_t E, int n, int root,
                    const std::function<double(int, std::int64_t)>& value) {
    Buffers b(static_cast<size_t>(n),
              std::vector<double>(static_cast<size_t>(buffer_elements(op, E)), 0.0));
    for (int r = 0; r < n; ++r) {
        const View v = input_view(op, E, n, r, root);
        for (std::int64_t i = 0; i < v.count; ++i)
            b[size_t(r)][size_t(v.offset + i)] = value(r, i);
    }
    return b;
}

Buffers expected_outputs(Op op, std::int64_t E, int n, int root, const Buffers& in) {
    const std::int64_t m = block(op, E, n);
    Buffers out(static_cast<size_t>(n));
    auto at = [&](int r, std::int64_t i) { return in[size_t(r)][size_t(i)]; };
    auto sum = [&](std::int64_t i) {
        double s = 0;
        for (int r = 0; r < n; ++r)
            s += at(r, i);
        return s;
    };
    for (int r = 0; r < n; ++r) {
        const View v = output_view(op, E, n, r, root);
        auto& o = out[size_t(r)];
        for (std::int64_t i = 0; i < v.count; ++i) {
            const std::int64_t e = v.offset + i;
            switch (op) {
            case Op::all_reduce:
            case Op::reduce:
            case Op::reduce_scatter:
                o.push_back(sum(e));
                break;
            case Op::all_gather:
            case Op::gather:
                o.push_back(at(static_cast<int>(e / m), e));
                break;
            case Op::broadcast:
            case Op::scatter:
                o.push_back(at(root, e));
                break;
            case Op::all_to_all: // receive block j of rank r = send block r of rank j
                o.push_back(at(static_cast<int>(i / m), r * m + i % m));
                break;
            case Op::send_recv:
                o.push_back(at((r - 1 + n) % n, i));
                break;
            }
        }
    }
    return out;
}

Buffers run_values(const Communicator& comm, const Collective& c, Algorithm algorithm,
                   Protocol protocol, Buffers buffers, const DecomposeOptions& options) {
    const Decomposition d = decompose(comm, c, algorithm, protocol, options);
    const int n = comm.size();
    if (buffers.size() != static_cast<size_t>(n))
        throw std::invalid_argument("run_values needs one buffer per rank");
    for (const auto& b : buffers) {
        if (static_cast<std::int64_t>(b.size()) != d.buffer_elements)
            throw std::invalid_argument("run_values: a buffer has the wrong number of elements");
    }
    // One buffer per NVSwitch (the communicator's nodes), where NVLS reduces.
    Buffers switches(comm.plan().node_ranks.size(),
                     std::vector<double>(static_cast<size_t>(d.buffer_elements), 0.0));
    auto buffer = [&](int endpoint) -> std::vector<double>& {
        return detail::is_switch(endpoint) ? switches[size_t(detail::switch_node(endpoint))]
                                           : buffers[size_t(endpoint)];
    };
    std::vector<Transfer> step;
    std::vector<std::vector<double>> read;
    for (const auto& phase : d.phases) {
        for (int s = 0; s < phase->steps(); ++s) {
            step.clear();
            phase->transfers(s, step);
            // Every read of a step happens before any write.
            read.assign(step.size(), {});
            for (std::size_t t = 0; t < step.size(); ++t) {
                const auto& src = buffer(step[t].src);
                read[t].assign(src.begin() + step[t].src_offset,
                               src.begin() + step[t].src_offset + step[t].count);
            }
            for (std::size_t t = 0; t < step.size(); ++t) {
                auto& dst = buffer(step[t].dst);
                for (std::int64_t i = 0; i < step[t].count; ++i) {
                    double& v = dst[size_t(step[t].dst_offset + i)];
                    v = step[t].accumulate ? v + read[t][size_t(i)] : read[t][size_t(i)];
                }
            }
        }
    }
    return buffers;
}

} // namespace clustersim::strategies::collectives
