#pragma once
/// \file
/// What traced kernels teach the step model (`clustersim calibrate fit-kernels`): each kernel
/// class's cost is fitted on one set of shapes and validated on shapes left out (split with
/// split_measurements_by_shape, so no held-out shape was seen by the fit).
///
/// Prediction of one kernel group (KernelMeasurement), per call, from the kernel cost model
/// (hardware/compute_model.h) of the hardware file:
/// - gemm: gemm_seconds(m, n, k, dtype) with m, n, k from the op's recorded shapes
///   (kernel_gemm_shape);
/// - attention: SDPA ops as fused_attention_seconds(batch x heads, seq, head dim, causal,
///   backward), causality read back from the recorded FLOPs; aten::bmm / baddbmm as a batched
///   gemm_seconds;
/// - elementwise: memory_bound_seconds(2 x bytes): the profiler records the inputs only, and
///   the output is taken to be as large as them (an add reads two and writes one: 1.5x; a
///   layer norm reads one and writes one: 2x; the fitted factor absorbs the mean);
/// - collective, copy, other: not predicted here (collectives are validated from nccl-tests
///   sweeps; copies and unattributed kernels have no model of their own); counted and said.
///
/// The fit: per class one factor, measured / predicted of the fit set's total time (a
/// time-weighted ratio: the share of the step each class takes is what matters), written with
/// where it came from. The step model's framework efficiencies follow from it
/// (gemm_efficiency = predicted / measured of gemm + attention, memory_efficiency of
/// elementwise), and validate_steps predicts the held-out traces' whole steps with them.

#include "calibrate/measurements.h"
#include "strategies/parallel/platform.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace clustersim::calibrate {

/// A GEMM's shape from a kernel group's op and recorded shapes (C[m,n] = A[m,k] B[k,n],
/// `batch` of them); nullopt when the op is not a product or its shapes are incomplete.
struct KernelGemmShape {
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
};
std::optional<KernelGemmShape> kernel_gemm_shape(const KernelMeasurement& k);

/// Predicted seconds of one call; nullopt when the class is not predicted or the group lacks
/// what its prediction needs (shapes, dtype, bytes).
std::optional<double> predict_kernel_seconds(const strategies::parallel::Platform& platform,
                                             const KernelMeasurement& k);

/// One class's factor.
struct KernelClassFactor {
    KernelClass kernel_class = KernelClass::gemm;
    int groups = 0;         ///< kernel groups of the fit set it was fitted on
    double measured_s = 0;  ///< their total measured time
    double predicted_s = 0; ///< ... and the model's
    double factor = 1;      ///< measured / predicted (1 when not fitted)
    bool fitted = false;
    std::string origin; ///< "fit.json: 42 groups, 12.3 ms measured"
};

struct KernelFit {
    std::array<KernelClassFactor, kKernelClassCount> classes{};
    std::vector<std::string> notes; ///< what was not predicted and why
    /// The framework efficiencies the factors give (the base's when a class was not fitted).
    double gemm_efficiency = 1;
    double memory_efficiency = 1;
};

/// Fits the class factors on `fit` (its kernels). Throws InputError when it has no kernels
/// that can be predicted.
KernelFit fit_kernel_classes(const strategies::parallel::Platform& platform,
                             const MeasurementFile& fit, const std::string& name);

/// One class's (or the step's) validation on held-out traces.
struct KernelClassCheck {
    std::string name;       ///< the class, or "step"
    int groups = 0;         ///< kernel groups (steps for "step")
    double measured_s = 0;  ///< total measured time
    double predicted_s = 0; ///< total predicted with the fitted factor
    double unfitted_s = 0;  ///< ... with factor 1
    double error() const { return measured_s > 0 ? predicted_s / measured_s - 1 : 0; }
    double error_unfitted() const { return measured_s > 0 ? unfitted_s / measured_s - 1 : 0; }
};

struct KernelValidation {
    std::vector<KernelClassCheck> classes; ///< predicted classes with held-out groups
    std::vector<KernelClassCheck> steps;   ///< per held-out training step (from a trace)
    std::vector<std::string> notes;
};

/// Validates the factors on `holdout`: each predicted class's total time, and each training
/// step (StepMeasurement) by predict_step on `platform` with the fitted framework
/// efficiencies (and, unfitted, with the platform's own).
KernelValidation validate_kernel_classes(const strategies::parallel::Platform& platform,
                                         const KernelFit& fit, const MeasurementFile& holdout,
                                         const std::string& name);

} // namespace clustersim::calibrate
