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
/// (twice bf16), its efficiency 0.732 (at the sustained clock) fitted on ten H100/H200 fp8 GEMM
/// rows of data/reference/gemm/matmul-throughput.csv (against 0.949 for bf16).
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

/// How the quantized GEMMs' scales are found (Megatron-Core's TransformerConfig.fp8_recipe
/// names, and fp4_recipe's nvfp4 for `dtype: fp4`).
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
///
/// - mxfp8 (`dtype: fp8`, Megatron-Core's fp8_recipe: mxfp8): Transformer Engine's
///   MXFP8BlockScaling (transformer_engine/common/recipe/__init__.py, TE d0067d0): E4M3
///   elements with one E8M0 (power of two) scale per 32 consecutive elements, applied inside
///   the MMA by block-scaled tensor cores (GpuSpec::block_scaling); the GEMMs run at the fp8
///   peak. The scales follow the direction of the blocks, so "the quantized tensor and its
///   transpose are not numerically equivalent": every operand a forward and a backward GEMM
///   both read is quantized from the bf16 tensor twice, along its rows and along its columns,
///   in one kernel (2 bytes read, 2 x (1 + 1/32) written per element, the recipe's
///   docstring and MXFP8Quantizer); nothing is transposed from the other copy. The norms
///   write both copies (TE's cuDNN norm backend takes MXFP8 outputs:
///   common/normalization/rmsnorm/rmsnorm_api.cpp), as do the fused activations, so the
///   fused list of fp8_cast_fused holds. Weights are quantized once per step (cached across
///   micro-batches) into both copies: 2 + 33/16 bytes per parameter; the weight gradient
///   keeps the input's column-wise copy (1 + 1/32 bytes per element). Megatron-Bridge's
///   MXFP8 recipe (bf16_with_mxfp8_mixed, Megatron-Bridge 067f987) also gathers the
///   parameters in MXFP8 (fp8_param_gather), not modelled: the gathers stay bf16.
/// - nvfp4 (`dtype: fp4`, Megatron-Core's fp4_recipe: nvfp4; megatron/core/fp4_utils.py
///   get_fp4_recipe): Transformer Engine's NVFP4BlockScaling: E2M1 elements with one E4M3
///   scale per 16 elements and an fp32 scale per tensor (from its amax); the GEMMs run at the
///   GPU's fp4 peak (gpu.peak_flops.fp4). Its defaults (the recipe's __post_init__): random
///   Hadamard transforms (16 x 16) on the column-wise copies of the inputs and the output
///   gradients, the ones the weight-gradient GEMM reads; stochastic rounding of the output
///   gradients; 16 x 16 blocks for the weights. Per input or output gradient of a GEMM (TE's
///   NVFP4Quantizer::quantize_impl, pytorch/csrc/quantizer.cpp): a pass for the two amaxes
///   (nvte_hadamard_transform_amax: of the tensor and of its transform; 2 bytes per element
///   read), then one kernel for both copies (nvte_quantize_with_hadamard_transform: 2 read,
///   2 x (1/2 + 1/16) written). The per-tensor scale needs the whole tensor's amax first, so
///   no cast fuses into the kernel that produces its input (TE's norms compute "norm and amax
///   in high precision, then quantize to NVFP4": pytorch/csrc/extensions/normalization.cpp).
///   Weights: per step, an amax pass and both copies, 2 + 2 + 129/128 bytes per parameter
///   (16 x 16 blocks: one scale per 256 elements per copy); the weight gradient keeps the
///   input's column-wise copy (1/2 + 1/16 bytes per element). The random numbers of
///   stochastic rounding and the transform's small GEMM run inside the quantize kernel,
///   which moves the same bytes: not charged apart. Megatron-Core can keep the first and last
///   layers in bf16 (first_last_layers_bf16), off in Megatron-Bridge's NVFP4 recipes
///   (bf16_with_nvfp4_mixed) and not modelled.
///
/// - current (`dtype: fp8`): Transformer Engine's Float8CurrentScaling, per-tensor scales
///   from each tensor's own amax in this step, as Megatron-Core runs it for its fp8_recipe
///   tensorwise (megatron/core/fp8_utils.py) and Megatron-Bridge's FP8-CS recipes
///   (bf16_with_fp8_current_scaling_mixed). Per input of a forward or data-gradient GEMM
///   (TE d0067d0, pytorch/csrc/quantizer.cpp Float8CurrentScalingQuantizer::quantize_impl):
///   an amax pass (nvte_compute_amax, e bytes read per element), then one cast kernel that
///   writes the FP8 data and its transpose (e read, 1 + 1 written). Where a norm or an
///   activation produces the input (fp8_cast_fused), TE computes the amax inside that kernel
///   (pytorch/csrc/extensions/normalization.cpp FUSED_NORM_AMAX_FP8, activation.cpp
///   FUSED_ACTIVATION_AMAX_FP8: "compute ... and amax in high precision, then quantize"), so
///   only the cast remains, still a kernel of its own. The weight-gradient GEMM reads the
///   transposes. Weights are quantized once per step (Megatron passes is_first_microbatch),
///   amax and cast with transpose: 2 + 2 + 2 bytes per parameter; the FP8 data and
///   transpose are kept (2 bytes per parameter) and the weight gradient's input saved in FP8.
///   Not modelled: the amax all-reduce over the tensor-parallel group of a sequence-parallel
///   input (with_amax_reduction), one 4-byte all-reduce per such cast.
///
/// The transposes of delayed and current scaling are Hopper's: on a GPU whose FP8 GEMMs take
/// any operand layout (GpuSpec::fp8_any_layout, Blackwell), Transformer Engine's
/// Float8Quantizer and Float8CurrentScalingQuantizer write the FP8 data only and the
/// weight-gradient GEMM reads it in place (with_transpose = columnwise_usage &&
/// !nvte_is_non_tn_fp8_gemm_supported(): pytorch/csrc/quantizer.cpp at TE d0067d0, since
/// v2.3): each cast writes 1 byte per element instead of 2, and the weights' copy kept is the
/// data alone (1 byte per parameter). The block-scaled recipes' two copies differ in their
/// scales' direction and stay; torchao's column-major copies are torch._scaled_mm's layout
/// rule and stay.
///
/// What stays in bf16 is the same under every recipe: attention (fp8_dpa off by default in
/// all four), the LM head, the router, norms and elementwise kernels (runs_in_fp8). Under
/// MXFP8 Megatron-Core can run the LM head quantized (fp8_output_proj: LayerConfig).
enum class Fp8Recipe : std::uint8_t { delayed, tensorwise, mxfp8, nvfp4, current };

