#include "strategies/parallel/memory_accounting.h"

#include "strategies/models/fp8.h"
#include "strategies/parallel/precision.h"
#include "strategies/parallel/torch_pipelining.h"

#include <algorithm>
#include <vector>

namespace clustersim::strategies::parallel {

std::int64_t peak_activation_bytes(const StepPlan& plan, int rank) {
    // The rank's chunks' bytes looked up once, not once per pass (a long pipeline's rank runs
    // thousands of passes of its few chunks).
    // With torch.distributed.pipelining, each chunk's buffers (torch_stage_buffers): those held
    // for the step from its start, what each forward and each backward leaves to its end.
    struct ChunkBytes {
        std::int64_t activation_bytes, transient_bytes, weight_activation_bytes;
        TorchStageBuffers kept;
    };
    std::vector<ChunkBytes> chunks;
    std::int64_t live = 0;
    for (int c = 0; c < plan.shape.virtual_stages; ++c) {
        const int vs = virtual_stage(c, rank, plan.shape);
        const auto& st = plan.stage(vs);
        chunks.push_back({st.activation_bytes, st.transient_bytes, st.weight_activation_bytes,
                          torch_stage_buffers(plan, vs)});
        live += chunks.back().kept.held;
    }
    std::int64_t peak = live;
    for (const PipePass& pass : plan.orders()[static_cast<std::size_t>(rank)]) {
        const ChunkBytes& st = chunks[pass.chunk];
        switch (pass.kind) {
        case PassKind::forward:
            live += st.activation_bytes + st.kept.per_forward;
            peak = std::max(peak, live);
            break;
        case PassKind::backward:
            peak = std::max(peak, live + st.transient_bytes);
            live += st.kept.per_backward - st.activation_bytes;
            peak = std::max(peak, live);
            break;
        case PassKind::backward_input:
            // B frees the activations and leaves W its inputs and output gradients.
            peak = std::max(peak, live + st.transient_bytes);
            live += st.weight_activation_bytes + st.kept.per_backward - st.activation_bytes;
            peak = std::max(peak, live);
            break;
        case PassKind::weight:
            live -= st.weight_activation_bytes;
            break;
        }
    }
    return peak;
}

std::int64_t peak_gathered_bytes(const StepPlan& plan, int rank) {
    // Nothing gathered on this rank (no ZeRO-3): no walk of its order, which every
    // configuration of a sweep would otherwise pay.
    bool any = false;
    for (int c = 0; c < plan.shape.virtual_stages && !any; ++c) {
        const auto& st = plan.stage(virtual_stage(c, rank, plan.shape));
        any = st.forward_gather_bytes > 0 || st.backward_gather_bytes > 0 ||
              st.step_gathered_bytes > 0 || st.step_grad_bytes > 0;
    }
    if (!any)
        return 0;
    const auto& order = plan.orders()[static_cast<std::size_t>(rank)];
    // Per chunk: passes that produce weight gradients (backward, or W of a split one), and
    // whether it has run a forward; the held state is added on the first and freed after the
    // last weight-gradient pass.
    std::vector<int> grad_passes(static_cast<std::size_t>(plan.shape.virtual_stages), 0);
    for (const PipePass& pass : order)
        if (pass.kind == PassKind::backward || pass.kind == PassKind::weight)
            ++grad_passes[static_cast<std::size_t>(pass.chunk)];
    std::vector<int> seen(grad_passes.size(), 0);
    std::vector<bool> started(grad_passes.size(), false);
    std::int64_t held = 0;
    std::int64_t peak = 0;
    for (const PipePass& pass : order) {
        const auto c = static_cast<std::size_t>(pass.chunk);
        const auto& st = plan.stage(virtual_stage(pass.chunk, rank, plan.shape));
        if (pass.kind == PassKind::forward) {
            if (!started[c]) {
                started[c] = true;
                held += st.step_gathered_bytes;
            }
            peak = std::max(peak, held + st.forward_gather_bytes);
            continue;
        }
        peak = std::max(peak, held + st.backward_gather_bytes);
        if (pass.kind == PassKind::backward_input)
            continue;
        if (seen[c]++ == 0)
            held += st.step_grad_bytes;
        peak = std::max(peak, held);
        if (seen[c] == grad_passes[c])
            held -= st.step_grad_bytes + st.step_gathered_bytes;
    }
    return peak;
}

} // namespace clustersim::strategies::parallel

