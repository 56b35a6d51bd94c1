#include "strategies/collectives/schedule.h"

#include "base/error.h"
#include "strategies/collectives/communicator.h"
#include "strategies/collectives/torus.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace clustersim::strategies::collectives {

using detail::part_begin;
using detail::PFlow;
using detail::Plan;
using hardware::LinkLevel;

namespace {

std::vector<PFlow> aggregate(const std::map<std::pair<int, int>, double>& m) {
    std::vector<PFlow> out;
    for (const auto& [pair, bytes] : m)
        out.push_back({pair.first, pair.second, bytes});
    return out;
}

/// `steps` split into at most `max_rounds` ranges of (nearly) equal length.
std::vector<StepRange> even_rounds(int steps, int max_rounds) {
    std::vector<StepRange> out;
    const int R = std::min(steps, std::max(1, max_rounds));
    for (int r = 0; r < R; ++r)
        out.push_back({static_cast<int>(static_cast<long>(r) * steps / R),
                       static_cast<int>(static_cast<long>(r + 1) * steps / R)});
    return out;
}

// ------------------------------------------------------------------------------------------
// Rings. Every step, each position of each cycle hands one block (split into one sub-block per
// channel) to the next position. Reduce-scatter: at step s position p sends block
// B(p - 1 - s), which the receiver adds to its own, so that position q ends with the full sum of
// block B(q). All-gather: position p sends block B(p - s), which it holds complete.
// All-reduce: reduce-scatter, then all-gather.

enum class RingKind { reduce_scatter, all_gather, all_reduce };

struct RingGroup {
    std::vector<std::vector<int>> cycles;   ///< one per channel, all of the same length
    std::vector<std::vector<int>> block_of; ///< per channel: block index of each position
    std::int64_t offset = 0;                ///< the group's element range
    std::int64_t count = 0;
    double fraction = 1; ///< of the collective's bytes covered by the range
};

class RingPhase : public Phase {
public:
    RingPhase(const Plan& plan, RingKind kind, std::vector<RingGroup> groups, double bytes,
              Protocol p, std::optional<sim::Time> step_latency = std::nullopt)
        : kind_(kind)
        , groups_(std::move(groups)) {
        length_ = static_cast<int>(groups_.front().cycles.front().size());
        std::map<std::pair<int, int>, double> step;
        for (const RingGroup& g : groups_) {
            const double per = bytes * g.fraction / length_ / static_cast<double>(g.cycles.size());
            for (const auto& cycle : g.cycles) {
                for (int q = 0; q < length_ && length_ > 1; ++q)
                    step[{cycle[size_t(q)], cycle[size_t((q + 1) % length_)]}] += per;
            }
        }
        step_flows_ = aggregate(step);
        latency_ =
            step_latency ? *step_latency : plan.step_latency(plan.pattern_level(step_flows_), p);
    }

    int steps() const override { return (length_ - 1) * (kind_ == RingKind::all_reduce ? 2 : 1); }
    sim::Time step_latency(int) const override { return latency_; }
    std::vector<StepRange> rounds(int max_rounds) const override {
        return even_rounds(steps(), max_rounds);
    }
    void round_flows(StepRange r, std::vector<PFlow>& out) const override {
        const double k = r.end - r.begin;
        for (const PFlow& f : step_flows_)
            out.push_back({f.src, f.dst, f.bytes * k});
    }
    std::size_t round_size(StepRange) const override { return step_flows_.size(); }
    void transfers(int s, std::vector<Transfer>& out) const override {
        const int L = length_;
        const bool reducing =
            kind_ == RingKind::reduce_scatter || (kind_ == RingKind::all_reduce && s < L - 1);
        const int t = kind_ == RingKind::all_reduce && !reducing ? s - (L - 1) : s;
        for (const RingGroup& g : groups_) {
            const auto C = static_cast<std::int64_t>(g.cycles.size());
            for (std::size_t c = 0; c < g.cycles.size(); ++c) {
                const auto& cycle = g.cycles[c];
                for (int p = 0; p < L; ++p) {
                    const int pos = reducing ? ((p - 1 - t) % L + L) % L : ((p - t) % L + L) % L;
                    const std::int64_t block = g.block_of[c][size_t(pos)];
                    const std::int64_t b0 = part_begin(block, L, g.count);
                    const std::int64_t b1 = part_begin(block + 1, L, g.count);
                    const std::int64_t lo = b0 + part_begin(std::int64_t(c), C, b1 - b0);
                    const std::int64_t hi = b0 + part_begin(std::int64_t(c) + 1, C, b1 - b0);
                    out.push_back({cycle[size_t(p)], cycle[size_t((p + 1) % L)], g.offset + lo,
                                   g.offset + lo, hi - lo, reducing});
                }
            }
        }
    }

private:
    RingKind kind_;
    std::vector<RingGroup> groups_;
    int length_ = 1;
    std::vector<PFlow> step_flows_;
    sim::Time latency_;
};

// ------------------------------------------------------------------------------------------
// Pipelines (chains and trees): stage o moves chunk k at step k + o, so K chunks take
// K + stages - 1 steps; a stage pays its latency once, at the step its first chunk crosses it.

struct Part {
    std::int64_t offset = 0;
    std::int64_t count = 0;
    double bytes = 0;
};

class PipelinePhase : public Phase {
public:
    /// `least_seconds`: the least time of the pipeline's transfers (NCCL's cap per channel).
    PipelinePhase(std::vector<std::vector<detail::TreeData::Hop>> stages, std::vector<bool> reduces,
                  std::vector<sim::Time> latency, std::vector<Part> parts, std::int64_t chunks,
                  double least_seconds = 0)
        : stages_(std::move(stages))
        , reduces_(std::move(reduces))
        , latency_(std::move(latency))
        , parts_(std::move(parts))
        , K_(chunks)
        , least_(least_seconds) {}
    double least_seconds() const override { return least_; }

