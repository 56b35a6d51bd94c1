#include "strategies/parallel/flow_executor.h"

#include "hardware/flow_binding.h"
#include "sim/engine.h"
#include "sim/flow_network.h"
#include "sim/task_graph.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/parallel/analytic_executor.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace clustersim::strategies::parallel::detail {

FlowRun run_flow(const StepPlan& plan, bool symmetry) {
    const int P = plan.shape.ranks;
    const int v = plan.shape.virtual_stages;
    const int V = stage_count(plan.shape);
    const hardware::Topology& topo = *plan.topology;
    const auto& par = plan.experiment->parallel;

    sim::Engine engine;
    sim::FlowNetwork net(engine);
    hardware::bind_topology(net, topo);
    collectives::FlowOptions flow_options;
    flow_options.symmetry = symmetry;
    collectives::FlowCollectives runner(engine, net, topo, flow_options);
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
    // Experts laid out apart: their gradients' and parameters' group.
    std::vector<std::unique_ptr<collectives::Communicator>> edp_comms;
    for (int p = 0; p < P; ++p) {
        const auto& group = plan.ranks[static_cast<std::size_t>(p)].expert_dp_group;
        edp_comms.push_back(
            group.size() > 1 ? std::make_unique<collectives::Communicator>(topo, group) : nullptr);
    }
    // Hybrid sharding: the gradient shards' all-reduce across the replicas.
    std::vector<std::unique_ptr<collectives::Communicator>> replicate_comms;
    for (int p = 0; p < P; ++p) {
        const auto& group = plan.ranks[static_cast<std::size_t>(p)].replicate_group;
        replicate_comms.push_back(
            group.size() > 1 ? std::make_unique<collectives::Communicator>(topo, group) : nullptr);
    }
    auto dp_comm_of = [&](int p, const DpCollective& c) {
        return c.expert      ? edp_comms[static_cast<std::size_t>(p)].get()
               : c.replicate ? replicate_comms[static_cast<std::size_t>(p)].get()
                             : dp_comms[static_cast<std::size_t>(p)].get();
    };
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
    /// Per rank and pass: its send task (none: the pass sends nothing).
    std::vector<std::vector<std::optional<sim::TaskId>>> pass_send(static_cast<std::size_t>(P));
    std::vector<std::vector<std::vector<sim::TaskId>>> bucket_ready(static_cast<std::size_t>(P));
    const bool overlap = par.dp_cp() > 1 && par.dp_overlap && !plan.shape.forward_only;
    struct SendRecord {
        int sender;
        sim::TaskId task;
        std::string label;
    };
    std::vector<SendRecord> sends;
    std::map<std::size_t, sim::TaskId> fwd_send, bwd_send; // by receiver key
    // What the gradient reductions overlapped with the backward cost the passes beside them:
    // as the analytic executor lengthens them (from its schedule; here the collectives' own
    // timing on the network does not feed back into the compute).
    const auto slowdown = dp_overlap_slowdown(plan);
    auto extra_of = [&](int p, std::size_t i) {
        const auto& x = slowdown[static_cast<std::size_t>(p)];
        return i < x.size() ? x[i] : sim::Time::zero();
    };
    for (int p = 0; p < P; ++p) {
        const auto& order = plan.orders()[static_cast<std::size_t>(p)];
        const auto last_b = last_backward_of_chunk(order, v);
        bucket_ready[static_cast<std::size_t>(p)].resize(static_cast<std::size_t>(v));
        for (std::size_t i = 0; i < order.size(); ++i) {
            const PipePass& pass = order[i];
            const int vs = virtual_stage(pass.chunk, p, plan.shape);
            const auto& st = plan.stage(vs);
            const std::size_t j = static_cast<std::size_t>(pass.micro_batch);
            const std::size_t key = j * V + vs;
            const std::string name = pass_label(pass, v);
            if (pass.kind == PassKind::forward) {
                const auto id =
                    g.add_task({name,
                                streams[p].compute,
                                (pass.micro_batch == 0 ? st.first_forward.time : st.forward.time) +
                                    extra_of(p, i),
                                {},
                                0});
                fwd_task[key] = id;
                pass_first[p].push_back(id);
                pass_last[p].push_back(id);
            } else {
                const sim::Time planned = pass_cost(st, pass).time;
                const sim::Time duration = planned + extra_of(p, i);
                const bool split =
                    overlap && static_cast<int>(i) == last_b[static_cast<std::size_t>(pass.chunk)];
                sim::Time at;
                sim::TaskId first = 0, last = 0;
                bool any = false;
                auto segment = [&](sim::Time until) {
                    const auto id = g.add_task(
                        {name, streams[p].compute, sim::max(sim::Time::zero(), until - at), {}, 0});
                    if (!any)
                        first = id;
                    last = id;
                    any = true;
                    at = until;
                    return id;
                };
                if (split) {
                    for (std::size_t k = 0; k < st.buckets.size(); ++k)
                        bucket_ready[p][static_cast<std::size_t>(pass.chunk)].push_back(
                            segment(std::min(stretched(parallel::bucket_ready(st, pass.kind, k),
                                                       planned, duration),
                                             duration)));
                }
                if (!any || at < duration)
                    segment(duration);
                if (is_input_backward(pass.kind)) {
                    bwd_first[key] = first;
                    bwd_last[key] = last;
                } else {
                    // W: after its own B, which the rank's in-order stream already ran.
                    g.add_dependency(bwd_last[key], first);
                }
                pass_first[p].push_back(first);
                pass_last[p].push_back(last);
            }

            // The virtual stage this pass sends to; none after the last forward and the first
            // backward.
            std::optional<int> to;
            if (pass.kind == PassKind::forward && !route_end(vs, plan.shape))
                to = vs + 1;
            if (is_input_backward(pass.kind) && !route_start(vs, plan.shape))
                to = vs - 1;
            if (!to) {
                pass_send[p].push_back(std::nullopt);
                continue;
            }
            const int to_vs = *to;
            const int to_rank = rank_of_stage(to_vs, plan.shape);
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
            pass_send[p].push_back(id);
        }
    }
    // Dependencies of the passes that ran (DualPipe's micro-batches visit half the stages).
    std::vector<bool> ran(m * V, false);
    for (int p = 0; p < P; ++p) {
        for (const PipePass& pass : plan.orders()[static_cast<std::size_t>(p)]) {
            if (pass.kind == PassKind::forward)
                ran[static_cast<std::size_t>(pass.micro_batch) * V +
                    virtual_stage(pass.chunk, p, plan.shape)] = true;
        }
    }
    // DualPipe's pairs: the first pass waits for the second's input too.
    for (int p = 0; p < P; ++p) {
        const auto& order = plan.orders()[static_cast<std::size_t>(p)];
        for (std::size_t i = 0; i + 1 < order.size(); ++i) {
            if (!order[i].joint)
                continue;
            const PipePass& after = order[i + 1];
            const int vs2 = virtual_stage(after.chunk, p, plan.shape);
            const std::size_t key2 = static_cast<std::size_t>(after.micro_batch) * V + vs2;
            if (after.kind == PassKind::forward && !route_start(vs2, plan.shape))
                g.add_dependency(fwd_send.at(key2), pass_first[p][i]);
            else if (is_input_backward(after.kind) && !route_end(vs2, plan.shape))
                g.add_dependency(bwd_send.at(key2), pass_first[p][i]);
        }
    }
    for (std::size_t key = 0; key < m * V; ++key) {
        if (!ran[key])
            continue;
        const int vs = static_cast<int>(key % V);
        if (!route_start(vs, plan.shape))
            g.add_dependency(fwd_send.at(key), fwd_task[key]);
        if (!plan.shape.forward_only) {
            g.add_dependency(fwd_task[key], bwd_first[key]);
            if (!route_end(vs, plan.shape))
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
            if (c.after_optimizer() || !c.chunk)
                continue;
            const auto id = g.add_task({collective_label(c), streams[p].dp, sim::Time::zero(),
                                        collective_task(dp_comm_of(p, c), c.collective), 0});
            g.add_dependency(bucket_ready[p][static_cast<std::size_t>(*c.chunk)]
                                         [static_cast<std::size_t>(*c.bucket)],
                             id);
            before_opt[p].push_back(id);
            dp_tasks.push_back({p, id, collective_label(c)});
        }
        for (const DpCollective& c : rp.dp) {
            if (c.after_optimizer() || c.chunk)
                continue;
            const bool embedding = c.role == DpRole::embedding_grad_all_reduce;
            if (embedding && p != 0)
                continue; // one task for the pair, created on rank 0
            const collectives::Communicator* comm =
                embedding ? &pair_comm(rp.gpu, plan.ranks.back().gpu) : dp_comm_of(p, c);
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
        optimizer[p] = g.add_task({"optimizer", streams[p].compute, rp.optimizer_time, {}, 0});
        for (auto id : before_opt[p])
            g.add_dependency(id, optimizer[p]);
        for (const DpCollective& c : rp.dp) {
            if (!c.after_optimizer())
                continue;
            const auto id = g.add_task({collective_label(c), streams[p].dp, sim::Time::zero(),
                                        collective_task(dp_comm_of(p, c), c.collective), 0});
            g.add_dependency(optimizer[p], id);
            dp_tasks.push_back({p, id, collective_label(c)});
        }
    }

    // Every communicator is known before the first transfer, so symmetry sees which resources
    // each one shares with another.
    for (const auto& [key, comm] : pairs)
        runner.claim(*comm);
    for (const auto& comm : dp_comms)
        if (comm)
            runner.claim(*comm);
    for (const auto& comm : replicate_comms)
        if (comm)
            runner.claim(*comm);

    sim::TaskExecutor exec(engine, g);
    exec.start();
    engine.run();
    exec.require_finished();

    FlowRun out;
    out.events = engine.events_processed();
    out.flow_gpus = runner.simulated_gpus();
    out.represented_gpus = runner.represented_gpus();
    out.flows = runner.stats().flows;
    out.represented_flows = runner.stats().represented;
    out.ranks.resize(static_cast<std::size_t>(P));
    auto s = [&](sim::TaskId id) { return exec.start_time(id); };
    auto e = [&](sim::TaskId id) { return exec.end_time(id); };
    for (int p = 0; p < P; ++p) {
        ExecutedRank& r = out.ranks[static_cast<std::size_t>(p)];
        const auto& order = plan.orders()[static_cast<std::size_t>(p)];
        for (std::size_t i = 0; i < order.size(); ++i) {
            const PipePass& pass = order[i];
            const int vs = virtual_stage(pass.chunk, p, plan.shape);
            const std::size_t key = static_cast<std::size_t>(pass.micro_batch) * V + vs;
            ExecutedPass x{pass,         vs, s(pass_first[p][i]), e(pass_last[p][i]),
                           std::nullopt, {}, extra_of(p, i)};
            x.released = x.end;
            if (!par.pp_overlap && pass_send[p][i])
                x.released = e(*pass_send[p][i]);
            if (pass.kind == PassKind::forward && !route_start(vs, plan.shape))
                x.input = InputTransfer{s(fwd_send.at(key)), e(fwd_send.at(key))};
            else if (is_input_backward(pass.kind) && !route_end(vs, plan.shape))
                x.input = InputTransfer{s(bwd_send.at(key)), e(bwd_send.at(key))};
            r.passes.push_back(x);
        }
        r.last_pass_end = r.passes.empty() ? sim::Time::zero() : r.passes.back().released;
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

} // namespace clustersim::strategies::parallel::detail
