#include "strategies/parallel/training_step.h"

#include "base/error.h"
#include "base/units.h"
#include "hardware/flow_binding.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/task_graph.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/parallel/schedule_timing.h"
#include "strategies/parallel/step_plan.h"

#include <algorithm>
#include <map>
#include <memory>

namespace clustersim::strategies::parallel {
namespace {

constexpr double kNone = -1;

/// One pass as it ran.
struct ExecutedPass {
    PipePass pass{};
    int vs = 0;
    double start = 0;
    double end = 0;
    double send_start = kNone; ///< when the transfer of its input started (none: -1)
    double arrival = kNone;    ///< when that transfer ended
    double released = 0;       ///< when its rank went on (after a blocking send: later than end)
};

struct Interval {
    double start = 0;
    double end = 0;
    std::string label;
};

/// What each rank did, in either fidelity.
struct ExecutedRank {
    std::vector<ExecutedPass> passes;
    std::vector<Interval> sends; ///< its pipeline transfers (for the timeline)
    std::vector<Interval> dp;
    double last_pass_end = 0;
    double optimizer_start = 0;
    double optimizer_end = 0;
    double end = 0;
};

std::string pass_label(const PipePass& p, int virtual_stages) {
    std::string s = (p.kind == PassKind::forward ? "F" : "B") + std::to_string(p.micro_batch);
    if (virtual_stages > 1)
        s += "." + std::to_string(p.chunk);
    return s;
}

std::string collective_label(const DpCollective& d) {
    return std::string(d.what) + " " + base::format_bytes(d.collective.bytes);
}

/// Index of the last backward pass of each chunk in a rank's order.
std::vector<int> last_backward_of_chunk(const std::vector<PipePass>& order, int chunks) {
    std::vector<int> last(static_cast<std::size_t>(chunks), -1);
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (order[i].kind == PassKind::backward)
            last[static_cast<std::size_t>(order[i].chunk)] = static_cast<int>(i);
    }
    return last;
}

// ---------------------------------------------------------------------------------------------
// Analytic: the DAG timing of the schedule, then each rank's data-parallel stream.

/// `timeline`: also record the transfers and collectives as labelled intervals (only the
/// timeline uses them; a sweep skips them).
std::vector<ExecutedRank> run_analytic(const StepPlan& plan, bool timeline) {
    const int P = plan.shape.ranks;
    PassDurations d;
    d.pass = [&](PassKind k, int vs) {
        return k == PassKind::forward ? plan.stage(vs).forward.time : plan.stage(vs).backward.time;
    };
    d.transfer = [&](PassKind k, int vs) {
        return k == PassKind::forward ? plan.stage(vs).send_forward : plan.stage(vs).send_backward;
    };
    d.blocking_sends = !plan.experiment->parallel.pp_overlap;
    const ScheduleTiming timing = time_schedule(plan.orders, plan.shape, d);
    const int V = P * plan.shape.virtual_stages;
    const std::size_t m = static_cast<std::size_t>(plan.shape.micro_batches);
    std::vector<double> fwd_end(m * static_cast<std::size_t>(V)), bwd_end(fwd_end.size());
    for (const auto& rank : timing.ranks) {
        for (const PassTime& t : rank)
            (t.pass.kind == PassKind::forward
                 ? fwd_end
                 : bwd_end)[static_cast<std::size_t>(t.pass.micro_batch) * V + t.virtual_stage] =
                t.end;
    }

    std::vector<ExecutedRank> out(static_cast<std::size_t>(P));
    for (int p = 0; p < P; ++p) {
        ExecutedRank& r = out[static_cast<std::size_t>(p)];
        r.passes.reserve(timing.ranks[static_cast<std::size_t>(p)].size());
        for (const PassTime& t : timing.ranks[static_cast<std::size_t>(p)]) {
            ExecutedPass e{t.pass, t.virtual_stage, t.start, t.end, kNone, kNone, t.released};
            const std::size_t j = static_cast<std::size_t>(t.pass.micro_batch);
            if (t.pass.kind == PassKind::forward && t.virtual_stage > 0) {
                e.send_start = fwd_end[j * V + t.virtual_stage - 1];
                e.arrival = e.send_start + plan.stage(t.virtual_stage - 1).send_forward;
            } else if (t.pass.kind == PassKind::backward && t.virtual_stage + 1 < V) {
                e.send_start = bwd_end[j * V + t.virtual_stage + 1];
                e.arrival = e.send_start + plan.stage(t.virtual_stage).send_backward;
            }
            if (timeline && e.arrival != kNone && e.arrival > e.send_start) {
                // Record the transfer on the sender's timeline.
                const int sender = t.pass.kind == PassKind::forward ? (t.virtual_stage - 1) % P
                                                                    : (t.virtual_stage + 1) % P;
                out[static_cast<std::size_t>(sender)].sends.push_back(
                    {e.send_start, e.arrival, pass_label(t.pass, plan.shape.virtual_stages)});
            }
            r.passes.push_back(e);
        }
        r.last_pass_end = r.passes.empty() ? 0 : r.passes.back().released;
    }

    // Data-parallel streams, in issue order; the embedding all-reduce shared by the first and
    // last rank waits for both.
    const auto& e = *plan.experiment;
    std::vector<double> before_shared(static_cast<std::size_t>(P), 0.0);
    for (int p = 0; p < P; ++p) {
        const RankPlan& rp = plan.ranks[static_cast<std::size_t>(p)];
        ExecutedRank& r = out[static_cast<std::size_t>(p)];
        const auto last_b = last_backward_of_chunk(plan.orders[static_cast<std::size_t>(p)],
                                                   plan.shape.virtual_stages);
        double t = 0;
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer || c.chunk < 0)
                continue;
            const ExecutedPass& b =
                r.passes[static_cast<std::size_t>(last_b[static_cast<std::size_t>(c.chunk)])];
            const auto& st = plan.stage(b.vs);
            const double ready = b.start + st.buckets[static_cast<std::size_t>(c.bucket)].ready;
            const double start = std::max(ready, t);
            t = start + c.time;
            r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
        }
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer || c.chunk >= 0 || std::string(c.what).rfind("embedding", 0) == 0)
                continue;
            const double start = std::max(r.last_pass_end, t);
            t = start + c.time;
            r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
        }
        before_shared[static_cast<std::size_t>(p)] = std::max(t, r.last_pass_end);
    }
    for (int p = 0; p < P; ++p) {
        const RankPlan& rp = plan.ranks[static_cast<std::size_t>(p)];
        ExecutedRank& r = out[static_cast<std::size_t>(p)];
        double t = before_shared[static_cast<std::size_t>(p)];
        for (const DpCollective& c : rp.dp) {
            if (std::string(c.what).rfind("embedding", 0) != 0)
                continue;
            const double start = std::max(before_shared.front(), before_shared.back());
            t = start + c.time;
            r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
        }
        r.optimizer_start = std::max(r.last_pass_end, t);
        r.optimizer_end = r.optimizer_start + rp.optimizer_time;
        t = r.optimizer_end;
        for (const DpCollective& c : rp.dp) {
            if (!c.after_optimizer)
                continue;
            const double start = t;
            t = start + c.time;
            r.dp.push_back({start, t, timeline ? collective_label(c) : std::string()});
        }
        r.end = t;
        (void)e;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Flow: tasks on the event engine, transfers and data-parallel collectives on the flow network.

struct FlowRun {
    std::vector<ExecutedRank> ranks;
    std::uint64_t events = 0;
};

FlowRun run_flow(const StepPlan& plan) {
    const int P = plan.shape.ranks;
    const int v = plan.shape.virtual_stages;
    const int V = P * v;
    const hardware::Topology& topo = *plan.topology;
    const auto& par = plan.experiment->parallel;

    sim::Engine engine;
    sim::FlowNetwork net(engine);
    hardware::bind_topology(net, topo);
    collectives::FlowCollectives runner(engine, net, topo);
    sim::TaskGraph g;

    // Communicators outlive the run.
    std::map<std::pair<int, int>, std::unique_ptr<collectives::Communicator>> pairs;
    auto pair_comm = [&](int a, int b) -> const collectives::Communicator& {
        auto& c = pairs[{a, b}];
        if (!c)
            c = std::make_unique<collectives::Communicator>(topo, std::vector<int>{a, b});
        return *c;
    };
    std::vector<std::unique_ptr<collectives::Communicator>> dp_comms;
    for (int p = 0; p < P; ++p) {
        const auto& group = plan.ranks[static_cast<std::size_t>(p)].dp_group;
        dp_comms.push_back(
            group.size() > 1 ? std::make_unique<collectives::Communicator>(topo, group) : nullptr);
    }
    auto collective_task = [&runner](const collectives::Communicator* comm,
                                     collectives::Collective c) -> sim::TaskAction {
        return [&runner, comm, c](sim::TaskId, std::function<void()> done) {
            collectives::Collective rounded = c;
            rounded.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, comm->size());
            if (rounded.bytes <= 0) {
                done();
                return;
            }
            runner.start(*comm, rounded, std::move(done));
        };
    };

    struct RankStreams {
        sim::StreamId compute, pp, dp;
    };
    std::vector<RankStreams> streams;
    for (int p = 0; p < P; ++p)
        streams.push_back(
            {g.add_stream("compute", p), g.add_stream("pp", p), g.add_stream("dp", p)});

    // Pass tasks, each followed by its send to the next virtual stage (forward) or the
    // previous one (backward). Synchronous sends (Megatron's default) go on the compute stream,
    // so the sender waits for them; with pp_overlap they go on the pp stream. A rank's last
    // backward of a chunk is split at its bucket boundaries so that buckets can start as the
    // gradients become ready.
    const std::size_t m = static_cast<std::size_t>(plan.shape.micro_batches);
    std::vector<sim::TaskId> fwd_task(m * V), bwd_first(m * V), bwd_last(m * V);
    std::vector<std::vector<sim::TaskId>> pass_first(static_cast<std::size_t>(P)),
        pass_last(static_cast<std::size_t>(P));
    std::vector<std::vector<int>> pass_send(static_cast<std::size_t>(P)); ///< send task or -1
    std::vector<std::vector<std::vector<sim::TaskId>>> bucket_ready(static_cast<std::size_t>(P));
    const bool overlap = par.dp > 1 && par.dp_overlap && !plan.shape.forward_only;
    struct SendRecord {
        int sender;
        sim::TaskId task;
        std::string label;
    };
    std::vector<SendRecord> sends;
    std::map<std::size_t, sim::TaskId> fwd_send, bwd_send; // by receiver key
    for (int p = 0; p < P; ++p) {
        const auto& order = plan.orders[static_cast<std::size_t>(p)];
        const auto last_b = last_backward_of_chunk(order, v);
        bucket_ready[static_cast<std::size_t>(p)].resize(static_cast<std::size_t>(v));
        for (std::size_t i = 0; i < order.size(); ++i) {
            const PipePass& pass = order[i];
            const int vs = virtual_stage(pass.chunk, p, P);
            const auto& st = plan.stage(vs);
            const std::size_t j = static_cast<std::size_t>(pass.micro_batch);
            const std::size_t key = j * V + vs;
            const std::string name = pass_label(pass, v);
            if (pass.kind == PassKind::forward) {
                const auto id = g.add_task(
                    {name, streams[p].compute, sim::Time::from_seconds(st.forward.time), {}, 0});
                fwd_task[key] = id;
                pass_first[p].push_back(id);
                pass_last[p].push_back(id);
            } else {
                const bool split =
                    overlap && static_cast<int>(i) == last_b[static_cast<std::size_t>(pass.chunk)];
                double at = 0;
                sim::TaskId first = 0, last = 0;
                bool any = false;
                auto segment = [&](double until) {
                    const auto id = g.add_task({name,
                                                streams[p].compute,
                                                sim::Time::from_seconds(std::max(0.0, until - at)),
                                                {},
                                                0});
                    if (!any)
                        first = id;
                    last = id;
                    any = true;
                    at = until;
                    return id;
                };
                if (split) {
                    for (const GradBucket& bucket : st.buckets)
                        bucket_ready[p][static_cast<std::size_t>(pass.chunk)].push_back(
                            segment(std::min(bucket.ready, st.backward.time)));
                }
                if (!any || at < st.backward.time)
                    segment(st.backward.time);
                bwd_first[key] = first;
                bwd_last[key] = last;
                pass_first[p].push_back(first);
                pass_last[p].push_back(last);
            }

            int to_vs = -1;
            if (pass.kind == PassKind::forward && vs + 1 < V)
                to_vs = vs + 1;
            if (pass.kind == PassKind::backward && vs > 0)
                to_vs = vs - 1;
            if (to_vs < 0) {
                pass_send[p].push_back(-1);
                continue;
            }
            const int to_rank = to_vs % P;
            const auto& sender_stage = plan.stage(std::min(vs, to_vs));
            const int from_gpu = plan.ranks[static_cast<std::size_t>(p)].gpu;
            const int to_gpu = plan.ranks[static_cast<std::size_t>(to_rank)].gpu;
            sim::TaskAction action;
            if (from_gpu != to_gpu && sender_stage.send_bytes > 0) {
                collectives::Collective c;
                c.op = collectives::Op::send_recv;
                c.dtype = hardware::Dtype::fp32;
                c.bytes = sender_stage.send_bytes;
                action = collective_task(&pair_comm(from_gpu, to_gpu), c);
            }
            const sim::StreamId stream = par.pp_overlap ? streams[p].pp : streams[p].compute;
            const auto id = g.add_task({name, stream, sim::Time::zero(), action, 0});
            g.add_dependency(pass_last[p].back(), id);
            (pass.kind == PassKind::forward ? fwd_send : bwd_send)[j * V + to_vs] = id;
            sends.push_back({p, id, name});
            pass_send[p].push_back(static_cast<int>(id));
        }
    }
    for (std::size_t key = 0; key < m * V; ++key) {
        const int vs = static_cast<int>(key % V);
        if (vs > 0)
            g.add_dependency(fwd_send.at(key), fwd_task[key]);
        if (!plan.shape.forward_only) {
            g.add_dependency(fwd_task[key], bwd_first[key]);
            if (vs + 1 < V)
                g.add_dependency(bwd_send.at(key), bwd_first[key]);
        }
    }

    // Data-parallel collectives and the optimizer.
    struct DpRecord {
        int rank;
        sim::TaskId task;
        std::string label;
    };
    std::vector<DpRecord> dp_tasks;
    std::vector<sim::TaskId> optimizer(static_cast<std::size_t>(P));
    std::vector<std::vector<sim::TaskId>> before_opt(static_cast<std::size_t>(P));
    sim::TaskId shared_embedding = 0;
    bool has_shared = false;
    for (int p = 0; p < P; ++p) {
        const RankPlan& rp = plan.ranks[static_cast<std::size_t>(p)];
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer || c.chunk < 0)
                continue;
            const auto id = g.add_task({collective_label(c), streams[p].dp, sim::Time::zero(),
                                        collective_task(dp_comms[p].get(), c.collective), 0});
            g.add_dependency(bucket_ready[p][static_cast<std::size_t>(c.chunk)]
                                         [static_cast<std::size_t>(c.bucket)],
                             id);
            before_opt[p].push_back(id);
            dp_tasks.push_back({p, id, collective_label(c)});
        }
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer || c.chunk >= 0)
                continue;
            const bool embedding = std::string(c.what).rfind("embedding", 0) == 0;
            if (embedding && p != 0)
                continue; // one task for the pair, created on rank 0
            const collectives::Communicator* comm =
                embedding ? &pair_comm(rp.gpu, plan.ranks.back().gpu) : dp_comms[p].get();
            const auto id = g.add_task({collective_label(c), streams[p].dp, sim::Time::zero(),
                                        collective_task(comm, c.collective), 0});
            if (!pass_last[p].empty())
                g.add_dependency(pass_last[p].back(), id);
            if (embedding) {
                shared_embedding = id;
                has_shared = true;
                g.add_dependency(pass_last[static_cast<std::size_t>(P - 1)].back(), id);
            }
            before_opt[p].push_back(id);
            dp_tasks.push_back({p, id, collective_label(c)});
        }
    }
    if (has_shared)
        before_opt[static_cast<std::size_t>(P - 1)].push_back(shared_embedding);
    for (int p = 0; p < P; ++p) {
        const RankPlan& rp = plan.ranks[static_cast<std::size_t>(p)];
        optimizer[p] = g.add_task(
            {"optimizer", streams[p].compute, sim::Time::from_seconds(rp.optimizer_time), {}, 0});
        for (auto id : before_opt[p])
            g.add_dependency(id, optimizer[p]);
        for (const DpCollective& c : rp.dp) {
            if (!c.after_optimizer)
                continue;
            const auto id = g.add_task({collective_label(c), streams[p].dp, sim::Time::zero(),
                                        collective_task(dp_comms[p].get(), c.collective), 0});
            g.add_dependency(optimizer[p], id);
            dp_tasks.push_back({p, id, collective_label(c)});
        }
    }

    sim::TaskExecutor exec(engine, g);
    exec.start();
    engine.run();
    exec.require_finished();

    FlowRun out;
    out.events = engine.events_processed();
    out.ranks.resize(static_cast<std::size_t>(P));
    auto s = [&](sim::TaskId id) { return exec.start_time(id).seconds(); };
    auto e = [&](sim::TaskId id) { return exec.end_time(id).seconds(); };
    for (int p = 0; p < P; ++p) {
        ExecutedRank& r = out.ranks[static_cast<std::size_t>(p)];
        const auto& order = plan.orders[static_cast<std::size_t>(p)];
        for (std::size_t i = 0; i < order.size(); ++i) {
            const PipePass& pass = order[i];
            const int vs = virtual_stage(pass.chunk, p, P);
            const std::size_t key = static_cast<std::size_t>(pass.micro_batch) * V + vs;
            ExecutedPass x{pass, vs, s(pass_first[p][i]), e(pass_last[p][i]), kNone, kNone, 0};
            x.released = x.end;
            if (!par.pp_overlap && pass_send[p][i] >= 0)
                x.released = e(static_cast<sim::TaskId>(pass_send[p][i]));
            if (pass.kind == PassKind::forward && vs > 0) {
                x.send_start = s(fwd_send.at(key));
                x.arrival = e(fwd_send.at(key));
            } else if (pass.kind == PassKind::backward && vs + 1 < V) {
                x.send_start = s(bwd_send.at(key));
                x.arrival = e(bwd_send.at(key));
            }
            r.passes.push_back(x);
        }
        r.last_pass_end = r.passes.empty() ? 0 : r.passes.back().released;
        r.optimizer_start = s(optimizer[p]);
        r.optimizer_end = e(optimizer[p]);
        r.end = r.optimizer_end;
    }
    for (const SendRecord& rec : sends) {
        if (e(rec.task) > s(rec.task))
            out.ranks[static_cast<std::size_t>(rec.sender)].sends.push_back(
                {s(rec.task), e(rec.task), rec.label});
    }
    for (const DpRecord& rec : dp_tasks) {
        auto& r = out.ranks[static_cast<std::size_t>(rec.rank)];
        r.dp.push_back({s(rec.task), e(rec.task), rec.label});
        r.end = std::max(r.end, e(rec.task));
    }
    if (has_shared) {
        auto& last = out.ranks.back();
        last.dp.push_back({s(shared_embedding), e(shared_embedding), "embedding grad all-reduce"});
    }
    return out;
}

