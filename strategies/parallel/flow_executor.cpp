#include "strategies/parallel/flow_executor.h"

#include "hardware/flow_binding.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/task_graph.h"
#include "strategies/collectives/flow_estimate.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/parallel/analytic_executor.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

namespace clustersim::strategies::parallel::detail {

namespace {

struct RankStreams {
    sim::StreamId compute, pp, dp;
};
struct SendRecord {
    int sender;
    sim::TaskId task;
    std::string label;
};
struct DpRecord {
    int rank;
    sim::TaskId task;
    std::string label;
};

const hardware::Topology& bound(sim::FlowNetwork& net, const hardware::Topology& topo) {
    hardware::bind_topology(net, topo);
    return topo;
}

collectives::FlowOptions flow_options(bool symmetry, double max_seconds) {
    collectives::FlowOptions o;
    o.symmetry = symmetry;
    o.max_seconds = max_seconds;
    return o;
}

/// One step on the flow network: the plan's passes, pipeline sends, data-parallel collectives
/// and optimizer as tasks on each rank's in-order streams, every transfer and collective played
/// as flows. Built in the order the steps below run, then run once.
class FlowStep {
public:
    FlowStep(const StepPlan& plan, bool symmetry, double max_seconds)
        : plan_(plan)
        , P_(plan.shape.ranks)
        , v_(plan.shape.virtual_stages)
        , V_(stage_count(plan.shape))
        , m_(static_cast<std::size_t>(plan.shape.micro_batches))
        , topo_(*plan.topology)
        , par_(plan.experiment->parallel)
        , net_(engine_)
        , max_seconds_(max_seconds)
        , runner_(engine_, net_, bound(net_, topo_), flow_options(symmetry, max_seconds))
        , fwd_task_(m_ * V_)
        , bwd_first_(m_ * V_)
        , bwd_last_(m_ * V_)
        , pass_first_(static_cast<std::size_t>(P_))
        , pass_last_(static_cast<std::size_t>(P_))
        , pass_send_(static_cast<std::size_t>(P_))
        , bucket_ready_(static_cast<std::size_t>(P_))
        , optimizer_(static_cast<std::size_t>(P_))
        , slowdown_(dp_overlap_slowdown(plan)) {
        make_communicators();
        for (int p = 0; p < P_; ++p)
            streams_.push_back(
                {g_.add_stream("compute", p), g_.add_stream("pp", p), g_.add_stream("dp", p)});
        for (int p = 0; p < P_; ++p)
            add_rank_passes(p);
        add_pass_dependencies();
        add_dp_and_optimizer();
    }

    FlowRun run();

private:
    void make_communicators();
    const collectives::Communicator& pair_comm(int a, int b);
    const collectives::Communicator* dp_comm_of(int p, const DpCollective& c) const;
    sim::TaskAction collective_task(const collectives::Communicator* comm,
                                    collectives::Collective c);
    /// What the gradient reductions overlapped with the backward cost the passes beside them:
    /// as the analytic executor lengthens them (from its schedule; here the collectives' own
    /// timing on the network does not feed back into the compute).
    sim::Time extra_of(int p, std::size_t i) const {
        const auto& x = slowdown_[static_cast<std::size_t>(p)];
        return i < x.size() ? x[i] : sim::Time::zero();
    }
    void add_rank_passes(int p);
    void add_backward(int p, std::size_t i, const PipePass& pass, const VirtualStagePlan& st,
                      const std::string& name, int last_b_of_chunk);
    void add_send(int p, const PipePass& pass, int vs, const std::string& name);
    void add_pass_dependencies();
    void add_dp_and_optimizer();
    void claim_communicators();
    void refuse_if_too_large() const;
    FlowRun result(const sim::TaskExecutor& exec) const;

    const StepPlan& plan_;
    const int P_, v_, V_;
    const std::size_t m_;
    const hardware::Topology& topo_;
    const ParallelSpec& par_;

    sim::Engine engine_;
    sim::FlowNetwork net_;
    double max_seconds_; ///< refuse a step whose flows take at least this much CPU (0: none)
    collectives::FlowCollectives runner_;
    sim::TaskGraph g_;

    // Communicators outlive the run.
    std::map<std::pair<int, int>, std::unique_ptr<collectives::Communicator>> pairs_;
    std::vector<std::unique_ptr<collectives::Communicator>> dp_comms_;
    /// Experts laid out apart: their gradients' and parameters' group.
    std::vector<std::unique_ptr<collectives::Communicator>> edp_comms_;
    /// Hybrid sharding: the gradient shards' all-reduce across the replicas.
    std::vector<std::unique_ptr<collectives::Communicator>> replicate_comms_;