    int steps() const override {
        return stages_.empty() ? 0 : static_cast<int>(K_) + static_cast<int>(stages_.size()) - 1;
    }
    sim::Time step_latency(int s) const override {
        return s < static_cast<int>(latency_.size()) ? latency_[size_t(s)] : sim::Time::zero();
    }
    std::vector<StepRange> rounds(int max_rounds) const override {
        // Steps S-1 .. K-1 run every stage (a full pipeline) and are grouped; the fill and
        // drain steps stay alone.
        std::vector<StepRange> out;
        if (steps() == 0)
            return out;
        const int S = static_cast<int>(stages_.size());
        const int first_full = S - 1;
        const int last_full = static_cast<int>(K_) - 1;
        int s = 0;
        for (; s < std::min(first_full, steps()); ++s)
            out.push_back({s, s + 1});
        if (last_full >= first_full) {
            for (StepRange r : even_rounds(last_full - first_full + 1, max_rounds))
                out.push_back({first_full + r.begin, first_full + r.end});
            s = last_full + 1;
        }
        for (; s < steps(); ++s)
            out.push_back({s, s + 1});
        return out;
    }
    void round_flows(StepRange r, std::vector<PFlow>& out) const override {
        const int S = static_cast<int>(stages_.size());
        const bool full = r.begin >= S - 1 && r.end - 1 <= K_ - 1;
        const int last = full ? r.begin + 1 : r.end;
        const double k = full ? r.end - r.begin : 1;
        for (int s = r.begin; s < last; ++s) {
            for (int o = 0; o < S; ++o) {
                const std::int64_t chunk = s - o;
                if (chunk < 0 || chunk >= K_)
                    continue;
                for (const auto& h : stages_[size_t(o)])
                    out.push_back(
                        {h.src, h.dst, k * parts_[size_t(h.part)].bytes / static_cast<double>(K_)});
            }
        }
    }
    std::size_t round_size(StepRange r) const override {
        // As round_flows, counting.
        const int S = static_cast<int>(stages_.size());
        const bool full = r.begin >= S - 1 && r.end - 1 <= K_ - 1;
        const int last = full ? r.begin + 1 : r.end;
        std::size_t n = 0;
        for (int s = r.begin; s < last; ++s) {
            for (int o = 0; o < S; ++o) {
                const std::int64_t chunk = s - o;
                if (chunk >= 0 && chunk < K_)
                    n += stages_[size_t(o)].size();
            }
        }
        return n;
    }
    void transfers(int s, std::vector<Transfer>& out) const override {
        for (int o = 0; o < static_cast<int>(stages_.size()); ++o) {
            const std::int64_t k = s - o;
            if (k < 0 || k >= K_)
                continue;
            for (const auto& h : stages_[size_t(o)]) {
                const Part& part = parts_[size_t(h.part)];
                const std::int64_t lo = part.offset + part_begin(k, K_, part.count);
                const std::int64_t hi = part.offset + part_begin(k + 1, K_, part.count);
                out.push_back({h.src, h.dst, lo, lo, hi - lo, reduces_[size_t(o)]});
            }
        }
    }

private:
    std::vector<std::vector<detail::TreeData::Hop>> stages_;
    std::vector<bool> reduces_;
    std::vector<sim::Time> latency_;
    std::vector<Part> parts_;
    std::int64_t K_;
    double least_ = 0;
};

// ------------------------------------------------------------------------------------------
// Direct: every transfer of the op at once, in one step.

/// The most endpoint pairs one round of a flow simulation holds: a round keeps its flows, their
/// routes and their fold in memory, about 64 bytes a flow before symmetry folds them (an
/// all-to-all on 4,096 GPUs, 16.8 M pairs, holds about 1 GiB), and every pair is visited each
/// round. Refused before any flow is made, instead of minutes and gigabytes later (a direct
/// all-reduce on 16,384 GPUs is 268 M pairs).
constexpr double kMaxRoundPairs = 16777216; // 2^24

class DirectPhase : public Phase {
public:
    DirectPhase(const Plan& plan, Op op, int root, std::int64_t elements, double bytes, Protocol p)
        : plan_(plan)
        , op_(op)
        , root_(root)
        , n_(plan.n)
        , E_(elements)
        , S_(bytes) {
        const double pairs = pair_count();
        if (pairs > kMaxRoundPairs)
            throw InputError("the direct algorithm's " + std::string(to_string(op)) + " on " +
                             std::to_string(n_) + " GPUs moves " +
                             std::to_string(std::llround(pairs)) +
                             " flows at once, more than a flow simulation holds in one round (" +
                             std::to_string(std::llround(kMaxRoundPairs)) +
                             ", about 1 GiB): use --fidelity analytic, fewer GPUs or another "
                             "algorithm (ring, tree)");
        // The level of the slowest route. Every pair across nodes crosses the network, so a
        // round of every pair on several nodes is at the network's, without listing its pairs
        // (2.1 M groups on 4,096 GPUs); else the groups hold every pair the flows do.
        if (all_pairs() && plan.node_ranks.size() > 1) {
            latency_ = plan.step_latency(LinkLevel::network, p);
            return;
        }
        std::vector<PFlow> flows;
        std::vector<std::uint32_t> counts;
        round_groups({0, 1}, flows, counts);
        latency_ =
            plan.step_latency(flows.empty() ? plan.intra_level : plan.pattern_level(flows), p);
    }
    int steps() const override { return 1; }
    sim::Time step_latency(int) const override { return latency_; }
    std::vector<StepRange> rounds(int) const override { return {{0, 1}}; }
    void round_flows(StepRange, std::vector<PFlow>& out) const override {
        const double b = pair_bytes();
        for_each([&](int i, int j) {
            if (i != j)
                plan_.add_p2p(i, j, b, out); // NCCL's p2p: through a PXN relay where it applies
        });
    }
    /// Every pair at once (all-to-all, all-gather, ...): the transfers from one node's ranks
    /// and the legs of their PXN relays (all of which leave from a rank of that node: the relay
    /// is the sender's neighbour) counted per (sender, receiver) in a table of the node's
    /// ranks by the communicator's, never held as a list of n^2. With PXN the 8 transfers
    /// from a DGX's GPUs to one GPU elsewhere are one relay's leg, and a GPU's legs to its
    /// relay for every peer of the relay's rail are one: n (nodes - 1) groups and a few per
    /// GPU, where the transfers are n^2 and their legs nearly twice that.
    void round_groups(StepRange range, std::vector<PFlow>& out,
                      std::vector<std::uint32_t>& counts) const override {
        counts.clear();
        if (!all_pairs()) {
            round_flows(range, out); // n transfers or fewer
            return;
        }
        counts.resize(out.size(), 1); // for any flows the list held before
        const double b = pair_bytes();
        const auto n = static_cast<std::size_t>(n_);
        std::vector<std::uint32_t> count;
        std::vector<PFlow> legs;
        for (std::size_t k = 0; k < plan_.node_ranks.size(); ++k) {
            const std::vector<int>& members = plan_.node_ranks[k];
            count.assign(members.size() * n, 0);
            for (int i : members) {
                for (int j = 0; j < n_; ++j) {
                    if (i == j)
                        continue;
                    legs.clear();
                    plan_.add_p2p(i, j, b, legs);
                    for (const PFlow& leg : legs) {
                        const auto src = static_cast<std::size_t>(leg.src);
                        if (plan_.rank_node[src] != static_cast<int>(k))
                            throw std::logic_error("a PXN leg leaves from another node");
                        ++count[static_cast<std::size_t>(plan_.rank_local[src]) * n +
                                static_cast<std::size_t>(leg.dst)];
                    }
                }
            }
            for (std::size_t a = 0; a < members.size(); ++a) {
                for (std::size_t j = 0; j < n; ++j) {
                    if (const std::uint32_t c = count[a * n + j]) {
                        out.push_back({members[a], static_cast<int>(j), b});
                        counts.push_back(c);
                    }
                }
            }
        }
    }
    void transfers(int, std::vector<Transfer>& out) const override {
        const std::int64_t m = splits_per_rank(op_) ? E_ / n_ : E_;
        for_each([&](int i, int j) {
            switch (op_) {
            case Op::all_reduce:
            case Op::reduce:
                out.push_back({i, j, 0, 0, E_, true});
                break;
            case Op::broadcast:
                out.push_back({i, j, 0, 0, E_, false});
                break;
            case Op::all_gather:
            case Op::gather:
                out.push_back({i, j, i * m, i * m, m, false});
                break;
            case Op::reduce_scatter:
                out.push_back({i, j, j * m, j * m, m, true});
                break;
            case Op::scatter:
                out.push_back({i, j, j * m, j * m, m, false});
                break;
            case Op::all_to_all:
                out.push_back({i, j, j * m, E_ + i * m, m, false});
                break;
            case Op::send_recv:
                out.push_back({i, j, 0, E_, E_, false});
                break;
            }
        });
    }

private:
    /// Every rank sends to every other (for_each's last case).
    bool all_pairs() const {
        return op_ != Op::broadcast && op_ != Op::scatter && op_ != Op::reduce &&
               op_ != Op::gather && op_ != Op::send_recv;
    }
    /// Payload of each pair's transfer.
    double pair_bytes() const {
        switch (op_) {
        case Op::all_reduce:
        case Op::broadcast:
        case Op::reduce:
        case Op::send_recv:
            return S_;
        default:
            return S_ / n_;
        }
    }
    /// The number of f calls for_each makes, counted without making them.
    double pair_count() const {
        const double n = n_;
        switch (op_) {
        case Op::broadcast:
        case Op::reduce:
            return n - 1;
        case Op::scatter:
        case Op::gather:
        case Op::send_recv:
            return n;
        case Op::all_to_all:
            return n * n;
        default:
            return n * (n - 1);
        }
    }

