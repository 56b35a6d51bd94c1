#pragma once
/// \file
/// The cost of scale from GPUs that are not equally fast: a synchronous step waits for its
/// slowest GPU. GPUs of one SKU differ in the clock they sustain under their power limit
/// (manufacturing variation met by power management); a step of N GPUs, which synchronise at
/// least once per step (the data-parallel gradient reduction) and within it at every
/// tensor- and pipeline-parallel exchange, runs its compute at the pace of the slowest of the
/// N. With per-GPU compute times spread normally with relative standard deviation s around
/// the median GPU's, the slowest of N is slower by s times the expected maximum of N standard
/// normals (about s sqrt(2 ln N) for large N): 0 for one GPU, growing with the count.
///
/// The spread s is FrameworkSpec::gpu_speed_spread (the hardware file's
/// `framework.gpu_speed_spread`); its source is written beside its value in each preset. The
/// TPU presets leave it 0: the measured spread comes from GPUs boosting under a power limit
/// (Sinha et al., SC'22), while a TPU runs at its one listed clock; no TPU measurement of a
/// chip-to-chip spread was at hand.
/// What this does not model: network congestion between jobs' flows and the host's jitter at
/// each synchronisation, which add to the spread on shared clusters.

#include "strategies/parallel/framework_spec.h"

namespace clustersim::strategies::parallel {

/// E[max of n independent standard normals]: 0 for n = 1, 1/sqrt(pi) for 2, 1.5/sqrt(pi) for 3,
/// 3.2414 for 1,000. n >= 1. Exact to 1e-9 (numerical integration of 1 - Phi^n and Phi^n over
/// the two half lines, where Phi is the standard normal's distribution function).
double expected_max_standard_normal(int n);

/// The q-quantile of the max of n independent standard normals: Phi^-1(q^(1/n)). 0 < q < 1.
double max_standard_normal_quantile(int n, double q);

/// How much slower the slowest of `gpus` GPUs computes than the median one, as a fraction, with
/// per-GPU spread `spread` (a relative standard deviation): spread x E[max of gpus normals].
/// 0 where spread is 0 or gpus is 1.
double straggler_slowdown(double spread, int gpus);

/// The framework as the slowest of `gpus` GPUs runs it: its GEMM and attention rate
/// (gemm_efficiency) divided by 1 + straggler_slowdown(fw.gpu_speed_spread, gpus).
FrameworkSpec at_slowest_gpu(FrameworkSpec fw, int gpus);

/// The slowest GPU of a step of N and the band it implies: over the allocations of N GPUs a
/// job may get from the cluster, the slowest GPU's slowdown at the 5th and the 95th percentile
/// of the slowest of N, and the step re-simulated at each (StepOptions::straggler_band).
struct StragglerBand {
    double spread = 0;       ///< the per-GPU relative standard deviation used
    double slowdown = 0;     ///< the expected slowest GPU's, folded into the step time
    double slowdown_p05 = 0; ///< the slowest GPU's at the 5th percentile of the max of N
    double slowdown_p95 = 0; ///< at the 95th
    /// The step with the slowest GPU at those percentiles; 0 where not simulated.
    double step_time_p05_s = 0;
    double step_time_p95_s = 0;

    bool operator==(const StragglerBand&) const = default;
};

/// The slowdowns of the slowest of `gpus` GPUs with per-GPU spread `spread` (expected, 5th and
/// 95th percentile); the step times are left 0. All 0 where spread is 0 or gpus is 1.
StragglerBand straggler_slowdowns(double spread, int gpus);

/// `fw` as at_slowest_gpu would give it if the slowest GPU were `slowdown` slower than the
/// median instead of the expected: its gemm_efficiency scaled so that at_slowest_gpu(result,
/// gpus) computes at 1 / (1 + slowdown) of the median GPU's rate.
FrameworkSpec with_slowest_gpu_at(FrameworkSpec fw, int gpus, double slowdown);

} // namespace clustersim::strategies::parallel
