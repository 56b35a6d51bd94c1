#pragma once
/// \file
/// Numeric data types of GPU work: element sizes and names as users write them. fp8 and fp4
/// are GEMM operand types: a training dtype of fp8 or fp4 (`is_quantized`) runs the linear
/// layers' GEMMs on quantized copies of bf16 tensors (strategies/models/fp8.h); everything
/// else, and every collective, stays in bf16.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace clustersim::hardware {

/// fp4 is E2M1 (OCP MX and NVIDIA's NVFP4 element type), two to a byte.
enum class Dtype : std::uint8_t { fp64, fp32, tf32, fp16, bf16, fp8, fp4 };
inline constexpr std::size_t kDtypeCount = 7;
inline constexpr std::array<Dtype, kDtypeCount> kAllDtypes{
    Dtype::fp64, Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::fp4};

/// Bytes per element in memory (tf32 is stored as fp32). fp4's elements are half a byte: this
/// gives the byte that holds two, so whatever sizes fp4 data uses bits_per_element (the GEMM
/// cost model does); no tensor is kept, sent or reduced in fp4 outside a GEMM's operands.
constexpr std::int64_t bytes_per_element(Dtype d) {
    switch (d) {
    case Dtype::fp64:
        return 8;
    case Dtype::fp32:
    case Dtype::tf32:
        return 4;
    case Dtype::fp16:
    case Dtype::bf16:
        return 2;
    case Dtype::fp8:
    case Dtype::fp4:
        return 1;
    }
    return 0;
}

/// Bits per element in memory: 4 for fp4, else 8 x bytes_per_element.
constexpr std::int64_t bits_per_element(Dtype d) {
    return d == Dtype::fp4 ? 4 : 8 * bytes_per_element(d);
}

/// A training dtype whose GEMMs run on quantized copies (fp8, fp4): the activations, weights,
/// gradients and collectives are bf16 (strategies/models/fp8.h).
constexpr bool is_quantized(Dtype d) {
    return d == Dtype::fp8 || d == Dtype::fp4;
}

/// The dtype a training dtype keeps and gathers its weights in: bf16 under FP8 and FP4
/// training (the GEMMs' quantized copies are made from them), else the training dtype.
constexpr Dtype weight_dtype(Dtype training) {
    return is_quantized(training) ? Dtype::bf16 : training;
}

constexpr std::string_view to_string(Dtype d) {
    switch (d) {
    case Dtype::fp64:
        return "fp64";
    case Dtype::fp32:
        return "fp32";
    case Dtype::tf32:
        return "tf32";
    case Dtype::fp16:
        return "fp16";
    case Dtype::bf16:
        return "bf16";
    case Dtype::fp8:
        return "fp8";
    case Dtype::fp4:
        return "fp4";
    }
    return "?";
}

/// The nccl-tests name of an element type ("float", "half", "bfloat16", "double").
constexpr std::string_view nccl_type_name(Dtype d) {
    switch (d) {
    case Dtype::fp64:
        return "double";
    case Dtype::fp32:
    case Dtype::tf32:
        return "float";
    case Dtype::fp16:
        return "half";
    case Dtype::bf16:
        return "bfloat16";
    case Dtype::fp8:
        return "fp8_e4m3";
    case Dtype::fp4:
        return "fp4_e2m1";
    }
    return "?";
}

/// Parses "fp32", "float32", "float", "fp16", "half", "bf16", "bfloat16", "tf32", "fp8",
/// "fp4" ("e2m1"), "fp64", "double"; nullopt when unknown.
constexpr std::optional<Dtype> parse_dtype(std::string_view s) {
    if (s == "fp64" || s == "float64" || s == "double")
        return Dtype::fp64;
    if (s == "fp32" || s == "float32" || s == "float")
        return Dtype::fp32;
    if (s == "tf32")
        return Dtype::tf32;
    if (s == "fp16" || s == "float16" || s == "half")
        return Dtype::fp16;
    if (s == "bf16" || s == "bfloat16")
        return Dtype::bf16;
    if (s == "fp8" || s == "fp8_e4m3" || s == "e4m3")
        return Dtype::fp8;
    if (s == "fp4" || s == "fp4_e2m1" || s == "e2m1")
        return Dtype::fp4;
    return std::nullopt;
}

} // namespace clustersim::hardware