    /// Calls f(src, dst) for every transfer of the op; send_recv on one rank sends to itself.
    template <typename F>
    void for_each(F&& f) const {
        switch (op_) {
        case Op::broadcast:
        case Op::scatter:
            for (int j = 0; j < n_; ++j) {
                if (j != root_ || op_ == Op::scatter)
                    f(root_, j);
            }
            break;
        case Op::reduce:
        case Op::gather:
            for (int i = 0; i < n_; ++i) {
                if (i != root_ || op_ == Op::gather)
                    f(i, root_);
            }
            break;
        case Op::send_recv:
            for (int i = 0; i < n_; ++i)
                f(i, (i + 1) % n_);
            break;
        default:
            for (int i = 0; i < n_; ++i) {
                for (int j = 0; j < n_; ++j) {
                    if (i != j || op_ == Op::all_to_all) // own block stays in place
                        f(i, j);
                }
            }
        }
    }

    const Plan& plan_;
    Op op_;
    int root_;
    int n_;
    std::int64_t E_;
    double S_;
    sim::Time latency_;
};

// ------------------------------------------------------------------------------------------
// NVLS: the node's NVSwitch reduces (multimem.ld_reduce) and multicasts (multimem.st). Per
// chunk, all_reduce: every rank adds its chunk of every block into the switch; each block's
// owner reads the sum back and stores it to the switch, which multicasts it to all ranks.
// all_gather: owners store, the switch multicasts. reduce_scatter: all add, owners read.

struct NvlsGroup {
    std::vector<int> ranks;
    int switch_endpoint = -1;
    std::vector<int> block_of; ///< block owned by each position
    std::int64_t offset = 0;
    std::int64_t count = 0;
    double fraction = 1;
};

/// A phase pipelined over K chunks of `per_chunk_` steps each, every chunk moving the same
/// flows (`chunk_flows_`, one chunk's bytes): its rounds are whole chunks, a round's flows the
/// chunk's times its chunk count; only the first step pays the latency (the pipeline's fill).
class ChunkedPhase : public Phase {
public:
    int steps() const override { return static_cast<int>(K_) * per_chunk_; }
    sim::Time step_latency(int s) const override { return s == 0 ? latency_ : sim::Time::zero(); }
    std::vector<StepRange> rounds(int max_rounds) const override {
        auto out = even_rounds(static_cast<int>(K_), max_rounds);
        for (StepRange& r : out)
            r = {r.begin * per_chunk_, r.end * per_chunk_};
        return out;
    }
    void round_flows(StepRange r, std::vector<PFlow>& out) const override {
        const double k = static_cast<double>(r.end - r.begin) / per_chunk_;
        for (const PFlow& f : chunk_flows_)
            out.push_back({f.src, f.dst, f.bytes * k});
    }
    std::size_t round_size(StepRange) const override { return chunk_flows_.size(); }

protected:
    ChunkedPhase(std::int64_t chunks, sim::Time latency)
        : K_(chunks)
        , latency_(latency) {}