// ---------------------------------------------------------------------------------------------

std::string describe_recompute(const RecomputePlan& r) {
    std::string s;
    auto add = [&](int n, const char* what) {
        if (n > 0)
            s += (s.empty() ? "" : " + ") + std::to_string(n) + " " + what;
    };
    add(r.full, "full");
    add(r.selective, "selective");
    add(r.none, "none");
    return s.empty() ? "no layers" : s;
}

/// Memory of each rank and the out-of-memory verdict.
void account_memory(const StepPlan& plan, StepResult& r) {
    r.capacity_bytes = plan.capacity_bytes;
    for (const RankPlan& rp : plan.ranks) {
        StageMemory m;
        m.stage = rp.rank;
        m.weights_bytes = rp.weights_bytes;
        m.grads_bytes = plan.shape.forward_only ? 0 : rp.grads_bytes;
        m.optimizer_bytes = plan.shape.forward_only ? 0 : rp.optimizer_bytes;
        m.activations_bytes = peak_activation_bytes(plan, rp.rank);
        m.runtime_bytes = plan.runtime_bytes;
        m.peak_bytes = m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes +
                       m.runtime_bytes;
        RecomputePlan total;
        for (int c = 0; c < plan.shape.virtual_stages; ++c) {
            const auto& st = plan.stage(virtual_stage(c, rp.rank, plan.shape.ranks));
            total.none += st.recompute.none;
            total.selective += st.recompute.selective;
            total.full += st.recompute.full;
        }
        m.recompute = describe_recompute(total);
        if (m.peak_bytes > r.peak_bytes_max)
            r.peak_bytes_max = m.peak_bytes;
        if (m.peak_bytes > plan.capacity_bytes &&
            m.peak_bytes - plan.capacity_bytes > r.oom_excess_bytes) {
            r.oom = true;
            r.oom_stage = rp.rank;
            r.oom_excess_bytes = m.peak_bytes - plan.capacity_bytes;
        }
        r.memory.push_back(std::move(m));
    }
    std::string plan_text;
    for (const auto& m : r.memory)
        plan_text += (plan_text.empty() ? "" : ", ") +
                     ("stage " + std::to_string(m.stage) + ": " + m.recompute);
    r.recompute_plan = (plan.automatic_recompute ? "auto: " : "") + plan_text;
}