namespace clustersim::strategies::parallel::detail {

std::int64_t allocator_slack_bytes(double fragmentation, std::int64_t churn_bytes, bool gathers) {
    constexpr std::int64_t kSmallBuffer = 2 << 20;  // CUDACachingAllocator.cpp
    constexpr std::int64_t kLargeBuffer = 20 << 20; // CUDACachingAllocator.cpp
    const int streams = gathers ? 3 : 1;
    return streams * (kSmallBuffer + kLargeBuffer) +
           static_cast<std::int64_t>(fragmentation * static_cast<double>(churn_bytes));
}

namespace {

/// Where gradients are PyTorch's param.grad tensors, allocated by the backward (AccumulateGrad)
/// and freed after the step (torchtune's optimizer.zero_grad(set_to_none=True), recipes/
/// full_finetune_single_device.py at meta-pytorch/torchtune@1814feb17; or in the backward
/// with optimizer_in_bwd), not a buffer held across the step as Megatron's and DeepSpeed's
/// mixed precision keep: what the step's peak holds beside the weights, the optimizer state
/// and any gathered parameters; -1 where gradients are held across the step. One micro-batch
/// on one stage: the activations fall and the gradients grow through the backward, so the
/// peak is at its start or its end. At the start, the activations with the loss's transient
/// gradients (`activations`), then, once those are freed, the kept ones with the head's
/// weight gradient (its vocabulary x hidden matrix, the first produced). At the end, every
/// gradient and, with tied embeddings, the embedding backward's gradient of the shared matrix
/// beside the output layer's until AccumulateGrad adds it into that one in place
/// (torch/csrc/autograd/input_buffer.cpp, InputBuffer::accumulate).
std::int64_t backward_allocated_peak(const StepPlan& plan, const RankPlan& rp,
                                     std::int64_t activations, std::int64_t grads) {
    const ExperimentSpec* e = plan.experiment;
    if (e == nullptr || plan.shape.forward_only || e->parallel.zero != 0 || plan.shape.ranks != 1 ||
        plan.shape.micro_batches != 1 ||
        (e->training.master_weights && !e->training.optimizer_in_bwd))
        return -1;
    // The gradients' element as state_bytes counts it without ZeRO (models::model_state_bytes):
    // the weights' 16-bit type under pure 16-bit training, fp32 otherwise. Not rp.grads_bytes
    // over the parameters: optimizer_in_bwd has cut those bytes to the gradients it holds.
    const bool pure16 = !e->training.master_weights &&
                        hardware::bytes_per_element(hardware::weight_dtype(e->training.dtype)) == 2;
    const std::int64_t elt = pure16 ? 2 : 4;
    const std::int64_t head = std::min(grads, std::int64_t{e->model.vocab} * e->model.hidden * elt);
    std::int64_t kept = 0;
    for (int c = 0; c < plan.shape.virtual_stages; ++c)
        kept += plan.stage(virtual_stage(c, rp.rank, plan.shape)).activation_bytes;
    const std::int64_t second = e->model.tied_embeddings ? head : 0;
    return std::max({activations, std::min(kept, activations) + head, grads + second});
}

} // namespace

void account_memory(const StepPlan& plan, StepResult& r) {
    r.capacity_bytes = plan.capacity_bytes;
    std::int64_t tightest = 0;
    for (const RankPlan& rp : plan.ranks) {
        StageMemory m;
        m.stage = rp.rank;
        m.weights_bytes = rp.weights_bytes;
        m.grads_bytes = plan.shape.forward_only ? 0 : rp.grads_bytes;
        m.optimizer_bytes = plan.shape.forward_only ? 0 : rp.optimizer_bytes;
        m.activations_bytes = peak_activation_bytes(plan, rp.rank);
        m.gathered_bytes = peak_gathered_bytes(plan, rp.rank);
        m.runtime_bytes = plan.runtime_bytes;
        m.peak_bytes = m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.activations_bytes +
                       m.gathered_bytes;
        if (const std::int64_t held =
                backward_allocated_peak(plan, rp, m.activations_bytes, m.grads_bytes);
            held >= 0)
            m.peak_bytes = m.weights_bytes + m.optimizer_bytes + m.gathered_bytes + held;
        // Blocks the step's forward freed and the allocator keeps unused at the backward's
        // peak (the 16-bit logits of an eager cross-entropy): the chunk with most.
        // With torch.distributed.pipelining the stage keeps its logits (output_chunks): no
        // block freed, none cached.
        std::int64_t cached = 0;
        const bool kept_outputs = plan.experiment != nullptr && torch_pipelining(*plan.experiment);
        for (int c = 0; c < plan.shape.virtual_stages && !plan.shape.forward_only && !kept_outputs;
             ++c)
            cached =
                std::max(cached, plan.stage(virtual_stage(c, rp.rank, plan.shape)).cached_bytes);
        m.reserved_bytes =
            m.peak_bytes + cached +
            allocator_slack_bytes(plan.allocator_fragmentation,
                                  m.activations_bytes + m.gathered_bytes, m.gathered_bytes > 0);
        m.device_bytes = m.reserved_bytes + m.runtime_bytes;
        for (int c = 0; c < plan.shape.virtual_stages; ++c) {
            const auto& st = plan.stage(virtual_stage(c, rp.rank, plan.shape));
            m.recompute += st.recompute;
            // A backward allocates its layer's input gradients, as large as the activations
            // that layer kept, beside what it recomputes.
            if (!plan.shape.forward_only)
                m.transient_bytes =
                    std::max(m.transient_bytes,
                             st.transient_bytes + st.activation_bytes / std::max(1, st.layers));
        }
        r.peak_bytes_max = std::max(r.peak_bytes_max, m.peak_bytes);
        r.peak_reserved_bytes_max = std::max(r.peak_reserved_bytes_max, m.reserved_bytes);
        r.device_bytes_max = std::max(r.device_bytes_max, m.device_bytes);
        const std::int64_t excess = m.device_bytes - plan.capacity_bytes;
        if (excess > 0 && (!r.oom || excess > r.oom->excess_bytes))
            r.oom = OutOfMemory{rp.rank, excess};
        // The rank whose headroom falls furthest short of its working set.
        const std::int64_t short_by = m.transient_bytes + excess;
        if (excess <= 0 && short_by > 0 && short_by > tightest) {
            tightest = short_by;
            r.tight_headroom = rp.rank;
        }
        r.memory.push_back(m);
    }
    if (r.oom)
        r.tight_headroom.reset();
    r.automatic_recompute = plan.automatic_recompute;
}

models::ModelStateBytes state_bytes(const ExperimentSpec& e, std::int64_t dense,
                                    std::int64_t experts, int edp, std::int64_t layer_parameters,
                                    std::int64_t frozen) {
    const ParallelSpec& par = e.parallel;
    // Under autocast (torch.cuda.amp) the model is fp32: its weights, their gradients and
    // Adam's moments (Hugging Face's guide: 4 + 4 + 8 bytes per parameter); only the ops run
    // in the 16-bit dtype.
    const auto dtype =
        e.training.autocast ? hardware::Dtype::fp32 : hardware::weight_dtype(e.training.dtype);
    // The distributed optimizer's main gradients in fp32 where the framework reduces them in
    // fp32 (FrameworkSpec::fp32_grad_reduce, Megatron's --accumulate-allreduce-grads-in-fp32).
    // DeepSpeed's BF16_Optimizer (precision.h) keeps the state of ZeRO-1 with fp32 main
    // gradients, and the bf16 param.grad of the last backward beside them.
    const bool hp_grads = bf16_optimizer(e);
    const int zero = hp_grads ? 1 : par.zero;
    const bool fp32_grads = e.framework.fp32_grad_reduce || hp_grads;
    const bool master = e.training.master_weights;
    models::ModelStateBytes m = models::lora_state_bytes(frozen, dense, dtype, e.training.optimizer,
                                                         zero, par.shard_cp(), fp32_grads, master);
    if (experts > 0) {
        const auto x = models::model_state_bytes(experts, dtype, e.training.optimizer, zero, edp,
                                                 fp32_grads, master);
        m.weights += x.weights;
        m.gradients += x.gradients;
        m.optimizer += x.optimizer;
    }
    if (hp_grads)
        m.gradients += (dense + experts) * hardware::bytes_per_element(dtype);
    // Transformer Engine keeps quantized copies of the weights across the step (delayed and
    // current: FP8 data, and its transpose where the GPU's FP8 GEMMs take only TN; MXFP8 and NVFP4:
    // both block-scaled copies with their scales); torchao's tensorwise casts them in every forward
    // and keeps none (models::Fp8Recipe).
    if (hardware::is_quantized(e.training.dtype))
        m.weights += models::weight_copy_bytes(layer_parameters, e.training.quant_recipe(),
                                               detail::fp8_casts_transpose(e));
    // Autocast's cast of each weight to the 16-bit dtype, made by the first op that uses it
    // and cached until the autocast region exits (cached_cast caches leaves that require
    // grad; the autocast context's exit clears the cache: aten/src/ATen/autocast_mode.cpp,
    // cached_cast and clear_cache, read at
    // pytorch/pytorch@008ec6b1840c94ff6d0f685bc10fbf585167c673, autocast's rule since its
    // introduction in PyTorch 1.6); the linear layers' backwards keep them after that, so every
    // layer's copy is alive at the end of the forward and at the start of the backward. The layers'
    // parameters (their norms' few included; the head's left out).
    if (e.training.autocast)
        m.weights += layer_parameters * hardware::bytes_per_element(e.training.dtype);
    // torchtune's optimizer_in_bwd (training.register_optim_in_bwd_hooks, torchtune/training/
    // memory.py at meta-pytorch/torchtune@1814feb17): each parameter's step runs in its
    // post-accumulate-grad hook, which then sets its gradient to None. A parameter's gradient
    // lives from its AccumulateGrad to its step: the embedding's (tied: the output layer's
    // too, summed over both uses before its one AccumulateGrad) through the backward, beside
    // the largest of a layer's (a matrix of hidden x ffn).
    if (e.training.optimizer_in_bwd) {
        const models::ModelSpec& md = e.model;
        const std::int64_t elt = m.gradients / std::max<std::int64_t>(1, dense + experts);
        const std::int64_t held = (std::int64_t{md.vocab} * md.hidden +
                                   std::int64_t{md.hidden} * std::max(md.ffn, md.hidden)) *
                                  elt;
        m.gradients = std::min(m.gradients, held);
    }
    return m;
}

PassGatherBytes per_pass_gather_bytes(const GatheredUnits& units, std::int64_t param_elt,
                                      std::int64_t grad_elt) {
    // ZeRO-3's gathered parameters in memory, gathered per pass: the unit running and the next
    // one prefetched (FSDP2's implicit forward prefetch and explicit backward prefetch of one
    // unit, torch/distributed/fsdp/_fully_shard/_fsdp_state.py; DeepSpeed's prefetch
    // likewise); the backward also holds a unit's unsharded gradients (param dtype) and the
    // reduce-scatter's input (reduce dtype: foreach_reduce's copy-in, _fsdp_collectives.py)
    // until the copy. DeepSpeed's ZeRO-3 gathers each module: bounded by the two largest
    // units (layers, embedding, head).
    // FSDP2 as torchtitan wraps it (torchtitan/parallelisms/parallelize_llama.py at 9dec370,
    // apply_fsdp): one unit per transformer block, and fully_shard(model) last, the root unit
    // holding the rest: the embedding, the final norm and the output layer. The root is never
    // resharded after forward, whatever reshard_after_forward says: FSDPState._lazy_init sets
    // its group's post_forward_mesh_info = None ("For the root, do not reshard after forward
    // since for training, the parameters would be freed and all-gathered immediately";
    // torch/distributed/_composable/fsdp/_fsdp_state.py at pytorch/pytorch@005da465b9, the
    // module torchtitan imports at 9dec370, December 2024; later PyTorch keeps the override
    // only where reshard_after_forward is left to its default). Its forward inputs (token
    // ids) need no gradient, so its post-backward runs in the root's final callback after the
    // whole backward (_root_post_backward_final_callback): the root's parameters stay
    // gathered through the forward and the backward, beside the two blocks, and the output
    // layer's gradient (with tied embeddings the shared matrix's), produced first in the
    // backward, is held unsharded (param dtype) until then. The root's own reduce-scatter, in
    // that callback after its reshard (FSDPParamGroup.post_backward reshards before
    // foreach_reduce), holds its gradients and their copy-in once the backward's activations
    // are freed: not counted beside them.
    PassGatherBytes b;
    b.forward = units.root * param_elt + units.first + units.second;
    b.backward = b.forward + units.root_grads * param_elt + units.largest * (param_elt + grad_elt);
    return b;
}

StepGatherBytes per_step_gather_bytes(std::int64_t parameters, std::int64_t param_elt,
                                      std::int64_t grad_elt) {
    // FSDP2 under a pipeline (fsdp2_gathered_per_step: reshard_after_forward False, no
    // resharding nor reduce-scatter before the last backward): the chunk's parameters stay
    // gathered, and after each backward but the last FSDPParamGroup.post_backward
    // (_fsdp_param_group.py: `if not self.reduce_grads`) keeps the unsharded gradients,
    // FSDPParam.to_accumulated_grad_if_needed upcasting them to the reduce dtype
    // (unsharded_accumulated_grad; torchtitan's mixed_precision_reduce, float32) and
    // accumulate_unsharded_grad_if_needed adding each later backward's into them.
    return {parameters * param_elt, parameters * grad_elt};
}

} // namespace clustersim::strategies::parallel::detail
