#include "strategies/parallel/stage_cost.h"

#include "strategies/parallel/ep_overlap_host.h"

#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/param_gathers.h"
#include "strategies/parallel/precision.h"

#include <algorithm>
#include <array>

namespace clustersim::strategies::parallel::detail {

namespace {

using models::LayerWork;
using models::Pass;
using models::Recompute;

/// A stage's layers as (layer work, count), in order of recompute: full-recompute layers first
/// (the lowest ones), then selective, then none, each split by the layer's kind (kLayerKinds:
/// with experts or a mixture of experts' dense layer, full or sliding-window attention); their
/// order does not change the time.
using LayerGroups = std::array<std::pair<const LayerWork*, int>, kLayerGroups>;

/// The kind of layer `i` of the model: 1 for a dense layer of a mixture of experts, + 2 for
/// sliding-window attention (PlanContext::kinds).
int layer_kind(const models::ModelSpec& m, int i) {
    return (m.is_moe() && !m.is_moe_layer(i) ? 1 : 0) + (m.is_window_layer(i) ? 2 : 0);
}

GroupCounts group_counts(const PlanContext& ctx, const VirtualStagePlan& st,
                         const RecomputePlan& rp) {
    const auto& m = ctx.e.model;
    GroupCounts counts{};
    int at = st.first_layer;
    std::size_t r = 0;
    for (const int n : {rp.full, rp.selective, rp.none}) {
        for (int k = 0; k < n; ++k)
            ++counts[r * kLayerKinds + static_cast<std::size_t>(layer_kind(m, at++))];
        ++r;
    }
    // Multi-token prediction's blocks run after the last layer, on the head's stage: a layer of
    // the last layer's kind each, under the experiment's recompute (Megatron-Core's
    // MultiTokenPredictionBlock checkpoints its layers under full recompute, skips that under
    // recompute_method block, and its inner layer follows recompute_modules under selective:
    // megatron/core/transformer/multi_token_prediction.py, NVIDIA/Megatron-LM@d98e8a64dd).
    // The automatic search costs every choice: the block follows the stage's last layer.
    if (st.head && m.mtp_num_layers > 0) {
        const ParallelSpec& par = ctx.e.parallel;
        std::size_t g = 2; // none
        if (par.recompute == RecomputePolicy::full && !par.recompute_block)
            g = 0;
        else if (par.recompute == RecomputePolicy::selective)
            g = 1;
        else if (par.recompute == RecomputePolicy::automatic)
            g = rp.none > 0 ? 2 : rp.selective > 0 ? 1 : 0;
        counts[g * kLayerKinds + static_cast<std::size_t>(layer_kind(m, m.layers - 1))] +=
            m.mtp_num_layers;
    }
    return counts;
}

LayerGroups layer_groups(const PlanContext& ctx, const GroupCounts& counts) {
    LayerGroups groups{};
    std::size_t g = 0;
    for (Recompute r : {Recompute::full, Recompute::selective, Recompute::none})
        for (std::size_t kind = 0; kind < kLayerKinds; ++kind, ++g)
            groups[g] = {&ctx.kinds[kind][static_cast<std::size_t>(r)], counts[g]};
    return groups;
}

/// The head's passes on its stage: the LM head and loss, again for each multi-token
/// prediction block (DeepSeek-V3: the shared output head on each block's hidden state).
int head_runs(const PlanContext& ctx) {
    return 1 + ctx.e.model.mtp_num_layers;
}

/// The Float8Linear weights of one layer of group `g` of `groups` (float8_gathered_weights)
/// where FSDP2 gathers them in FP8 (TrainingSpec::fp8_fsdp_all_gather); 0 otherwise. The
/// group's kind (layer_groups: g % kLayerKinds) says whether its layers have experts.
std::int64_t layer_float8(const PlanContext& ctx, const LayerGroups& groups, std::size_t g) {
    if (!ctx.e.training.fp8_fsdp_all_gather)
        return 0;
    const LayerWork& w = *groups[g].first;
    const bool moe_layer = ctx.e.model.is_moe() && (g % kLayerKinds & 1) == 0;
    return std::min(w.parameters - w.expert_parameters,
                    float8_gathered_weights(ctx.e.model, ctx.e.parallel.tp, moe_layer));
}

/// The Float8Linear weights of a stage's layers (layer_float8).
std::int64_t groups_float8(const PlanContext& ctx, const LayerGroups& groups) {
    std::int64_t f8 = 0;
    for (std::size_t g = 0; g < groups.size(); ++g)
        if (groups[g].second > 0)
            f8 += groups[g].second * layer_float8(ctx, groups, g);
    return f8;
}

/// What a stage holds beside its layers, and how its parameters are gathered.
struct StageUnits {
    /// The head's parameters this stage holds: all of them, or with tied embeddings on the
    /// embedding's stage only the final norm (the LM head is the embedding's matrix).
    bool tied_here = false;
    std::int64_t head_params = 0;
    /// FSDP2's root unit (fsdp2_root_unit) and its parameters on this stage.
    bool root_unit = false;
    std::int64_t root_params = 0;
    bool gathered_per_step = false; ///< fsdp2_gathered_per_step
    bool gathers_per_pass = false;  ///< ZeRO-3's gathers in every pass
};

/// The LM head's weight on one tensor-parallel rank: its share of the padded vocabulary.
std::int64_t lm_head_weight(const PlanContext& ctx) {
    const int tp = ctx.e.parallel.tp;
    return models::padded_vocab(ctx.e.model, tp) / tp * ctx.e.model.hidden;
}

StageUnits stage_units(const PlanContext& ctx, const VirtualStagePlan& st) {
    StageUnits u;
    u.tied_here = ctx.head.shares_embedding_weights && ctx.e.parallel.pp == 1;
    u.head_params = u.tied_here ? ctx.head.parameters - lm_head_weight(ctx) : ctx.head.parameters;
    u.root_unit = fsdp2_root_unit(ctx);
    u.root_params = (st.embedding ? ctx.embedding.parameters : 0) + (st.head ? u.head_params : 0);
    u.gathered_per_step = fsdp2_gathered_per_step(ctx);
    u.gathers_per_pass = ctx.zero3 && !u.gathered_per_step;
    return u;
}

/// Where the units of a pass run on its clock (UnitSpan), recorded as they run; nothing when
/// not asked (`out` null).
class SpanRecorder {
public:
    SpanRecorder(PassSpans* out, const Clock& c, const PassSeconds& cost)
        : out_(out)
        , c_(c)
        , cost_(cost) {
        if (out_ != nullptr)
            out_->spans.clear();
    }
    /// Before a span's units run.
    void begin() {
        at_ = c_.gpu;
        tp_at_ = cost_.tp_comm;
    }
    /// After `count` units of `w` ran (a forward, or a backward with its recompute).
    void end(std::string_view name, int first_layer, int count, const LayerWork& w, bool backward) {
        if (out_ == nullptr || count <= 0)
            return;
        UnitSpan& s = out_->spans.emplace_back();
        s.name = name;
        s.first_layer = first_layer;
        s.count = count;
        s.begin = at_;
        s.end = c_.gpu;
        s.tp = (cost_.tp_comm - tp_at_) / count;
        auto add = [&s](const models::PassWork& work) {
            for (const models::Op& op : work.ops) {
                s.flops += op.flops;
                s.bytes += op.bytes;
            }
        };
        if (backward) {
            add(w.recompute);
            add(w.backward);
        } else {
            add(w.forward);
        }
        for (const models::TpCollective& tc : w.collectives)
            if (tc.group == models::CommGroup::tp && (tc.pass == Pass::forward) != backward)
                s.tp_bytes += tc.bytes;
    }
    /// The pass ended at `end` seconds on its clock: the spans as shares of it.
    void finish(double end) {
        if (out_ == nullptr || end <= 0)
            return;
        for (UnitSpan& s : out_->spans) {
            s.begin /= end;
            s.end /= end;
            s.tp /= end;
        }
    }

private:
    PassSpans* out_;
    const Clock& c_;
    const PassSeconds& cost_;
    double at_ = 0;
    double tp_at_ = 0;
};

/// The index within the stage of the first layer of each group (groups run in order). Not the
/// model's index: a stage costed once stands for the others alike (PlanContext::stage_costs),
/// whose first layers differ; record_timeline adds the stage's own.
std::array<int, kLayerGroups> group_first_layers(const LayerGroups& groups) {
    std::array<int, kLayerGroups> first{};
    int at = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        first[g] = at;
        at += groups[g].second;
    }
    return first;
}

/// The gathers of one forward: the chunk's one bucket issued ahead (VirtualStagePlan::
/// gathered_ahead), waited for by its first module's pre-hook and nothing after it; or each
/// unit's own, the first of them possibly issued ahead by zero_grad.
class ForwardGathers {
public:
    ForwardGathers(PlanContext& ctx, const VirtualStagePlan& st, const LayerGroups& groups,
                   const StageUnits& units, bool gathers)
        : ctx_(ctx)
        , st_(st)
        , gathers_(gathers)
        , ahead_(gathers && st.gathered_ahead) {
        if (!ahead_)
            return;
        std::int64_t params = st.embedding ? ctx.embedding.parameters : 0;
        std::int64_t experts = 0;
        for (auto [wp, n] : groups) {
            params += n * wp->parameters;
            experts += n * wp->expert_parameters;
        }
        if (st.head)
            params += units.head_params;
        chunk_ = parameter_gather(ctx, params, experts, groups_float8(ctx, groups));
        chunk_.ahead = true;
        chunk_.whole = true;
        chunk_.lead = st.gather_lead.seconds();
        chunk_.beside = st.gather_beside.seconds();
    }
    /// The gather of the next unit, of `params` parameters (`expert_params` of them routed
    /// experts', `float8_params` Float8Linear weights).
    Gather next(std::int64_t params, std::int64_t expert_params = 0,
                std::int64_t float8_params = 0) {
        const bool first = first_unit_;
        first_unit_ = false;
        if (ahead_)
            return first ? chunk_ : Gather{};
        Gather layer =
            gathers_ ? parameter_gather(ctx_, params, expert_params, float8_params) : Gather{};
        // The first chunk's first bucket, issued by zero_grad at the step's start: on a rank
        // after the first, gather_lead before its first forward (VirtualStagePlan::
        // gather_lead). The distributed optimizer's gathers only (first_forward): ZeRO-3's
        // per-pass gathers are issued by the pass.
        if (first && layer.seconds > 0 && !ctx_.zero3 && st_.gather_lead > sim::Time::zero()) {
            layer.ahead = true;
            layer.lead = st_.gather_lead.seconds();
            layer.beside = st_.gather_beside.seconds();
        }
        return layer;
    }

private:
    PlanContext& ctx_;
    const VirtualStagePlan& st_;
    bool gathers_;
    bool ahead_;
    bool first_unit_ = true;
    Gather chunk_;
};

/// A forward pass of `st`, with the parameter gathers when `gathers`. Each micro-batch starts
/// with the host alone (get_batch synchronises host and device). That is the Megatron training
/// loop's machinery (batch broadcast, masks, loss averaging), which the transformer models run
/// under; the MLP is the lecture's plain PyTorch loop of matmuls and sends, which has none of
/// it.
PassCost forward_pass(PlanContext& ctx, const VirtualStagePlan& st, const LayerGroups& groups,
                      const StageUnits& units, bool gathers, PassSpans* spans_out = nullptr) {
    Clock c;
    // Megatron-Core fetches the batch on the chunks holding the embedding or the loss only
    // (FrameworkSpec::batch_on_every_stage).
    const bool fetches = ctx.fw.batch_on_every_stage || st.embedding || st.head;
    // A whole-iteration CUDA graph reads every micro-batch's batch before its replay
    // (cuda_graphs.h): no micro-batch starts with the host alone.
    c.host = ctx.e.model.is_transformer() && fetches && !ctx.env.graph_iteration
                 ? ctx.fw.microbatch_overhead.seconds()
                 : 0.0;
    PassSeconds f;
    ForwardGathers gather(ctx, st, groups, units, gathers);
    SpanRecorder spans(spans_out, c, f);
    if (st.embedding) {
        spans.begin();
        run_units(ctx.embedding, forward_units(ctx.embedding), ctx.env, c, f,
                  gather.next(units.root_unit ? units.root_params : ctx.embedding.parameters));
        spans.end("embedding", 0, 1, ctx.embedding, false);
    }
    const std::array<int, kLayerGroups> first_layers = group_first_layers(groups);
    for (std::size_t g = 0; g < groups.size(); ++g) {
        const auto [wp, n] = groups[g];
        if (n > 0) {
            const LayerWork& w = *wp;
            spans.begin();
            run_layers(
                w, forward_units(w), n, ctx.env, c, f,
                gather.next(w.parameters, w.expert_parameters, layer_float8(ctx, groups, g)));
            spans.end("layer", first_layers[g], n, w, false);
        }
    }
    if (st.head) {
        spans.begin();
        run_units(ctx.head, forward_units(ctx.head), ctx.env, c, f,
                  units.root_unit && st.embedding ? Gather{} : gather.next(units.head_params));
        for (int k = 1; k < head_runs(ctx); ++k)
            run_units(ctx.head, forward_units(ctx.head), ctx.env, c, f, Gather{});
        spans.end("head", 0, 1, ctx.head, false);
    }
    const PassCost cost = finish(c, f);
    spans.finish(c.gpu);
    return cost;
}

/// A stage's data-parallel gradient buckets as its backward fills them: the dense gradients
/// and the routed experts' (experts laid out apart) in buckets of their own.
class BucketFiller {
public:
    BucketFiller(const PlanContext& ctx, std::vector<GradBucket>& buckets)
        : buckets_(buckets)
        , grad_bytes_per_param_(
              static_cast<double>(hardware::bytes_per_element(grad_reduce_dtype(ctx.e))))
        , limit_(std::max<std::int64_t>(1, ctx.e.parallel.dp_bucket)) {
        buckets_.clear();
    }
    /// The gradients of `params` parameters (`expert_params` of them routed experts') ready
    /// at `at` seconds into the pass.
    void add(std::int64_t params, double at, std::int64_t expert_params = 0) {
        pending_ += static_cast<std::int64_t>((params - expert_params) * grad_bytes_per_param_);
        if (pending_ >= limit_) {
            buckets_.push_back({pending_, sim::Time::from_seconds(at)});
            pending_ = 0;
        }
        if (expert_params > 0) {
            pending_expert_ += static_cast<std::int64_t>(expert_params * grad_bytes_per_param_);
            if (pending_expert_ >= limit_) {
                buckets_.push_back({pending_expert_, sim::Time::from_seconds(at), true});
                pending_expert_ = 0;
            }
        }
    }
    /// The partial buckets, at the pass's end (`end` seconds).
    void flush(double end) {
        if (pending_ > 0)
            buckets_.push_back({pending_, sim::Time::from_seconds(end)});
        if (pending_expert_ > 0)
            buckets_.push_back({pending_expert_, sim::Time::from_seconds(end), true});
    }
    double grad_bytes_per_param() const { return grad_bytes_per_param_; }

private:
    std::vector<GradBucket>& buckets_;
    double grad_bytes_per_param_;
    std::int64_t limit_;
    std::int64_t pending_ = 0;
    std::int64_t pending_expert_ = 0;
};

/// A backward's gather of a unit: none for FSDP2's root (kept gathered since the forward),
/// whose gradients are still copied into its reduce-scatter input (Gather::copy_in); none at
/// all unless gathered per pass.
Gather backward_gather(PlanContext& ctx, const StageUnits& units, std::int64_t params) {
    if (!units.gathers_per_pass)
        return Gather{};
    Gather gather = parameter_gather(ctx, params);
    if (units.root_unit) {
        gather.seconds = 0;
        gather.load = {};
        gather.copy_out = 0;
    }
    return gather;
}

/// The parameter tensors of one layer of `w`: Megatron's linear layers (QKV, projection, the
/// MLP's two; latent attention's four projections and its two latent norms instead of QKV; a
/// mixture's router and each local expert's two instead of the MLP's) with their biases, and
/// the norms (weight, and bias for LayerNorm).
int layer_param_tensors(const PlanContext& ctx, const LayerWork& w) {
    const models::ModelSpec& m = ctx.e.model;
    const int norm = m.norm == models::Norm::layernorm ? 2 : 1;
    int linears = m.is_mla() ? 5 : 2;
    int norms = 2 + (m.is_mla() ? 2 : 0) + (m.qk_layernorm ? 2 : 0);
    if (w.expert_parameters > 0) {
        const int ep = std::max(1, ctx.e.parallel.ep);
        linears += 2 * std::max(1, m.num_experts / ep) +
                   (m.moe_shared_expert_intermediate_size > 0 ? 2 : 0);
        ++norms; // the router's weight, one tensor as a norm's
    } else {
        linears += 2;
    }
    return linears * (m.bias ? 2 : 1) + norms * norm;
}

/// The weight gradients of `n` layers of `w` added to those of the micro-batches before
/// (FrameworkSpec::grad_accumulation), after the layers' backward: one memory-bound kernel per
/// parameter tensor (two under BF16_Optimizer), issued by the host and run on the compute
/// stream, each an equal share of the bytes. Where the accumulator is param.grad itself
/// (autograd's AccumulateGrad: the first micro-batch's gradient is taken, not added), every
/// backward carries (m - 1) / m of the cost, m the micro-batches per step: the step pays
/// m - 1 accumulations in all.
void accumulate_grads(const PlanContext& ctx, const LayerWork& w, int n, Clock& c, PassSeconds& b) {
    // FSDP2 under a pipeline (fsdp2_gathered_per_step) accumulates whatever the framework's
    // fusion: every backward, the last too (each runs with set_requires_gradient_sync(False);
    // run_post_backward reduces afterwards), leaves the unsharded gradients to post_backward,
    // which adds them into unsharded_accumulated_grad in the reduce dtype, one `+=` per
    // parameter on the compute stream (FSDPParam.accumulate_unsharded_grad_if_needed, after
    // to_accumulated_grad_if_needed's upcast on the first backward: memory_accounting.h,
    // per_step_gather_bytes): the unfused rule below, every backward carrying it (the first's
    // upcast, 2 + 4 bytes a parameter, counted as an add, 2 + 4 + 4).
    const GradAccumulation how =
        fsdp2_gathered_per_step(ctx) ? GradAccumulation::unfused : ctx.fw.grad_accumulation;
    const std::int64_t params = w.parameters - w.frozen_parameters;
    if (how == GradAccumulation::fused || n <= 0 || params <= 0)
        return;
    const hardware::Dtype dtype = ctx.e.training.dtype;
    const std::int64_t grad = hardware::bytes_per_element(hardware::weight_dtype(dtype));
    // BF16_Optimizer adds into its fp32 gradients; DeepSpeed's ZeRO optimizers keep param.grad.
    const bool hp_grads = bf16_optimizer(ctx.e);
    // DeepSpeed's fp16 engine keeps its gradients in param.grad; Megatron-LM's unfused
    // accumulation adds into the buffer gradients are reduced from.
    const std::int64_t acc = how == GradAccumulation::deepspeed
                                 ? grad
                                 : hardware::bytes_per_element(grad_reduce_dtype(ctx.e));
    const bool autograd = !hp_grads && acc == grad;
    const int m = std::max(1, ctx.e.micro_batches());
    const double share = autograd ? static_cast<double>(m - 1) / m : 1.0;
    const int tensors = layer_param_tensors(ctx, w);
    // BF16_Optimizer: lp.grad.to(fp32) (2 + 4 bytes a parameter), then hp_grad.add_ (4 + 4 + 4).
    const std::array<std::int64_t, 2> bytes = hp_grads
                                                  ? std::array<std::int64_t, 2>{grad + 4, 12}
                                                  : std::array<std::int64_t, 2>{grad + 2 * acc, 0};
    const double host = ctx.fw.host_overhead.seconds() * share;
    for (int k = 0; k < n * tensors; ++k) {
        for (const std::int64_t per_param : bytes) {
            if (per_param == 0)
                continue;
            const double seconds = share * ctx.env.copy_seconds(per_param * params / tensors);
            // As run_op issues a kernel: it may start once the host has begun issuing it.
            const double ready = std::max(c.gpu, c.host);
            b.host_wait += ready - c.gpu;
            c.host += host;
            b.compute += seconds;
            c.gpu = ready + seconds;
        }
    }
    if (share > 0)
        b.kernels += n * tensors * (hp_grads ? 2 : 1);
}

/// The backward of `st`: head first, then the layers from the last down, then the embedding.
/// Bucket readiness follows the layers' completion within the pass.
void backward_pass(PlanContext& ctx, VirtualStagePlan& st, const LayerGroups& groups,
                   const StageUnits& units) {
    BucketFiller buckets(ctx, st.buckets);
    Clock c;
    PassSeconds b;
    SpanRecorder spans(ctx.unit_spans ? &st.backward_spans : nullptr, c, b);
    const std::array<int, kLayerGroups> first_layers = group_first_layers(groups);
    // FSDP2's root unit has no post-backward hook of its own (its forward inputs, token ids,
    // need no gradient: RegisterPostBackwardFunction is not applied), so its gradients, the
    // output layer's, the final norm's and the embedding's, are reduce-scattered together in
    // the root's final callback once the whole backward has run (FSDPState.
    // _root_post_backward_final_callback calls post_backward on each group still unsharded,
    // the root first, torch/distributed/_composable/fsdp/_fsdp_state.py at
    // pytorch/pytorch@005da465b9). That reduce-scatter goes on the one reduce-scatter stream
    // the groups share (FSDPCommContext.reduce_scatter_stream), behind the blocks' own, and the
    // callback then makes the compute stream wait for it before backward() returns (the last
    // backward: current_stream().wait_event(reduce_scatter_state.event)), so the optimizer
    // step waits: one bucket, last, ready at the backward's end, with nothing left to hide it.
    if (st.head) {
        spans.begin();
        for (int k = 1; k < head_runs(ctx); ++k)
            run_units(ctx.head, backward_units(ctx.head), ctx.env, c, b, Gather{});
        run_units(ctx.head, backward_units(ctx.head), ctx.env, c, b,
                  backward_gather(ctx, units, units.head_params));
        spans.end("head", 0, 1, ctx.head, true);
        if (!units.root_unit)
            buckets.add(units.head_params - std::min(units.head_params, ctx.head.frozen_parameters),
                        std::max(c.gpu, c.comm));
    }
    bool last_block_kept = fsdp2_last_block_kept(ctx);
    for (std::size_t g = groups.size(); g-- > 0;) {
        const auto [wp, n] = groups[g];
        if (n == 0)
            continue;
        const LayerWork& w = *wp;
        spans.begin();
        const double start = std::max(c.gpu, c.comm);
        const Gather gather = units.gathers_per_pass
                                  ? parameter_gather(ctx, w.parameters, w.expert_parameters,
                                                     layer_float8(ctx, groups, g))
                                  : Gather{};
        if (last_block_kept && units.gathers_per_pass) {
            Gather kept = gather;
            kept.seconds = 0;
            kept.load = {};
            kept.copy_out = 0;
            c.prefetch = c.host; // its pre-hook prefetches the next block's gather
            run_layers(w, backward_units(w), 1, ctx.env, c, b, kept);
            if (n > 1)
                run_layers(w, backward_units(w), n - 1, ctx.env, c, b, gather);
        } else {
            run_layers(w, backward_units(w), n, ctx.env, c, b, gather);
        }
        last_block_kept = false;
        accumulate_grads(ctx, w, n, c, b);
        spans.end("layer", first_layers[g], n, w, true);
        // Layers finish at evenly spaced times across the group (extrapolated steady state).
        const double per_layer = (std::max(c.gpu, c.comm) - start) / n;
        for (int i = 1; i <= n; ++i)
            buckets.add(w.parameters - w.frozen_parameters, start + per_layer * i,
                        w.expert_parameters);
    }
    if (st.embedding) {
        spans.begin();
        run_units(ctx.embedding, backward_units(ctx.embedding), ctx.env, c, b,
                  backward_gather(ctx, units, ctx.embedding.parameters));
        spans.end("embedding", 0, 1, ctx.embedding, true);
        if (!units.root_unit)
            buckets.add(ctx.embedding.parameters - ctx.embedding.frozen_parameters,
                        std::max(c.gpu, c.comm));
    }
    st.backward = finish(c, b);
    spans.finish(c.gpu);
    buckets.flush(c.gpu);
    // FSDP2 under torch.distributed.pipelining: no reduce-scatter in the chunk's backwards
    // (set_requires_gradient_sync(False) for every one); on the last, once the autograd
    // backward has returned, run_post_backward calls each group's post_backward in turn
    // (_PipelineStageBase.backward_maybe_with_nosync, torch/distributed/pipelining/stage.py of
    // December 2024, the benchmark page's PyTorch): every gradient bucket is issued at the
    // pass's end, none beside its compute.
    if (units.gathered_per_step)
        for (GradBucket& bucket : st.buckets)
            bucket.ready = st.backward.time;
    // The root unit's one reduce-scatter, after every other bucket, at the pass's end.
    if (units.root_unit && units.root_params > 0)
        st.buckets.push_back(
            {static_cast<std::int64_t>(units.root_params * buckets.grad_bytes_per_param()),
             st.backward.time});
}

/// The split backward of the zero-bubble schedules: W is the weight-gradient kernels (names
/// ending in "wgrad"), B the rest of the pass; and what B leaves for W.
void split_backward(const PlanContext& ctx, VirtualStagePlan& st, const LayerGroups& groups) {
    double w_seconds = 0;
    std::int64_t w_bytes = 0;
    const std::int64_t elt = hardware::bytes_per_element(ctx.e.training.dtype);
    auto add_weight = [&](const LayerWork& w, int n) {
        for (int i = 0; i < w.backward.ops.count(); ++i) {
            const models::Op& op = w.backward.ops[static_cast<std::size_t>(i)];
            if (!op.name.ends_with("wgrad"))
                continue;
            // An input that sequence parallelism re-gathers for this GEMM is kept sharded.
            std::int64_t input_share = 1;
            for (const models::TpCollective& tc : w.collectives)
                if (tc.pass == Pass::backward && tc.regather && tc.needed_by == i)
                    input_share = ctx.e.parallel.tp;
            w_seconds += n * op.time.seconds() /
                         (op.kind == models::OpKind::memory_bound ? ctx.fw.memory_efficiency
                                                                  : ctx.fw.gemm_efficiency);
            // Kept from B for W: the GEMM's input (M x K) and its output's gradient (K x N).
            if (op.kind != models::OpKind::memory_bound)
                w_bytes += n * (op.m * op.k / input_share + op.k * op.n) *
                           std::max<std::int64_t>(1, op.batch) * elt;
        }
    };
    if (st.head)
        add_weight(ctx.head, head_runs(ctx));
    for (auto [wp, n] : groups)
        add_weight(*wp, n);
    if (st.embedding)
        add_weight(ctx.embedding, 1);
    st.weight = PassCost{};
    st.weight.compute = std::min(st.backward.compute, sim::Time::from_seconds(w_seconds));
    st.weight.time = st.weight.compute;
    st.backward_input = st.backward;
    st.backward_input.compute -= st.weight.compute;
    st.backward_input.time -= st.weight.compute;
    st.weight_activation_bytes = w_bytes;
}

/// The stage's activations, transient bytes and parameters.
void count_state(const PlanContext& ctx, VirtualStagePlan& st, const LayerGroups& groups,
                 const StageUnits& units) {
    st.activation_bytes = 0;
    st.transient_bytes = 0;
    st.parameters = 0;
    st.expert_parameters = 0;
    st.layer_parameters = 0;
    st.frozen_parameters = 0;
    // torchtune's OffloadActivations (torchtune/training/_activation_offloading.py at
    // meta-pytorch/torchtune@1814feb17): each checkpointed layer input is copied to the host in
    // the forward, the last max_fwd_stash_size (5) kept on the GPU until their copies are
    // done, and those are what the backward starts with; the others come back one at a time.
    // The groups are walked from the last (the later layers' kinds) for those last five. The
    // copies' time on the host link is not modelled.
    constexpr int kFwdStash = 5;
    int on_gpu = ctx.e.training.activation_offloading ? kFwdStash : 1 << 30;
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
        const auto [wp, n] = *it;
        const LayerWork& w = *wp;
        const int kept = std::min(n, on_gpu);
        on_gpu -= kept;
        st.activation_bytes += kept * w.activation_bytes;
        st.parameters += n * w.parameters;
        st.frozen_parameters += n * w.frozen_parameters;
        st.expert_parameters += n * w.expert_parameters;
        st.layer_parameters += n * w.parameters;
        if (n > 0)
            st.transient_bytes = std::max(st.transient_bytes, w.recomputed_activation_bytes);
    }
    if (st.embedding) {
        st.activation_bytes += ctx.embedding.activation_bytes;
        st.parameters += ctx.embedding.parameters;
        st.frozen_parameters += ctx.embedding.frozen_parameters;
    }
    st.cached_bytes = 0;
    if (st.head) {
        // The loss's gradients, allocated at the start of the head's backward, while every
        // activation of the chunk is still held (models::CrossEntropy).
        st.transient_bytes = std::max(st.transient_bytes, ctx.head.recomputed_activation_bytes);
        st.cached_bytes = ctx.head.cached_bytes;
        st.activation_bytes += head_runs(ctx) * ctx.head.activation_bytes;
        st.parameters += units.head_params;
        st.frozen_parameters += std::min(units.head_params, ctx.head.frozen_parameters);
        // Under fp8_output_proj the LM head's weight is a Transformer Engine Linear's: its
        // MXFP8 copies are kept and made once per step as the layers' are.
        if (ctx.e.training.fp8_output_proj)
            st.layer_parameters += lm_head_weight(ctx);
    }
}

