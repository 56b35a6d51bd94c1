#pragma once
/// \file
/// What a GEMM's variant (GemmVariant: fp8 fast accumulation, accumulation into fp32) costs
/// against the plain multiply of the same shape: measured side by side by `calibrate run`, set
/// beside the fit (which uses plain GEMMs only) as numbers for the compute model's FP8 and
/// gradient-accumulation costs, which have no such measurement yet.

#include "calibrate/measurements.h"

#include <vector>

namespace clustersim::calibrate {

/// One variant of one input type: its time over its plain twin's (same m, n, k, dtype, layout
/// and library), over the shapes measured both ways.
struct GemmVariantRatio {
    GemmVariant variant = GemmVariant::plain;
    hardware::Dtype dtype = hardware::Dtype::bf16;
    int shapes = 0;     ///< pairs found
    double median = 0;  ///< of variant time / plain time
    double lowest = 0;  ///< the smallest ratio
    double highest = 0; ///< the largest ratio
};

/// The ratios, one per (variant, dtype) with at least one pair, in the enums' order; a variant
/// without a plain twin is left out.
std::vector<GemmVariantRatio> gemm_variant_ratios(const std::vector<GemmMeasurement>& gemms);

} // namespace clustersim::calibrate
