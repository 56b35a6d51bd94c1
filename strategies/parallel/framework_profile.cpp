#include "strategies/parallel/framework_profile.h"

#include <array>

namespace clustersim::strategies::parallel {

namespace {

/// Each profile's settings, by ProfileKey, as the framework: keys are written (the table of
/// framework_profile.h; its rows say why).
constexpr std::array<std::array<std::string_view, kProfileKeys>, 3> kSettings{{
    // batch_on_every_stage, pipeline_tp_gather, fp32_grad_reduce, grad_accumulation,
    // pipeline_engine
    {"false", "false", "true", "fused", "megatron"},     // megatron-core
    {"true", "true", "false", "unfused", "megatron"},    // megatron-lm
    {"true", "true", "false", "deepspeed", "deepspeed"}, // megatron-deepspeed
}};

constexpr std::array<std::string_view, kProfileKeys> kKeyNames{
    "batch_on_every_stage", "pipeline_tp_gather", "fp32_grad_reduce", "grad_accumulation",
    "pipeline_engine"};

} // namespace

std::string_view key_name(ProfileKey k) {
    return kKeyNames[static_cast<std::size_t>(k)];
}

std::optional<ProfileKey> profile_key(std::string_view key) {
    for (std::size_t i = 0; i < kKeyNames.size(); ++i)
        if (kKeyNames[i] == key)
            return static_cast<ProfileKey>(i);
    return std::nullopt;
}

std::span<const std::string> framework_profile_names() {
    static const std::array<std::string, 3> names{"megatron-core", "megatron-lm",
                                                  "megatron-deepspeed"};
    return names;
}

std::string_view to_string(FrameworkProfile p) {
    return framework_profile_names()[static_cast<std::size_t>(p)];
}

std::optional<FrameworkProfile> parse_framework_profile(std::string_view name) {
    const auto names = framework_profile_names();
    for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i] == name)
            return static_cast<FrameworkProfile>(i);
    return std::nullopt;
}

std::string_view to_string(GradAccumulation g) {
    switch (g) {
    case GradAccumulation::fused:
        return "fused";
    case GradAccumulation::unfused:
        return "unfused";
    case GradAccumulation::deepspeed:
        break;
    }
    return "deepspeed";
}

std::string_view profile_setting(FrameworkProfile p, ProfileKey k) {
    return kSettings[static_cast<std::size_t>(p)][static_cast<std::size_t>(k)];
}

std::string_view profile_reason(FrameworkProfile p) {
    switch (p) {
    case FrameworkProfile::megatron_core:
        return "Megatron-Core and the stacks on it (NeMo, Megatron-Bridge): get_batch on the "
               "chunks with the embedding or the loss only (NVIDIA/Megatron-LM@a0e190c, "
               "2023-10); whole pipeline tensors, no scatter-gather (@3c92fa93b5, 2023); "
               "gradients reduced in fp32 (--accumulate-allreduce-grads-in-fp32, which its "
               "recipes set) and accumulated by the weight-gradient GEMM itself "
               "(gradient_accumulation_fusion, on by default).";
    case FrameworkProfile::megatron_lm:
        return "Megatron-LM as Narayanan et al. 2021 ran it (NVIDIA/Megatron-LM@8cfef1bfe7) "
               "and its releases to early 2022: get_batch and its tensor-parallel broadcast on "
               "every stage; --scatter-gather-tensors-in-pipeline on by default; fp16 "
               "gradients reduced in fp16 (--accumulate-allreduce-grads-in-fp32 off) and "
               "accumulated by autograd into param.grad, an add kernel per parameter tensor "
               "and micro-batch (gradient accumulation fusion came with @9c5a830f, "
               "2022-02-22). Its local DDP reduced after the backward: an experiment says so "
               "with parallel.dp_overlap: false.";
    case FrameworkProfile::megatron_deepspeed:
        break;
    }
    return "Megatron-DeepSpeed of 2021-22 (bigscience-workshop/Megatron-DeepSpeed@8387ae17c4: "
           "Megatron-LM's fused bias-GeLU, bias-dropout-add, scale-mask-softmax and LayerNorm "
           "kernels; linear layers without gradient accumulation fusion) under DeepSpeed's "
           "engine (microsoft/DeepSpeed@3293cf72a0, v0.5.10; @5fe9d61065, v0.7.0): the "
           "PipelineEngine at every pipeline size (pipeline_engine: 1F1B only, gradients "
           "reduced after the last backward, the sent output gathered back before each "
           "backward); pipeline tensors partitioned over the tensor-parallel ranks "
           "(is_pipe_partitioned = is_model_parallel); gradients reduced in the training dtype "
           "(DeepSpeedEngine.communication_data_type) and accumulated as its optimizers keep "
           "them (grad_accumulation: deepspeed; bf16 without ZeRO runs BF16_Optimizer, a ZeRO-1 "
           "of its own with fp32 gradients whole beside the bf16 ones, and the PipelineEngine "
           "refuses bf16 with ZeRO-1); every stage runs the engine's instructions for "
           "each micro-batch and waits for the device on each partitioned receive "
           "(PartitionedTensor.from_meta: meta.tolist()). The single-node steps of "
           "data/reference/a100-node are this stack's: dgx-a100's fitted host and micro-batch "
           "costs are measured under it.";
}

void apply_profile(FrameworkSpec& f, FrameworkProfile p) {
    auto set = [&](ProfileKey k) { return (f.explicit_keys & profile_key_bit(k)) == 0; };
    auto on = [&](ProfileKey k) { return profile_setting(p, k) == "true"; };
    if (set(ProfileKey::batch_on_every_stage))
        f.batch_on_every_stage = on(ProfileKey::batch_on_every_stage);
    if (set(ProfileKey::pipeline_tp_gather))
        f.pipeline_tp_gather = on(ProfileKey::pipeline_tp_gather);
    if (set(ProfileKey::fp32_grad_reduce))
        f.fp32_grad_reduce = on(ProfileKey::fp32_grad_reduce);
    if (set(ProfileKey::grad_accumulation)) {
        const std::string_view g = profile_setting(p, ProfileKey::grad_accumulation);
        f.grad_accumulation = g == "fused"     ? GradAccumulation::fused
                              : g == "unfused" ? GradAccumulation::unfused
                                               : GradAccumulation::deepspeed;
    }
    if (set(ProfileKey::pipeline_engine))
        f.deepspeed_pipeline = profile_setting(p, ProfileKey::pipeline_engine) == "deepspeed";
    f.profile = p;
}

} // namespace clustersim::strategies::parallel
