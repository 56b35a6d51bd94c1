#include "strategies/collectives/torus.h"

#include "base/error.h"
#include "strategies/collectives/plan.h"
#include "strategies/collectives/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>

namespace clustersim::strategies::collectives::detail {

int TorusAxis::hops_forward() const {
    switch (mode) {
    case Mode::ring:
        return size / 2;
    case Mode::line:
    case Mode::one_way_ring:
        return size - 1;
    }
    return 0;
}

int TorusAxis::hops_backward() const {
    switch (mode) {
    case Mode::ring:
        return (size - 1) / 2; // even n: one hop fewer backward than forward
    case Mode::line:
        return size - 1;
    case Mode::one_way_ring:
        return 0;
    }
    return 0;
}

int TorusAxis::steps() const {
    return std::max(hops_forward(), hops_backward());
}

namespace {

// A rank's place: 0 the device in its chip, 1-3 the chip's x, y, z, 4 the slice.
constexpr int kDims = 5;
using Place = std::array<int, kDims>;

/// Bytes per second per direction a device gets over the DCN: its PCIe link to its host, and its
/// share of its NIC (and of the NIC's PCIe slot) among the communicator's ranks on that NIC.
double dcn_bandwidth(const hardware::Topology& topo, const std::vector<int>& gpus) {
    const hardware::NodeSpec& n = topo.spec().node;
    std::map<hardware::Topology::VertexId, int> per_nic;
    int share = 1;
    for (int g : gpus)
        share = std::max(share, ++per_nic[topo.gpu_nic(g)]);
    const double slot = n.nics > n.gpus ? n.pcie.bandwidth * (n.nics / n.gpus) : n.pcie.bandwidth;
    return std::min(n.pcie.bandwidth, std::min(n.nic_port_bandwidth(), slot) / share);
}

/// Seconds per byte of the shard an axis's reduce-scatter starts from: the order of the axes.
double cost_per_byte(const TorusAxis& a) {
    return a.steps() / (a.size * a.bandwidth);
}

} // namespace

TorusGrid torus_grid(const hardware::Topology& topo, const std::vector<int>& gpus) {
    const hardware::ClusterSpec& spec = topo.spec();
    const hardware::TorusSpec& t = spec.torus;
    TorusGrid grid;
    const int n = static_cast<int>(gpus.size());
    std::vector<Place> place(gpus.size());
    std::array<std::set<int>, kDims> values;
    for (std::size_t r = 0; r < gpus.size(); ++r) {
        const hardware::TorusPlace p = hardware::coordinates(t, gpus[r] % spec.node.gpus);
        place[r] = {p.core, p.chip[0], p.chip[1], p.chip[2], topo.node_of(gpus[r])};
        for (int d = 0; d < kDims; ++d)
            values[static_cast<std::size_t>(d)].insert(place[r][static_cast<std::size_t>(d)]);
    }
    long product = 1;
    for (const auto& v : values)
        product *= static_cast<long>(v.size());
    if (product != n) {
        grid.why_not = fmt::format(
            "--algo torus runs on a sub-grid of the torus (a range of chips on each axis, the "
            "same on every slice); these {} devices span {} device(s) a chip, {}x{}x{} chips and "
            "{} slice(s), {} places",
            n, values[0].size(), values[1].size(), values[2].size(), values[3].size(),
            values[4].size(), product);
        return grid;
    }
    for (int d = 1; d <= 3; ++d) {
        const auto& v = values[static_cast<std::size_t>(d)];
        if (*v.rbegin() - *v.begin() + 1 != static_cast<int>(v.size())) {
            grid.why_not = fmt::format("--algo torus needs neighbouring chips on each axis; "
                                       "these take {} of chips {} to {} on axis {}",
                                       v.size(), *v.begin(), *v.rbegin(), "xyz"[d - 1]);
            return grid;
        }
    }
    const int cores = static_cast<int>(values[0].size());
    for (int d = 0; d < kDims; ++d) {
        const auto& v = values[static_cast<std::size_t>(d)];
        if (v.size() < 2)
            continue;
        TorusAxis a;
        a.size = static_cast<int>(v.size());
        if (d == 0) {
            a.kind = TorusAxis::Kind::die;
            a.bandwidth = t.die_link.bandwidth;
            a.hop_latency = t.die_link.latency;
        } else if (d <= 3) {
            a.kind = TorusAxis::Kind::ici;
            a.axis = d - 1;
            a.mode = a.size == t.shape[static_cast<std::size_t>(a.axis)] && t.wraps(a.axis)
                         ? TorusAxis::Mode::ring
                         : TorusAxis::Mode::line;
            // The devices of a chip share its links: each of their rings gets a share.
            a.bandwidth = t.link.bandwidth / cores;
            a.hop_latency = t.link.latency;
        } else {
            a.kind = TorusAxis::Kind::dcn;
            a.mode = TorusAxis::Mode::one_way_ring;
            a.bandwidth = dcn_bandwidth(topo, gpus);
        }
        // Lines: ranks alike on every other dimension, ordered along this one.
        std::map<Place, std::vector<int>> lines;
        a.position.assign(gpus.size(), 0);
        for (int r = 0; r < n; ++r) {
            Place key = place[static_cast<std::size_t>(r)];
            const int value = key[static_cast<std::size_t>(d)];
            key[static_cast<std::size_t>(d)] = 0;
            const int pos = static_cast<int>(std::distance(v.begin(), v.find(value)));
            a.position[static_cast<std::size_t>(r)] = pos;
            auto& line = lines[key];
            line.resize(v.size(), -1);
            line[static_cast<std::size_t>(pos)] = r;
        }
        for (auto& [key, line] : lines)
            a.lines.push_back(std::move(line));
        if (a.kind == TorusAxis::Kind::dcn)
            a.hop_latency = topo.gpu_route(gpus[static_cast<std::size_t>(a.lines[0][0])],
                                           gpus[static_cast<std::size_t>(a.lines[0][1])])
                                .latency;
        grid.axes.push_back(std::move(a));
    }
    // The die axis first, the ICI axes by cost per byte (stable: x, y, z), the DCN last.
    std::stable_sort(
        grid.axes.begin(), grid.axes.end(), [](const TorusAxis& a, const TorusAxis& b) {
            if (a.kind != b.kind)
                return a.kind < b.kind;
            return a.kind == TorusAxis::Kind::ici && cost_per_byte(a) < cost_per_byte(b);
        });
    return grid;
}

namespace {

/// Chunks each directed link of an axis carries at each step of an all-to-all forwarded hop by
/// hop: loads[k][(p, q)] for positions p -> q (neighbours), steps k = 0, 1, ...; the shorter
/// way round on a ring, half each way at a tie. The DCN's pairs go directly, in one step.
using LinkLoads = std::vector<std::map<std::pair<int, int>, double>>;

LinkLoads all_to_all_loads(const TorusAxis& a) {
    const int n = a.size;
    LinkLoads loads;
    auto add = [&](int step, int p, int q, double w) {
        if (static_cast<int>(loads.size()) <= step)
            loads.resize(static_cast<std::size_t>(step) + 1);
        loads[static_cast<std::size_t>(step)][{p, q}] += w;
    };
    for (int s = 0; s < n; ++s) {
        for (int d = 0; d < n; ++d) {
            if (s == d)
                continue;
            if (a.mode == TorusAxis::Mode::one_way_ring) {
                add(0, s, d, 1.0);
                continue;
            }
            const bool ring = a.mode == TorusAxis::Mode::ring;
            const int fwd = ring ? (d - s + n) % n : (d > s ? d - s : n * 2);
            const int bwd = ring ? (s - d + n) % n : (d < s ? s - d : n * 2);
            const int dist = std::min(fwd, bwd);
            for (int dir : {1, -1}) {
                if ((dir == 1 ? fwd : bwd) != dist)
                    continue;
                const double w = fwd == bwd ? 0.5 : 1.0;
                for (int k = 0; k < dist; ++k) {
                    const int from = ((s + dir * k) % n + n) % n;
                    add(k, from, ((from + dir) % n + n) % n, w);
                }
            }
        }
    }
    return loads;
}

double max_load(const std::map<std::pair<int, int>, double>& step) {
    double m = 0;
    for (const auto& [pair, w] : step)
        m = std::max(m, w);
    return m;
}

/// A reduce-scatter (or all-gather) over the axis of a shard of `bytes`: steps of bytes / n per
/// link and direction.
double gather_seconds(const TorusAxis& a, double bytes) {
    return a.steps() * (a.hop_latency.seconds() + bytes / a.size / a.bandwidth);
}

double all_to_all_seconds(const TorusAxis& a, double bytes) {
    const double chunk = bytes / a.size; // what a device sends to each position on the axis
    double t = 0;
    for (const auto& step : all_to_all_loads(a))
        t += a.hop_latency.seconds() + max_load(step) * chunk / a.bandwidth;
    return t;
}

} // namespace

double torus_seconds(const TorusGrid& grid, Op op, double bytes, int) {
    double t = 0;
    double shard = bytes;
    for (const TorusAxis& a : grid.axes) {
        if (op == Op::all_to_all) {
            t += all_to_all_seconds(a, bytes);
            continue;
        }
        t += gather_seconds(a, shard);
        shard /= a.size;
    }
    return op == Op::all_reduce ? 2 * t : t;
}

namespace {

enum class AxisWork : std::uint8_t { reduce_scatter, all_gather, all_to_all };

/// One axis of a torus collective: its steps' flows, and (reduce-scatter, all-gather) the
/// element ranges each rank's ring splits.
class TorusPhase : public Phase {
public:
    /// `bytes`: the shard the axis splits (the whole buffer for all_to_all); `ranges`: each
    /// rank's element range the axis splits (reduce-scatter, all-gather).
    TorusPhase(const TorusAxis& axis, AxisWork work, double bytes,
               std::vector<std::pair<std::int64_t, std::int64_t>> ranges)
        : axis_(axis)
        , work_(work)
        , ranges_(std::move(ranges)) {
        if (work == AxisWork::all_to_all) {
            const double chunk = bytes / axis.size;
            for (const auto& step : all_to_all_loads(axis)) {
                auto& flows = steps_.emplace_back();
                for (const auto& line : axis.lines)
                    for (const auto& [pair, w] : step)
                        flows.push_back({line[static_cast<std::size_t>(pair.first)],
                                         line[static_cast<std::size_t>(pair.second)], w * chunk});
            }
            return;
        }
        const double per = bytes / axis.size;
        for (int k = 1; k <= axis.steps(); ++k) {
            auto& flows = steps_.emplace_back();
            for (const auto& line : axis.lines)
                for (const auto& [p, q] : hops(k))
                    flows.push_back({line[static_cast<std::size_t>(p)],
                                     line[static_cast<std::size_t>(q)], per});
        }
    }