/// The breakdown of one rank; the parts sum to `step`.
Breakdown breakdown_of(const StepPlan& plan, const ExecutedRank& r, int rank, double step) {
    Breakdown b;
    double prev_end = 0;
    double prev_released = 0;
    for (const ExecutedPass& x : r.passes) {
        const auto& st = plan.stage(x.vs);
        const PassCost& c = x.pass.kind == PassKind::forward ? st.forward : st.backward;
        // Flow runs time passes as fixed durations too; scale in case of rounding to ps.
        b.compute_s += c.compute;
        b.recompute_s += c.recompute;
        b.tp_comm_exposed_s += c.tp_wait;
        b.host_s += c.host_wait;
        // Idle before this pass: first the previous pass's blocking send (the rank was busy
        // sending), then the transfer of this pass's input while it was in flight; the rest is
        // bubble.
        double idle_from = prev_end;
        if (prev_released > prev_end) {
            b.pp_comm_exposed_s += std::min(x.start, prev_released) - prev_end;
            idle_from = std::min(x.start, prev_released);
        }
        const double gap = std::max(0.0, x.start - idle_from);
        if (gap > 0 && x.arrival != kNone && x.arrival > idle_from)
            b.pp_comm_exposed_s += std::min(gap, x.arrival - std::max(idle_from, x.send_start));
        prev_end = x.end;
        prev_released = x.released;
    }
    b.optimizer_s = plan.ranks[static_cast<std::size_t>(rank)].optimizer_time;
    if (prev_released > prev_end)
        b.pp_comm_exposed_s += prev_released - prev_end; // the last pass's blocking send
    b.dp_comm_exposed_s =
        std::max(0.0, r.optimizer_start - r.last_pass_end) + std::max(0.0, r.end - r.optimizer_end);
    const double accounted = b.compute_s + b.recompute_s + b.tp_comm_exposed_s + b.host_s +
                             b.pp_comm_exposed_s + b.dp_comm_exposed_s + b.optimizer_s;
    b.pp_bubble_s = std::max(0.0, step - accounted);
    return b;
}

