// Bisection bandwidth of a Topology as a maximum flow: Dinic's algorithm on arrays built from
// the CSR graph (one allocation per array, no container per vertex), so that `hardware show`
// of 65,536 GPUs costs a fraction of a second rather than the seconds an adjacency list of
// Boost.Graph took to build and search.
#include "hardware/topology.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace clustersim::hardware {

namespace {

/// A flow network of integer capacities in compressed sparse row form: every arc's residual
/// twin next to the arcs of its head, found by index (rev). Dinic's algorithm: a breadth-first
/// search gives each vertex its distance from the source in the residual graph, and paths that
/// climb one level per arc are saturated until none is left (a blocking flow), as many times as
/// the sink stays reachable. The value of a maximum flow is unique, so it equals that of any
/// other algorithm on the same network (tests/hardware/test_bisection.cpp compares it with
/// Boost.Graph's Boykov-Kolmogorov).
class MaxFlow {
public:
    struct Arc {
        std::size_t from, to;
        std::int64_t capacity;
    };

    MaxFlow(std::size_t vertices, const std::vector<Arc>& arcs)
        : first_(vertices + 1, 0)
        , head_(2 * arcs.size())
        , rev_(2 * arcs.size())
        , residual_(2 * arcs.size()) {
        for (const Arc& a : arcs) {
            ++first_[a.from + 1];
            ++first_[a.to + 1];
        }
        for (std::size_t v = 0; v < vertices; ++v)
            first_[v + 1] += first_[v];
        std::vector<std::size_t> next(first_.begin(), first_.end() - 1);
        for (const Arc& a : arcs) {
            const std::size_t f = next[a.from]++;
            const std::size_t r = next[a.to]++;
            head_[f] = a.to;
            head_[r] = a.from;
            residual_[f] = a.capacity;
            residual_[r] = 0;
            rev_[f] = r;
            rev_[r] = f;
        }
    }

    std::int64_t run(std::size_t source, std::size_t sink) {
        const std::size_t n = first_.size() - 1;
        std::vector<int> level(n);
        std::vector<std::size_t> current(n), queue, path;
        queue.reserve(n);
        std::int64_t flow = 0;
        for (;;) {
            // Levels: distances from the source over arcs with residual capacity.
            std::fill(level.begin(), level.end(), -1);
            level[source] = 0;
            queue.assign(1, source);
            for (std::size_t q = 0; q < queue.size(); ++q) {
                const std::size_t v = queue[q];
                for (std::size_t a = first_[v]; a < first_[v + 1]; ++a) {
                    if (residual_[a] > 0 && level[head_[a]] < 0) {
                        level[head_[a]] = level[v] + 1;
                        queue.push_back(head_[a]);
                    }
                }
            }
            if (level[sink] < 0)
                return flow;
            // A blocking flow: depth-first along arcs one level up, each vertex's arcs tried
            // once per phase (current[v] only moves forward).
            std::copy(first_.begin(), first_.end() - 1, current.begin());
            path.clear();
            std::size_t v = source;
            for (;;) {
                if (v == sink) {
                    std::int64_t push = std::numeric_limits<std::int64_t>::max();
                    for (std::size_t a : path)
                        push = std::min(push, residual_[a]);
                    std::size_t cut = path.size();
                    for (std::size_t i = 0; i < path.size(); ++i) {
                        residual_[path[i]] -= push;
                        residual_[rev_[path[i]]] += push;
                        if (residual_[path[i]] == 0 && cut == path.size())
                            cut = i;
                    }
                    flow += push;
                    // Go on from the tail of the first arc it saturated.
                    path.resize(cut);
                    v = path.empty() ? source : head_[path.back()];
                    continue;
                }
                std::size_t& a = current[v];
                while (a < first_[v + 1] && !(residual_[a] > 0 && level[head_[a]] == level[v] + 1))
                    ++a;
                if (a < first_[v + 1]) {
                    path.push_back(a);
                    v = head_[a];
                    continue;
                }
                // A dead end: no path to the sink through v in this phase.
                if (v == source)
                    break;
                level[v] = -1;
                path.pop_back();
                v = path.empty() ? source : head_[path.back()];
                ++current[v];
            }
        }
    }

private:
    std::vector<std::size_t> first_; ///< arcs of vertex v: first_[v] .. first_[v + 1] - 1
    std::vector<std::size_t> head_, rev_;
    std::vector<std::int64_t> residual_;
};

} // namespace

double Topology::bisection_bandwidth() const {
    const int g = gpu_count();
    if (g < 2)
        return 0;
    // A super source feeding the first half of the GPUs and a super sink fed by the second half.
    // Capacities in MB/s as integers keep the max-flow exact.
    const std::size_t source = vertex_count();
    const std::size_t sink = source + 1;
    std::vector<MaxFlow::Arc> arcs;
    arcs.reserve(edge_count() + static_cast<std::size_t>(g));
    for (EdgeIndex e = 0; e < edge_count(); ++e)
        arcs.push_back({edge_source(e), edge_target(e), std::lround(edge(e).bandwidth / 1e6)});
    constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max() / 4;
    for (int i = 0; i < g; ++i) {
        if (i < g / 2)
            arcs.push_back({source, gpu_hbm(i), kUnbounded});
        else
            arcs.push_back({gpu_hbm(i), sink, kUnbounded});
    }
    MaxFlow network(vertex_count() + 2, arcs);
    return static_cast<double>(network.run(source, sink)) * 1e6;
}

} // namespace clustersim::hardware