    int steps() const override { return static_cast<int>(steps_.size()); }
    sim::Time step_latency(int) const override { return axis_.hop_latency; }
    std::vector<StepRange> rounds(int max_rounds) const override {
        // An all-to-all's steps carry different loads on different links of a line: one round
        // each (an axis has at most a few dozen); a ring's and a line's gathers load their
        // busiest link every step, so steps group exactly.
        std::vector<StepRange> out;
        const int S = steps();
        const int R = work_ == AxisWork::all_to_all ? S : std::min(S, std::max(1, max_rounds));
        for (int r = 0; r < R; ++r)
            out.push_back({static_cast<int>(static_cast<long>(r) * S / R),
                           static_cast<int>(static_cast<long>(r + 1) * S / R)});
        return out;
    }
    void round_flows(StepRange r, std::vector<PFlow>& out) const override {
        std::map<std::pair<int, int>, double> sum;
        for (int s = r.begin; s < r.end; ++s)
            for (const PFlow& f : steps_[static_cast<std::size_t>(s)])
                sum[{f.src, f.dst}] += f.bytes;
        for (const auto& [pair, bytes] : sum)
            out.push_back({pair.first, pair.second, bytes});
    }
    void transfers(int step, std::vector<Transfer>& out) const override;

private:
    /// The hops (positions p -> q) of step k (1-based) of a gather or reduce-scatter.
    std::vector<std::pair<int, int>> hops(int k) const;
    /// Part `j` of rank `r`'s range: (offset, count).
    std::pair<std::int64_t, std::int64_t> part(int r, int j) const {
        const auto [off, cnt] = ranges_[static_cast<std::size_t>(r)];
        const std::int64_t b = part_begin(j, axis_.size, cnt);
        return {off + b, part_begin(j + 1, axis_.size, cnt) - b};
    }