void record_timeline(const StepPlan& plan, const std::vector<ExecutedRank>& ranks, StepResult& r) {
    const int v = plan.shape.virtual_stages;
    for (std::size_t p = 0; p < ranks.size(); ++p) {
        const ExecutedRank& x = ranks[p];
        const int rank = static_cast<int>(p);
        std::int64_t live = 0;
        r.memory_points.push_back({rank, 0.0, 0});
        for (const ExecutedPass& e : x.passes) {
            const auto& st = plan.stage(e.vs);
            const std::string label = pass_label(e.pass, v);
            if (e.pass.kind == PassKind::forward) {
                r.bars.push_back({rank, TimelineStream::compute, e.start, e.end, "forward", label});
                live += st.activation_bytes;
                r.memory_points.push_back({rank, e.start, live});
            } else {
                const double total = std::max(1e-18, st.backward.time);
                const double split = e.start + (e.end - e.start) * (st.backward.recompute / total);
                if (split > e.start)
                    r.bars.push_back({rank, TimelineStream::compute, e.start, split, "recompute",
                                      "R" + label.substr(1)});
                r.bars.push_back({rank, TimelineStream::compute, split, e.end, "backward", label});
                r.memory_points.push_back({rank, e.start, live + st.transient_bytes});
                live -= st.activation_bytes;
                r.memory_points.push_back({rank, e.end, live});
            }
        }
        for (const Interval& s : x.sends)
            r.bars.push_back({rank, TimelineStream::pp, s.start, s.end, "pp-comm", s.label});
        for (const Interval& d : x.dp)
            r.bars.push_back({rank, TimelineStream::dp, d.start, d.end, "dp-comm", d.label});
        if (x.optimizer_end > x.optimizer_start)
            r.bars.push_back({rank, TimelineStream::compute, x.optimizer_start, x.optimizer_end,
                              "optimizer", "opt"});
    }
}

