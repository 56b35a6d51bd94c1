#pragma once
/// \file
/// The clock a power-limited GPU sustains at another power limit: the law behind an operator's
/// power cap (GpuSpec::sustained_clock) and behind the presets that carry a clock measured at
/// one limit to the same die at another (dgx-b200 and gb300-nvl72; tests/hardware/
/// test_power_clock.cpp holds the presets to it).
///
/// A dense tensor-core load draws more than the board allows at the boost clock, so the power
/// controller lowers the SM clock until the draw meets the limit. Over the upper part of the
/// DVFS range the voltage falls with the clock (P ~ f V^2, V ~ f: P ~ f^3), but these loads
/// throttle far below it (a B300 runs random-data GEMMs at ~1,250 of its 2,032 MHz at 1,100 W),
/// to where the voltage sits at its floor: P ~ f V_min^2, the clock in proportion to the power.
/// Measured (a third-party characterisation: ademeure/QuickRunCUDA 0bb48c3,
/// b300_clean/CUBLAS_REAL_VALIDATION.md, "Comprehensive N sweep"): cuBLAS bf16 GEMMs of random
/// data, M = K = 8,192, on a B300 SXM6 capped at 1,100 W and at 600 W ran at N = 8,192, 16,384,
/// 28,672 and 32,768 1,492 / 836, 1,496 / 839, 1,487 / 831 and 1,503 / 829 TFLOP/s: 1.78-1.81x
/// for 1.83x the power (an exponent of 0.95-0.98), where the cube root would give 1.22x. The same
/// source finds the square and the Llama-shaped GEMMs (N = 28,672, 14,336) alike at the limit:
/// the clock is the power's, not the shape's.

namespace clustersim::hardware {

/// The clock sustained at `to_w` by a load that sustains `clock_mhz` at `at_w`, both the limit
/// the load runs into: clock_mhz x to_w / at_w. `clock_mhz` unchanged when a power is not
/// positive.
double power_limited_clock(double clock_mhz, double at_w, double to_w);

} // namespace clustersim::hardware
