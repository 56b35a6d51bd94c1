#include "strategies/models/fp8.h"

namespace clustersim::strategies::models {

std::string_view to_string(Fp8Recipe recipe) {
    switch (recipe) {
    case Fp8Recipe::delayed:
        return "delayed";
    case Fp8Recipe::tensorwise:
        return "tensorwise";
    case Fp8Recipe::mxfp8:
        return "mxfp8";
    case Fp8Recipe::nvfp4:
        return "nvfp4";
    case Fp8Recipe::current:
        return "current";
    }
    return "?";
}

bool runs_in_fp8(std::string_view name) {
    for (std::string_view bf16 :
         {"lm_head", "moe.router", "attention.scores", "attention.context", "lora."}) {
        if (name.starts_with(bf16))
            return false;
    }
    return true;
}

bool fp8_cast_fused(std::string_view name) {
    for (std::string_view fused :
         {"attention.qkv", "attention.q_down", "attention.q_proj", "attention.kv_down", "mlp.fc1",
          "mlp.fc2", "moe.shared.fc1", "moe.shared.fc2", "moe.experts.fc2", "mlp.fc1.dgrad",
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

namespace {
/// x * num / den bytes, rounded up (the scales' fractions of a byte per element).
constexpr std::int64_t fraction(std::int64_t x, std::int64_t num, std::int64_t den) {
    return (x * num + den - 1) / den;
}
/// Bytes per element written by a block-scaled quantization into both copies, as a fraction
/// of 32: MXFP8 2 x (1 + 1/32), NVFP4 2 x (1/2 + 1/16).
constexpr std::int64_t kMxfp8BothCopies32 = 66;
constexpr std::int64_t kNvfp4BothCopies32 = 36;
} // namespace

std::int64_t weight_copy_bytes(std::int64_t parameters, Fp8Recipe recipe, bool transposes) {
    switch (recipe) {
    case Fp8Recipe::delayed:
    case Fp8Recipe::current:
        return transposes ? parameters * kFp8WeightCopyBytes : parameters;
    case Fp8Recipe::tensorwise:
        return 0;
    case Fp8Recipe::mxfp8:
        return fraction(parameters, kMxfp8BothCopies32, 32);
    case Fp8Recipe::nvfp4: // 16 x 16 blocks: one E4M3 scale per 256 elements of each copy
        return fraction(parameters, 129, 128);
    }
    return 0;
}

std::int64_t weight_cast_bytes(std::int64_t parameters, Fp8Recipe recipe, bool transposes) {
    // Read the bf16 weight, write the copies kept.
    const std::int64_t cast = 2 * parameters + weight_copy_bytes(parameters, recipe, transposes);
    switch (recipe) {
    case Fp8Recipe::delayed:
    case Fp8Recipe::mxfp8:
        return cast;
    case Fp8Recipe::current: // the amax pass, then the cast
    case Fp8Recipe::nvfp4:
        return 2 * parameters + cast;
    case Fp8Recipe::tensorwise:
        return 0;
    }
    return 0;
}

std::int64_t saved_input_bytes(std::int64_t elements, Fp8Recipe recipe) {
    switch (recipe) {
    case Fp8Recipe::delayed:
    case Fp8Recipe::tensorwise:
    case Fp8Recipe::current:
        return elements;
    case Fp8Recipe::mxfp8:
        return fraction(elements, kMxfp8BothCopies32, 64);
    case Fp8Recipe::nvfp4:
        return fraction(elements, kNvfp4BothCopies32, 64);
    }
    return elements;
}

bool casts_launched_apart(Fp8Recipe recipe) {
    return recipe == Fp8Recipe::tensorwise || recipe == Fp8Recipe::nvfp4 ||
           recipe == Fp8Recipe::current;
}

Fp8CastBytes fp8_gemm_cast_bytes(std::string_view name, std::int64_t m, std::int64_t n,
                                 std::int64_t k, std::int64_t batch, Fp8Recipe recipe,
                                 std::int64_t elem, bool transposes) {
    Fp8CastBytes b;
    const std::int64_t input = m * k * batch;
    if (recipe == Fp8Recipe::delayed) {
        b.cast = fp8_cast_bytes(name, m, k, batch);
        if (!transposes && b.cast > 0)
            b.cast -= input;
        return b;
    }
    if (recipe == Fp8Recipe::current) {
        if (name.ends_with(".wgrad"))
            return b;
        if (!fp8_cast_fused(name)) // else the kernel before takes the amax
            b.amax = input * elem;
        b.cast = input * (elem + (transposes ? 2 : 1));
        return b;
    }
    if (recipe == Fp8Recipe::mxfp8 || recipe == Fp8Recipe::nvfp4) {
        // The weight-gradient GEMM reads the column-wise copies the other two casts wrote.
        const bool nvfp4 = recipe == Fp8Recipe::nvfp4;
        if (name.ends_with(".wgrad") || (!nvfp4 && fp8_cast_fused(name)))
            return b;
        if (nvfp4)
            b.amax = input * elem;
        b.cast =
            input * elem + fraction(input, nvfp4 ? kNvfp4BothCopies32 : kMxfp8BothCopies32, 32);
        return b;
    }
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
