#include "strategies/collectives/flow_runner.h"

#include "base/error.h"
#include "hardware/flow_binding.h"
#include "strategies/collectives/flow_estimate.h"
#include "strategies/collectives/plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace clustersim::strategies::collectives {

/// Symmetry: which flows of a batch are proved and may be left to a representative depends
/// only on the batch's routes, edges, sizes, starts and caps (and the claims), and most
/// batches repeat the one two before (a ring's or a tree's full rounds; rounds of transfers
/// and of memory work alternating within a node). Each of the last two batches keeps what
/// describes it and the proof's answer, so that a batch seen before is folded without reading
/// its routes' edges (most of its flows are then left out).
struct FlowCollectives::FoldMemo {
    std::vector<detail::FoldFlow> keys; ///< the batch it describes
    std::vector<double> rate;           ///< per flow: its proved rate; NaN: not proved
    std::vector<char> leave;            ///< per flow: may be left to a representative
    /// The flows to start: the unproved, the proved kept on the network, and the first of
    /// each class of identical flows that may be left out (its representative); ascending.
    std::vector<std::uint32_t> starts;
    std::uint64_t represented = 0; ///< flows left to representatives
    bool all_left = false;         ///< every flow proved and left to a representative
    std::uint64_t claims = 0;
    mutable std::uint64_t used = 0; ///< when it last served, for replacement
};

struct FlowCollectives::Run {
    const detail::Plan* plan = nullptr;
    Decomposition decomposition;
    std::vector<std::vector<StepRange>> rounds; ///< per phase
    std::size_t phase = 0;
    std::size_t round = 0;
    sim::Time phase_start; ///< when the current phase's first round began
    int total_rounds = 0;
    int pending = 0;
    std::function<void()> done;
    /// Symmetry: the classes of identical flows of the batch in flight, each simulated by its
    /// representative `rep` (flow `index` of the batch); the others are not started.
    struct Lump {
        sim::FlowId rep = 0;
        std::uint32_t index = 0;
        bool rep_done = false;
    };
    /// Flows of the batch in flight simulated under the cap of their proved rate (the
    /// representatives among them), with their indices in `batch`: their own caps come back
    /// when the proof no longer holds (materialize).
    std::vector<std::pair<sim::FlowId, std::uint32_t>> capped;
    /// The batch in flight (start_batch swaps it with FlowCollectives::batch_, so neither is
    /// copied): the flows left to representatives are read from it if they must be started.
    std::vector<Pending> batch;
    std::vector<Lump> lumps;         ///< of the batch in flight
    const FoldMemo* proof = nullptr; ///< the batch in flight's, while it runs
    /// The representatives of the batch in flight run on no resource (start_batch says when).
    bool detached = false;
    bool then_local = false; ///< of the batch in flight
    /// Per position in a round's transfers: the pair last seen there, its route and efficiency.
    struct RouteMemo {
        int src = 0, dst = 0;
        const detail::RouteInfo* route = nullptr;
        double efficiency = 1;
    };
    std::vector<RouteMemo> route_memo;
    std::size_t memo_size = 0; ///< positions of the last round that kept its routes
    /// The last round built across nodes (its transfers and memory work in one batch, still
    /// `batch`): its phase, flows, latency, least time and bytes. A round that repeats it (a
    /// ring's rounds, a pipeline's full rounds) starts `batch` again, not a copy built anew.
    struct LastRound {
        std::size_t phase = ~std::size_t{0};
        std::vector<detail::PFlow> flows;
        sim::Time latency;
        double least = 0;
        double payload = 0, wire = 0, hbm = 0;
    };
    LastRound last;
    bool repeated = false;                ///< the batch in flight repeats the one before
    const FoldMemo* last_proof = nullptr; ///< the proof of the last batch started
    std::array<FoldMemo, 2> fold_memo;
    std::uint64_t batches = 0;
};

std::vector<sim::ResourceId> FlowCollectives::Pending::path() const {
    if (route != nullptr)
        return {route->begin(), route->end()};
    if (edge != detail::kNoEdge)
        return {edge};
    return {};
}

FlowCollectives::FlowCollectives(sim::Engine& engine, sim::FlowNetwork& net,
                                 const hardware::Topology& topology, FlowOptions options)
    : engine_(engine)
    , net_(net)
    , topology_(topology)
    , options_(options)
    , claims_(topology) {
    if (net_.resource_count() != topology_.edge_count())
        throw std::logic_error("FlowCollectives needs a flow network set up by bind_topology");
}

