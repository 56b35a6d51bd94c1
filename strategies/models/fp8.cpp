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

Fp8CastBytes fp8_gemm_cast_bytes(std::string_view name, std::int64_t m, std::int64_t n,
                                 std::int64_t k, std::int64_t batch, Fp8Recipe recipe,
                                 std::int64_t elem) {
    Fp8CastBytes b;
    if (!runs_in_fp8(name))
        return b;
    if (recipe == Fp8Recipe::delayed) {
        b.cast = fp8_cast_bytes(name, m, k, batch);
        return b;
    }
    const std::int64_t input = m * k * batch;
    const std::int64_t weight = k * n * batch;
    if (name.ends_with(".wgrad")) { // A = X^T (m x k), B = dY (k x n), both FP8 already
        b.copies = 2 * (input + weight);
    } else if (name.ends_with(".dgrad")) { // A = dY cast here, B = W^T copied column-major
        b.amax = input * elem;
        b.cast = input * (elem + 1);
        b.copies = 2 * weight;
    } else { // forward (or its recompute): the input and the weight cast
        b.amax = (input + weight) * elem;
        b.cast = (input + weight) * (elem + 1);
    }
    return b;
}

} // namespace clustersim::strategies::models
