#pragma once
/// \file
/// `clustersim scale` as a planner, in numbers: per GPU count, a search of the knobs that decide
/// a training run's speed (tensor, pipeline, context and expert parallelism, ZeRO stage,
/// recompute, micro-batch, virtual stages and the global batch), the fastest configuration that
/// fits in memory, and what training a number of tokens on it takes; over the counts, the
/// cheapest one that meets a deadline or a budget. The app renders it (app/cmd_scale.cpp) and
/// the Python module returns it; nothing here prints.
///
/// The search is exact under one monotonicity the step model has: for fixed other knobs,
/// recompute none, selective and full take increasing time (recompute only adds kernels), so
/// the first of them that fits in memory is the fastest that fits and the others are not
/// simulated. A GPU count no configuration can use is a point with its reason, not an error:
/// one impossible count in a list never hides the others.

#include "explore/evaluator.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace clustersim::explore {

/// What `plan_scale` searches at every GPU count.
struct ScaleSearch {
    std::vector<int> micro_batches{1, 2, 4, 8};
    /// The global batches (sequences) tried; empty with tokens_per_step 0: the experiment's.
    std::vector<std::int64_t> global_batches;
    /// > 0: each layout's global batch is this many tokens, rounded to the nearest whole number
    /// of micro-batch x dp sequences (at least one); takes the place of global_batches.
    double tokens_per_step = 0;
    /// ZeRO stages tried (3 is FSDP): the data-parallel sharding of the optimizer state (1),
    /// gradients (2) and parameters (3).
    std::vector<int> zero_stages{0, 1, 3};
    /// Context-parallel sizes tried: powers of two up to this, each rank keeping at least
    /// `min_cp_tokens` tokens of the sequence (seq / cp); 1: no context parallelism.
    int max_cp = 8;
    int min_cp_tokens = 1024;
    /// Mixture-of-experts models: expert-parallel sizes tried are the divisors of num_experts
    /// up to this (dense models: 1).
    int max_ep = 64;
    /// Keys the search leaves as the experiment (and its --set) says: "parallel.tp" fixes tp,
    /// "parallel.recompute" the recompute policy, and so on.
    std::vector<std::string> fixed_keys;
};

struct ScaleRequest {
    std::vector<int> gpus; ///< the GPU counts, in the order given
    double tokens = 0;     ///< tokens to train (> 0)
    ScaleSearch search;
    EvalOptions evaluation; ///< `gpus` and `derive_dp` are set per count
    int jobs = 1;
    /// Of wall-clock time, the share that trains (1: no failures and no restarts); the time to
    /// train is tokens / (tokens/s x goodput).
    double goodput = 1;
    double price_per_gpu_hour = 0; ///< 0: no cost
    double target_s = 0;           ///< > 0: the time to train must be at most this
    double budget = 0;             ///< > 0: the cost must be at most this (needs a price)
};

/// Why a GPU count has no configuration.
enum class ScaleVerdict {
    found,      ///< best is set
    none_valid, ///< no configuration can use the count (reason: the first one's)
    none_fits,  ///< every valid configuration runs out of memory
};

/// The knobs of a configuration, as numbers.
struct ScaleLayout {
    int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, zero = 0, micro_batch = 1, virtual_stages = 1;
    std::int64_t global_batch = 0;
    strategies::parallel::PipelineSchedule schedule{};
    strategies::parallel::RecomputePolicy recompute{};
};

struct ScalePoint {
    int gpus = 0;
    std::size_t tried = 0;     ///< configurations of the grid
    std::size_t valid = 0;     ///< of them, those that can run
    std::size_t simulated = 0; ///< of them, those simulated (the others: a lighter recompute fit)
    std::size_t fit = 0;       ///< of those simulated, those that fit in memory
    ScaleVerdict verdict = ScaleVerdict::none_valid;
    std::string reason; ///< none_valid: why the first configuration cannot run
    Settings settings;  ///< found: the best configuration's overrides
    ScaleLayout layout;
    Outcome outcome;          ///< found: the winner as the sweep evaluates it (its step in .result)
    double efficiency = 0;    ///< tokens/s per GPU over that of the first count found
    double train_s = 0;       ///< tokens / (tokens/s x goodput)
    double cost = 0;          ///< train_s / 3600 x gpus x price (0 without a price)
    bool meets_target = true; ///< within target_s and budget (true when neither is set)
};

struct ScalePlan {
    double parameters = 0;
    double tokens = 0;
    std::vector<ScalePoint> points; ///< in the order of ScaleRequest::gpus
    /// With a target or a budget: the point that meets them at the least cost, GPU-hours x
    /// price (the fewest GPU-hours without a price; the fewer GPUs on a tie); nullopt when none
    /// does, or with neither.
    std::optional<std::size_t> pick;
};

/// Searches every GPU count of `request` on the experiment of `variants` (with its fixed
/// overrides). Throws InputError only for a request that cannot be planned (an empty list of
/// counts, a goodput outside (0, 1], a budget without a price).
ScalePlan plan_scale(const ExperimentVariants& variants, const ScaleRequest& request);

/// The configurations tried at `gpus` GPUs (ScaleSearch over the experiment `base`), grouped:
/// each inner list holds one configuration's recompute policies, lightest first.
std::vector<std::vector<Settings>> scale_grid(const ExperimentSpec& base, const ScaleSearch& search,
                                              int gpus);

} // namespace clustersim::explore
