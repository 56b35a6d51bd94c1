#pragma once
/// \file
/// The search behind `clustersim scale` (and the Python module's scale()): per GPU count, every
/// layout of the parallel knobs (tp over the divisors of the node's GPUs, pp over the divisors
/// of the layers, dp = gpus / (tp x pp), micro-batch 1/2/4/8, recompute none/selective/full,
/// and with an interleaved schedule 1F1B or 2/3/4/6/8 virtual stages) simulated, and the
/// fastest one that fits in memory kept. Efficiency is tokens/s per GPU against the smallest
/// count that found one.

#include "explore/evaluator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace clustersim::explore {

struct ScaleRequest {
    std::vector<std::int64_t> gpus; ///< the GPU counts, in the order to report them
    std::int64_t max_memory = 0;    ///< bytes per GPU; 0: the GPU's HBM
    int jobs = 1;                   ///< threads
    strategies::parallel::Fidelity fidelity = strategies::parallel::Fidelity::analytic;
};

/// One GPU count's search.
struct ScalePoint {
    int gpus = 0;
    std::size_t tried = 0, valid = 0, fit = 0; ///< layouts of the grid, runnable, in memory
    bool found = false;                        ///< a layout fits
    Settings best_settings;                    ///< the winner's knobs (when found)
    ExperimentSpec experiment;                 ///< the winner's experiment (when found)
    Outcome best;                              ///< the winner (when found)
    double efficiency = 0; ///< tokens/s per GPU against the first count that found one
};

/// The layouts tried on `gpus` GPUs, as settings of the experiment's keys.
std::vector<Settings> scale_grid(const ExperimentSpec& base, int gpus);

/// Searches every count of `request` on the experiment of `variants`. Throws InputError for a
/// count over 2^24 GPUs or one no layout can use (naming `--gpus`).
std::vector<ScalePoint> search_scale(const ExperimentVariants& variants,
                                     const ScaleRequest& request);

} // namespace clustersim::explore
