#include "strategies/parallel/step_plan.h"

#include "strategies/parallel/collective_times.h"
#include "strategies/parallel/context_parallel_comm.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/param_gathers.h"
#include "strategies/parallel/pass_clock.h"
#include "strategies/parallel/precision.h"
#include "strategies/parallel/rank_plan.h"
#include "strategies/parallel/stage_cost.h"
#include "strategies/parallel/straggler.h"
#include "strategies/parallel/torch_pipelining.h"

#include <algorithm>
#include <map>

namespace clustersim::strategies::parallel {

std::string_view to_string(DpRole r) {
    switch (r) {
    case DpRole::grad_all_reduce:
        return "grad all-reduce";
    case DpRole::grad_reduce_scatter:
        return "grad reduce-scatter";
    case DpRole::param_all_gather:
        return "param all-gather";
    case DpRole::embedding_grad_all_reduce:
        break;
    }
    return "embedding grad all-reduce";
}

namespace {

using detail::PlanContext;
using models::Recompute;

/// The expert-parallel group's GPUs (the first one's; every group is laid out alike) and its
/// rail: those of the first GPU's local rank, one per node.
struct ExpertGroups {
    std::vector<int> group;
    std::vector<int> rail;
};

/// How a layer of `e` is split and run (models::LayerConfig), with the expert-parallel groups
/// its dispatch is costed over.
models::LayerConfig layer_config(const ExperimentSpec& e, ExpertGroups& groups) {
    const ParallelSpec& par = e.parallel;
    models::LayerConfig cfg;
    cfg.tp = par.tp;
    cfg.sequence_parallel = par.sequence_parallel && par.tp > 1;
    cfg.micro_batch = e.training.micro_batch;
    cfg.dtype = e.training.dtype;
    cfg.ep = par.ep;
    cfg.etp = par.etp;
    cfg.cp = par.cp;
    cfg.selective_op = par.selective_op;
    cfg.dtensor_tp = e.framework.dtensor_tp;
    cfg.fusions = e.training.kernels();
    cfg.fp8_recipe = e.training.quant_recipe();
    cfg.fp8_transposes = detail::fp8_casts_transpose(e);
    cfg.fp8_dot_product_attention = e.training.fp8_dot_product_attention;
    cfg.fp8_output_proj = e.training.fp8_output_proj;
    cfg.recompute_modules = par.recompute_modules;
    // A remat_policy is MaxText's: jax.checkpoint's recompute (LayerConfig).
    cfg.remat_backward_reads = e.training.remat != RematPolicy::not_given;
    cfg.lora = e.training.lora;
    cfg.cross_entropy = e.training.cross_entropy;
    cfg.cross_entropy_chunks = e.training.cross_entropy_chunks;
    cfg.compile = e.training.compile;
    cfg.autocast = e.training.autocast;
    if (!par.expert_layout() || !e.model.is_moe())
        return cfg;
    const int per_node = std::max(1, e.cluster.node.gpus);
    for (int x = 0; x < par.ep && par.ep > 1; ++x)
        groups.group.push_back(expert_gpu_of(par, 0, x, 0, 0));
    std::vector<int> nodes;
    for (int g : groups.group) {
        if (std::find(nodes.begin(), nodes.end(), g / per_node) == nodes.end())
            nodes.push_back(g / per_node);
        if (g % per_node == groups.group.front() % per_node)
            groups.rail.push_back(g);
    }
    cfg.flex_dispatcher = par.flex_dispatcher;
    cfg.hybridep = par.flex_dispatcher && par.hybridep;
    cfg.ep_nodes = std::max<int>(1, static_cast<int>(nodes.size()));
    // A rail that misses some of the nodes (GPUs of the group at other local ranks on them) has
    // no single-hop path to each: cost the dispatch over the whole group.
    if (static_cast<int>(groups.rail.size()) != cfg.ep_nodes)
        cfg.ep_nodes = 1;
    return cfg;
}

/// The layer works the stages are costed with: the uniform choice (none first under automatic
/// recompute, whose search may take the others), and the plain layer for context
/// parallelism's exposure. The others stay empty: a stage with no layer of a kind adds nothing
/// from it (cost_stage runs and sums only groups with layers).
void build_layer_works(PlanContext& ctx, models::LayerConfig cfg, Recompute first_choice,
                       bool automatic_search) {
    const ExperimentSpec& e = ctx.e;
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        // The plain layer also for block recompute's other layers (and multi-token
        // prediction's blocks under it: stage_cost.cpp, group_counts).
        const bool used =
            r == first_choice || automatic_search ||
            (r == Recompute::none && (e.parallel.cp > 1 || e.parallel.recompute_block));
        if (!used)
            continue;
        cfg.recompute = r;
        // The kinds the model has (stage_cost.h, PlanContext::kinds): its dense layers beside
        // those with experts, its sliding-window layers beside the full-attention ones.
        const models::ModelSpec& m = e.model;
        const bool dense = m.is_moe() && m.moe_layers() < m.layers;
        const bool window = m.window_size > 0;
        for (std::size_t kind = 0; kind < detail::kLayerKinds; ++kind) {
            models::LayerConfig k = cfg;
            k.dense_layer = (kind & 1) != 0;
            k.window = (kind & 2) != 0;
            if ((k.dense_layer && !dense) || (k.window && !window))
                continue;
            ctx.kinds[kind][static_cast<std::size_t>(r)] = models::layer_work(m, k, ctx.cm);
        }
    }
    cfg.recompute = Recompute::none;
    ctx.embedding = models::embedding_work(e.model, cfg, ctx.cm);
    ctx.head = models::head_work(e.model, cfg, ctx.cm);
}

/// The communicators of the passes' collectives (tensor-parallel, parameter gathers, expert
/// groups) and the rest of the pass environment.
void build_pass_env(PlanContext& ctx, const StepPlan& plan, const models::LayerConfig& cfg,
                    const ExpertGroups& experts) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    if (par.tp > 1) {
        std::vector<int> group;
        for (int t = 0; t < par.tp; ++t)
            group.push_back(gpu_of(par, t, 0, 0));
        ctx.tp_times = detail::CollectiveTimes(detail::communicator(plan, group, ctx.tp_comm),
                                               ctx.fw, ctx.e.gpus);
    }
    if (par.dp_cp() > 1 && (ctx.zero3 || par.overlap_param_gather)) {
        std::vector<int> group;
        for (int d = 0; d < par.dp_shard_size(); ++d)
            for (int c = 0; c < par.cp; ++c)
                group.push_back(gpu_of(par, 0, d, 0, c));
        ctx.dp_times = detail::CollectiveTimes(detail::communicator(plan, group, ctx.dp_comm),
                                               ctx.fw, ctx.e.gpus);
    }
    // The routed experts' gathers (ZeRO-3's, the distributed optimizer's overlapped one) over
    // their expert-data-parallel group, which Megatron-Core's expert buffers and torchtitan's
    // efsdp mesh shard them over.
    if ((ctx.zero3 || par.overlap_param_gather) && detail::experts_sharded_apart(par, e.model)) {
        std::vector<int> group;
        for (int d = 0; d < par.expert_dp(); ++d)
            group.push_back(expert_gpu_of(par, 0, 0, d, 0));
        ctx.edp_times = detail::CollectiveTimes(detail::communicator(plan, group, ctx.edp_comm),
                                                ctx.fw, ctx.e.gpus);
    }
    if (par.expert_layout() && e.model.is_moe()) {
        if (experts.group.size() > 1)
            ctx.ep_times = detail::CollectiveTimes(
                detail::communicator(plan, experts.group, ctx.ep_comm), ctx.fw, ctx.e.gpus);
        if (cfg.flex_dispatcher && cfg.ep_nodes > 1)
            ctx.ep_rail_times = detail::CollectiveTimes(
                detail::communicator(plan, experts.rail, ctx.ep_rail_comm), ctx.fw, ctx.e.gpus);
        std::vector<int> group;
        for (int t = 0; t < par.expert_tp() && par.expert_tp() > 1; ++t)
            group.push_back(expert_gpu_of(par, t, 0, 0, 0));
        if (group.size() > 1)
            ctx.etp_times = detail::CollectiveTimes(detail::communicator(plan, group, ctx.etp_comm),
                                                    ctx.fw, ctx.e.gpus);
        // The flex dispatcher's kernels hold their own SMs (ep_overlap.h), HybridEP's default
        // by whether the group leaves one NVLink domain (clustersim's node).
        if (cfg.flex_dispatcher) {
            const int sms = flex_dispatcher_sms(par, ctx.ep_times.crosses_nodes());
            ctx.ep_times.run_on_sms(sms);
            ctx.ep_rail_times.run_on_sms(sms);
        }
        ctx.env.ep = &ctx.ep_times;
        ctx.env.etp = &ctx.etp_times;
        ctx.env.ep_rail = &ctx.ep_rail_times;
    }
    ctx.env.tp = &ctx.tp_times;
    ctx.env.dtype = e.training.dtype;
    ctx.env.fw = &ctx.fw;
    ctx.env.tp_size = par.tp;
    ctx.env.gpu = &e.cluster.node.gpu;
    ctx.env.tp_overlap = par.tp_comm_overlap && par.tp > 1 && par.sequence_parallel;
    ctx.env.symm_mem = ctx.env.tp_overlap && par.async_tp;
    ctx.env.cm = &ctx.cm;
    // CUDA graphs (cuda_graphs.h): the whole step, or the layer scopes (none given: the
    // whole layer, Megatron-Core's default "full").
    const CudaGraphImpl graphs = e.training.cuda_graph_impl;
    ctx.env.graph_iteration = graphs == CudaGraphImpl::full_iteration;
    if (graphs == CudaGraphImpl::local || graphs == CudaGraphImpl::transformer_engine)
        ctx.env.graph_scopes =
            e.training.cuda_graph_scope != 0 ? e.training.cuda_graph_scope : kWholeLayerGraph;
    const int sms = e.cluster.node.gpu.sm_count;
    if (ctx.env.tp_overlap && !ctx.env.symm_mem && sms > detail::kPipelinedRsSms)
        ctx.env.rs_gemm_share = static_cast<double>(sms - detail::kPipelinedRsSms) / sms;
    if (par.cp > 1) {
        const CpExposure cp =
            cp_exposure(e, ctx.layer_of(Recompute::none), ctx.cm, ctx.fw.gemm_efficiency,
                        *plan.topology, plan.communicators);
        ctx.env.cp_forward = cp.forward;
        ctx.env.cp_backward = cp.backward;
        ctx.env.cp_forward_slowdown = cp.forward_slowdown;
        ctx.env.cp_backward_slowdown = cp.backward_slowdown;
    }
}

