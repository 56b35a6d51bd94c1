#pragma once
/// \file
/// The published closed forms of training memory, as functions: activations per transformer
/// layer (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
/// Models", section 4 and Table 2) and weights + gradients + optimizer state by ZeRO stage
/// (Rajbhandari et al. 2020; 18 bytes per parameter without ZeRO as Megatron keeps fp32
/// gradients). layer_work.h counts activations item by item; these closed forms are what the
/// tests hold that accounting to.

#include "hardware/dtype.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_spec.h"

#include <cstdint>

namespace clustersim::strategies::models {

/// Activation bytes of one transformer layer for one micro-batch, 16-bit activations and
/// 1-byte dropout masks (s sequence, b micro-batch, h hidden, a heads, t tensor parallel):
///   no recompute, t = 1:            s b h (34 + 5 a s / h)
///   tensor parallel:                s b h (10 + 24/t + 5 a s / (h t))
///   tensor + sequence parallel:     s b h / t (34 + 5 a s / h)
///   tensor parallel + selective:    s b h (10 + 24/t)
///   tensor + sequence + selective:  34 s b h / t
///   full recompute:                 2 s b h (the layer input only)
/// FlashAttention (`flash`) removes the 5 a s / h term, whatever the recompute.
double korthikanti_activation_bytes(double s, double b, double h, double a, double t,
                                    bool sequence_parallel, Recompute recompute, bool flash);

/// The same per GPU under context parallelism (context_parallel.h): each of cp ranks keeps
/// the activations of s / cp tokens, and context parallelism runs fused attention, so it is
/// korthikanti_activation_bytes(s / cp, ..., flash = true).
double context_parallel_activation_bytes(double s, double b, double h, double a, double t,
                                         bool sequence_parallel, Recompute recompute, int cp);

/// Bytes of model state held by one GPU for `parameters` (those it holds after tensor and
/// pipeline parallelism), by ZeRO stage over `dp` data-parallel ranks.
struct ModelStateBytes {
    std::int64_t weights = 0;
    std::int64_t gradients = 0;
    std::int64_t optimizer = 0; ///< fp32 master weights and Adam's m and v
    std::int64_t total() const { return weights + gradients + optimizer; }
};

/// Mixed precision (16-bit `dtype`) with Adam:
///   ZeRO 0: 2P weights + 4P fp32 gradients + 12P (master, m, v) = 18P (Megatron);
///   ZeRO 1: 2P + 2P + 12P/d = 4P + 12P/d; ZeRO 2: 2P + 2P/d + 12P/d = 2P + 14P/d;
///   ZeRO 3: (2 + 2 + 12)P/d = 16P/d.
/// `fp32_main_grads` (ZeRO 1 only): the gradients accumulate in an unsharded fp32 buffer, as
/// Megatron's distributed optimizer keeps them under bf16 (--accumulate-allreduce-grads-in-fp32,
/// forced on for bf16 while --main-grads-dtype is fp32, its default: megatron/training/
/// arguments.py) and DeepSpeed's BF16_Optimizer under ZeRO 1: 2P + 4P + 12P/d = 6P + 12P/d,
/// the "bf16 parameters, fp32 gradients" row of Megatron-LM's distributed-optimizer page
/// (https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/dist_optimizer.md).
/// fp32 training: 4P weights, 4P gradients, Adam 8P (no master copy), sharded likewise.
/// SGD keeps no optimizer state beyond the master weights. Shards round up (ceil(P/d)).
/// Without `master_weights` (pure 16-bit training, torchtune's dtype bf16) nothing is kept in
/// fp32: 2P weights + 2P gradients + Adam's m and v in the parameters' dtype 4P = 8P, as
/// torch.optim.AdamW allocates them (zeros_like(p), pytorch/pytorch@v2.5.0
/// torch/optim/adamw.py, _init_group). Optimizer::adam8bit keeps m and v in one byte each
/// with an fp32 scale per block of 256 (adam8bit_state_bytes) beside the master weights.
/// Throws InputError for a ZeRO stage outside 0..3 or dp < 1.
ModelStateBytes model_state_bytes(std::int64_t parameters, hardware::Dtype dtype,
                                  Optimizer optimizer, int zero_stage, int dp,
                                  bool fp32_main_grads = false, bool master_weights = true);

/// 8-bit Adam's state of `parameters`: m and v quantized to one byte each, blockwise, with an
/// fp32 absolute maximum per block of 256 for each (bitsandbytes' Optimizer8bit.init_state,
/// bitsandbytes/optim/optimizer.py, `blocks = n // 256` and `absmax1`, `absmax2` in float32;
/// torchao's AdamW8bit likewise, block_size 256): 2P + 2 * 4 * ceil(P / 256).
std::int64_t adam8bit_state_bytes(std::int64_t parameters);

/// LoRA fine-tuning (layer_work.h, Lora): `frozen` base parameters held in the weights' dtype
/// only (Hu et al. 2021, section 4.1: frozen weights receive no gradient, so no gradient,
/// no master copy and no optimizer state: Megatron-Bridge's PEFT.freeze_model sets
/// requires_grad False, and the distributed optimizer and DDP only take parameters that
/// require gradients), plus `adapters` trained as model_state_bytes trains any parameter:
///   weights 2 (frozen + adapters), gradients 4 adapters, optimizer 12 adapters (bf16, Adam,
///   ZeRO 0). Unsharded frozen weights: ZeRO stages other than 0 are refused with LoRA.
ModelStateBytes lora_state_bytes(std::int64_t frozen, std::int64_t adapters, hardware::Dtype dtype,
                                 Optimizer optimizer, int zero_stage, int dp,
                                 bool fp32_main_grads = false, bool master_weights = true);

} // namespace clustersim::strategies::models