FlowCollectives::~FlowCollectives() = default;

Choice FlowCollectives::start(const Communicator& comm, const Collective& c,
                              std::function<void()> on_done) {
    if (&comm.topology() != &topology_)
        throw std::logic_error("the communicator belongs to another topology");
    comm.validate(c);
    const Choice choice = comm.choose(c);
    if (options_.symmetry) {
        claim(comm);
        // Another collective on the same communicator would cross the resources of the flows
        // its rounds left to representatives: simulate those from now on.
        if (running_per_plan_[&comm.plan()] > 0) {
            for (const auto& other : runs_) {
                if (other->plan == &comm.plan())
                    materialize(other.get());
            }
        }
    }
    auto run = std::make_unique<Run>();
    run->plan = &comm.plan();
    run->decomposition = decompose(comm, c, choice.algorithm, choice.protocol);
    for (const auto& phase : run->decomposition.phases) {
        run->rounds.push_back(phase->rounds(options_.max_rounds));
        run->total_rounds += static_cast<int>(run->rounds.back().size());
    }
    run->done = std::move(on_done);
    Run* r = run.get();
    runs_.push_back(std::move(run));
    ++running_per_plan_[r->plan];
    engine_.after(r->decomposition.start_latency, [this, r] {
        if (r->total_rounds == 0)
            local_work(r); // one GPU: only the kernel's own memory work
        else
            next_round(r);
    });
    return choice;
}