/// The virtual stages in place (rank, chunk, layers, embedding and head), each costed under
/// the uniform recompute `first_choice`. Layers per model stage: the experiment's split
/// (layer_assignment.h), or an even one for an experiment that was not validated.
void lay_out_stages(PlanContext& ctx, StepPlan& plan, Recompute first_choice) {
    const ExperimentSpec& e = ctx.e;
    const int model_stages = model_stage_count(plan.shape);
    std::vector<int> stage_layers = e.stage_layers;
    if (static_cast<int>(stage_layers.size()) != model_stages)
        stage_layers.assign(static_cast<std::size_t>(model_stages), e.model.layers / model_stages);
    std::vector<int> first_layer(stage_layers.size(), 0);
    for (std::size_t s = 1; s < stage_layers.size(); ++s)
        first_layer[s] = first_layer[s - 1] + stage_layers[s - 1];
    const int V = stage_count(plan.shape);
    plan.stages.resize(static_cast<std::size_t>(V));
    for (int vs = 0; vs < V; ++vs) {
        VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
        st.index = vs;
        st.rank = rank_of_stage(vs, plan.shape);
        st.chunk = vs / e.parallel.pp;
        const auto ms = static_cast<std::size_t>(model_stage(vs, plan.shape));
        st.first_layer = first_layer[ms];
        st.layers = stage_layers[ms];
        st.embedding = route_start(vs, plan.shape) && e.model.is_transformer();
        st.head = route_end(vs, plan.shape);
        RecomputePlan rp = detail::uniform(first_choice, st.layers);
        // Megatron's block method: the first recompute_num_layers layers of each model chunk
        // (TransformerBlock._checkpointed_forward, recompute_method "block"), the rest kept.
        if (first_choice == Recompute::full && e.parallel.recompute_block) {
            rp.full = std::min(e.parallel.recompute_num_layers, st.layers);
            rp.none = st.layers - rp.full;
        }
        detail::cost_stage(ctx, st, rp);
    }
}

