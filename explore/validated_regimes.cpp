#include "explore/validated_regimes.h"

#include <cmath>
#include <limits>

namespace clustersim::explore {

const std::vector<ValidatedRegime>& validated_step_regimes() {
    // docs/validation.md, the summary line or row of each section (see the file head).
    static const std::vector<ValidatedRegime> regimes{
        {"Megatron-DeepSpeed on one node of 8x A100 (GPT 12-24 layers, every split of 2-8 GPUs)",
         "A100", 2, 8, 1440, 0.0693, 0.287, "Training steps"},
        {"Megatron-LM on 32-3072 A100s (Narayanan et al. 2021, Table 1; per-GPU TFLOP/s)", "A100",
         32, 3072, 10, 0.049, 0.135, "Training steps: published Megatron-LM runs"},
        {"NeMo, Megatron-Bridge and torchtitan on 64-1024 H100s (published runs)", "H100", 64, 1024,
         19, 0.067, 0.152, "Recent large runs"},
    };
    return regimes;
}

const ValidatedRegime& validated_memory_regime() {
    // docs/validation.md's section "Memory": the 32 rows it predicts, the 20 torchtitan rows
    // (8-512 H100s, 32-64 H200s, on the reserved peak their logs print), torchtune's 7 on
    // one A100 (the active peak) and Hugging Face's 5 on one V100 (nvidia-smi's total).
    static const ValidatedRegime regime{
        "torchtitan's peak reserved memory on 8-512 H100s (and torchtune's active peak on one "
        "A100, Hugging Face's nvidia-smi total on one V100)",
        "H100",
        8,
        512,
        32,
        0.076,
        0.255,
        "Memory"};
    return regime;
}

NearestRegime nearest_step_regime(const std::string& gpu_name, int gpus) {
    const auto& all = validated_step_regimes();
    bool any_same = false;
    for (const auto& r : all)
        any_same = any_same || gpu_name.find(r.gpu) != std::string::npos;
    NearestRegime best;
    double best_distance = std::numeric_limits<double>::infinity();
    const double x = std::log2(static_cast<double>(gpus));
    for (const auto& r : all) {
        const bool same = gpu_name.find(r.gpu) != std::string::npos;
        if (any_same && !same)
            continue;
        const double lo = std::log2(static_cast<double>(r.min_gpus));
        const double hi = std::log2(static_cast<double>(r.max_gpus));
        const double d = x < lo ? lo - x : x > hi ? x - hi : 0.0;
        if (d < best_distance) {
            best_distance = d;
            best = {&r, same, d == 0.0};
        }
    }
    return best;
}

} // namespace clustersim::explore
