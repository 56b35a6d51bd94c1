#pragma once
/// \file
/// The clock a power-limited GPU sustains at another power limit: the law behind an operator's
/// power cap (GpuSpec::sustained_clock) and behind the presets that carry a clock measured at
/// one limit to the same die at another (dgx-b200 and gb300-nvl72; tests/hardware/
/// test_power_clock.cpp holds the presets to it).
///
/// A dense tensor-core load draws more than the board allows at the boost clock, so the power
/// controller lowers the SM clock until the draw meets the limit: P ~ f V^2. Over the upper part
/// of the DVFS range the voltage falls with the clock (V ~ f: P ~ f^3, the clock as the cube
/// root of the power, kCubeRootExponent, the default); at the voltage floor it cannot fall
/// further (P ~ f V_min^2: the clock in proportion to the power). Where a GPU's loads throttle
/// is its own, so the exponent is the GPU's (gpu.power_clock_exponent), measured where it can
/// be. Blackwell's is: cuBLAS bf16 GEMMs of random data, M = K = 8,192, on a B300 SXM6 capped
/// at 1,100 W and at 600 W ran at 1.78-1.81x the rate for 1.83x the power (an exponent of
/// 0.95-0.98: a third-party characterisation, ademeure/QuickRunCUDA 0bb48c3,
/// b300_clean/CUBLAS_REAL_VALIDATION.md, "Comprehensive N sweep"), throttled far below the
/// boost clock (~1,250 of 2,032 MHz at 1,100 W), near the floor.

namespace clustersim::hardware {

/// f ~ P^(1/3): the voltage falling with the clock (P ~ f V^2, V ~ f).
inline constexpr double kCubeRootExponent = 1.0 / 3.0;

/// The clock sustained at `to_w` by a load that sustains `clock_mhz` at `at_w`, both the limit
/// the load runs into: clock_mhz x (to_w / at_w)^exponent. `clock_mhz` unchanged when a power
/// is not positive.
double power_limited_clock(double clock_mhz, double at_w, double to_w,
                           double exponent = kCubeRootExponent);

} // namespace clustersim::hardware