    std::int64_t K_;
    sim::Time latency_;
    int per_chunk_ = 4;
    std::vector<PFlow> chunk_flows_;
};

class NvlsPhase : public ChunkedPhase {
public:
    NvlsPhase(RingKind kind, std::vector<NvlsGroup> groups, double bytes, std::int64_t chunks,
              sim::Time latency)
        : ChunkedPhase(chunks, latency)
        , kind_(kind)
        , groups_(std::move(groups)) {
        per_chunk_ = kind_ == RingKind::all_reduce ? 4 : 2;
        for (const NvlsGroup& g : groups_) {
            const double L = static_cast<double>(g.ranks.size());
            const double chunk = bytes * g.fraction / static_cast<double>(K_);
            for (int r : g.ranks) {
                const double up = kind_ == RingKind::all_reduce   ? chunk * (1 + 1 / L)
                                  : kind_ == RingKind::all_gather ? chunk / L
                                                                  : chunk;
                const double down = kind_ == RingKind::all_reduce   ? chunk * (1 + 1 / L)
                                    : kind_ == RingKind::all_gather ? chunk
                                                                    : chunk / L;
                chunk_flows_.push_back({r, g.switch_endpoint, up});
                chunk_flows_.push_back({g.switch_endpoint, r, down});
            }
        }
    }
    void transfers(int s, std::vector<Transfer>& out) const override {
        const std::int64_t k = s / per_chunk_;
        const int j = s % per_chunk_;
        for (const NvlsGroup& g : groups_) {
            const auto L = static_cast<std::int64_t>(g.ranks.size());
            auto chunk = [&](std::int64_t block, std::int64_t& lo, std::int64_t& len) {
                const std::int64_t b0 = part_begin(block, L, g.count);
                const std::int64_t b1 = part_begin(block + 1, L, g.count);
                lo = g.offset + b0 + part_begin(k, K_, b1 - b0);
                len = g.offset + b0 + part_begin(k + 1, K_, b1 - b0) - lo;
            };
            const int sw = g.switch_endpoint;
            for (std::size_t q = 0; q < g.ranks.size(); ++q) {
                const int r = g.ranks[q];
                const std::int64_t own = g.block_of[q];
                std::int64_t lo = 0, len = 0;
                const bool all_to_switch = (kind_ != RingKind::all_gather && j == 0);
                const bool switch_to_all = (kind_ == RingKind::all_reduce && j == 3) ||
                                           (kind_ == RingKind::all_gather && j == 1);
                if (all_to_switch || switch_to_all) {
                    for (std::int64_t b = 0; b < L; ++b) {
                        chunk(b, lo, len);
                        if (all_to_switch)
                            out.push_back({r, sw, lo, lo, len, true});
                        else
                            out.push_back({sw, r, lo, lo, len, false});
                    }
                    continue;
                }
                chunk(own, lo, len);
                const bool owner_reads = (kind_ == RingKind::all_reduce && j == 1) ||
                                         (kind_ == RingKind::reduce_scatter && j == 1);
                if (owner_reads)
                    out.push_back({sw, r, lo, lo, len, false});
                else // all_reduce j == 2, all_gather j == 0: the owner stores to the switch
                    out.push_back({r, sw, lo, lo, len, false});
            }
        }
    }

private:
    RingKind kind_;
    std::vector<NvlsGroup> groups_;
};

// ------------------------------------------------------------------------------------------
// NVLSTree across nodes, pipelined as NCCL runs it (src/device/all_reduce.h, RunWorkColl for
// NCCL_ALGO_NVLS_TREE: the scatter, tree-up, tree-down and broadcast warps of a channel work on
// consecutive chunks at once). Per chunk: each node's NVSwitch reduces the chunk of every part
// (multimem.ld_reduce) for the part's head, the rank beside NIC port j; the heads reduce up the
// two trees of nodes (ncclGetDtree, half of the part on each, the shape of Plan::multi) and the
// sum comes back down; each head stores its part to the switch, which multicasts it to the
// node's ranks (multimem.st). The values view runs a chunk's stages one step after another;
// the flow view runs every stage of a round's chunks at once, as the steady pipeline does, so
// the slowest of the NVLS links, the NICs and the fabric (shared max-min with whatever else
// runs) sets the pace, and NCCL's cap per channel is each round's least time (min_seconds).
// The pipeline fill (2D steps of channels x heads x chunk) is the closed form's, paid as the
// first step's latency.
class NvlsTreePhase : public ChunkedPhase {
public:
    NvlsTreePhase(const Plan& plan, std::int64_t elements, double bytes, std::int64_t chunks,
                  sim::Time latency, double cap_seconds_per_byte)
        : ChunkedPhase(chunks, latency)
        , plan_(plan)
        , m_(plan.multi())
        , E_(elements)
        , chunk_bytes_(bytes / static_cast<double>(chunks))
        , cap_(cap_seconds_per_byte) {
        per_chunk_ = 2 * m_.tree_depth + 4;
        const int N = static_cast<int>(plan_.node_ranks.size());
        const double P = m_.heads;
        const double b = chunk_bytes_;
        std::vector<PFlow> flows;
        for (int k = 0; k < N; ++k) {
            const int sw = detail::switch_of(k);
            for (int r : plan_.node_ranks[size_t(k)]) { // reduce and multicast: all of the chunk
                flows.push_back({r, sw, b});
                flows.push_back({sw, r, b});
            }
            for (int j = 0; j < m_.heads; ++j) { // the head reads its part and stores the sum
                flows.push_back({sw, head(k, j), b / P});
                flows.push_back({head(k, j), sw, b / P});
            }
            for (int t = 0; t < 2; ++t) { // up and down the trees, half of each part on each
                const int parent = m_.node_parent[size_t(t)][size_t(k)];
                for (int j = 0; j < m_.heads && parent >= 0; ++j) {
                    flows.push_back({head(k, j), head(parent, j), b / P / 2});
                    flows.push_back({head(parent, j), head(k, j), b / P / 2});
                }
            }
        }
        std::stable_sort(flows.begin(), flows.end(), [](const PFlow& x, const PFlow& y) {
            return std::tie(x.src, x.dst) < std::tie(y.src, y.dst);
        });
        for (const PFlow& f : flows) {
            if (!chunk_flows_.empty() && chunk_flows_.back().src == f.src &&
                chunk_flows_.back().dst == f.dst)
                chunk_flows_.back().bytes += f.bytes;
            else
                chunk_flows_.push_back(f);
        }
    }
    std::vector<StepRange> rounds(int max_rounds) const override {
        // A round's flows are every stage's of its chunks; a communicator of 100,000 GPUs has
        // ~600,000 of them. Rounds are bounded so that the collective starts about
        // kFlowBudget flows: uncontended, every round of the steady pipeline takes as long, so
        // the time does not depend on the bound, only how finely other traffic couples to it.
        constexpr std::size_t kFlowBudget = std::size_t{1} << 16;
        const auto by_budget =
            static_cast<int>(std::max<std::size_t>(1, kFlowBudget / chunk_flows_.size()));
        return ChunkedPhase::rounds(std::min(max_rounds, by_budget));
    }
    double min_seconds(StepRange r) const override {
        return cap_ * chunk_bytes_ * static_cast<double>(r.end - r.begin) / per_chunk_;
    }
    void transfers(int s, std::vector<Transfer>& out) const override {
        const std::int64_t k = s / per_chunk_;
        const int o = s % per_chunk_;
        const int D = m_.tree_depth;
        const int N = static_cast<int>(plan_.node_ranks.size());
        // Chunk k of half t of part j: [lo, lo + len).
        auto range = [&](int j, int t, std::int64_t& lo, std::int64_t& len) {
            const std::int64_t p0 = part_begin(j, m_.heads, E_);
            const std::int64_t p1 = part_begin(j + 1, m_.heads, E_);
            const std::int64_t h0 = p0 + part_begin(t, 2, p1 - p0);
            const std::int64_t h1 = p0 + part_begin(t + 1, 2, p1 - p0);
            lo = h0 + part_begin(k, K_, h1 - h0);
            len = h0 + part_begin(k + 1, K_, h1 - h0) - lo;
        };
        std::int64_t lo = 0, len = 0;
        for (int node = 0; node < N; ++node) {
            const int sw = detail::switch_of(node);
            for (int j = 0; j < m_.heads; ++j) {
                for (int t = 0; t < 2; ++t) {
                    range(j, t, lo, len);
                    const int h = head(node, j);
                    if (o == 0 || o == 2 * D + 3) { // every rank into the switch; multicast
                        for (int r : plan_.node_ranks[size_t(node)]) {
                            if (o == 0)
                                out.push_back({r, sw, lo, lo, len, true});
                            else
                                out.push_back({sw, r, lo, lo, len, false});
                        }
                    } else if (o == 1) {
                        out.push_back({sw, h, lo, lo, len, false});
                    } else if (o == 2 * D + 2) {
                        out.push_back({h, sw, lo, lo, len, false});
                    } else {
                        // Up from depth D - (o - 2), then down to depth o - 2 - D + 1.
                        const bool up = o < D + 2;
                        const int depth = up ? D - (o - 2) : o - 2 - D + 1;
                        if (m_.node_depth[size_t(t)][size_t(node)] != depth)
                            continue;
                        const int ph = head(m_.node_parent[size_t(t)][size_t(node)], j);
                        if (up)
                            out.push_back({h, ph, lo, lo, len, true});
                        else
                            out.push_back({ph, h, lo, lo, len, false});
                    }
                }
            }
        }
    }

private:
    int head(int node, int j) const {
        return plan_.node_ranks[size_t(node)][size_t(m_.head_local[size_t(j)])];
    }