void FlowCollectives::next_round(Run* run) {
    const auto& phases = run->decomposition.phases;
    while (run->phase < phases.size() && run->round >= run->rounds[run->phase].size()) {
        // A phase with a least time (Phase::least_seconds) ends no earlier than its start, its
        // steps' latencies and that time.
        const Phase& done = *phases[run->phase];
        if (done.least_seconds() > 0) {
            sim::Time end = run->phase_start + sim::Time::from_seconds(done.least_seconds());
            for (int s = 0; s < done.steps(); ++s)
                end += done.step_latency(s);
            if (engine_.now() < end) {
                engine_.at(end, [this, run] { next_round(run); });
                return;
            }
        }
        ++run->phase;
        run->round = 0;
    }
    if (run->phase == phases.size()) {
        finish(run);
        return;
    }
    const Phase& phase = *phases[run->phase];
    if (run->round == 0)
        run->phase_start = engine_.now();
    const StepRange range = run->rounds[run->phase][run->round];
    sim::Time latency = sim::Time::zero();
    for (int s = range.begin; s < range.end; ++s)
        latency += phase.step_latency(s);
    scratch_.clear();
    // With symmetry, identical transfers come as one flow standing for them all (an
    // all-to-all's n^2 are never listed); without, every flow is simulated as itself.
    counts_.clear();
    if (options_.symmetry)
        phase.round_groups(range, scratch_, counts_);
    else
        phase.round_flows(range, scratch_);
    const Protocol protocol = run->decomposition.protocol;
    // Across nodes the kernel's memory work overlaps the round's transfers (the NICs move data
    // by DMA while the SMs copy and reduce), as the closed form counts it; within a node it
    // follows them (the same SMs do both).
    const bool overlap = run->plan->node_ranks.size() > 1;
    const double least = phase.min_seconds(range);
    const bool repeats = run->rounds[run->phase].size() > 1;
    Run::LastRound& last = run->last;
    const auto same = [](const detail::PFlow& a, const detail::PFlow& b) {
        return a.src == b.src && a.dst == b.dst && a.bytes == b.bytes;
    };
    // (Rounds of groups are not compared: a direct phase has one.)
    if (overlap && repeats && counts_.empty() && last.phase == run->phase &&
        last.latency == latency && last.least == least &&
        std::ranges::equal(scratch_, last.flows, same)) {
        stats_.payload_bytes += last.payload;
        stats_.wire_bytes += last.wire;
        stats_.hbm_bytes += last.hbm;
        run->repeated = true;
        std::swap(run->batch, batch_); // start_batch swaps it back
        start_round(run, latency, overlap);
        return;
    }
    run->repeated = false;
    last.phase = ~std::size_t{0};
    double payload = 0, wire_sum = 0;
    batch_.clear();
    // The rounds of a phase mostly repeat their endpoint pairs in the same order (a ring's
    // every round): each position keeps the route and efficiency of its last pair, so that a
    // round looks up (under the plan's lock) only the pairs that changed.
    // A phase of one round (NVLSTree's on 100,000 GPUs: 650,000 flows) repeats nothing: it
    // keeps no memo, and gives back the room of its list of flows once its batch is built.
    // A pipeline's draining rounds drop their first stages: a position missed is looked for
    // where the rounds' difference in size puts it in the last round.
    auto& memo = run->route_memo;
    const std::size_t shift =
        run->memo_size > scratch_.size() ? run->memo_size - scratch_.size() : 0;
    if (repeats && memo.size() < scratch_.size())
        memo.resize(scratch_.size());
    if (repeats)
        run->memo_size = scratch_.size();
    for (std::size_t i = 0; i < scratch_.size(); ++i) {
        const detail::PFlow& f = scratch_[i];
        if (f.bytes <= 0 || f.src == f.dst)
            continue;
        const std::uint32_t count = counts_.empty() ? 1 : counts_[i];
        Run::RouteMemo once;
        Run::RouteMemo& m = repeats ? memo[i] : once;
        if (m.route == nullptr || m.src != f.src || m.dst != f.dst) {
            const Run::RouteMemo* ahead =
                repeats && shift > 0 && i + shift < memo.size() ? &memo[i + shift] : nullptr;
            if (ahead != nullptr && ahead->route != nullptr && ahead->src == f.src &&
                ahead->dst == f.dst)
                m = *ahead;
            else
                m = {f.src, f.dst, &run->plan->route(f.src, f.dst),
                     run->plan->flow_efficiency(f.src, f.dst, protocol)};
        }
        const detail::RouteInfo& route = *m.route;
        const double wire = f.bytes / m.efficiency;
        // (times 1 is exact: flows of one sum as they did before counts)
        stats_.payload_bytes += f.bytes * count;
        stats_.wire_bytes += wire * count;
        payload += f.bytes * count;
        wire_sum += wire * count;
        Pending p;
        p.route = &route.edges;
        p.bytes = wire;
        p.latency = latency;
        p.max_rate = least > 0 ? wire / least : std::numeric_limits<double>::infinity();
        p.count = count;
        p.gpu_a = detail::is_switch(f.src) ? -1 : run->plan->gpus[static_cast<std::size_t>(f.src)];
        p.gpu_b = detail::is_switch(f.dst) ? -1 : run->plan->gpus[static_cast<std::size_t>(f.dst)];
        batch_.push_back(p);
    }
    double hbm = 0;
    if (overlap)
        hbm = add_local_flows(run, latency);
    if (overlap && repeats) {
        // Field by field: the lists swap, keeping both rooms (a round's flows are 500,000 on
        // 16,384 GPUs, and a list made anew each round cost its pages each time).
        last.phase = run->phase;
        last.latency = latency;
        last.least = least;
        last.payload = payload;
        last.wire = wire_sum;
        last.hbm = hbm;
        std::swap(last.flows, scratch_);
    } else if (!repeats) {
        std::vector<detail::PFlow>().swap(scratch_);
        std::vector<std::uint32_t>().swap(counts_);
    }
    start_round(run, latency, overlap);
}

void FlowCollectives::start_round(Run* run, sim::Time latency, bool overlap) {
    start_batch(run, !overlap);
    if (run->pending == 0)
        engine_.after(latency, [this, run, overlap] {
            if (overlap)
                advance(run);
            else
                local_work(run);
        });
}

void FlowCollectives::advance(Run* run) {
    ++run->round;
    next_round(run);
}

void FlowCollectives::local_work(Run* run) {
    batch_.clear();
    add_local_flows(run, sim::Time::zero());
    start_batch(run, false);
    if (run->pending == 0)
        advance(run);
}

