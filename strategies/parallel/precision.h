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

/// The dtype the weights are kept and gathered in: bf16 under FP8 and FP4 training (fp8.h).
inline hardware::Dtype weight_dtype(hardware::Dtype d) {
    return hardware::is_quantized(d) ? hardware::Dtype::bf16 : d;
}

} // namespace clustersim::strategies::parallel::detail