    const Plan& plan_;
    const detail::MultiNodeData& m_;
    std::int64_t E_;
    double chunk_bytes_; ///< of the collective's bytes, per chunk
    double cap_;         ///< seconds per byte of the collective's bytes
};

std::int64_t chunk_count(double bytes, std::int64_t chunk_bytes) {
    return std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(bytes / static_cast<double>(chunk_bytes))));
}

std::vector<int> identity(int n) {
    std::vector<int> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), 0);
    return v;
}

} // namespace

std::int64_t buffer_elements(Op op, std::int64_t elements) {
    return (op == Op::all_to_all || op == Op::send_recv) ? 2 * elements : elements;
}

namespace {

/// What every algorithm's phases are built from: the plan, the collective and its sizes.
struct PhaseInputs {
    const Plan& plan;
    const Collective& c;
    Protocol p;
    double S;           ///< bytes
    std::int64_t E;     ///< elements
    std::int64_t chunk; ///< the protocol's chunk (or the options')
    RingKind kind;
};

/// Ring: a chain per channel for broadcast and reduce across nodes, one chain on one node, else
/// NCCL's rings.
void add_ring_phases(Decomposition& d, const PhaseInputs& in) {
    const Plan& plan = in.plan;
    const Collective& c = in.c;
    const Protocol p = in.p;
    const double S = in.S;
    const std::int64_t E = in.E;
    const std::int64_t chunk = in.chunk;
    const RingKind kind = in.kind;
    const int n = plan.n;
    if ((c.op == Op::broadcast || c.op == Op::reduce) && plan.channels > 1) {
        // Across nodes a chain per ring channel, 1/channels of the buffer each
        // (Plan::chains), as the closed form.
        const detail::TreeData& t = plan.chains(c.root, c.op == Op::reduce);
        std::vector<sim::Time> latency;
        for (LinkLevel l : t.stage_level)
            latency.push_back(plan.step_latency(l, p));
        const int parts = t.parts();
        std::vector<Part> part_list;
        for (int i = 0; i < parts; ++i) {
            const std::int64_t lo = part_begin(i, parts, E), hi = part_begin(i + 1, parts, E);
            part_list.push_back({lo, hi - lo, S / parts});
        }
        d.phases.push_back(std::make_unique<PipelinePhase>(t.stages, t.stage_reduces,
                                                           std::move(latency), std::move(part_list),
                                                           chunk_count(S / parts, chunk)));
    } else if (c.op == Op::broadcast || c.op == Op::reduce) {
        // A pipelined chain over cycle 0, from the root (broadcast) or to it (reduce).
        const int start = (plan.cycle_position[size_t(c.root)] + (c.op == Op::reduce ? 1 : 0)) % n;
        std::vector<std::vector<detail::TreeData::Hop>> stages;
        std::vector<sim::Time> latency;
        for (int j = 0; j + 1 < n; ++j) {
            const int h = (start + j) % n;
            stages.push_back({{plan.cycles[0][size_t(h)], plan.cycles[0][size_t((h + 1) % n)], 0}});
            latency.push_back(plan.step_latency(plan.hop_level[size_t(h)], p));
        }
        d.phases.push_back(std::make_unique<PipelinePhase>(
            std::move(stages), std::vector<bool>(size_t(std::max(0, n - 1)), c.op == Op::reduce),
            std::move(latency), std::vector<Part>{{0, E, S}}, chunk_count(S, chunk)));
    } else {
        RingGroup g;
        g.cycles = plan.cycles;
        g.block_of = plan.cycles; // rank r owns block r, as nccl-tests lays out its buffers
        g.count = E;
        std::vector<RingGroup> groups{std::move(g)};
        std::optional<sim::Time> latency;
        const int N = static_cast<int>(plan.node_ranks.size());
        if (N > 1 && n > 1) {
            // Across nodes, NCCL's latency (tuning.cc, as the closed form counts it): the
            // steps that cross the network pay its latency, the others the intra-node one
            // (at least the proxy's post overhead), spread evenly over the steps.
            const int k = kind == RingKind::all_reduce ? 2 : 1;
            const double steps = k * (n - 1), inter = k * (N - 1);
            const double overhead = p == Protocol::simple ? 3e-6 : 1e-6;
            const double total =
                (steps - inter) *
                    std::max(plan.step_latency(plan.intra_level, p).seconds(), overhead) +
                inter * plan.tuned_network_latency(p).seconds();
            latency = sim::Time::from_seconds(total / steps);
        }
        d.phases.push_back(
            std::make_unique<RingPhase>(plan, kind, std::move(groups), S, p, latency));
    }
}

/// Tree: NCCL's double binary tree as a pipeline of its stages.
void add_tree_phase(Decomposition& d, const PhaseInputs& in) {
    const Plan& plan = in.plan;
    const Protocol p = in.p;
    const double S = in.S;
    const std::int64_t E = in.E;
    const std::int64_t chunk = in.chunk;
    const detail::TreeData& t = plan.tree();
    std::vector<sim::Time> latency;
    for (LinkLevel l : t.stage_level) // across nodes NCCL's Tree latencies (communicator.cpp)
        latency.push_back(plan.node_ranks.size() > 1 ? plan.tree_step_latency(l, p)
                                                     : plan.step_latency(l, p));
    if (plan.node_ranks.size() > 1 && !latency.empty()) // the plugin's, as the closed form
        latency.front() += plan.tree_plugin_latency(p);
    // Each tree carries an equal part of the buffer (two in a node, 2 x NIC ports across).
    const int parts = t.parts();
    std::vector<Part> part_list;
    for (int i = 0; i < parts; ++i) {
        const std::int64_t lo = part_begin(i, parts, E), hi = part_begin(i + 1, parts, E);
        part_list.push_back({lo, hi - lo, S / parts});
    }
    // Across nodes NCCL's cap per channel, as the closed form: the pipeline's transfers take
    // at least as long as the cap allows.
    d.phases.push_back(std::make_unique<PipelinePhase>(
        t.stages, t.stage_reduces, std::move(latency), std::move(part_list),
        chunk_count(S / parts, chunk), detail::tree_cap_seconds(plan, p, S)));
}

/// NVLSTree: NVLink SHARP in the node, a tree across nodes.
void add_nvls_tree_phase(Decomposition& d, const PhaseInputs& in, const DecomposeOptions& options) {
    const Plan& plan = in.plan;
    const Protocol p = in.p;
    const double S = in.S;
    const std::int64_t E = in.E;
    // As the closed form: NCCL's NVLSTree latency (tuning.cc: no protocol base latency) and
    // the pipeline fill at the closed form's pace, then the chunks through every stage.
    const double step = options.chunk_bytes > 0 ? static_cast<double>(options.chunk_bytes)
                                                : detail::nvls_tree_step_bytes(plan, S);
    const std::int64_t K =
        step > 0 ? std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(S / step))) : 1;
    d.start_latency = plan.tuning.launch_latency;
    const sim::Time latency = sim::Time::from_seconds(detail::nvls_tree_latency_seconds(plan, p) +
                                                      detail::nvls_tree_fill_bytes(plan, S) *
                                                          detail::nvls_tree_seconds_per_byte(plan));
    d.phases.push_back(std::make_unique<NvlsTreePhase>(
        plan, E, S, K, latency, detail::nvls_tree_cap_seconds_per_byte(plan)));
}

