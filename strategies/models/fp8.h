#pragma once
/// \file
/// FP8 training as Transformer Engine runs it under Megatron-Core (`training.dtype: fp8`, what
/// Megatron-LM calls --fp8-format hybrid with bf16 parameters): te.Linear, LayerNormLinear,
/// LayerNormMLP and GroupedLinear run their three GEMMs (forward, data gradient, weight
/// gradient) in FP8 (E4M3 forward, E5M2 gradients: the same tensor-core rate on Hopper) under
/// fp8_autocast with the DelayedScaling recipe (transformer_engine/common/recipe/__init__.py;
/// the amax of each GEMM input is taken inside the cast kernel and kept in an amax history
/// from which the next step's scale is computed).
///
/// The FP8 GEMMs run at the GPU's fp8 peak and fp8 efficiency from its hardware file
/// (hardware/compute_model.h): dgx-h100's peak is the H100 SXM5 datasheet's dense 1,979 TFLOPS
/// (twice bf16), its efficiency 0.683 fitted on ten H100/H200 fp8 GEMM rows of
/// data/reference/gemm/matmul-throughput.csv (against 0.933 for bf16).
///
/// What stays in higher precision (Transformer Engine and Megatron-Core):
/// - attention: DotProductAttention runs in bf16 unless the recipe sets fp8_dpa (off by
///   default, recipe.DelayedScaling.fp8_dpa = False), so the softmax and its two products do;
/// - the LM head: Megatron-Core's output_layer is tensor_parallel.ColumnParallelLinear, not a
///   Transformer Engine module, so it is not under fp8_autocast; the embedding is a lookup;
/// - the MoE router: a plain torch GEMM (megatron/core/transformer/moe/router.py) in fp32 or
///   bf16;
/// - norms, activations, residuals, the loss: bf16 (fp32 inside the kernels).
///
/// The costs beyond the faster GEMMs:
/// - every FP8 GEMM's input is cast: the activation X before a forward GEMM, the output
///   gradient dY before a data-gradient GEMM; Hopper's FP8 tensor cores take only the "TN"
///   layout, so the cast writes a transposed copy too, which the weight-gradient GEMM reads
///   (tex.fp8_cast_transpose_fused): 2 bytes read + 1 + 1 written per element, as a kernel of
///   its own; except where Transformer Engine fuses it into the kernel that produces the
///   input (fp8_cast_fused): the norm before qkv and fc1 (LayerNormLinear, LayerNormMLP write
///   FP8 from the norm), the activation before fc2 and the activation's backward before fc1's
///   data gradient (LayerNormMLP's fused gelu/swiglu casts), which write the FP8 copies in
///   place of the bf16 output at no extra pass;
/// - the weights are cast once per step (cached across micro-batches: is_first_microbatch),
///   with their transposes: 4 bytes per parameter, charged to the optimizer step here;
/// - the amax history update and scale computation: one small fused kernel per step
///   (amax_and_scale_update), not charged.
///
/// Memory (Transformer Engine's rules):
/// - an FP8 copy of every FP8 GEMM's weight and its transpose (Float8Tensor data and
///   _transpose): 2 bytes per such parameter, beside the bf16 weights;
/// - the inputs the weight gradients need are saved in FP8 (1 byte per element) instead of
///   bf16: the inputs of qkv, proj, fc1 and fc2 (and the experts' fc1 and fc2);
/// - bf16 weights, fp32 main gradients, fp32 master weights and Adam's moments as in bf16
///   mixed precision.

#include <cstdint>
#include <string_view>

namespace clustersim::strategies::models {

/// How the FP8 scales are found (Megatron-Core's TransformerConfig.fp8_recipe names).
/// - delayed: Transformer Engine's DelayedScaling, as above (Megatron-Core's default).
/// - tensorwise: dynamic tensorwise scaling, each tensor's scale from its own amax in this
///   step, as torchao.float8 runs it under torchtitan (torchao commit eab345c, the torchtitan
///   benchmark page's: torchao/float8/float8_linear.py, Float8Linear.forward with
///   manual_float8_matmul_with_args_in_float8; float8_utils.py tensor_to_amax,
///   max(abs(x)); float8_ops.py preprocess_addmm). Per FP8 GEMM input, activation or
///   output gradient: an amax pass reading it (e bytes per element) and the cast (e read, 1
///   written), which cannot be fused into the kernel that produces it (the scale needs the
///   whole tensor's amax first), and for the weight gradient's GEMM a column-major copy of
///   the saved FP8 input and of the FP8 output gradient (torch._scaled_mm takes A row-major
///   and B column-major: preprocess_addmm's contiguous() and t().contiguous().t(), 1 read + 1
///   written): 2e + 3 bytes per element. Every weight is cast in every forward (its amax, the
///   cast: 2e + 1 bytes per parameter; Float8Linear.cast_weight_to_float8_t, nothing cached
///   across micro-batches), and the data gradient's GEMM takes a column-major copy of it (2
///   bytes per parameter); nothing is cast in the optimizer step. torchtitan's float8
///   defaults (config_manager.py at 9dec370): bf16 FSDP all-gathers
///   (enable_fsdp_float8_all_gather off), so the all-gathered weights are bf16 as without
///   FP8. Not modelled: the tensor-parallel amax all-reduces (a few small ones per layer).
enum class Fp8Recipe : std::uint8_t { delayed, tensorwise };

/// Whether the GEMM named `name` (a layer_work Op name) runs in FP8 under fp8_autocast: the
/// linear layers, not the LM head, the router or the unfused attention products.
bool runs_in_fp8(std::string_view name);

/// Whether Transformer Engine fuses the FP8 cast of GEMM `name`'s input into the kernel
/// that produces it (the norm, the activation or its backward): no pass of its own.
bool fp8_cast_fused(std::string_view name);

/// HBM bytes of the cast (with transpose) feeding FP8 GEMM `name` of shape
/// M x N = (M x K)(K x N), `batch` of them: the input M x K before a forward or a
/// data-gradient GEMM, 4 bytes per element; 0 for a weight-gradient GEMM (it reads the
/// transposes the other two casts wrote) and where the cast is fused.
std::int64_t fp8_cast_bytes(std::string_view name, std::int64_t m, std::int64_t k,
                            std::int64_t batch);

/// HBM bytes of the casts feeding FP8 GEMM `name` under `recipe`, `elem` bytes per
/// high-precision element: delayed as fp8_cast_bytes; tensorwise (see Fp8Recipe) the amax and
/// cast of the M x K input of a forward or data-gradient GEMM, and of the K x N weight in a
/// forward GEMM, the column-major copy of the weight for a data-gradient GEMM and of both FP8
/// operands for a weight-gradient GEMM. Returned per kernel: {amax, cast, copies}.
struct Fp8CastBytes {
    std::int64_t amax = 0;
    std::int64_t cast = 0;
    std::int64_t copies = 0;
    std::int64_t total() const { return amax + cast + copies; }
};
Fp8CastBytes fp8_gemm_cast_bytes(std::string_view name, std::int64_t m, std::int64_t n,
                                 std::int64_t k, std::int64_t batch, Fp8Recipe recipe,
                                 std::int64_t elem);

/// Bytes per parameter of the FP8 weight copies kept beside the bf16 weights (data and
/// transpose).
inline constexpr std::int64_t kFp8WeightCopyBytes = 2;
/// HBM bytes of casting `parameters` bf16 weights to FP8 with their transposes once per step.
inline constexpr std::int64_t fp8_weight_cast_bytes(std::int64_t parameters) {
    return parameters * (2 + kFp8WeightCopyBytes);
}

} // namespace clustersim::strategies::models