double FlowCollectives::add_local_flows(Run* run, sim::Time delay) {
    const Decomposition& d = run->decomposition;
    const double share = 1.0 / std::max(1, run->total_rounds);
    double sum = 0;
    for (std::size_t r = 0; r < d.memory_bytes.size(); ++r) {
        const double bytes = d.memory_bytes[r] * share;
        const double compute = d.compute[r].seconds() * share;
        if (bytes <= 0 && compute <= 0)
            continue;
        stats_.hbm_bytes += bytes;
        sum += bytes;
        Pending p;
        p.gpu_a = run->plan->gpus[r];
        if (bytes <= 0) { // arithmetic only: a pure delay
            p.latency = delay + sim::Time::from_seconds(compute);
            p.max_rate = 1.0;
        } else {
            // The kernel streams its bytes through the HBM edge no faster than its arithmetic
            // allows.
            p.bytes = bytes;
            p.edge = run->plan->memory_edge(static_cast<int>(r));
            p.latency = delay;
            p.max_rate = compute > 0 ? bytes / compute : std::numeric_limits<double>::infinity();
        }
        batch_.push_back(p);
    }
    return sum;
}

void FlowCollectives::on_flow_done(Run* run) {
    if (--run->pending == 0) {
        if (run->then_local)
            local_work(run);
        else
            advance(run);
    }
}

const FlowCollectives::FoldMemo& FlowCollectives::fold(Run* run) {
    // The last two batches' answers, when this batch is the same flows in the same order and no
    // communicator has claimed resources since.
    ++run->batches;
    if (run->repeated && run->last_proof != nullptr && run->last_proof->claims == claimed_.size()) {
        run->last_proof->used = run->batches;
        return *run->last_proof;
    }
    const std::vector<Pending>& batch = run->batch;
    const auto same = [](const Pending& a, const detail::FoldFlow& b) {
        return a.route == b.route && a.edge == b.edge && a.bytes == b.bytes &&
               a.latency == b.latency && a.max_rate == b.max_rate && a.count == b.count;
    };
    for (FoldMemo& m : run->fold_memo) {
        if (m.claims == claimed_.size() && m.keys.size() == batch.size() &&
            std::equal(batch.begin(), batch.end(), m.keys.begin(), same)) {
            m.used = run->batches;
            return m;
        }
    }
    FoldMemo& m =
        run->fold_memo[0].used <= run->fold_memo[1].used ? run->fold_memo[0] : run->fold_memo[1];
    m.used = run->batches;
    m.claims = claimed_.size();
    m.keys.clear();
    for (const Pending& p : batch)
        m.keys.push_back({p.route, p.edge, p.count, p.bytes, p.latency, p.max_rate});
    // A resource is the batch's alone when it is its communicator's alone (or, with
    // FlowOptions::exclusive, the network's) while no other collective runs on the communicator
    // (start_batch folds only then).
    const auto claimant = static_cast<std::uint32_t>(
        std::find(claimed_.begin(), claimed_.end(), run->plan) - claimed_.begin());
    // The rounds of a phase are a series (its list of rounds names it while the run lives).
    const bool more = run->phase < run->rounds.size() && run->rounds[run->phase].size() > 1;
    const auto series = more ? reinterpret_cast<std::uintptr_t>(&run->rounds[run->phase]) : 0;
    proof_.prove(
        net_, m.keys,
        [&](sim::ResourceId e) { return options_.exclusive || claims_.own(claimant, e); }, m.rate,
        m.leave, series);
    // A proved flow moves at its proved rate from start to end (flow_fold.h): identical flows
    // are those of the same size, rate and latency, and the first of each class stands for the
    // others. The GPUs of the flows left out are noted once, here.
    m.starts.clear();
    m.represented = 0;
    m.all_left = std::all_of(m.leave.begin(), m.leave.end(), [](char c) { return c != 0; });
    lump_of_.clear();
    LumpKey last{};
    bool has_last = false;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const auto index = static_cast<std::uint32_t>(i);
        if (!m.leave[i]) {
            m.starts.push_back(index);
            continue;
        }
        // Flows of one class mostly come in runs: the last class seen is tried first.
        const LumpKey key{batch[i].bytes, m.rate[i], batch[i].latency};
        if (!(has_last && key == last) && lump_of_.emplace(key, index).second) {
            m.starts.push_back(index);
        } else {
            const Pending& p = batch[i];
            m.represented += p.count;
            if (p.gpu_a >= 0)
                gpu_represented_[static_cast<std::size_t>(p.gpu_a)] = 1;
            if (p.gpu_b >= 0)
                gpu_represented_[static_cast<std::size_t>(p.gpu_b)] = 1;
        }
        last = key;
        has_last = true;
    }
    return m;
}

