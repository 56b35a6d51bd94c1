#pragma once
/// \file
/// Memory of a step: per pipeline rank, its weights, gradients and optimizer state, the peak of
/// its activations and of its gathered parameters under the schedule's pass order
/// (step_plan.h), and the framework's runtime; and whether any rank exceeds the GPU's capacity,
/// by how much. Independent of the timing: the same plan gives the same memory in either
/// fidelity. The rules of what a framework holds (ZeRO stages, FSDP2's gathered units, FP8's
/// weight copies) live here; the plan's stages record their bytes (stage_cost.h).

#include "strategies/models/memory_formulas.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace clustersim::strategies::parallel {

/// Peak bytes of activations (kept and transient) on `rank` under the plan's pass orders.
std::int64_t peak_activation_bytes(const StepPlan& plan, int rank);

/// Peak bytes of ZeRO-3's gathered parameters and unsharded gradients on `rank` (beside the
/// sharded model state) under the plan's pass orders: per pass (VirtualStagePlan::
/// forward_gather_bytes, backward_gather_bytes) or held across the step (step_gathered_bytes
/// from a chunk's first forward, step_grad_bytes from its first weight-gradient pass, both
/// until its last). 0 without ZeRO-3.
std::int64_t peak_gathered_bytes(const StepPlan& plan, int rank);

} // namespace clustersim::strategies::parallel

namespace clustersim::strategies::parallel::detail {

/// Fills `r.memory`, the peaks, `r.capacity_bytes`, the OOM verdict, the headroom warning
/// and `r.automatic_recompute` from `plan`.
void account_memory(const StepPlan& plan, StepResult& r);

/// What PyTorch's caching allocator reserves beyond the allocated peak (pytorch/pytorch
/// c10/cuda/CUDACachingAllocator.cpp): each stream allocating has its own pools of cached
/// blocks (a freed block serves only its stream's requests, BlockComparator and
/// get_free_block), each holding at most one partly used segment of each kind beside its
/// full ones: a 2 MiB segment of small blocks (kSmallBuffer, requests <= kSmallSize 1 MiB)
/// and a 20 MiB one of 1-10 MiB requests (kLargeBuffer); larger requests get segments of
/// their size rounded to 2 MiB (kRoundLarge), which transformer tensors nearly fill. That
/// floor per stream, plus `fragmentation` (FrameworkSpec::allocator_fragmentation) of the
/// `churn_bytes` allocated and freed within the step. The compute stream allocates, and where
/// ZeRO-3 gathers (`gathers`) so do its all-gather and reduce-scatter streams (FSDP2's,
/// torch/distributed/fsdp/_fully_shard/_fsdp_state.py).
std::int64_t allocator_slack_bytes(double fragmentation, std::int64_t churn_bytes, bool gathers);

/// Model state of a rank holding `dense` parameters sharded over the data-parallel (shard) x
/// context-parallel group and `experts` (routed experts laid out apart) sharded over the
/// expert-data-parallel group of `edp`, `layer_parameters` of them all in its transformer
/// layers; FP8 training adds the FP8 copies of the layers' weights (fp8.h) to the weights.
/// `frozen` (LoRA's base weights, not in `dense`) adds their weights only
/// (models::lora_state_bytes).
models::ModelStateBytes state_bytes(const ExperimentSpec& e, std::int64_t dense,
                                    std::int64_t experts, int edp, std::int64_t layer_parameters,
                                    std::int64_t frozen = 0);

/// The units of a chunk that ZeRO-3 gathers per pass: FSDP2's root unit (kept gathered
/// through the pass, by parameters) and the gradients of it held through the blocks' backward,
/// and the others (layers, embedding, head), of which the two holding the most gathered bytes
/// count, and the largest by parameters for the gradients.
struct GatheredUnits {
    std::int64_t root = 0;
    std::int64_t root_grads = 0;
    std::int64_t first = 0;  ///< bytes of the unit holding most gathered
    std::int64_t second = 0; ///< bytes of the second
    /// Parameters of the largest unit: its unsharded gradients' elements.
    std::int64_t largest = 0;
    /// A unit of `params` parameters held gathered in `bytes` (one byte a Float8Linear weight
    /// under torchao's FSDP float8 all-gather, TrainingSpec::fp8_fsdp_all_gather).
    void add(std::int64_t params, std::int64_t bytes) {
        largest = std::max(largest, params);
        if (bytes > first) {
            second = first;
            first = bytes;
        } else if (bytes > second) {
            second = bytes;
        }
    }
};

/// ZeRO-3's gathered bytes beside the sharded state of a chunk gathered per pass: what a
/// forward holds and what a backward holds.
struct PassGatherBytes {
    std::int64_t forward = 0;
    std::int64_t backward = 0;
};
PassGatherBytes per_pass_gather_bytes(const GatheredUnits& units, std::int64_t param_elt,
                                      std::int64_t grad_elt);

/// FSDP2 under a pipeline (gathered once per step): the chunk's parameters held gathered and
/// its unsharded gradients in the reduce dtype.
struct StepGatherBytes {
    std::int64_t parameters = 0;
    std::int64_t gradients = 0;
};
StepGatherBytes per_step_gather_bytes(std::int64_t parameters, std::int64_t param_elt,
                                      std::int64_t grad_elt);

} // namespace clustersim::strategies::parallel::detail