    std::vector<RankStreams> streams_;
    std::vector<sim::TaskId> fwd_task_, bwd_first_, bwd_last_; // by micro-batch x stage
    std::vector<std::vector<sim::TaskId>> pass_first_, pass_last_;
    /// Per rank and pass: its send task (none: the pass sends nothing).
    std::vector<std::vector<std::optional<sim::TaskId>>> pass_send_;
    std::vector<std::vector<std::vector<sim::TaskId>>> bucket_ready_;
    std::vector<SendRecord> sends_;
    std::map<std::size_t, sim::TaskId> fwd_send_, bwd_send_; // by receiver key
    std::vector<DpRecord> dp_tasks_;
    std::vector<sim::TaskId> optimizer_;
    sim::TaskId shared_embedding_ = 0;
    bool has_shared_ = false;
    const std::vector<std::vector<sim::Time>> slowdown_;
};

void FlowStep::make_communicators() {
    auto group_comm = [&](const std::vector<int>& group) {
        return group.size() > 1 ? std::make_unique<collectives::Communicator>(topo_, group)
                                : nullptr;
    };
    for (int p = 0; p < P_; ++p) {
        const RankPlan& rp = plan_.ranks[static_cast<std::size_t>(p)];
        dp_comms_.push_back(group_comm(rp.dp_group));
        edp_comms_.push_back(group_comm(rp.expert_dp_group));
        replicate_comms_.push_back(group_comm(rp.replicate_group));
    }
}

const collectives::Communicator& FlowStep::pair_comm(int a, int b) {
    auto& c = pairs_[{a, b}];
    if (!c)
        c = std::make_unique<collectives::Communicator>(topo_, std::vector<int>{a, b});
    return *c;
}

const collectives::Communicator* FlowStep::dp_comm_of(int p, const DpCollective& c) const {
    return c.expert      ? edp_comms_[static_cast<std::size_t>(p)].get()
           : c.replicate ? replicate_comms_[static_cast<std::size_t>(p)].get()
                         : dp_comms_[static_cast<std::size_t>(p)].get();
}

sim::TaskAction FlowStep::collective_task(const collectives::Communicator* comm,
                                          collectives::Collective c) {
    return [runner = &runner_, comm, c](sim::TaskId, std::function<void()> done) {
        collectives::Collective rounded = c;
        rounded.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, comm->size());
        if (rounded.bytes <= 0) {
            done();
            return;
        }
        runner->start(*comm, rounded, std::move(done));
    };
}

/// Pass tasks, each followed by its send to the next virtual stage (forward) or the previous
/// one (backward). Synchronous sends (Megatron's default) go on the compute stream, so the
/// sender waits for them; with pp_overlap they go on the pp stream. A rank's last backward of a
/// chunk is split at its bucket boundaries so that buckets can start as the gradients become
/// ready.
void FlowStep::add_rank_passes(int p) {
    const auto& order = plan_.orders()[static_cast<std::size_t>(p)];
    const auto last_b = last_backward_of_chunk(order, v_);
    bucket_ready_[static_cast<std::size_t>(p)].resize(static_cast<std::size_t>(v_));
    for (std::size_t i = 0; i < order.size(); ++i) {
        const PipePass& pass = order[i];
        const int vs = virtual_stage(pass.chunk, p, plan_.shape);
        const auto& st = plan_.stage(vs);
        const std::size_t key = static_cast<std::size_t>(pass.micro_batch) * V_ + vs;
        const std::string name = pass_label(pass, v_);
        if (pass.kind == PassKind::forward) {
            const auto id = g_.add_task(
                {name,
                 streams_[p].compute,
                 (pass.micro_batch == 0 ? st.first_forward.time : st.forward.time) + extra_of(p, i),
                 {}});
            fwd_task_[key] = id;
            pass_first_[p].push_back(id);
            pass_last_[p].push_back(id);
        } else {
            add_backward(p, i, pass, st, name, last_b[static_cast<std::size_t>(pass.chunk)]);
        }
        add_send(p, pass, vs, name);
    }
}

void FlowStep::add_backward(int p, std::size_t i, const PipePass& pass, const VirtualStagePlan& st,
                            const std::string& name, int last_b_of_chunk) {
    const bool overlap = par_.dp_cp() > 1 && par_.dp_overlap && !plan_.shape.forward_only;
    const std::size_t key =
        static_cast<std::size_t>(pass.micro_batch) * V_ + virtual_stage(pass.chunk, p, plan_.shape);
    const sim::Time planned = pass_cost(st, pass).time;
    const sim::Time duration = planned + extra_of(p, i);
    const bool split = overlap && static_cast<int>(i) == last_b_of_chunk;
    sim::Time at;
    sim::TaskId first = 0, last = 0;
    bool any = false;
    auto segment = [&](sim::Time until) {
        const auto id =
            g_.add_task({name, streams_[p].compute, sim::max(sim::Time::zero(), until - at), {}});
        if (!any)
            first = id;
        last = id;
        any = true;
        at = until;
        return id;
    };
    if (split) {
        for (std::size_t k = 0; k < st.buckets.size(); ++k)
            bucket_ready_[p][static_cast<std::size_t>(pass.chunk)].push_back(segment(std::min(
                stretched(parallel::bucket_ready(st, pass.kind, k), planned, duration), duration)));
    }
    if (!any || at < duration)
        segment(duration);
    if (is_input_backward(pass.kind)) {
        bwd_first_[key] = first;
        bwd_last_[key] = last;
    } else {
        // W: after its own B, which the rank's in-order stream already ran.
        g_.add_dependency(bwd_last_[key], first);
    }
    pass_first_[p].push_back(first);
    pass_last_[p].push_back(last);
}

/// The send of a pass to the virtual stage it feeds; none after the last forward and the first
/// backward.
void FlowStep::add_send(int p, const PipePass& pass, int vs, const std::string& name) {
    std::optional<int> to;
    if (pass.kind == PassKind::forward && !route_end(vs, plan_.shape))
        to = vs + 1;
    if (is_input_backward(pass.kind) && !route_start(vs, plan_.shape))
        to = vs - 1;
    if (!to) {
        pass_send_[p].push_back(std::nullopt);
        return;
    }
    const int to_vs = *to;
    const int to_rank = rank_of_stage(to_vs, plan_.shape);
    const auto& sender_stage = plan_.stage(std::min(vs, to_vs));
    const int from_gpu = plan_.ranks[static_cast<std::size_t>(p)].gpu;
    const int to_gpu = plan_.ranks[static_cast<std::size_t>(to_rank)].gpu;
    sim::TaskAction action;
    if (from_gpu != to_gpu && sender_stage.send_bytes > 0) {
        collectives::Collective c;
        c.op = collectives::Op::send_recv;
        c.dtype = hardware::Dtype::fp32;
        c.bytes = sender_stage.send_bytes;
        action = collective_task(&pair_comm(from_gpu, to_gpu), c);
    }
    const sim::StreamId stream = par_.pp_overlap ? streams_[p].pp : streams_[p].compute;
    const auto id = g_.add_task({name, stream, sim::Time::zero(), action});
    g_.add_dependency(pass_last_[p].back(), id);
    const std::size_t j = static_cast<std::size_t>(pass.micro_batch);
    (pass.kind == PassKind::forward ? fwd_send_ : bwd_send_)[j * V_ + to_vs] = id;
    sends_.push_back({p, id, name});
    pass_send_[p].push_back(id);
}

/// Dependencies of the passes that ran (DualPipe's micro-batches visit half the stages), and
/// DualPipe's pairs: the first pass waits for the second's input too.
void FlowStep::add_pass_dependencies() {
    std::vector<bool> ran(m_ * V_, false);
    for (int p = 0; p < P_; ++p) {
        for (const PipePass& pass : plan_.orders()[static_cast<std::size_t>(p)]) {
            if (pass.kind == PassKind::forward)
                ran[static_cast<std::size_t>(pass.micro_batch) * V_ +
                    virtual_stage(pass.chunk, p, plan_.shape)] = true;
        }
    }
    for (int p = 0; p < P_; ++p) {
        const auto& order = plan_.orders()[static_cast<std::size_t>(p)];
        for (std::size_t i = 0; i + 1 < order.size(); ++i) {
            if (!order[i].joint)
                continue;
            const PipePass& after = order[i + 1];
            const int vs2 = virtual_stage(after.chunk, p, plan_.shape);
            const std::size_t key2 = static_cast<std::size_t>(after.micro_batch) * V_ + vs2;
            if (after.kind == PassKind::forward && !route_start(vs2, plan_.shape))
                g_.add_dependency(fwd_send_.at(key2), pass_first_[p][i]);
            else if (is_input_backward(after.kind) && !route_end(vs2, plan_.shape))
                g_.add_dependency(bwd_send_.at(key2), pass_first_[p][i]);
        }
    }
    for (std::size_t key = 0; key < m_ * V_; ++key) {
        if (!ran[key])
            continue;
        const int vs = static_cast<int>(key % V_);
        if (!route_start(vs, plan_.shape))
            g_.add_dependency(fwd_send_.at(key), fwd_task_[key]);
        if (!plan_.shape.forward_only) {
            g_.add_dependency(fwd_task_[key], bwd_first_[key]);
            if (!route_end(vs, plan_.shape))
                g_.add_dependency(bwd_send_.at(key), bwd_first_[key]);
        }
    }
}

/// Data-parallel collectives (bucketed ones after their bucket's backward segment, the rest
/// after the rank's last pass) and the optimizer after them; ZeRO's gathers after it.
void FlowStep::add_dp_and_optimizer() {
    std::vector<std::vector<sim::TaskId>> before_opt(static_cast<std::size_t>(P_));
    for (int p = 0; p < P_; ++p) {
        const RankPlan& rp = plan_.ranks[static_cast<std::size_t>(p)];
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer() || !c.chunk)
                continue;
            const auto id = g_.add_task({collective_label(c), streams_[p].dp, sim::Time::zero(),
                                         collective_task(dp_comm_of(p, c), c.collective)});
            g_.add_dependency(bucket_ready_[p][static_cast<std::size_t>(*c.chunk)]
                                           [static_cast<std::size_t>(*c.bucket)],
                              id);
            before_opt[p].push_back(id);
            dp_tasks_.push_back({p, id, collective_label(c)});
        }
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer() || c.chunk)
                continue;
            const bool embedding = c.role == DpRole::embedding_grad_all_reduce;
            if (embedding && p != 0)
                continue; // one task for the pair, created on rank 0
            const collectives::Communicator* comm =
                embedding ? &pair_comm(rp.gpu, plan_.ranks.back().gpu) : dp_comm_of(p, c);
            const auto id = g_.add_task({collective_label(c), streams_[p].dp, sim::Time::zero(),
                                         collective_task(comm, c.collective)});
            if (!pass_last_[p].empty())
                g_.add_dependency(pass_last_[p].back(), id);
            if (embedding) {
                shared_embedding_ = id;
                has_shared_ = true;
                g_.add_dependency(pass_last_[static_cast<std::size_t>(P_ - 1)].back(), id);
            }
            before_opt[p].push_back(id);
            dp_tasks_.push_back({p, id, collective_label(c)});
        }
    }
    if (has_shared_)
        before_opt[static_cast<std::size_t>(P_ - 1)].push_back(shared_embedding_);
    for (int p = 0; p < P_; ++p) {
        const RankPlan& rp = plan_.ranks[static_cast<std::size_t>(p)];
        optimizer_[p] = g_.add_task({"optimizer", streams_[p].compute, rp.optimizer_time, {}});
        for (auto id : before_opt[p])
            g_.add_dependency(id, optimizer_[p]);
        for (const DpCollective& c : rp.dp) {
            if (!c.after_optimizer())
                continue;
            const auto id = g_.add_task({collective_label(c), streams_[p].dp, sim::Time::zero(),
                                         collective_task(dp_comm_of(p, c), c.collective)});
            g_.add_dependency(optimizer_[p], id);
            dp_tasks_.push_back({p, id, collective_label(c)});
        }
    }
}

