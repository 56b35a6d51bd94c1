#pragma once
/// \file
/// A bounded, derivative-free, deterministic minimiser for the fits of calibrate/fit.h: the
/// models are piecewise (NCCL's protocol and algorithm choice, the pipeline's critical path),
/// so gradients are unreliable and Nelder-Mead's simplex is the tool.
///
/// Parameters live in a box; the simplex moves in normalised coordinates u in [0, 1]^n
/// (log-spaced for parameters spanning orders of magnitude) and every trial point is projected
/// onto the box, so the objective is never evaluated outside it. After convergence the search
/// restarts from the best point with a fresh simplex (Nelder-Mead can stall on a ridge), until
/// a restart no longer improves.

#include <functional>
#include <vector>

namespace clustersim::calibrate {

/// The range of one parameter.
struct ParameterBounds {
    double lo = 0;
    double hi = 1;
    bool log_scale = false; ///< spaced logarithmically (lo > 0)
};

struct MinimizeOptions {
    int max_evaluations = 3000; ///< over all restarts
    int max_restarts = 4;
    double initial_step = 0.1; ///< simplex edge, in normalised units
    double tolerance = 1e-10;  ///< stop when the simplex's values agree to this (relative)
};

struct MinimizeResult {
    std::vector<double> x; ///< the best point found (inside the bounds)
    double value = 0;
    int evaluations = 0;
};

/// Minimises `f` over the box from `x0` (clamped into it).
MinimizeResult minimize_bounded(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, const std::vector<ParameterBounds>& bounds,
                                const MinimizeOptions& options = {});

/// Normalised coordinate of `x` in `b` (0 at lo, 1 at hi), and back.
double to_unit(double x, const ParameterBounds& b);
double from_unit(double u, const ParameterBounds& b);

} // namespace clustersim::calibrate