/// Hierarchical and CollNet: the intra-node reduce-scatter, the exchange across nodes, the
/// intra-node all-gather.
void add_hierarchical_phases(Decomposition& d, const PhaseInputs& in, Algorithm algorithm) {
    const Plan& plan = in.plan;
    const Protocol p = in.p;
    const double S = in.S;
    const std::int64_t E = in.E;
    // CollNet plays as its three phases in series (phased_in_flow): the intra-node
    // reduce-scatter, the exchange across nodes (a ring per local rank: the flow network
    // has no switch that reduces), the intra-node all-gather.
    const detail::HierData& h = plan.hier();
    const int g = h.per_node;
    const int N = static_cast<int>(plan.node_ranks.size());
    const bool nvls = h.nvls_rs > 0 && algorithm == Algorithm::hierarchical;
    auto intra = [&](RingKind k) -> std::unique_ptr<Phase> {
        if (nvls) {
            std::vector<NvlsGroup> groups;
            for (int node = 0; node < N; ++node)
                groups.push_back({plan.node_ranks[size_t(node)], detail::switch_of(node),
                                  identity(g), 0, E, 1.0});
            return std::make_unique<NvlsPhase>(
                k, std::move(groups), S,
                chunk_count(S, plan.tuning.protocol(Protocol::simple).chunk_bytes),
                plan.tuning.nvls.latency);
        }
        std::vector<RingGroup> groups;
        for (int node = 0; node < N; ++node)
            groups.push_back({{plan.node_ranks[size_t(node)]}, {identity(g)}, 0, E, 1.0});
        return std::make_unique<RingPhase>(plan, k, std::move(groups), S, p);
    };
    if (g > 1)
        d.phases.push_back(intra(RingKind::reduce_scatter));
    std::vector<RingGroup> inter;
    for (int l = 0; l < g; ++l) {
        RingGroup rg;
        std::vector<int> cycle;
        for (int node = 0; node < N; ++node)
            cycle.push_back(plan.node_ranks[size_t(node)][size_t(l)]);
        rg.cycles = {cycle};
        rg.block_of = {identity(N)};
        rg.offset = part_begin(l, g, E);
        rg.count = part_begin(l + 1, g, E) - rg.offset;
        rg.fraction = 1.0 / g;
        inter.push_back(std::move(rg));
    }
    d.phases.push_back(
        std::make_unique<RingPhase>(plan, RingKind::all_reduce, std::move(inter), S, p));
    if (g > 1)
        d.phases.push_back(intra(RingKind::all_gather));
}

} // namespace