/// Every communicator is known before the first transfer, so symmetry sees which resources
/// each one shares with another.
void FlowStep::claim_communicators() {
    for (const auto& [key, comm] : pairs_)
        runner_.claim(*comm);
    for (const auto& comm : dp_comms_)
        if (comm)
            runner_.claim(*comm);
    for (const auto& comm : replicate_comms_)
        if (comm)
            runner_.claim(*comm);
}

/// Refuses, before a flow is made, a step whose collectives would hold more than this process
/// may take or take longer than --max-seconds (collectives/flow_estimate.h): the ranks'
/// data-parallel collectives may all run at once, so their largest rounds are summed, each
/// rank's largest; each one's flows are listed once at least, so their CPU times are summed
/// (a lower bound: the step's other flows only add to it).
void FlowStep::refuse_if_too_large() const {
    using Key = std::tuple<const collectives::Communicator*, int, std::int64_t, int>;
    std::map<Key, collectives::FlowFootprint> footprints;
    double held = 0, seconds = 0, flows = 0, rounds = 0;
    for (int p = 0; p < P_; ++p) {
        const RankPlan& rp = plan_.ranks[static_cast<std::size_t>(p)];
        double most = 0;
        for (const DpCollective& c : rp.dp) {
            const collectives::Communicator* comm = dp_comm_of(p, c);
            if (comm == nullptr || c.role == DpRole::embedding_grad_all_reduce)
                continue; // the embedding's pair: two GPUs
            collectives::Collective rounded = c.collective;
            rounded.bytes = collectives::round_bytes(c.collective.op, c.collective.bytes,
                                                     c.collective.dtype, comm->size());
            if (rounded.bytes <= 0)
                continue;
            const Key key{comm, static_cast<int>(rounded.op), rounded.bytes,
                          static_cast<int>(rounded.dtype)};
            auto it = footprints.find(key);
            if (it == footprints.end())
                it = footprints.emplace(key, collectives::flow_footprint(*comm, rounded)).first;
            const collectives::FlowFootprint& f = it->second;
            most = std::max(most, f.peak_round);
            seconds += collectives::flow_seconds(f);
            flows += f.flows;
            rounds += f.rounds;
        }
        held += most;
    }
    const std::string what = "a step on " + std::to_string(topo_.gpu_count()) + " GPUs";
    collectives::refuse_if_flows_too_large(
        collectives::flow_bytes(held, static_cast<double>(topo_.edge_count())), held, what);
    collectives::refuse_if_flows_too_slow(seconds, flows, rounds, max_seconds_, what);
}

