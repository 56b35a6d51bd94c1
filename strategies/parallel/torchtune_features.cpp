#include "strategies/parallel/torchtune_features.h"

#include "strategies/parallel/experiment.h"

namespace clustersim::strategies::parallel {

/// torchtune's single-device memory features and pure 16-bit training, refused where torchtune
/// refuses them (recipes/full_finetune_single_device.py at meta-pytorch/torchtune@1814feb17:
/// optimizer_in_bwd with gradient accumulation, activation offloading without activation
/// checkpointing) or where clustersim does not model them.
std::optional<std::pair<std::string, const char*>>
torchtune_feature_refusal(const ExperimentSpec& e) {
    using Refusal = std::pair<std::string, const char*>;
    const auto fail = [](std::string what, const char* key) {
        return Refusal{std::move(what), key};
    };
    const TrainingSpec& t = e.training;
    const ParallelSpec& p = e.parallel;
    if (!t.master_weights && hardware::bytes_per_element(t.dtype) != 2)
        return fail("master_weights: false trains in the 16-bit dtype alone (torchtune's dtype "
                    "bf16); training.dtype " +
                        std::string(hardware::to_string(t.dtype)) +
                        " needs no master copy or keeps one by design: use bf16 or fp16",
                    "training.master_weights");
    if (t.autocast && (hardware::bytes_per_element(t.dtype) != 2 || !t.master_weights))
        return fail("autocast casts an fp32 model's ops to a 16-bit dtype: it needs "
                    "training.dtype fp16 or bf16 (here " +
                        std::string(hardware::to_string(t.dtype)) +
                        ") and the fp32 weights it casts from (master_weights true)",
                    "training.autocast");
    // Its activations are BERT's layer as Hugging Face runs it (LayerNorm, GeLU, separate
    // query, key and value linears; layer_work_recompute.cpp, autocast_activations) on one GPU:
    // with more, the collectives would carry fp32 weights and gradients the 16-bit rules of
    // precision.h do not.
    if (t.autocast) {
        const models::ModelSpec& m = e.model;
        const char* what = m.is_moe()                                 ? "experts"
                           : m.is_mla()                               ? "latent attention"
                           : m.norm != models::Norm::layernorm        ? "RMSNorm"
                           : m.activation != models::Activation::gelu ? "SwiGLU"
                           : m.qk_layernorm                           ? "qk_layernorm"
                           : e.gpus > 1                               ? "more than one GPU"
                                                                      : nullptr;
        if (what != nullptr)
            return fail(std::string("autocast is modelled for a BERT-like layer (LayerNorm, "
                                    "GeLU, no experts or latent attention) on one GPU, as "
                                    "Hugging Face's Trainer fp16 runs it; this run has ") +
                            what + ": leave training.autocast out",
                        "training.autocast");
    }
    if (t.cross_entropy != models::CrossEntropy::chunked && t.cross_entropy_chunks != 8)
        return fail("cross_entropy_chunks slices the chunked cross-entropy: it needs "
                    "cross_entropy: chunked (or leave it out)",
                    "training.cross_entropy_chunks");
    if (t.cross_entropy == models::CrossEntropy::chunked && p.tp > 1)
        return fail("cross_entropy: chunked is torchtune's CEWithChunkedOutputLoss, over whole "
                    "vocabulary rows; with tensor parallelism (tp " +
                        std::to_string(p.tp) + ") it is not modelled",
                    "training.cross_entropy");
    if (t.optimizer_in_bwd) {
        if (t.forward_only)
            return fail("optimizer_in_bwd runs the optimizer in the backward; forward_only: true "
                        "has neither",
                        "training.optimizer_in_bwd");
        if (e.gpus != 1)
            return fail("optimizer_in_bwd is modelled on one GPU (torchtune's single-device "
                        "recipe); this run has " +
                            std::to_string(e.gpus),
                        "training.optimizer_in_bwd");
        if (e.micro_batches() != 1)
            return fail("optimizer_in_bwd steps in every backward: it needs one micro-batch per "
                        "step (torchtune: \"Requires gradient_accumulation_steps=1\"), here " +
                            std::to_string(e.micro_batches()),
                        "training.optimizer_in_bwd");
    }
    if (t.activation_offloading) {
        if (p.recompute != RecomputePolicy::full || p.recompute_block)
            return fail("activation_offloading offloads the checkpointed layer inputs: it needs "
                        "recompute: full on every layer (torchtune: \"enable_activation_offloading "
                        "should only be True when enable_activation_checkpointing is True\")",
                        "training.activation_offloading");
        if (p.pp > 1)
            return fail("activation_offloading with pipeline parallelism is not modelled",
                        "training.activation_offloading");
    }
    return std::nullopt;
}

} // namespace clustersim::strategies::parallel