/// Automatic recompute: per rank, the cheapest plan that fits. Selective first (it drops the
/// large attention activations for a few percent of time), then whole layers to full
/// recompute, spread over the rank's chunks, until the peak fits.
void search_recompute(PlanContext& ctx, StepPlan& plan, int p) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    const std::int64_t budget = plan.capacity_bytes - plan.runtime_bytes;
    std::int64_t params = 0;
    std::int64_t expert_params = 0;
    std::int64_t layer_params = 0;
    std::int64_t frozen = 0;
    for (int c = 0; c < plan.shape.virtual_stages; ++c) {
        const auto& st = plan.stage(virtual_stage(c, p, plan.shape));
        params += st.parameters;
        expert_params += st.expert_parameters;
        layer_params += st.layer_parameters;
        frozen += st.frozen_parameters;
    }
    const int edp = par.expert_layout() && e.model.is_moe() ? par.expert_dp() : par.dp_cp();
    const auto state = detail::state_bytes(e, params - expert_params - frozen, expert_params, edp,
                                           layer_params, frozen);
    auto fits = [&] {
        // The device's total as account_memory counts it: allocated plus the allocator's slack.
        const std::int64_t activations = peak_activation_bytes(plan, p);
        const std::int64_t gathered = peak_gathered_bytes(plan, p);
        const std::int64_t slack = detail::allocator_slack_bytes(
            plan.allocator_fragmentation, activations + gathered, gathered > 0);
        return state.total() + activations + gathered + slack <= budget;
    };
    if (fits())
        return;
    std::vector<int> chunks;
    for (int c = 0; c < plan.shape.virtual_stages; ++c)
        chunks.push_back(virtual_stage(c, p, plan.shape));
    const bool selective_helps = ctx.layer_of(Recompute::selective).activation_bytes <
                                 ctx.layer_of(Recompute::none).activation_bytes;
    if (selective_helps) {
        for (int vs : chunks) {
            VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
            detail::cost_stage(ctx, st, detail::uniform(Recompute::selective, st.layers));
        }
        if (fits())
            return;
    }
    const Recompute rest = selective_helps ? Recompute::selective : Recompute::none;
    // Whole layers to full recompute, k per chunk (all of a chunk's layers where it holds fewer
    // than k: uneven splits).
    int most = 0;
    for (int vs : chunks)
        most = std::max(most, plan.stage(vs).layers);
    for (int k = 1; k <= most && !fits(); ++k) {
        for (int vs : chunks) {
            VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
            const int full = std::min(k, st.layers);
            RecomputePlan rp = detail::uniform(rest, st.layers - full);
            rp.full = full;
            detail::cost_stage(ctx, st, rp);
        }
    }
}