/// The stage's gathered parameters and unsharded gradients in memory (memory_accounting.h).
void count_gathered(const PlanContext& ctx, VirtualStagePlan& st, const LayerGroups& groups,
                    const StageUnits& units) {
    const std::int64_t param_elt = hardware::bytes_per_element(comm_dtype(ctx.e.training.dtype));
    const std::int64_t grad_elt = hardware::bytes_per_element(grad_reduce_dtype(ctx.e));
    // torchao's FSDP float8 all-gather (TrainingSpec::fp8_fsdp_all_gather): the layers'
    // Float8Linear weights gathered and held in FP8 (layer_float8), the rest (norms, biases,
    // routed experts, the embedding, the output layer) in the 16-bit type; the gathers' time
    // counts the same bytes (parameter_gather).
    const std::int64_t f8 = groups_float8(ctx, groups);
    st.gathered_bytes = ctx.zero3 ? gathered_bytes(ctx.e, st.parameters, f8) : 0;
    st.forward_gather_bytes = 0;
    st.backward_gather_bytes = 0;
    st.step_gathered_bytes = 0;
    st.step_grad_bytes = 0;
    if (ctx.zero3 && !units.gathered_per_step) {
        GatheredUnits g;
        if (units.root_unit) {
            g.root = units.root_params;
            g.root_grads =
                st.head ? units.head_params +
                              (units.tied_here && st.embedding ? ctx.embedding.parameters : 0)
                        : 0;
        } else {
            if (st.embedding)
                g.add(ctx.embedding.parameters, ctx.embedding.parameters * param_elt);
            if (st.head)
                g.add(units.head_params, units.head_params * param_elt);
        }
        for (std::size_t i = 0; i < groups.size(); ++i)
            for (int k = 0; k < std::min(groups[i].second, 2); ++k)
                g.add(groups[i].first->parameters,
                      gathered_bytes(ctx.e, groups[i].first->parameters,
                                     layer_float8(ctx, groups, i)));
        const PassGatherBytes bytes = per_pass_gather_bytes(g, param_elt, grad_elt);
        st.forward_gather_bytes = bytes.forward;
        st.backward_gather_bytes = bytes.backward;
    }
    if (units.gathered_per_step) {
        const StepGatherBytes bytes = per_step_gather_bytes(st.parameters, param_elt, grad_elt);
        st.step_gathered_bytes = bytes.parameters - (st.parameters * param_elt - st.gathered_bytes);
        st.step_grad_bytes = bytes.gradients;
    }
}