/// A recompute or ZeRO setting under which the experiment fits, or advice.
std::string find_fix(const ExperimentSpec& e,
                     const std::shared_ptr<const hardware::Topology>& topology,
                     collectives::CommunicatorCache* communicators) {
    auto fits = [&](ExperimentSpec variant) {
        StepOptions o;
        o.oom_advice = false;
        return !detail::simulate_step_on(variant, o, topology, communicators).oom;
    };
    std::vector<std::pair<std::string, ExperimentSpec>> tries;
    if (e.parallel.recompute != RecomputePolicy::full &&
        e.parallel.recompute != RecomputePolicy::automatic) {
        ExperimentSpec v = e;
        v.parallel.recompute = RecomputePolicy::selective;
        if (e.parallel.recompute == RecomputePolicy::none)
            tries.emplace_back("recompute: selective", v);
        v.parallel.recompute = RecomputePolicy::full;
        tries.emplace_back("recompute: full", v);
    }
    if (e.parallel.dp > 1) {
        for (int z = e.parallel.zero + 1; z <= 3; ++z) {
            ExperimentSpec v = e;
            v.parallel.zero = z;
            tries.emplace_back("zero: " + std::to_string(z), v);
        }
    }
    for (auto& [what, v] : tries) {
        if (fits(v))
            return "fits with " + what;
    }
    return "no recompute or ZeRO setting fits; use more GPUs for tensor or pipeline parallelism";
}

} // namespace