sim::Time p2p_time(const StepPlan& plan, int from, int to, std::int64_t bytes) {
    if (from == to || bytes <= 0)
        return sim::Time::zero();
    std::unique_ptr<collectives::Communicator> owned;
    const collectives::Communicator& pair = *detail::communicator(plan, {from, to}, owned);
    collectives::Collective c;
    c.op = collectives::Op::send_recv;
    c.bytes = bytes;
    c.dtype = hardware::Dtype::fp32;
    c.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, 2);
    return c.bytes > 0 ? pair.predict(c) : sim::Time::zero();
}

/// Transfers between consecutive virtual stages, from each tensor-parallel rank: its sequence
/// shard of the s/cp x b x h activation under sequence parallelism; the whole tensor
/// otherwise, as Megatron-Core sends it since NVIDIA/Megatron-LM@3c92fa93b5 (2023, "Move
/// pipeline parallel functionality into core"), which removed the scatter-gather of pipeline
/// tensors (split_tensor_into_1d_equal_chunks / gather_split_1d_tensor) from
/// p2p_communication.py and sizes the tensor [s / tp if sequence_parallel else s, b, h]
/// (schedules.py, get_tensor_shapes); 1/tp with the receiver's gather as Megatron-LM did in
/// 2021 (FrameworkSpec::pipeline_tp_gather).
void plan_transfers(PlanContext& ctx, StepPlan& plan) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    const bool sp = par.sequence_parallel && par.tp > 1;
    const int act_share = sp || e.framework.pipeline_tp_gather ? par.tp : 1;
    const auto act_bytes = [&]() -> std::int64_t {
        const std::int64_t e_bytes =
            hardware::bytes_per_element(hardware::weight_dtype(e.training.dtype));
        if (!e.model.is_transformer())
            return std::int64_t{e.training.micro_batch} * e.model.hidden * e_bytes / act_share;
        return std::int64_t{e.model.seq} / par.cp * e.training.micro_batch * e.model.hidden *
               e_bytes / act_share;
    }();
    // Megatron-LM of 2021 (FrameworkSpec::pipeline_tp_gather): the receiver all-gathers the
    // whole tensor from the tensor-parallel ranks' shares before its next pass (exposed: the
    // exchange is synchronous). Sequence parallelism's shards are what the next layer takes.
    const sim::Time tp_gather = [&] {
        if (!e.framework.pipeline_tp_gather || par.tp < 2 || par.sequence_parallel)
            return sim::Time::zero();
        collectives::Collective c;
        c.op = collectives::Op::all_gather;
        c.dtype = hardware::weight_dtype(e.training.dtype);
        c.bytes = act_bytes * par.tp; // nccl-tests size: the whole output buffer
        return ctx.tp_times.time(c);
    }();
    std::map<std::pair<int, int>, sim::Time> p2p_cache;
    // Megatron's non-interleaved 1F1B synchronises the host at every exchange: the next waits
    // for the latest of both stages' ranks (straggler.h).
    const sim::Time sync = sim::Time::from_seconds(pipeline_sync_wait(e));
    const int V = stage_count(plan.shape);
    for (int vs = 0; vs + 1 < V; ++vs) {
        if (route_end(vs, plan.shape))
            continue; // DualPipe: the forward direction's last stage sends to no stage
        VirtualStagePlan& st = plan.stages[static_cast<std::size_t>(vs)];
        const int from = gpu_of(par, 0, 0, rank_of_stage(vs, plan.shape));
        const int to = gpu_of(par, 0, 0, rank_of_stage(vs + 1, plan.shape));
        const auto key = std::make_pair(from, to);
        if (!p2p_cache.count(key))
            p2p_cache[key] = p2p_time(plan, from, to, act_bytes);
        st.send_bytes = act_bytes;
        const sim::Time overhead =
            from == to ? sim::Time::zero() : e.framework.p2p_overhead + tp_gather + sync;
        st.send_forward = p2p_cache[key] + overhead;
        // DeepSpeed's PipelineEngine: the sender gathers its partitioned output back before
        // that micro-batch's backward (FrameworkSpec::deepspeed_pipeline), on the path of the
        // gradient it receives.
        const sim::Time regather =
            e.framework.deepspeed_pipeline && from != to ? tp_gather : sim::Time::zero();
        st.send_backward =
            e.training.forward_only ? sim::Time::zero() : p2p_cache[key] + overhead + regather;
    }
}

} // namespace