/// Costs, activations and gradient buckets of virtual stage `st` under recompute plan `rp`,
/// its layers grouped as `counts` (group_counts).
void cost_stage_once(PlanContext& ctx, VirtualStagePlan& st, const RecomputePlan& rp,
                     const GroupCounts& counts) {
    st.recompute = rp;
    const LayerGroups groups = layer_groups(ctx, counts);
    const StageUnits units = stage_units(ctx, st);
    st.forward = forward_pass(ctx, st, groups, units, units.gathers_per_pass,
                              ctx.unit_spans ? &st.forward_spans : nullptr);
    st.first_forward = st.forward;
    if (first_forward_gathers(ctx))
        st.first_forward = forward_pass(ctx, st, groups, units, true);
    backward_pass(ctx, st, groups, units);
    split_backward(ctx, st, groups);
    count_state(ctx, st, groups, units);
    count_gathered(ctx, st, groups, units);
}

/// Takes `seconds` of a pass's expert-parallel waits off it (at most those waits) and adds
/// `slowdown` to its compute: what the all-to-alls now beside its kernels cost them.
void hide_ep_wait(PassCost& p, double seconds, double slowdown) {
    const sim::Time t = std::min(p.ep_wait, sim::Time::from_seconds(seconds));
    const sim::Time slow = sim::Time::from_seconds(slowdown);
    p.ep_wait -= t;
    p.compute += slow;
    p.overlap_slowdown += slow;
    p.time += slow - t;
}

