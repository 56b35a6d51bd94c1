#include "strategies/models/fp8.h"

namespace clustersim::strategies::models {

bool runs_in_fp8(std::string_view name) {
    for (std::string_view bf16 :
         {"lm_head", "moe.router", "attention.scores", "attention.context"}) {
        if (name.starts_with(bf16))
            return false;
    }
    return true;
}

bool fp8_cast_fused(std::string_view name) {
    for (std::string_view fused :
         {"attention.qkv", "attention.q_down", "attention.kv_down", "mlp.fc1", "mlp.fc2",
          "moe.shared.fc1", "moe.shared.fc2", "moe.experts.fc2", "mlp.fc1.dgrad",
          "moe.shared.fc1.dgrad", "moe.experts.fc1.dgrad"}) {
        if (name == fused)
            return true;
    }
    return false;
}

std::int64_t fp8_cast_bytes(std::string_view name, std::int64_t m, std::int64_t k,
                            std::int64_t batch) {
    if (!runs_in_fp8(name) || name.ends_with(".wgrad") || fp8_cast_fused(name))
        return 0;
    return 4 * m * k * batch;
}

} // namespace clustersim::strategies::models