StepPlan build_step_plan(const ExperimentSpec& e,
                         std::shared_ptr<const hardware::Topology> topology,
                         collectives::CommunicatorCache* communicators, bool unit_spans) {
    const ParallelSpec& par = e.parallel;
    StepPlan plan;
    plan.experiment = &e;
    plan.topology = std::move(topology);
    plan.communicators = communicators;
    plan.shape =
        PipelineShape{par.pp, e.micro_batches(), chunks_per_rank(par.schedule, par.virtual_stages),
                      e.training.forward_only, placement_of(par.schedule)};
    plan.pass_orders = shared_pipeline_order(par.schedule, plan.shape);
    // PyTorch's interleaved schedule differs from Megatron's (torch_pipelining.h): the order
    // above checked the shape, this is the order torch.distributed.pipelining runs.
    if (par.schedule == PipelineSchedule::interleaved_1f1b && torch_pipelining(e))
        plan.pass_orders = std::make_shared<const PassOrders>(torch_interleaved_order(plan.shape));
    plan.capacity_bytes = e.cluster.node.gpu.usable_hbm_bytes();
    // One GPU runs no communicator: its process holds the CUDA context alone where the
    // framework gives it (FrameworkSpec::context_memory), not NCCL's buffers.
    plan.runtime_bytes = e.gpus == 1 && e.framework.context_memory > 0 ? e.framework.context_memory
                                                                       : e.framework.runtime_memory;
    plan.allocator_fragmentation = e.framework.allocator_fragmentation;
    plan.automatic_recompute = par.recompute == RecomputePolicy::automatic;
    plan.uniform_recompute = par.recompute == RecomputePolicy::selective ? Recompute::selective
                             : par.recompute == RecomputePolicy::full    ? Recompute::full
                                                                         : Recompute::none;
    if (e.training.forward_only)
        plan.uniform_recompute = Recompute::none;
    const bool automatic_search = plan.automatic_recompute && !e.training.forward_only;
    const Recompute first_choice =
        plan.automatic_recompute ? Recompute::none : plan.uniform_recompute;

    // Every rank computes at the pace of the slowest GPU of the step (straggler.h).
    PlanContext ctx(e, at_slowest_gpu(e.framework, e.gpus),
                    par.zero >= 3 &&
                        (par.shard_cp() > 1 || detail::experts_sharded_apart(par, e.model)) &&
                        !e.training.forward_only);
    ctx.unit_spans = unit_spans;
    ExpertGroups experts;
    const models::LayerConfig cfg = layer_config(e, experts);
    build_layer_works(ctx, cfg, first_choice, automatic_search);
    build_pass_env(ctx, plan, cfg, experts);

    lay_out_stages(ctx, plan, first_choice);
    if (automatic_search)
        for (int p = 0; p < par.pp; ++p)
            search_recompute(ctx, plan, p);
    detail::overlap_param_gathers(ctx, plan);
    plan_transfers(ctx, plan);
    detail::plan_ranks(ctx, plan);
    // plan_ranks set the tied embedding's flows, if its all-reduce crosses nodes.
    if (ctx.tp_times.crosses_nodes() || ctx.dp_times.crosses_nodes() ||
        ctx.edp_times.crosses_nodes() || ctx.ep_times.crosses_nodes() ||
        ctx.etp_times.crosses_nodes() || ctx.ep_rail_times.crosses_nodes() ||
        std::any_of(plan.ranks.begin(), plan.ranks.end(),
                    [](const RankPlan& r) { return r.dp_crosses_nodes; }))
        plan.inter_node_flows = e.gpus;
    return plan;
}

} // namespace clustersim::strategies::parallel
