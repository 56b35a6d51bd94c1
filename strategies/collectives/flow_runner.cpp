#include "strategies/collectives/flow_runner.h"

#include "base/error.h"
#include "hardware/flow_binding.h"
#include "strategies/collectives/plan.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace clustersim::strategies::collectives {

struct FlowCollectives::Run {
    const detail::Plan* plan = nullptr;
    Decomposition decomposition;
    std::vector<std::vector<StepRange>> rounds; ///< per phase
    std::size_t phase = 0;
    std::size_t round = 0;
    int total_rounds = 0;
    int pending = 0;
    std::function<void()> done;
};

FlowCollectives::FlowCollectives(sim::Engine& engine, sim::FlowNetwork& net,
                                 const hardware::Topology& topology, FlowOptions options)
    : engine_(engine)
    , net_(net)
    , topology_(topology)
    , options_(options) {
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
        ++run->phase;
        run->round = 0;
    }
    if (run->phase == phases.size()) {
        finish(run);
        return;
    }
    const Phase& phase = *phases[run->phase];
    const StepRange range = run->rounds[run->phase][run->round];
    sim::Time latency = sim::Time::zero();
    for (int s = range.begin; s < range.end; ++s)
        latency += phase.step_latency(s);
    scratch_.clear();
    phase.round_flows(range, scratch_);
    const Protocol protocol = run->decomposition.protocol;
    // Across nodes the kernel's memory work overlaps the round's transfers (the NICs move data
    // by DMA while the SMs copy and reduce), as the closed form counts it; within a node it
    // follows them (the same SMs do both).
    const bool overlap = run->plan->node_ranks.size() > 1;
    for (const detail::PFlow& f : scratch_) {
        if (f.bytes <= 0 || f.src == f.dst)
            continue;
        const detail::RouteInfo& route = run->plan->route(f.src, f.dst);
        const double wire = f.bytes / run->plan->flow_efficiency(f.src, f.dst, protocol);
        ++run->pending;
        ++stats_.flows;
        stats_.payload_bytes += f.bytes;
        stats_.wire_bytes += wire;
        net_.start(sim::FlowSpec{wire, route.edges, latency,
                                 std::numeric_limits<double>::infinity(),
                                 [this, run, overlap](sim::FlowId) {
                                     if (--run->pending == 0) {
                                         if (overlap)
                                             advance(run);
                                         else
                                             local_work(run);
                                     }
                                 }});
    }
    if (overlap)
        start_local_flows(run, latency);
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
    start_local_flows(run, sim::Time::zero());
    if (run->pending == 0)
        advance(run);
}

void FlowCollectives::start_local_flows(Run* run, sim::Time delay) {
    const Decomposition& d = run->decomposition;
    const double share = 1.0 / std::max(1, run->total_rounds);
    auto advance = [this, run] { this->advance(run); };
    for (std::size_t r = 0; r < d.memory_bytes.size(); ++r) {
        const double bytes = d.memory_bytes[r] * share;
        const double compute = d.compute[r].seconds() * share;
        if (bytes <= 0 && compute <= 0)
            continue;
        ++run->pending;
        ++stats_.flows;
        stats_.hbm_bytes += bytes;
        auto on_done = [run, advance](sim::FlowId) {
            if (--run->pending == 0)
                advance();
        };
        if (bytes <= 0) { // arithmetic only: a pure delay
            net_.start(
                sim::FlowSpec{0, {}, delay + sim::Time::from_seconds(compute), 1.0, on_done});
            continue;
        }
        // The kernel streams its bytes through the HBM edge no faster than its arithmetic allows.
        const double cap = compute > 0 ? bytes / compute : std::numeric_limits<double>::infinity();
        net_.start(sim::FlowSpec{
            bytes, {run->plan->memory_edge(static_cast<int>(r))}, delay, cap, on_done});
    }
}

void FlowCollectives::finish(Run* run) {
    auto it = std::find_if(runs_.begin(), runs_.end(),
                           [run](const std::unique_ptr<Run>& p) { return p.get() == run; });
    std::unique_ptr<Run> owned = std::move(*it);
    runs_.erase(it);
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
    sim::Engine engine;
    sim::FlowNetwork net(engine);
    hardware::bind_topology(net, comm.topology());
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