void FlowCollectives::start_batch(Run* run, bool then_local) {
    run->lumps.clear();
    run->capped.clear();
    run->proof = nullptr;
    run->detached = false;
    const auto n_gpus = static_cast<std::size_t>(topology_.gpu_count());
    if (gpu_simulated_.size() < n_gpus) {
        gpu_simulated_.resize(n_gpus, 0);
        gpu_represented_.resize(n_gpus, 0);
    }
    run->then_local = then_local;
    std::swap(run->batch, batch_);
    const std::vector<Pending>& batch = run->batch;
    // Symmetry holds while no other collective runs on the communicator. Which flows are proved
    // and left out is decided first (fold, most often from its memo), so that the flows left to
    // representatives cost no look at their routes, nor any work here.
    if (options_.symmetry && running_per_plan_[run->plan] == 1) {
        const FoldMemo& proof = fold(run);
        run->proof = &proof;
        run->last_proof = &proof;
        // Every flow proved, on a network that holds this communicator's collectives alone
        // (FlowOptions::exclusive) and of those this one alone (the fold's condition): each
        // representative moves at its cap, the rate proved, wherever it runs, and the sum of the
        // proved rates fits every resource. On no resource it costs no reshare of the others
        // (an all-to-all's thousands of classes of rates, one completion instant each, re-shared
        // every representative at each); materialize gives it its path back.
        run->detached = options_.exclusive && proof.all_left;
        stats_.represented += proof.represented;
        for (std::uint32_t i : proof.starts)
            start_flow(run, i, proof.rate[i], proof.leave[i] != 0);
    } else {
        run->last_proof = nullptr;
        for (std::size_t i = 0; i < batch.size(); ++i)
            start_flow(run, static_cast<std::uint32_t>(i), std::numeric_limits<double>::quiet_NaN(),
                       false);
    }
}

void FlowCollectives::start_flow(Run* run, std::uint32_t i, double rate, bool stands_for_others) {
    const Pending& p = run->batch[i];
    const bool proved = !std::isnan(rate);
    ++run->pending;
    ++stats_.flows;
    stats_.represented += p.count - 1;
    mark_gpu(p.gpu_a, true);
    mark_gpu(p.gpu_b, true);
    // A proved flow runs under the cap of its rate: the flows it stands for, or that share its
    // resources with it, are not on the network to hold it there.
    sim::FlowSpec spec{p.bytes,   run->detached ? std::vector<sim::ResourceId>{} : p.path(),
                       p.latency, proved ? rate : p.max_rate,
                       {},        p.count};
    sim::FlowId id = 0;
    if (stands_for_others) {
        // Captures of 16 bytes at most stay inside the std::function (a flow's callback was a
        // heap block of its own); the batch's flows end before the next batch, so `then_local`
        // is the run's, and the lump is found by its representative.
        spec.on_complete = [this, run](sim::FlowId done) {
            for (Run::Lump& l : run->lumps)
                if (l.rep == done)
                    l.rep_done = true;
            on_flow_done(run);
        };
        id = net_.start(std::move(spec));
        run->lumps.push_back({id, i, false});
    } else {
        spec.on_complete = [this, run](sim::FlowId) { on_flow_done(run); };
        id = net_.start(std::move(spec));
    }
    if (proved && rate != p.max_rate)
        run->capped.push_back({id, i});
}

void FlowCollectives::materialize(Run* run) {
    const FoldMemo* proof = run->proof;
    if (proof == nullptr)
        return;
    run->proof = nullptr;
    // Representatives on no resource take their paths (a finished one is left as it is).
    if (run->detached) {
        for (const Run::Lump& l : run->lumps) {
            if (!l.rep_done)
                net_.set_path(l.rep, run->batch[l.index].path());
        }
        run->detached = false;
    }
    // The proved rates held for the round alone: the flows simulated under them move under
    // their own caps from now on (a finished one is left as it is).
    for (const auto& [id, i] : run->capped)
        net_.set_max_rate(id, run->batch[i].max_rate);
    run->capped.clear();
    // The flows left out, each a copy of its class's representative where that has not
    // finished (else they finished with it).
    lump_of_.clear();
    for (std::size_t k = 0; k < run->lumps.size(); ++k) {
        const std::uint32_t i = run->lumps[k].index;
        lump_of_.emplace(LumpKey{run->batch[i].bytes, proof->rate[i], run->batch[i].latency},
                         static_cast<std::uint32_t>(k));
    }
    for (std::size_t i = 0; i < run->batch.size(); ++i) {
        if (!proof->leave[i])
            continue;
        const Pending& p = run->batch[i];
        const Run::Lump& l = run->lumps[lump_of_.at({p.bytes, proof->rate[i], p.latency})];
        if (l.index == i || l.rep_done)
            continue;
        ++run->pending;
        ++stats_.flows;
        --stats_.represented; // it stood for p.count, now for p.count - 1 beside it
        mark_gpu(p.gpu_a, true);
        mark_gpu(p.gpu_b, true);
        net_.start_copy(
            l.rep, p.path(), [this, run](sim::FlowId) { on_flow_done(run); }, p.max_rate, p.count);
    }
    run->lumps.clear();
}