/// Megatron-Core's expert-parallel overlap (ParallelSpec::ep_overlap, ep_overlap.h) on the
/// passes of `st`: each of its layers with experts hides, per paired forward and backward,
/// what its two streams save over running one after the other (ep_sequential_seconds -
/// ep_overlapped_seconds); the share of the rank's passes that run paired
/// (ep_paired_share) takes it, averaged over the step's passes, out of the passes' waits for
/// the all-to-alls (never more than those waits), forward and backward in proportion to them.
/// Both ways the host issues the pair's kernels (ep_overlap_host.h): a pair the host cannot
/// issue faster than the GPU runs it, or that waits for the GPU before the next node, hides
/// less, and a layer whose pair would take longer overlapped hides nothing.
void apply_ep_overlap(const PlanContext& ctx, VirtualStagePlan& st, const RecomputePlan& rp) {
    const ExperimentSpec& e = ctx.e;
    const ParallelSpec& par = e.parallel;
    if (!par.ep_overlap)
        return;
    const LayerGroups groups = layer_groups(ctx, group_counts(ctx, st, rp));
    // Per layer pair: the all-to-all time hidden, and what it costs the kernels beside it.
    double hidden_per_pair = 0, slowdown_per_pair = 0;
    for (const auto& [wp, n] : groups) {
        if (n == 0)
            continue;
        const auto l = ep_overlap_layer(*wp, ctx.env);
        const auto h = ep_overlap_host(*wp, ctx.env);
        if (l && h) {
            // Both ways with the host issuing the kernels (ep_overlap_host.h): what a
            // host-bound or host-synchronised pair cannot hide stays.
            const double hidden =
                ep_sequential_seconds(*l, *h) - ep_overlapped_seconds(*l, *h, par.delay_wgrad);
            if (hidden <= 0)
                continue;
            hidden_per_pair += n * hidden;
            slowdown_per_pair += n * (hidden - ep_overlap_saving(*l, *h, par.delay_wgrad));
        }
    }
    const double share = ep_paired_share(par.pp, st.rank, par.virtual_stages, e.micro_batches());
    const double waits = (st.forward.ep_wait + st.backward.ep_wait).seconds();
    const double hidden = std::min(hidden_per_pair * share, waits);
    if (hidden <= 0)
        return;
    // The slowdown in proportion to the all-to-all time that actually hides.
    const double slow = slowdown_per_pair * share * hidden / (hidden_per_pair * share);
    const double f = st.forward.ep_wait.seconds() / waits;
    // The paired share is spread over every pass alike, the first micro-batch's forward too
    // (a warmup pass, never paired itself): the step's total is the pairs', its order within
    // the warmup approximate.
    hide_ep_wait(st.forward, hidden * f, slow * f);
    hide_ep_wait(st.first_forward, hidden * f, slow * f);
    hide_ep_wait(st.backward, hidden * (1 - f), slow * (1 - f));
    hide_ep_wait(st.backward_input, hidden * (1 - f), slow * (1 - f));
}

} // namespace

