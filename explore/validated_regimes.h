#pragma once
/// \file
/// How far a planned step can be trusted where no calibrated band applies: the error the step
/// model showed against measured runs, per regime, as docs/validation.md reports it (`clustersim
/// report validation` writes that file; tests/explore/test_validated_regimes.cpp fails when a
/// number here no longer appears there, so this table cannot drift from the study). A plan
/// quotes the regime nearest to its own GPU and GPU count, and says when it lies outside.

#include <string>
#include <vector>

namespace clustersim::explore {

/// One validated regime of the training-step model.
struct ValidatedRegime {
    std::string name; ///< what was measured, e.g. "Megatron-LM on 32-3072 A100s"
    std::string gpu;  ///< the GPU family ("A100", "H100"), matched in the GPU's name
    int min_gpus = 0, max_gpus = 0;
    int rows = 0;              ///< measured runs
    double mean_abs_error = 0; ///< of the step time (a share: 0.088 is 8.8%)
    double max_abs_error = 0;
    std::string section; ///< the section of docs/validation.md
};

/// The regimes of the step time, in the order docs/validation.md gives them.
const std::vector<ValidatedRegime>& validated_step_regimes();
/// The regime of the predicted peak memory per GPU (its headroom's trust).
const ValidatedRegime& validated_memory_regime();

/// The step regime nearest to `gpus` GPUs named `gpu_name`: of those of the same GPU family
/// (all when none is), the one whose GPU-count range is nearest in log2 distance.
struct NearestRegime {
    const ValidatedRegime* regime = nullptr;
    bool same_gpu = false;     ///< the GPU family matches
    bool inside_range = false; ///< the count lies in the regime's range
};
NearestRegime nearest_step_regime(const std::string& gpu_name, int gpus);

} // namespace clustersim::explore