void FlowCollectives::claim(const Communicator& comm) {
    const detail::Plan* plan = &comm.plan();
    if (std::find(claimed_.begin(), claimed_.end(), plan) != claimed_.end())
        return;
    proof_.forget_paths();
    if (options_.exclusive) {
        // Every resource is the one communicator's: nothing to record but that it is the one.
        if (!claimed_.empty())
            throw std::logic_error("FlowOptions::exclusive admits one communicator");
        claimed_.push_back(plan);
        return;
    }
    // Resources that a round in flight left to representatives may now be shared.
    for (const auto& run : runs_)
        materialize(run.get());
    claims_.claim(static_cast<std::uint32_t>(claimed_.size()), plan->node_topology);
    claimed_.push_back(plan);
}

void FlowCollectives::mark_gpu(int gpu, bool simulated) {
    if (gpu < 0)
        return;
    const auto n = static_cast<std::size_t>(topology_.gpu_count());
    if (gpu_simulated_.size() < n) {
        gpu_simulated_.resize(n, 0);
        gpu_represented_.resize(n, 0);
    }
    (simulated ? gpu_simulated_ : gpu_represented_)[static_cast<std::size_t>(gpu)] = 1;
}

std::vector<int> FlowCollectives::simulated_gpus() const {
    std::vector<int> out;
    for (std::size_t g = 0; g < gpu_simulated_.size(); ++g)
        if (gpu_simulated_[g])
            out.push_back(static_cast<int>(g));
    return out;
}

std::vector<int> FlowCollectives::represented_gpus() const {
    std::vector<int> out;
    for (std::size_t g = 0; g < gpu_represented_.size(); ++g)
        if (gpu_represented_[g] && !gpu_simulated_[g])
            out.push_back(static_cast<int>(g));
    return out;
}

void FlowCollectives::finish(Run* run) {
    auto it = std::find_if(runs_.begin(), runs_.end(),
                           [run](const std::unique_ptr<Run>& p) { return p.get() == run; });
    std::unique_ptr<Run> owned = std::move(*it);
    runs_.erase(it);
    if (--running_per_plan_[owned->plan] == 0)
        running_per_plan_.erase(owned->plan);
    if (owned->done)
        owned->done();
}

Outcome simulate(const Communicator& comm, const Collective& c, Fidelity fidelity,
                 FlowOptions options) {
    comm.validate(c);
    Outcome out;
    out.choice = comm.choose(c);
    out.time = out.choice.time;
    if (fidelity == Fidelity::analytic)
        return out;
    // What the simulation will hold, before a flow is made (flow_estimate.h).
    const FlowFootprint footprint = flow_footprint(comm, c, options);
    const std::string what =
        "the " + std::string(to_string(c.op)) + " on " + std::to_string(comm.size()) + " GPUs";
    refuse_if_flows_too_large(
        flow_bytes(footprint.peak_round, static_cast<double>(comm.topology().edge_count())),
        footprint.peak_round, what);
    refuse_if_flows_too_slow(flow_seconds(footprint), footprint.flows, footprint.rounds,
                             options.max_seconds, what);
    sim::Engine engine;
    sim::FlowNetwork net(engine);
    hardware::bind_topology(net, comm.topology());
    // One collective alone: its communicator's is every resource.
    options.exclusive = true;
    FlowCollectives runner(engine, net, comm.topology(), options);
    sim::Time end = sim::Time::zero();
    runner.start(comm, c, [&] { end = engine.now(); });
    engine.run();
    out.time = end;
    out.stats = runner.stats();
    out.events = engine.events_processed();
    return out;
}

} // namespace clustersim::strategies::collectives
