#include "strategies/models/memory_formulas.h"

#include "base/error.h"

#include <string>

namespace clustersim::strategies::models {

double korthikanti_activation_bytes(double s, double b, double h, double a, double t,
                                    bool sequence_parallel, Recompute recompute, bool flash) {
    const double sbh = s * b * h;
    const double attention = flash ? 0.0 : 5.0 * a * s / h;
    switch (recompute) {
    case Recompute::full:
        return 2.0 * sbh;
    case Recompute::selective:
        return sequence_parallel ? 34.0 * sbh / t : sbh * (10.0 + 24.0 / t);
    case Recompute::none:
        break;
    }
    return sequence_parallel ? sbh / t * (34.0 + attention)
                             : sbh * (10.0 + 24.0 / t + attention / t);
}

double context_parallel_activation_bytes(double s, double b, double h, double a, double t,
                                         bool sequence_parallel, Recompute recompute, int cp) {
    return korthikanti_activation_bytes(s / cp, b, h, a, t, sequence_parallel, recompute, true);
}

std::int64_t adam8bit_state_bytes(std::int64_t parameters) {
    constexpr std::int64_t kBlock = 256; // bitsandbytes Optimizer8bit.init_state
    const std::int64_t blocks = (parameters + kBlock - 1) / kBlock;
    return 2 * parameters + 2 * 4 * blocks;
}

ModelStateBytes model_state_bytes(std::int64_t parameters, hardware::Dtype dtype,
                                  Optimizer optimizer, int zero_stage, int dp, bool fp32_main_grads,
                                  bool master_weights) {
    if (zero_stage < 0 || zero_stage > 3)
        throw InputError("ZeRO stage must be 0, 1, 2 or 3, got " + std::to_string(zero_stage));
    if (dp < 1)
        throw InputError("data-parallel size must be at least 1, got " + std::to_string(dp));
    const bool mixed = hardware::bytes_per_element(dtype) < 4;
    const std::int64_t weight_bytes = hardware::bytes_per_element(dtype);
    // Pure 16-bit training keeps everything in the weights' dtype: no master copy, 16-bit
    // gradients, Adam's moments in the parameters' dtype.
    const bool pure = mixed && !master_weights;
    // Megatron accumulates fp32 gradients without ZeRO, and so does its distributed optimizer
    // (ZeRO 1) where the main gradients are fp32; DeepSpeed's ZeRO keeps 16-bit ones.
    const bool fp32_grads = !pure && (zero_stage == 0 || (zero_stage == 1 && fp32_main_grads));
    const std::int64_t grad_bytes = mixed && !fp32_grads ? weight_bytes : 4;
    const std::int64_t master = mixed && !pure ? 4 : 0;
    const std::int64_t shard = (parameters + dp - 1) / dp;
    const std::int64_t held = zero_stage >= 1 ? shard : parameters;
    // Adam's m and v: fp32, or the parameters' dtype in pure 16-bit training; 8-bit Adam's
    // are counted apart.
    const std::int64_t moments = optimizer == Optimizer::adam ? (pure ? 2 * weight_bytes : 8) : 0;
    ModelStateBytes m;
    m.weights = weight_bytes * (zero_stage >= 3 ? shard : parameters);
    m.gradients = grad_bytes * (zero_stage >= 2 ? shard : parameters);
    m.optimizer = (master + moments) * held +
                  (optimizer == Optimizer::adam8bit ? adam8bit_state_bytes(held) : 0);
    return m;
}

ModelStateBytes lora_state_bytes(std::int64_t frozen, std::int64_t adapters, hardware::Dtype dtype,
                                 Optimizer optimizer, int zero_stage, int dp, bool fp32_main_grads,
                                 bool master_weights) {
    ModelStateBytes m = model_state_bytes(adapters, dtype, optimizer, zero_stage, dp,
                                          fp32_main_grads, master_weights);
    m.weights += frozen * hardware::bytes_per_element(dtype);
    return m;
}

} // namespace clustersim::strategies::models