Decomposition decompose(const Communicator& comm, const Collective& c, Algorithm algorithm,
                        Protocol p, const DecomposeOptions& options) {
    const Plan& plan = comm.plan();
    const int n = plan.n;
    const double S = static_cast<double>(c.bytes);
    const std::int64_t E = c.bytes / hardware::bytes_per_element(c.dtype);
    const std::int64_t chunk =
        options.chunk_bytes > 0 ? options.chunk_bytes : plan.tuning.protocol(p).chunk_bytes;
    Decomposition d;
    d.algorithm = algorithm;
    d.protocol = p;
    d.start_latency = plan.tuning.launch_latency + plan.tuning.protocol(p).base_latency;
    d.buffer_elements = buffer_elements(c.op, E);
    for (int r = 0; r < n; ++r) {
        const bool is_root = has_root(c.op) && r == c.root;
        d.memory_bytes.push_back(detail::kernel_memory_bytes(plan, c.op, S, is_root));
        d.compute.push_back(sim::Time::from_seconds(
            detail::kernel_compute_seconds(plan, c.op, algorithm, S, c.dtype, is_root)));
    }
    const RingKind kind = c.op == Op::all_reduce   ? RingKind::all_reduce
                          : c.op == Op::all_gather ? RingKind::all_gather
                                                   : RingKind::reduce_scatter;
    const PhaseInputs in{plan, c, p, S, E, chunk, kind};

    switch (algorithm) {
    case Algorithm::automatic:
        break;
    case Algorithm::ring:
        add_ring_phases(d, in);
        break;
    case Algorithm::tree:
        add_tree_phase(d, in);
        break;
    case Algorithm::direct:
        d.phases.push_back(std::make_unique<DirectPhase>(plan, c.op, c.root, E, S, p));
        break;
    case Algorithm::nvls: {
        NvlsGroup g{identity(n), detail::switch_of(0), identity(n), 0, E, 1.0};
        d.phases.push_back(std::make_unique<NvlsPhase>(
            kind, std::vector<NvlsGroup>{std::move(g)}, S,
            chunk_count(S, plan.tuning.protocol(Protocol::simple).chunk_bytes),
            plan.tuning.nvls.latency));
        break;
    }
    case Algorithm::nvls_tree:
        add_nvls_tree_phase(d, in, options);
        break;
    case Algorithm::hierarchical:
    case Algorithm::collnet_direct:
    case Algorithm::collnet_chain:
        add_hierarchical_phases(d, in, algorithm);
        break;
    case Algorithm::torus:
        detail::add_torus_phases(d, plan, c, E);
        break;
    }
    return d;
}

} // namespace clustersim::strategies::collectives
