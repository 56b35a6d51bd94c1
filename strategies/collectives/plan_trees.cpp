// Trees, chains and the multi-node data of a plan (NCCL's double binary tree, the pipelined
// chains of broadcast and reduce across nodes, the cross-node figures of the closed forms): the
// half of Plan (plan.h) that builds pipelines of stages; plan.cpp holds the rings, routes,
// direct patterns and the hierarchical data.
#include "strategies/collectives/mesh_rings.h"
#include "strategies/collectives/plan.h"
#include "strategies/collectives/plan_loads.h"

#include "hardware/memory_limit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <tuple>

namespace clustersim::strategies::collectives::detail {
namespace {
/// The busiest link of each window of K consecutive stages lo .. lo + K - 1, lo = 1 .. S-K-1,
/// by sliding one window along: each stage's loads added once and taken off once, the busiest
/// edge from a max-heap whose entries are dropped once their edge's load has changed. For long
/// pipelines (a broadcast's chain over 16,384 ranks has 16,383 stages): summing every window
/// afresh costs (S - K) x K stages, minutes at 100,000 ranks. An edge no hop crosses any more
/// is exactly 0 again (hops counted), so the maximum holds no residue of what left.
std::vector<double> sliding_middle_windows(const hardware::Topology& topo,
                                           const std::vector<std::vector<TreeData::Loaded>>& sl,
                                           int S, std::int64_t K) {
    const std::size_t E = topo.edge_count();
    std::vector<double> load(E, 0.0);
    std::vector<int> hops(E, 0);
    std::vector<std::uint64_t> version(E, 0);
    using Entry = std::tuple<double, std::uint64_t, sim::ResourceId>; // cost, version, edge
    std::priority_queue<Entry> heap;
    auto apply = [&](std::int64_t o, bool add) {
        for (const TreeData::Loaded& f : sl[size_t(o)]) {
            for (sim::ResourceId e : f.route->edges) {
                hops[e] += add ? 1 : -1;
                load[e] = hops[e] == 0 ? 0.0 : load[e] + (add ? f.wire : -f.wire);
                ++version[e];
                if (hops[e] > 0)
                    heap.emplace(load[e] / topo.edge(e).bandwidth, version[e], e);
            }
        }
    };
    std::vector<double> out;
    for (std::int64_t o = 1; o < 1 + K; ++o)
        apply(o, true);
    for (std::int64_t lo = 1; lo + K - 1 <= S - 2; ++lo) {
        if (lo > 1) {
            apply(lo - 1, false);
            apply(lo + K - 1, true);
        }
        while (!heap.empty() && std::get<1>(heap.top()) != version[std::get<2>(heap.top())])
            heap.pop();
        out.push_back(heap.empty() ? 0.0 : std::get<0>(heap.top()));
    }
    return out;
}

/// NCCL's binary tree over positions 0..n-1 (ncclGetBtree): the parent of position r.
int btree_parent(int r, int n) {
    if (r == 0)
        return -1;
    const int bit = r & -r;
    int up = (r ^ bit) | (bit << 1);
    if (up >= n)
        up = r ^ bit;
    return up;
}

/// trees.cc ncclGetDtree: the second tree mirrors the first (even count) or shifts it by one
/// (odd); returns the parent of position q in tree tr and q's child type (0: its parent's first
/// child) in that tree's own numbering.
int dtree_parent(int tr, int q, int count, int& child_type) {
    const int m = tr == 0 ? q : count % 2 == 0 ? count - 1 - q : (q - 1 + count) % count;
    const int u = btree_parent(m, count);
    child_type = m < u ? 0 : 1;
    if (u < 0 || tr == 0)
        return u;
    return count % 2 == 0 ? count - 1 - u : (u + 1) % count;
}

} // namespace

const TreeData& Plan::tree() const {
    std::call_once(tree_once_, [this] {
        refuse_if_tree_too_large();
        auto t = std::make_unique<TreeData>();
        const auto& pos = cycles[0];
        const int N = static_cast<int>(node_ranks.size());
        if (N > 1 && regular) {
            // Across nodes (connect.cc, BALANCED_TREE pattern): channel j's chain in a node
            // runs treeIntra[0] (beside NIC port j) .. treeIntra[g-1], each rank's parent the
            // one before it; treeIntra[0] joins the parent node at its treeIntra[1] as a first
            // child, at its treeIntra[0] as a second (connectTrees); every channel runs both
            // trees of nodes.
            const int g = static_cast<int>(node_ranks.front().size());
            const int P = std::max(1, std::min(g, topo.spec().node.nic_ports()));
            // On an xGMI mesh a hop is one link: RCCL builds the tree's chains from its rome
            // model's ringBase (ROCm/rccl 99b8561b src/graph/rome_models.cc, "Fall back to tree
            // from ringBase"), channel j's chain being channel j's path through the node, the
            // paths the rings across nodes take (mesh_chains); in index order every channel's
            // chain would load the same g - 1 links.
            const bool mesh = topo.spec().node.fabric == hardware::IntraNodeFabric::xgmi_mesh;
            const auto paths = mesh && g > 2 ? mesh_chains(g, P) : std::vector<std::vector<int>>{};
            auto intra = [&](int k, int j, int i) {
                if (!paths.empty())
                    return node_ranks[size_t(k)][size_t(paths[size_t(j)][size_t(i)])];
                const int first = static_cast<int>(static_cast<long>(j) * g / P);
                return node_ranks[size_t(k)][size_t((first + i) % g)];
            };
            for (int tr = 0; tr < 2; ++tr) {
                for (int j = 0; j < P; ++j) {
                    std::vector<int> parent(size_t(n), -1);
                    for (int k = 0; k < N; ++k) {
                        for (int i = 1; i < g; ++i)
                            parent[size_t(intra(k, j, i))] = intra(k, j, i - 1);
                        int child_type = 0;
                        const int up = dtree_parent(tr, k, N, child_type);
                        if (up >= 0)
                            parent[size_t(intra(k, j, 0))] =
                                intra(up, j, child_type == 0 && g > 1 ? 1 : 0);
                    }
                    t->parent.push_back(std::move(parent));
                }
            }
        } else {
            for (int tr = 0; tr < 2; ++tr) {
                std::vector<int> parent(size_t(n), -1);
                for (int q = 0; q < n; ++q) {
                    int child_type = 0;
                    const int up = dtree_parent(tr, q, n, child_type);
                    parent[size_t(pos[size_t(q)])] = up < 0 ? -1 : pos[size_t(up)];
                }
                t->parent.push_back(std::move(parent));
            }
        }
        t->nparts = static_cast<int>(t->parent.size());
        const int parts = t->parts();
        t->level.assign(size_t(parts), std::vector<int>(size_t(n), 0));
        for (int tr = 0; tr < parts; ++tr) {
            for (int r = 0; r < n; ++r) {
                int d = 0;
                for (int u = t->parent[size_t(tr)][size_t(r)]; u >= 0;
                     u = t->parent[size_t(tr)][size_t(u)])
                    ++d;
                t->level[size_t(tr)][size_t(r)] = d;
                t->depth = std::max(t->depth, d);
            }
        }
        const int D = t->depth;
        // Stage o moves up from depth D - o (o < D) and down to depth o - D + 1 (o >= D): each
        // hop goes to its two stages directly, in (tree, rank) order within a stage.
        t->stages.resize(size_t(2 * D));
        for (int tr = 0; tr < parts; ++tr) {
            for (int r = 0; r < n; ++r) {
                const int parent = t->parent[size_t(tr)][size_t(r)];
                if (parent < 0)
                    continue;
                const int h = t->level[size_t(tr)][size_t(r)];
                t->stages[size_t(D - h)].push_back({r, parent, tr});
                t->stages[size_t(D + h - 1)].push_back({parent, r, tr});
            }
        }
        for (int o = 0; o < 2 * D; ++o)
            t->stage_reduces.push_back(o < D);
        load_pipeline(*t, node_ranks.size() == 1);
        tree_ = std::move(t);
    });
    return *tree_;
}

void Plan::refuse_if_tree_too_large() const {
    // The tree's tables per rank and part (its parents and levels, each hop in its two stages,
    // their loads per protocol, the routes they look up): an analytic all-reduce of 1 GiB on
    // 16,384-262,144 DGX A100 GPUs (16 parts) less its graph and the process on one node takes
    // 2,460-2,570 bytes per GPU (scripts/measure-flow-cost.sh), 161 per part; rounded up.
    constexpr double kBytesPerRankPart = 170;
    const double need = kBytesPerRankPart * n * tree_parts();
    if (need < double(1 << 28)) // small trees: not worth asking the limits
        return;
    hardware::refuse_if_over_memory(
        need, fmt::format("the double binary tree of a communicator of {} GPUs", n),
        "simulate fewer GPUs (data-parallel replicas repeat: a smaller dp predicts the same "
        "step), or run the collective with --algo ring");
}

int Plan::tree_parts() const {
    if (node_ranks.size() > 1 && regular) {
        const int g = static_cast<int>(node_ranks.front().size());
        return 2 * std::max(1, std::min(g, topo.spec().node.nic_ports()));
    }
    return 2;
}

const TreeData& Plan::tree_sample() const {
    std::call_once(tree_sample_once_, [this] {
        if (node_ranks.size() < 2 || !regular)
            throw std::logic_error("Plan::tree_sample: regular communicators across nodes only");
        auto t = std::make_unique<TreeData>();
        // The shape of Plan::tree across nodes: per tree of nodes, each node's parent and child
        // type, and its head's depth (the chain above it: one hop per node, one more where it
        // hangs from its parent's second rank); a rank i of a chain lies i below its head, the
        // same in every channel.
        const int N = static_cast<int>(node_ranks.size());
        const int g = static_cast<int>(node_ranks.front().size());
        const int P = std::max(1, std::min(g, topo.spec().node.nic_ports()));
        auto intra = [&](int k, int j, int i) {
            const int first = static_cast<int>(static_cast<long>(j) * g / P);
            return node_ranks[size_t(k)][size_t((first + i) % g)];
        };
        std::array<std::vector<int>, 2> up, type, head_depth;
        std::array<std::vector<std::vector<int>>, 2> children;
        for (int tr = 0; tr < 2; ++tr) {
            up[size_t(tr)].assign(size_t(N), -1);
            type[size_t(tr)].assign(size_t(N), 0);
            children[size_t(tr)].assign(size_t(N), {});
            for (int k = 0; k < N; ++k) {
                up[size_t(tr)][size_t(k)] = dtree_parent(tr, k, N, type[size_t(tr)][size_t(k)]);
                if (up[size_t(tr)][size_t(k)] >= 0)
                    children[size_t(tr)][size_t(up[size_t(tr)][size_t(k)])].push_back(k);
            }
            head_depth[size_t(tr)].assign(size_t(N), 0);
            for (int k = 0; k < N; ++k) {
                int d = 0;
                for (int x = k; up[size_t(tr)][size_t(x)] >= 0; x = up[size_t(tr)][size_t(x)])
                    d += 1 + (type[size_t(tr)][size_t(x)] == 0 && g > 1 ? 1 : 0);
                head_depth[size_t(tr)][size_t(k)] = d;
                t->depth = std::max(t->depth, d + g - 1);
            }
        }
        // Every hop between nodes on one rail is kept (the fabric's links carry those of many
        // nodes), and the chains of a few nodes: a node's role in a tree is whether it has a
        // parent, a first child, a second child; the first node of each pair of roles (one per
        // tree) is sampled.
        std::map<int, int> first_of_role;
        for (int k = 0; k < N; ++k) {
            int role = 0;
            for (int tr = 0; tr < 2; ++tr) {
                int r = up[size_t(tr)][size_t(k)] >= 0 ? 1 : 0;
                for (int c : children[size_t(tr)][size_t(k)])
                    r |= 2 << type[size_t(tr)][size_t(c)];
                role = role * 8 + r;
            }
            first_of_role.emplace(role, k);
        }
        std::vector<bool> sampled(size_t(N), false);
        for (const auto& [role, k] : first_of_role)
            sampled[size_t(k)] = true;
        const int D = t->depth;
        t->nparts = 2 * P;
        t->stages.resize(size_t(2 * D));
        auto hop = [&](int r, int parent, int part, int h) {
            t->stages[size_t(D - h)].push_back({r, parent, part});
            t->stages[size_t(D + h - 1)].push_back({parent, r, part});
        };
        // One rail of each tree: the hops of part j = 0 (through each node's first NIC port).
        // A window's cost on a subset of the tree's hops is still at most the tree's, and in a
        // regular communicator the other rails' parts are the same hops moved to their own NICs
        // and rails, loaded alike on a rail-optimised fabric: a sample of every rail (16 parts
        // on 8 NIC ports) looked up 8 times the routes for the same maximum (29% of a 1 GiB
        // all-reduce on 100,000 GPUs). Where rails share links (leaves that take every port of
        // a node) the bound is lower than it could be, and the tree is planned where a tighter
        // bound would have skipped it: the same choice, at more cost.
        const int j = 0;
        for (int tr = 0; tr < 2; ++tr) {
            const int part = tr * P + j;
            auto head_hop = [&](int k) {
                const int u = up[size_t(tr)][size_t(k)];
                const int at = type[size_t(tr)][size_t(k)] == 0 && g > 1 ? 1 : 0;
                hop(intra(k, j, 0), intra(u, j, at), part, head_depth[size_t(tr)][size_t(k)]);
            };
            for (int k = 0; k < N; ++k) {
                if (sampled[size_t(k)]) {
                    for (int i = 1; i < g; ++i)
                        hop(intra(k, j, i), intra(k, j, i - 1), part,
                            head_depth[size_t(tr)][size_t(k)] + i);
                }
                if (up[size_t(tr)][size_t(k)] >= 0)
                    head_hop(k);
            }
        }
        for (int o = 0; o < 2 * D; ++o)
            t->stage_reduces.push_back(o < D);
        load_pipeline(*t, false);
        tree_sample_ = std::move(t);
    });
    return *tree_sample_;
}

void Plan::load_pipeline(TreeData& t, bool all_windows) const {
    const int S = static_cast<int>(t.stages.size());
    // Each hop's route looked up once (a tree across nodes has 2 x NIC ports parts): its
    // stage's level (pattern_level: the slowest link any hop crosses) and, per protocol,
    // its wire bytes (flow_efficiency: by the route's level; tree hops join ranks only).
    std::vector<std::vector<const RouteInfo*>> stage_routes(static_cast<size_t>(S));
    for (int o = 0; o < S; ++o) {
        LinkLevel worst = LinkLevel::nvlink;
        for (const auto& h : t.stages[size_t(o)]) {
            const RouteInfo& r = route(h.src, h.dst);
            stage_routes[size_t(o)].push_back(&r);
            worst = std::max(worst, r.level);
        }
        t.stage_level.push_back(stage_routes[size_t(o)].empty() ? intra_level : worst);
    }
    // Each stage's flows with their routes and wire bytes looked up once per protocol,
    // not once per window (a window is every stage range: 2D^2 of them).
    for (Protocol p : hardware::kAllProtocols) {
        auto& sl = t.stage_loads[idx(p)];
        sl.resize(size_t(S));
        for (int o = 0; o < S; ++o) {
            for (const RouteInfo* r : stage_routes[size_t(o)])
                sl[size_t(o)].push_back({r, 1.0 / efficiency(r->level, p)});
        }
    }
    // The windows of every protocol in one walk of the routes' edges: the protocols load the
    // same routes, with wire bytes that differ (each protocol's sums and maxima are taken in
    // the same order as alone: the same numbers). In one node every window is computed here
    // (a tree of n - 1 hops). Across nodes the tree has 2 x NIC ports parts, 8 times the hops:
    // the windows that start at stage 0 or end at the last one are computed here, those a
    // pipeline of few chunks needs in between on first use (pipeline_rounds).
    using Costs = ProtocolEdgeLoads::Load;
    ProtocolEdgeLoads loads(topo);
    // Loads only grow as a window widens, so the costliest edge is the previous one or an edge
    // the new stage loaded: the same maximum, without rescanning every edge.
    auto widen = [&](int o, Costs worst) {
        const auto& routes = stage_routes[size_t(o)];
        for (std::size_t i = 0; i < routes.size(); ++i) {
            Costs wire;
            for (Protocol p : hardware::kAllProtocols)
                wire[idx(p)] = t.stage_loads[idx(p)][size_t(o)][i].wire;
            loads.add(*routes[i], wire);
        }
        for (const RouteInfo* r : routes) {
            const Costs on = loads.max_costs_on(*r);
            for (std::size_t k = 0; k < on.size(); ++k)
                worst[k] = std::max(worst[k], on[k]);
        }
        return worst;
    };
    if (all_windows) {
        for (Protocol p : hardware::kAllProtocols)
            t.window[idx(p)].assign(size_t(S * S), 0.0);
        for (int lo = 0; lo < S; ++lo) {
            loads.clear();
            Costs worst{};
            for (int hi = lo; hi < S; ++hi) {
                worst = widen(hi, worst);
                for (Protocol p : hardware::kAllProtocols)
                    t.window[idx(p)][size_t(lo * S + hi)] = worst[idx(p)];
            }
        }
        return;
    }
    for (Protocol p : hardware::kAllProtocols) {
        t.prefix[idx(p)].assign(size_t(S), 0.0);
        t.suffix[idx(p)].assign(size_t(S), 0.0);
    }
    loads.clear();
    Costs worst{};
    for (int hi = 0; hi < S; ++hi) {
        worst = widen(hi, worst);
        for (Protocol p : hardware::kAllProtocols)
            t.prefix[idx(p)][size_t(hi)] = worst[idx(p)];
    }
    loads.clear();
    worst = Costs{};
    for (int lo = S - 1; lo >= 0; --lo) {
        worst = widen(lo, worst);
        for (Protocol p : hardware::kAllProtocols)
            t.suffix[idx(p)][size_t(lo)] = worst[idx(p)];
    }
}

const TreeData& Plan::chains(int root, bool reduce) const {
    ChainsEntry* entry = nullptr;
    {
        std::shared_lock<std::shared_mutex> lock(chains_mutex_); // readers side by side
        auto it = chains_.find({root, reduce});
        if (it != chains_.end())
            entry = it->second.get();
    }
    if (entry == nullptr) {
        std::unique_lock<std::shared_mutex> lock(chains_mutex_);
        auto& slot = chains_[{root, reduce}];
        if (!slot)
            slot = std::make_unique<ChainsEntry>();
        entry = slot.get();
    }
    if (const TreeData* built = entry->data.load(std::memory_order_acquire))
        return *built;
    // NCCL runs a broadcast or reduce on every ring channel, each over its own ring with
    // 1/channels of the buffer (src/device/broadcast.h, reduce.h: the channel's part of the
    // buffer; src/enqueue.cc splits it over nChannels): a chain from the root (broadcast) or
    // ending at it (reduce) per channel; stage j runs hop j of every chain.
    auto t = std::make_unique<TreeData>();
    t->nparts = channels;
    t->stages.resize(size_t(std::max(0, n - 1)));
    for (int c = 0; c < channels; ++c) {
        const auto& cycle = cycles[size_t(c)];
        int pos = 0;
        while (cycle[size_t(pos)] != root)
            ++pos;
        const int start = (pos + (reduce ? 1 : 0)) % n;
        for (int j = 0; j + 1 < n; ++j)
            t->stages[size_t(j)].push_back(
                {cycle[size_t((start + j) % n)], cycle[size_t((start + j + 1) % n)], c});
    }
    t->stage_reduces.assign(t->stages.size(), reduce);
    load_pipeline(*t, false);
    // Published as CommunicatorCache publishes a communicator: the build is deterministic, so a
    // racing duplicate equals the first one published, and is dropped.
    const TreeData* first = nullptr;
    if (entry->data.compare_exchange_strong(first, t.get(), std::memory_order_acq_rel,
                                            std::memory_order_acquire))
        return *t.release();
    return *first;
}

double Plan::tree_rounds(Protocol p, std::int64_t K) const {
    return pipeline_rounds(tree(), p, K);
}

double Plan::pipeline_rounds(const TreeData& t, Protocol p, std::int64_t K) const {
    const int S = static_cast<int>(t.stages.size());
    // Round r runs stages max(0, r - K + 1) .. min(S - 1, r); rounds S-1 .. K-1 run them all.
    auto sum_rounds = [&](auto&& window) {
        const std::int64_t rounds = K + S - 1;
        const std::int64_t steady = std::max<std::int64_t>(0, K - S + 1);
        double sum = static_cast<double>(steady) * window(0, S - 1);
        for (std::int64_t r = 0; r < rounds; ++r) {
            if (r >= S - 1 && r <= K - 1) {
                r = K - 1; // skip the steady block, counted above
                continue;
            }
            sum += window(static_cast<int>(std::max<std::int64_t>(0, r - K + 1)),
                          static_cast<int>(std::min<std::int64_t>(S - 1, r)));
        }
        return sum;
    };
    if (!t.window[idx(p)].empty())
        return sum_rounds([&](int lo, int hi) { return t.window[idx(p)][size_t(lo * S + hi)]; });
    // Across nodes: windows from stage 0 and to stage S-1 were computed with the tree; those
    // in between (pipelines of K < S - 1 chunks) are computed once per chunk count.
    const std::vector<double>* inner = nullptr;
    if (K < S - 1) {
        std::lock_guard<std::mutex> lock(tree_inner_mutex_);
        auto& slot = tree_inner_[{&t, idx(p), K}];
        const auto& sl = t.stage_loads[idx(p)];
        // Each window summed afresh where that is cheap (every tree of NCCL's, short chains:
        // the same sums as always); slid along for long chains.
        if (slot.empty() && (S - K - 1) * K > (std::int64_t{1} << 16))
            slot = sliding_middle_windows(topo, sl, S, K);
        if (slot.empty()) {
            EdgeLoads loads(topo);
            for (std::int64_t lo = 1; lo + K - 1 <= S - 2; ++lo) {
                loads.clear();
                for (std::int64_t o = lo; o < lo + K; ++o) {
                    for (const TreeData::Loaded& f : sl[size_t(o)])
                        loads.add(*f.route, f.wire);
                }
                slot.push_back(loads.max_cost());
            }
        }
        inner = &slot; // std::map nodes stay put
    }
    const auto& pre = t.prefix[idx(p)];
    const auto& suf = t.suffix[idx(p)];
    return sum_rounds([&](int lo, int hi) {
        if (lo == 0)
            return pre[size_t(hi)];
        if (hi == S - 1)
            return suf[size_t(lo)];
        return (*inner)[size_t(lo - 1)];
    });
}

const MultiNodeData& Plan::multi() const {
    std::call_once(multi_once_, [this] {
        auto m = std::make_unique<MultiNodeData>();
        const int N = static_cast<int>(node_ranks.size());
        const int g = static_cast<int>(node_ranks.front().size());
        const auto& node = topo.spec().node;
        m->per_node = g;
        m->heads = std::max(1, std::min(g, node.nic_ports()));
        const int P = m->heads;
        // The head of channel j is the rank beside NIC port j (NodeSpec: port j sits by GPU
        // j * gpus / ports); in a partial node, the j-th of its ranks.
        auto head = [&](int k, int j) {
            return node_ranks[size_t(k)][size_t(static_cast<long>(j) * g / P)];
        };
        // NCCL's double binary tree over nodes (ncclGetDtree): tree 1 mirrors tree 0 (N even)
        // or shifts it by one (N odd).
        auto node_parent = [N](int t, int k) {
            if (t == 0)
                return btree_parent(k, N);
            if (N % 2 == 0) {
                const int up = btree_parent(N - 1 - k, N);
                return up < 0 ? -1 : N - 1 - up;
            }
            const int up = btree_parent((k - 1 + N) % N, N);
            return up < 0 ? -1 : (up + 1) % N;
        };
        for (int t = 0; t < 2; ++t) {
            auto& parent = m->node_parent[size_t(t)];
            auto& depth = m->node_depth[size_t(t)];
            parent.resize(size_t(N));
            depth.resize(size_t(N));
            for (int k = 0; k < N; ++k) {
                parent[size_t(k)] = node_parent(t, k);
                int d = 0;
                for (int u = node_parent(t, k); u >= 0; u = node_parent(t, u))
                    ++d;
                depth[size_t(k)] = d;
                m->tree_depth = std::max(m->tree_depth, d);
            }
        }
        for (int j = 0; j < P; ++j)
            m->head_local.push_back(static_cast<int>(static_cast<long>(j) * g / P));
        // CollNet's patterns only where the fabric reduces (elsewhere why_not refuses it): on
        // 100,000 GPUs they are 3.2 million transfers, each a route to look up.
        const bool collnet = topo.spec().network.in_network_reduction;
        std::vector<PFlow> nvls, inter, direct, chain;
        for (int k = 0; k < N; ++k) {
            const auto& r = node_ranks[size_t(k)];
            for (int q = 0; q < g; ++q) {
                // NVLS reduce-scatter (all to the switch, 1/g back) and all-gather (1/g to the
                // switch, all back), pipelined: both at once.
                nvls.push_back({r[size_t(q)], switch_of(k), 1.0 + 1.0 / g});
                nvls.push_back({switch_of(k), r[size_t(q)], 1.0 + 1.0 / g});
            }
            for (int j = 0; j < P; ++j) {
                const int h = head(k, j);
                const int h_local = static_cast<int>(static_cast<long>(j) * g / P);
                for (int q = 0; q < g && collnet; ++q) {
                    if (r[size_t(q)] == h)
                        continue;
                    direct.push_back({r[size_t(q)], h, 1.0 / P}); // reduce-scatter to heads
                    direct.push_back({h, r[size_t(q)], 1.0 / P}); // all-gather from heads
                }
                for (int i = 0; i + 1 < g && collnet; ++i) { // the chain, up and back down
                    const int a = r[size_t((h_local + i) % g)];
                    const int b = r[size_t((h_local + i + 1) % g)];
                    chain.push_back({b, a, 1.0 / P});
                    chain.push_back({a, b, 1.0 / P});
                }
                // The two trees over nodes each carry half of the head's share.
                for (int t = 0; t < 2; ++t) {
                    const int parent = node_parent(t, k);
                    if (parent < 0)
                        continue;
                    inter.push_back({h, head(parent, j), 0.5 / P});
                    inter.push_back({head(parent, j), h, 0.5 / P});
                }
            }
        }
        if (node.nvls && node.fabric == hardware::IntraNodeFabric::nvswitch && g >= 2)
            m->nvls_intra = pattern_cost(nvls, Protocol::simple);
        m->nvls_tree_inter = pattern_cost(inter, Protocol::simple);
        m->collnet_direct_intra = pattern_cost(direct, Protocol::simple);
        m->collnet_chain_intra = pattern_cost(chain, Protocol::simple);
        // A head's NIC port to the leaf switch, which reduces: 1/P of S each way.
        const double port = std::min(node.nic_port_bandwidth(),
                                     node.pcie.bandwidth * std::max(1, node.nics / node.gpus));
        m->collnet_inter = 1.0 / (P * port * efficiency(LinkLevel::network, Protocol::simple));
        multi_ = std::move(m);
    });
    return *multi_;
}

} // namespace clustersim::strategies::collectives::detail
