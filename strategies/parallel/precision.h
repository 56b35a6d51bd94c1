#pragma once
/// \file
/// The precision rules of a step: the dtype each kind of tensor is kept, gathered, sent and
/// reduced in, from the training dtype and the framework. One home for them, so that the pass
/// clock, the parameter gathers, the gradient buckets and the memory agree. Internal to the
/// step model; inline, as the pass clock asks for every collective it issues.

#include "hardware/dtype.h"
#include "strategies/parallel/experiment.h"

namespace clustersim::strategies::parallel::detail {

/// Collectives carry activations in 16-bit types as they are, everything else as fp32 (FP8 and
/// FP4 training's activations travel in bf16).
inline hardware::Dtype comm_dtype(hardware::Dtype d) {
    switch (d) {
    case hardware::Dtype::fp16:
        return hardware::Dtype::fp16;
    case hardware::Dtype::bf16:
    case hardware::Dtype::fp8:
    case hardware::Dtype::fp4:
        return hardware::Dtype::bf16;
    default:
        return hardware::Dtype::fp32;
    }
}

/// The dtype data-parallel gradients are reduced in: fp32 main gradients, or the 16-bit
/// training dtype when the framework reduces those (FrameworkSpec::fp32_grad_reduce).
inline hardware::Dtype grad_reduce_dtype(const ExperimentSpec& e) {
    const auto d = e.training.dtype;
    if (e.framework.fp32_grad_reduce || hardware::bytes_per_element(d) >= 4)
        return hardware::Dtype::fp32;
    return hardware::is_quantized(d) ? hardware::Dtype::bf16 : d;
}

/// Whether DeepSpeed's BF16_Optimizer runs the step: bf16 on DeepSpeed's engine
/// (FrameworkSpec::grad_accumulation deepspeed) without ZeRO, which
/// DeepSpeedEngine._configure_optimizer hands to it rather than to a ZeRO optimizer
/// (deepspeed/runtime/engine.py and bf16_optimizer.py at microsoft/DeepSpeed v0.7.0). It is a
/// ZeRO-1 of its own: the bf16 weights whole, their param.grad (the PipelineEngine clears them
/// before each backward, so one micro-batch's are held), fp32 gradients of every weight
/// (fp32_groups_gradients_flat) accumulated after each micro-batch's backward
/// (update_hp_grads), all-reduced in the communication dtype (PipelineEngine._bf16_reduce_grads),
/// the fp32 master weights and the optimizer's state on this rank's 1/d partition (the update
/// runs on it; the gradients' norm, clipping and zeroing on all of them), and the bf16
/// partitions all-gathered after the step (update_lp_params). The tied embedding's gradient is
/// all-reduced in fp32 (_exec_reduce_tied_grads).
inline bool bf16_optimizer(const ExperimentSpec& e) {
    return e.framework.grad_accumulation == GradAccumulation::deepspeed &&
           e.training.dtype == hardware::Dtype::bf16 && e.parallel.zero == 0;
}

/// Whether Transformer Engine's per-tensor FP8 casts write a transposed copy beside each
/// tensor: where the GPU's FP8 GEMMs take only the TN layout (Hopper, AMD), not on Blackwell,
/// whose FP8 GEMMs take any layout (GpuSpec::fp8_any_layout; fp8.h has the source). The layers'
/// casts, the weights' kept copies and their per-step cast follow it.
inline bool fp8_casts_transpose(const ExperimentSpec& e) {
    return !e.cluster.node.gpu.fp8_any_layout;
}

} // namespace clustersim::strategies::parallel::detail