FlowRun FlowStep::run() {
    refuse_if_too_large();
    claim_communicators();
    sim::TaskExecutor exec(engine_, g_);
    exec.start();
    engine_.run();
    exec.require_finished();
    return result(exec);
}

/// The executed passes, sends and collectives of every rank, with the run's flow counts.
FlowRun FlowStep::result(const sim::TaskExecutor& exec) const {
    FlowRun out;
    out.events = engine_.events_processed();
    out.flow_gpus = runner_.simulated_gpus();
    out.represented_gpus = runner_.represented_gpus();
    out.flows = runner_.stats().flows;
    out.represented_flows = runner_.stats().represented;
    out.ranks.resize(static_cast<std::size_t>(P_));
    auto s = [&](sim::TaskId id) { return exec.start_time(id); };
    auto e = [&](sim::TaskId id) { return exec.end_time(id); };
    for (int p = 0; p < P_; ++p) {
        ExecutedRank& r = out.ranks[static_cast<std::size_t>(p)];
        const auto& order = plan_.orders()[static_cast<std::size_t>(p)];
        for (std::size_t i = 0; i < order.size(); ++i) {
            const PipePass& pass = order[i];
            const int vs = virtual_stage(pass.chunk, p, plan_.shape);
            const std::size_t key = static_cast<std::size_t>(pass.micro_batch) * V_ + vs;
            ExecutedPass x{pass,         vs, s(pass_first_[p][i]), e(pass_last_[p][i]),
                           std::nullopt, {}, extra_of(p, i)};
            x.released = x.end;
            if (!par_.pp_overlap && pass_send_[p][i])
                x.released = e(*pass_send_[p][i]);
            if (pass.kind == PassKind::forward && !route_start(vs, plan_.shape))
                x.input = InputTransfer{s(fwd_send_.at(key)), e(fwd_send_.at(key))};
            else if (is_input_backward(pass.kind) && !route_end(vs, plan_.shape))
                x.input = InputTransfer{s(bwd_send_.at(key)), e(bwd_send_.at(key))};
            r.passes.push_back(x);
        }
        r.last_pass_end = r.passes.empty() ? sim::Time::zero() : r.passes.back().released;
        r.optimizer_start = s(optimizer_[p]);
        r.optimizer_end = e(optimizer_[p]);
        r.end = r.optimizer_end;
    }
    for (const SendRecord& rec : sends_) {
        if (e(rec.task) > s(rec.task))
            out.ranks[static_cast<std::size_t>(rec.sender)].sends.push_back(
                {s(rec.task), e(rec.task), rec.label});
    }
    for (const DpRecord& rec : dp_tasks_) {
        auto& r = out.ranks[static_cast<std::size_t>(rec.rank)];
        r.dp.push_back({s(rec.task), e(rec.task), rec.label});
        r.end = std::max(r.end, e(rec.task));
    }
    if (has_shared_) {
        auto& last = out.ranks.back();
        last.dp.push_back(
            {s(shared_embedding_), e(shared_embedding_), "embedding grad all-reduce"});
    }
    return out;
}

} // namespace

FlowRun run_flow(const StepPlan& plan, bool symmetry, double max_seconds) {
    return FlowStep(plan, symmetry, max_seconds).run();
}

} // namespace clustersim::strategies::parallel::detail