void cost_stage(PlanContext& ctx, VirtualStagePlan& st, const RecomputePlan& rp) {
    const PlanContext::StageKey key{st.layers,
                                    rp,
                                    group_counts(ctx, st, rp),
                                    st.embedding,
                                    st.head,
                                    st.gathered_ahead,
                                    st.gather_lead,
                                    st.gather_beside};
    for (const auto& [k, costed] : ctx.stage_costs) {
        if (k == key) {
            VirtualStagePlan s = costed;
            s.index = st.index;
            s.rank = st.rank;
            s.chunk = st.chunk;
            s.first_layer = st.first_layer;
            s.send_forward = st.send_forward;
            s.send_backward = st.send_backward;
            s.send_bytes = st.send_bytes;
            st = std::move(s);
            apply_ep_overlap(ctx, st, rp);
            return;
        }
    }
    cost_stage_once(ctx, st, rp, key.counts);
    ctx.stage_costs.emplace_back(key, st);
    // After the cache: the paired share depends on the stage's pipeline rank.
    apply_ep_overlap(ctx, st, rp);
}

RecomputePlan uniform(Recompute r, int layers) {
    RecomputePlan p;
    (r == Recompute::none ? p.none : r == Recompute::selective ? p.selective : p.full) = layers;
    return p;
}

} // namespace clustersim::strategies::parallel::detail