/// The recipe's name in experiment files (training.fp8_recipe; nvfp4 is fp4_recipe's).
std::string_view to_string(Fp8Recipe recipe);

/// Whether the GEMM named `name` (a layer_work Op name) runs in FP8 under fp8_autocast: the
/// linear layers, not the LM head, the router, the unfused attention products or LoRA's
/// adapters (Megatron-Core's own linear layers, not Transformer Engine's: layer_work_lora.cpp).
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

/// HBM bytes of the casts feeding quantized GEMM `name` (one the caller runs quantized:
/// runs_in_fp8, or the LM head under fp8_output_proj) under `recipe`, `elem` bytes per
/// high-precision element: delayed as fp8_cast_bytes; tensorwise (see Fp8Recipe) the amax and
/// cast of the M x K input of a forward or data-gradient GEMM, and of the K x N weight in a
/// forward GEMM, the column-major copy of the weight for a data-gradient GEMM and of both FP8
/// operands for a weight-gradient GEMM; mxfp8 both copies of the M x K input of a forward or
/// data-gradient GEMM where the kernel before does not write them; nvfp4 the amax pass and
/// both copies of that input, wherever it comes from. Returned per kernel: {amax, cast,
/// copies}.
struct Fp8CastBytes {
    std::int64_t amax = 0;
    std::int64_t cast = 0;
    std::int64_t copies = 0;
    std::int64_t total() const { return amax + cast + copies; }
};
/// `transposes`: delayed's and current's casts write a transposed copy (Hopper), or only the
/// FP8 data (GpuSpec::fp8_any_layout), one byte less per element.
Fp8CastBytes fp8_gemm_cast_bytes(std::string_view name, std::int64_t m, std::int64_t n,
                                 std::int64_t k, std::int64_t batch, Fp8Recipe recipe,
                                 std::int64_t elem, bool transposes);

/// Bytes per parameter of the FP8 weight copies kept beside the bf16 weights (data and
/// transpose, where the GPU's FP8 GEMMs take only TN).
inline constexpr std::int64_t kFp8WeightCopyBytes = 2;

/// Bytes of the quantized weight copies `recipe` keeps beside `parameters` bf16 weights
/// (delayed and current: FP8 data and, where `transposes`, its transpose; mxfp8: both MXFP8
/// copies with their scales; nvfp4: both NVFP4 copies with theirs; tensorwise: none, it casts
/// in every forward).
std::int64_t weight_copy_bytes(std::int64_t parameters, Fp8Recipe recipe, bool transposes);
/// HBM bytes of quantizing `parameters` bf16 weights once per step under `recipe` (0 for
/// tensorwise, whose weight casts are charged to the forward GEMMs).
std::int64_t weight_cast_bytes(std::int64_t parameters, Fp8Recipe recipe, bool transposes);
/// Bytes of `elements` elements of a GEMM input saved for the weight gradient under
/// `recipe`: the FP8 copy (1 byte), MXFP8's or NVFP4's column-wise copy with its scales.
std::int64_t saved_input_bytes(std::int64_t elements, Fp8Recipe recipe);
/// Whether the recipe's casts are kernels launched apart (tensorwise, nvfp4: each waits for
/// a whole tensor's amax) rather than fused into the kernel before them.
bool casts_launched_apart(Fp8Recipe recipe);

} // namespace clustersim::strategies::models