StepResult simulate_step(const ExperimentSpec& e, const StepOptions& options) {
    return detail::simulate_step_on(e, options,
                                    std::make_shared<const hardware::Topology>(e.cluster), nullptr);
}

StepResult detail::simulate_step_on(const ExperimentSpec& e, const StepOptions& options,
                                    std::shared_ptr<const hardware::Topology> topology,
                                    collectives::CommunicatorCache* communicators) {
    const StepPlan plan = build_step_plan(e, topology, communicators);

    StepResult r;
    r.experiment = e.name;
    r.fidelity = options.fidelity;
    r.gpus = e.gpus;
    r.tp = e.parallel.tp;
    r.pp = e.parallel.pp;
    r.dp = e.parallel.dp;
    r.micro_batches = plan.shape.micro_batches;
    r.virtual_stages = plan.shape.virtual_stages;
    r.schedule = std::string(to_string(e.parallel.schedule));

    std::vector<ExecutedRank> ranks;
    if (options.fidelity == Fidelity::flow) {
        FlowRun run = run_flow(plan);
        ranks = std::move(run.ranks);
        r.events = run.events;
    } else {
        ranks = run_analytic(plan, options.timeline);
    }
    for (std::size_t p = 0; p < ranks.size(); ++p) {
        if (ranks[p].end > r.step_time_s) {
            r.step_time_s = ranks[p].end;
            r.critical_rank = static_cast<int>(p);
        }
    }
    r.breakdown = breakdown_of(plan, ranks[static_cast<std::size_t>(r.critical_rank)],
                               r.critical_rank, r.step_time_s);
    r.bubble_fraction = r.step_time_s > 0 ? r.breakdown.pp_bubble_s / r.step_time_s : 0;
    r.ideal_bubble_fraction = ideal_bubble_fraction(e.parallel.schedule, plan.shape);
    r.model_flops =
        e.training.forward_only
            ? models::model_flops_per_iteration(e.model, e.training.global_batch, false) / 3
            : models::model_flops_per_iteration(e.model, e.training.global_batch, false);
    const double peak = e.cluster.node.gpu.peak(e.training.dtype);
    r.mfu = r.step_time_s > 0 ? r.model_flops / (r.step_time_s * e.gpus * peak) : 0;
    r.tokens_per_s =
        r.step_time_s > 0 ? static_cast<double>(e.tokens_per_iteration()) / r.step_time_s : 0;

    account_memory(plan, r);
    if (r.oom && options.oom_advice)
        r.oom_fix = find_fix(e, topology, communicators);

    for (const RankPlan& rp : plan.ranks)
        r.simulated_gpus.push_back(rp.gpu);
    r.simulated_note = "one GPU per pipeline rank (tensor-parallel rank 0 of data-parallel replica "
                       "0): " +
                       std::to_string(plan.ranks.size()) + " of " + std::to_string(e.gpus) +
                       " GPUs; tensor-parallel peers and data-parallel replicas do the same work";
    if (options.timeline)
        record_timeline(plan, ranks, r);
    return r;
}

} // namespace clustersim::strategies::parallel
