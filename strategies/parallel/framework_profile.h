#pragma once
/// \file
/// Training stacks by name: a profile sets, as one bundle, the behaviours of the framework
/// that the step model distinguishes (FrameworkSpec's choices of how a stack runs, not its
/// fitted costs: host_overhead, the efficiencies and microbatch_overhead stay what the
/// hardware file's fit says). Chosen by the hardware file (`framework: {profile: NAME}`, the
/// default of its experiments) or by the experiment (`training: {framework: NAME}`). A
/// behaviour the hardware file's framework: section writes with its own key keeps that value
/// under the file's profile; the experiment's profile sets every behaviour (the experiment
/// names the stack it runs).
///
/// What each profile sets (docs/hardware-files.md repeats it, from profile_settings()):
///
/// | behaviour | megatron-core | megatron-lm (2021-22) | megatron-deepspeed |
/// |---|---|---|---|
/// | batch_on_every_stage | false | true | true |
/// | pipeline_tp_gather | false | true | true |
/// | fp32_grad_reduce | true | false | false |
/// | grad_accumulation | fused | unfused | deepspeed |
/// | pipeline_engine | megatron | megatron | deepspeed |
///
/// Why, profile by profile:
/// - megatron-core (Megatron-Core and the stacks on it, NeMo and Megatron-Bridge): get_batch on
///   the chunks with the embedding or the loss only (NVIDIA/Megatron-LM@a0e190c, 2023-10);
///   whole pipeline tensors, no scatter-gather (@3c92fa93b5, 2023); gradients accumulated and
///   reduced in fp32 (--accumulate-allreduce-grads-in-fp32, which its recipes set) by the
///   weight-gradient GEMM itself (gradient_accumulation_fusion, on by default).
/// - megatron-lm, the code of Narayanan et al. 2021 (NVIDIA/Megatron-LM@8cfef1bfe7) and its
///   releases to early 2022: get_batch and its tensor-parallel broadcast on every stage;
///   --scatter-gather-tensors-in-pipeline on by default; fp16 gradients reduced in fp16
///   (--accumulate-allreduce-grads-in-fp32 off) and accumulated by autograd into param.grad,
///   one add kernel per parameter tensor and micro-batch (gradient accumulation fusion came
///   with @9c5a830f, 2022-02-22); its local DDP did not overlap the reduction with the
///   backward, which an experiment says with parallel.dp_overlap: false.
/// - megatron-deepspeed, Megatron-DeepSpeed of 2021-22 (microsoft/ and
///   bigscience-workshop/Megatron-DeepSpeed, the latter at 8387ae17c4: Megatron-LM's fused
///   bias-GeLU, bias-dropout-add, scale-mask-softmax and LayerNorm kernels, its linear layers
///   without gradient accumulation fusion, F.linear in megatron/mpu/layers.py) under
///   DeepSpeed's engine: its PipelineEngine at every pipeline size (FrameworkSpec::
///   deepspeed_pipeline: 1F1B only, gradients reduced after the last backward, the third
///   tensor-parallel gather); its pipeline tensors partitioned over the tensor-parallel ranks
///   (engine.py: is_pipe_partitioned = is_model_parallel); gradients reduced in the training
///   dtype (DeepSpeedEngine.communication_data_type: fp16 for fp16 or ZeRO, bf16 for bf16) and
///   accumulated as its optimizers keep them (GradAccumulation::deepspeed); every stage runs
///   the engine's instructions for each micro-batch, and a stage that receives a partitioned
///   tensor waits for the device on its meta (PartitionedTensor.from_meta: meta.tolist()).
///   The 1,440 single-node steps of data/reference/a100-node are this stack's: dgx-a100's
///   fitted host and micro-batch costs are measured under this profile.

#include "strategies/parallel/framework_spec.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace clustersim::strategies::parallel {

/// The behaviours a profile sets, as bits of FrameworkSpec::explicit_keys (a key written in a
/// framework: section sets its bit, and a profile then leaves that behaviour alone).
enum class ProfileKey : std::uint8_t {
    batch_on_every_stage,
    pipeline_tp_gather,
    fp32_grad_reduce,
    grad_accumulation,
    pipeline_engine,
};
inline constexpr int kProfileKeys = 5;
constexpr std::uint8_t profile_key_bit(ProfileKey k) {
    return static_cast<std::uint8_t>(1u << static_cast<unsigned>(k));
}
/// The framework: key of a behaviour ("pipeline_engine").
std::string_view key_name(ProfileKey k);
/// The behaviour a framework: key sets; nullopt for the keys no profile sets.
std::optional<ProfileKey> profile_key(std::string_view key);

/// "megatron-core", "megatron-lm", "megatron-deepspeed".
std::string_view to_string(FrameworkProfile p);
std::optional<FrameworkProfile> parse_framework_profile(std::string_view name);
/// Every profile's name, in the order of the enum.
std::span<const std::string> framework_profile_names();
std::string_view to_string(GradAccumulation g);

/// The value profile `p` gives behaviour `k`, as the framework: key would be written
/// ("false", "deepspeed").
std::string_view profile_setting(FrameworkProfile p, ProfileKey k);

/// Why profile `p` sets what it does, with its sources (one paragraph; docs/hardware-files.md).
std::string_view profile_reason(FrameworkProfile p);

/// `f` under profile `p`: every behaviour the profile sets but those f.explicit_keys marks;
/// the fitted costs untouched. Sets f.profile.
void apply_profile(FrameworkSpec& f, FrameworkProfile p);

} // namespace clustersim::strategies::parallel