    TorusAxis axis_;
    AxisWork work_;
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges_;
    std::vector<std::vector<PFlow>> steps_;
};

std::vector<std::pair<int, int>> TorusPhase::hops(int k) const {
    const int n = axis_.size;
    std::vector<std::pair<int, int>> out;
    const bool rs = work_ == AxisWork::reduce_scatter;
    for (int p = 0; p < n; ++p) {
        if (axis_.mode == TorusAxis::Mode::line) {
            // A gather's shards leave the ends first; a reduce-scatter's partial sums arrive
            // at them last (the mirror image).
            if (p <= n - 2 && (rs ? p <= k - 1 : p >= k - 1))
                out.emplace_back(p, p + 1);
            if (p >= 1 && (rs ? p >= n - k : p <= n - k))
                out.emplace_back(p, p - 1);
            continue;
        }
        if (k <= axis_.hops_forward())
            out.emplace_back(p, (p + 1) % n);
        if (k <= axis_.hops_backward())
            out.emplace_back(p, (p - 1 + n) % n);
    }
    return out;
}

void TorusPhase::transfers(int step, std::vector<Transfer>& out) const {
    if (work_ == AxisWork::all_to_all)
        throw InputError("values mode does not replay the torus all_to_all: its chunks are "
                         "forwarded through the chips between, for which nccl-tests' buffers "
                         "have no room");
    const int k = step + 1;
    const int n = axis_.size;
    const bool rs = work_ == AxisWork::reduce_scatter;
    const int hf = axis_.hops_forward(), hb = axis_.hops_backward();
    const bool line = axis_.mode == TorusAxis::Mode::line;
    auto mod = [n](int x) { return (x % n + n) % n; };
    for (const auto& ranks : axis_.lines) {
        for (const auto& [p, q] : hops(k)) {
            const bool forward = q == mod(p + 1) && !(line && q != p + 1);
            // Which part moves: a gather's shard from k - 1 hops back; a reduce-scatter's
            // partial sum of the part whose owner is that many hops ahead (torus.h).
            int j = 0;
            if (line)
                j = rs ? (forward ? n - k + p : k + p - n) : (forward ? p - k + 1 : p + k - 1);
            else
                j = rs ? (forward ? mod(p + hf - k + 1) : mod(p - (hb - k + 1)))
                       : (forward ? mod(p - k + 1) : mod(p + k - 1));
            const int src = ranks[static_cast<std::size_t>(p)];
            const int dst = ranks[static_cast<std::size_t>(q)];
            const auto [off, cnt] = part(src, j);
            out.push_back({src, dst, off, off, cnt, rs});
        }
    }
}

} // namespace

void add_torus_phases(Decomposition& d, const Plan& plan, const Collective& c,
                      std::int64_t elements) {
    const TorusGrid& grid = *plan.torus;
    const double S = static_cast<double>(c.bytes);
    const int n = plan.n;
    d.start_latency = sim::Time::zero(); // compiled into the program: no launch (torus.h)
    d.memory_bytes.assign(static_cast<std::size_t>(n), 0.0);
    d.compute.assign(static_cast<std::size_t>(n), sim::Time::zero());
    const std::size_t k = grid.axes.size();
    if (c.op == Op::all_to_all) {
        for (const TorusAxis& a : grid.axes)
            d.phases.push_back(std::make_unique<TorusPhase>(
                a, AxisWork::all_to_all, S, std::vector<std::pair<std::int64_t, std::int64_t>>{}));
        return;
    }
    // Each rank's range before each axis's reduce-scatter (after its all-gather).
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> ranges(k);
    std::vector<double> shard(k);
    std::vector<std::pair<std::int64_t, std::int64_t>> now(static_cast<std::size_t>(n),
                                                           {0, elements});
    double bytes = S;
    for (std::size_t i = 0; i < k; ++i) {
        ranges[i] = now;
        shard[i] = bytes;
        const TorusAxis& a = grid.axes[i];
        for (int r = 0; r < n; ++r) {
            auto& [off, cnt] = now[static_cast<std::size_t>(r)];
            const int j = a.position[static_cast<std::size_t>(r)];
            const std::int64_t b = part_begin(j, a.size, cnt);
            off += b;
            cnt = part_begin(j + 1, a.size, cnt) - b;
        }
        bytes /= a.size;
    }
    if (c.op == Op::reduce_scatter || c.op == Op::all_reduce) {
        for (std::size_t i = 0; i < k; ++i)
            d.phases.push_back(std::make_unique<TorusPhase>(grid.axes[i], AxisWork::reduce_scatter,
                                                            shard[i], ranges[i]));
    }
    if (c.op == Op::all_gather || c.op == Op::all_reduce) {
        for (std::size_t i = k; i-- > 0;)
            d.phases.push_back(std::make_unique<TorusPhase>(grid.axes[i], AxisWork::all_gather,
                                                            shard[i], ranges[i]));
    }
}

} // namespace clustersim::strategies::collectives::detail
