// The training: section's keys (experiment_keys.h): Megatron's and torchtitan's training knobs,
// MaxText's, the op fuser's, CUDA graphs', the memory features' and LoRA's, each group a table.
#include "strategies/parallel/experiment_keys.h"

#include "strategies/parallel/framework_profile.h"

#include <string>
#include <utility>

namespace clustersim::strategies::parallel {

using config::field;
using config::Key;
using config::KeyType;

namespace {

/// MaxText's training keys (src/maxtext/configs/base.yml), resolved by device_mesh.h.
std::vector<Key<TrainingSpec>> maxtext_training_keys() {
    using T = TrainingSpec;
    return {
        {{.name = "per_device_batch_size",
          .type = KeyType::number,
          .fallback = "none (global_batch)",
          .number_min = 0,
          .mirrors = "MaxText's per_device_batch_size",
          .meaning = "sequences per device (JAX's devices): global_batch = it x the devices, "
                     "instead of global_batch; whole sequences per batch shard",
          .lands = "TrainingSpec::per_device_batch_size, global_batch, micro_batch",
          .example = "4",
          .group = "maxtext",
          .commented = true},
         field<&T::per_device_batch_size>},
        {{.name = "remat_policy",
          .type = KeyType::choice,
          .fallback = "none (parallel.recompute)",
          .choices = {"full", "minimal", "minimal_with_context", "minimal_offloaded",
                      "save_dot_with_context_except_mlp", "save_dot_except_mlpwi",
                      "save_dot_except_mlp", "save_qkv_proj", "qkv_proj_offloaded",
                      "save_out_proj"},
          .mirrors = "MaxText's remat_policy",
          .meaning = "what the backward recomputes, by MaxText's names, instead of "
                     "parallel.recompute, as JAX's remat runs it (only what the backward "
                     "reads): the minimal ones the norms, activations and attention kernel (the "
                     "with_context ones not the attention), the save_dot_*except_mlp* ones the "
                     "MLP's input projections too, the rest the layer up to the MLP's down "
                     "projection (device_mesh.h says why)",
          .lands = "TrainingSpec::remat, ParallelSpec::recompute",
          .example = "full",
          .group = "maxtext",
          .commented = true},
         +[](T& t, std::string_view r) {
             using R = RematPolicy;
             static const std::pair<std::string_view, R> names[]{
                 {"full", R::full},
                 {"minimal", R::minimal},
                 {"minimal_with_context", R::minimal_with_context},
                 {"minimal_offloaded", R::minimal_offloaded},
                 {"save_dot_with_context_except_mlp", R::save_dot_with_context_except_mlp},
                 {"save_dot_except_mlpwi", R::save_dot_except_mlpwi},
                 {"save_dot_except_mlp", R::save_dot_except_mlp},
                 {"save_qkv_proj", R::save_qkv_proj},
                 {"qkv_proj_offloaded", R::qkv_proj_offloaded},
                 {"save_out_proj", R::save_out_proj}};
             for (const auto& [name, policy] : names)
                 if (name == r)
                     t.remat = policy;
         }},
    };
}

/// Transformer Engine's op fuser on a layer's experts (Megatron-Core's
/// use_transformer_engine_op_fuser; models::Fusions::fused_grouped_mlp).
std::vector<Key<TrainingSpec>> op_fuser_training_keys() {
    using T = TrainingSpec;
    return {
        {{.name = "fused_grouped_mlp",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "use_transformer_engine_op_fuser with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1",
          .meaning = "the experts' fc1, clamped GLU, fc2 and bias as one fused grouped MLP",
          .lands = "TrainingSpec::fusions.fused_grouped_mlp",
          .example = "false",
          .group = "fusions"},
         +[](T& t) -> bool& { return t.fusions.fused_grouped_mlp; }},
    };
}

/// CUDA graphs (Megatron-Core's TransformerConfig.cuda_graph_impl and cuda_graph_scope;
/// cuda_graphs.h).
std::vector<Key<TrainingSpec>> cuda_graph_training_keys() {
    using T = TrainingSpec;
    std::vector<Key<T>> keys{
        {{.name = "cuda_graph_impl",
          .type = KeyType::choice,
          .fallback = "none",
          .choices = {"none", "local", "transformer_engine", "full_iteration"},
          .mirrors = "--cuda-graph-impl (TransformerConfig.cuda_graph_impl)",
          .meaning = "CUDA graphs: per layer by cuda_graph_scope (local, transformer_engine: a "
                     "run of captured kernels costs the host one launch), or the whole "
                     "forward-backward as one graph (full_iteration: no kernel waits for the "
                     "host, no micro-batch starts with it)",
          .lands = "TrainingSpec::cuda_graph_impl",
          .example = "transformer_engine",
          .commented = true},
         +[](T& t, std::string_view v) { t.cuda_graph_impl = *parse_cuda_graph_impl(v); }},
        {{.name = "cuda_graph_scope",
          .type = KeyType::list,
          .fallback = "[] (the whole layer)",
          .choices = {"attn", "mlp", "moe", "moe_router", "moe_preprocess"},
          .mirrors = "--cuda-graph-scope (TransformerConfig.cuda_graph_scope)",
          .meaning = "with cuda_graph_impl local or transformer_engine, the parts of each layer "
                     "captured: attention, a dense MLP, a whole MoE block, or its router and "
                     "shared experts (moe_router) with the dispatcher's permutation "
                     "(moe_preprocess)",
          .lands = "TrainingSpec::cuda_graph_scope",
          .example = "[attn, moe_router, moe_preprocess]",
          .commented = true}},
    };
    return keys;
}

/// The training stack by name (framework_profile.h).
Key<TrainingSpec> framework_training_key() {
    using T = TrainingSpec;
    return {{.name = "framework",
             .type = KeyType::choice,
             .fallback = "the hardware file's framework.profile, or none",
             .choices = {framework_profile_names().begin(), framework_profile_names().end()},
             .meaning = "the training stack by name: sets the behaviours the hardware file's "
                        "framework.profile would (framework_profile.h; docs/hardware-files.md, "
                        "Profiles), those its framework: section writes by their own keys too",
             .lands = "TrainingSpec::framework, then ExperimentSpec::framework (apply_profile)",
             .example = "megatron-core",
             .commented = true},
            +[](T& t, std::string_view n) { t.framework = parse_framework_profile(n); }};
}

/// The loss's cross-entropy, torchtune's memory features and pure 16-bit training (its
/// recipes' names, recipes/full_finetune_single_device.py at meta-pytorch/torchtune@1814feb17).
std::vector<Key<TrainingSpec>> memory_training_keys() {
    using T = TrainingSpec;
    return {
        {{.name = "cross_entropy",
          .type = KeyType::choice,
          .fallback = "fused",
          .choices = {"fused", "eager", "compiled", "compiled-fp32", "chunked"},
          .mirrors = "torchtitan's loss_fn (compiled with [training] compile but from "
                     "December 2024 to April 2025); chunked: torchtune's "
                     "CEWithChunkedOutputLoss",
          .meaning = "the loss's cross-entropy, for the memory around the head's backward: "
                     "Megatron's fused vocab-parallel one (the fp32 softmax kept, its gradient "
                     "in place), PyTorch's cross_entropy on the logits upcast to fp32 (its "
                     "log_softmax kept, two fp32 gradients of the logits at the backward's "
                     "start), or that under torch.compile (the 16-bit logits kept, their "
                     "gradient in one kernel), torchtune's compiled loss on the logits its "
                     "model upcast (compiled-fp32: the fp32 logits kept, an fp32 gradient), or "
                     "torchtune's chunked one (CEWithChunkedOutputLoss: the output layer and "
                     "the fp32 loss one slice of the tokens at a time)",
          .lands = "TrainingSpec::cross_entropy",
          .example = "fused"},
         +[](T& t, std::string_view v) {
             t.cross_entropy = v == "eager"           ? models::CrossEntropy::eager
                               : v == "compiled"      ? models::CrossEntropy::compiled
                               : v == "chunked"       ? models::CrossEntropy::chunked
                               : v == "compiled-fp32" ? models::CrossEntropy::compiled_fp32
                                                      : models::CrossEntropy::fused;
         }},
        {{.name = "cross_entropy_chunks",
          .fallback = "8",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "torchtune's CEWithChunkedOutputLoss num_output_chunks",
          .meaning = "with cross_entropy chunked: the slices of the tokens",
          .lands = "TrainingSpec::cross_entropy_chunks",
          .example = "8",
          .commented = true},
         field<&T::cross_entropy_chunks>},
        {{.name = "master_weights",
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "torchtune's dtype: bf16 (false)",
          .meaning = "fp32 master weights beside 16-bit ones (mixed precision), or false: pure "
                     "16-bit training as PyTorch's own loop runs it (torchtune): weights, "
                     "gradients and optimizer states all in dtype, the gradients allocated by "
                     "the backward and freed after the step",
          .lands = "TrainingSpec::master_weights",
          .example = "true",
          .commented = true},
         field<&T::master_weights>},
        {{.name = "autocast",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torch.cuda.amp.autocast; Hugging Face Trainer's fp16 / bf16",
          .meaning = "automatic mixed precision: an fp32 model whose linear layers run in dtype, "
                     "the weights' casts cached for the forward; softmax and norms in fp32",
          .lands = "TrainingSpec::autocast",
          .example = "false",
          .commented = true},
         field<&T::autocast>},
        {{.name = "optimizer_in_bwd",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtune's optimizer_in_bwd",
          .meaning = "each parameter's optimizer step in the backward, its gradient freed after "
                     "it (one GPU, one micro-batch per step)",
          .lands = "TrainingSpec::optimizer_in_bwd",
          .example = "false",
          .commented = true},
         field<&T::optimizer_in_bwd>},
        {{.name = "activation_offloading",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtune's enable_activation_offloading",
          .meaning = "with recompute full: the checkpointed layer inputs copied to the host in "
                     "the forward and back in the backward",
          .lands = "TrainingSpec::activation_offloading",
          .example = "false",
          .commented = true},
         field<&T::activation_offloading>},
        {{.name = "fp8_fsdp_all_gather",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtitan's [float8] enable_fsdp_float8_all_gather (torchao's)",
          .meaning = "with dtype fp8 and FSDP2: the layers' linear weights gathered and held in "
                     "FP8 (norms, biases, routed experts, embedding and output layer in bf16)",
          .lands = "TrainingSpec::fp8_fsdp_all_gather",
          .example = "false",
          .commented = true},
         field<&T::fp8_fsdp_all_gather>},
    };
}

/// The training keys but LoRA's.
// check-function-size: a table (one declaration per key, no logic between them).
std::vector<Key<TrainingSpec>> core_training_keys() {
    using T = TrainingSpec;
    std::vector<Key<T>> keys{
        {{.name = "global_batch",
          .fallback = "required (or per_device_batch_size)",
          .min = 1,
          .max = std::int64_t{1} << 40,
          .mirrors = "--global-batch-size",
          .meaning = "samples per step, all data-parallel replicas",
          .lands = "TrainingSpec::global_batch",
          .example = "16"},
         field<&T::global_batch>},
        {{.name = "micro_batch",
          .fallback = "1",
          .min = 1,
          .max = 1 << 20,
          .mirrors = "--micro-batch-size",
          .meaning = "samples per micro-batch on one replica",
          .lands = "TrainingSpec::micro_batch",
          .example = "1"},
         field<&T::micro_batch>},
        {{.name = "dtype",
          .type = KeyType::choice,
          .fallback = "bf16",
          .choices = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"},
          .mirrors = "--fp16, --bf16, --fp8-format, --fp4-format",
          .meaning = "the GEMMs' precision (fp8 needs a GPU with an fp8 peak, H100 on; fp4, "
                     "NVFP4, one with an fp4 peak and block scaling, Blackwell)",
          .lands = "TrainingSpec::dtype",
          .example = "fp16"},
         &detail::set_parsed<T, &T::dtype, hardware::parse_dtype>},
        {{.name = "optimizer",
          .type = KeyType::choice,
          .fallback = "adam",
          .choices = {"adam", "adamw", "sgd", "adamw8bit"},
          .mirrors = "--optimizer; adamw8bit: torchtune's bitsandbytes.optim.AdamW8bit",
          .meaning = "the optimizer, for its state and its step (adamw8bit: m and v in one byte "
                     "each with an fp32 scale per block of 256)",
          .lands = "TrainingSpec::optimizer",
          .example = "adam"},
         &detail::set_parsed<T, &T::optimizer, models::parse_optimizer>},
        {{.name = "forward_only",
          .type = KeyType::boolean,
          .fallback = "false",
          .meaning = "no backward, no optimizer (inference-style)",
          .lands = "TrainingSpec::forward_only",
          .example = "false"},
         field<&T::forward_only>},
        {{.name = "apply_rope_fusion",
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "--no-rope-fusion: false",
          .meaning = "RoPE fused in one kernel (false also copies GQA's keys/values)",
          .lands = "TrainingSpec::fusions.apply_rope_fusion",
          .example = "true",
          .group = "fusions"},
         +[](T& t) -> bool& { return t.fusions.apply_rope_fusion; }},
        {{.name = "bias_activation_fusion",
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "--no-bias-swiglu-fusion, --no-bias-gelu-fusion: false",
          .meaning = "the bias and SwiGLU/GeLU fused in one kernel",
          .lands = "TrainingSpec::fusions.bias_activation_fusion",
          .example = "true",
          .group = "fusions"},
         +[](T& t) -> bool& { return t.fusions.bias_activation_fusion; }},
        {{.name = "masked_softmax_fusion",
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "--no-masked-softmax-fusion: false",
          .meaning = "unfused attention's scale, mask and softmax in one kernel",
          .lands = "TrainingSpec::fusions.masked_softmax_fusion",
          .example = "true",
          .group = "fusions"},
         +[](T& t) -> bool& { return t.fusions.masked_softmax_fusion; }},
        {{.name = "norm_fusion",
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "torchtitan's norm_type: fused_rmsnorm",
          .meaning = "the norm in one kernel",
          .lands = "TrainingSpec::fusions.norm_fusion",
          .example = "true",
          .group = "fusions"},
         +[](T& t) -> bool& { return t.fusions.norm_fusion; }},
        {{.name = "compile",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtitan's [training] compile",
          .meaning = "torch.compile: every elementwise chain fused, whatever the fusions say",
          .lands = "TrainingSpec::compile",
          .example = "false"},
         field<&T::compile>},
        {{.name = "fp8_recipe",
          .type = KeyType::choice,
          .fallback = "delayed",
          .choices = {"delayed", "current", "tensorwise", "mxfp8"},
          .mirrors = "--fp8-recipe",
          .meaning = "with dtype fp8: Transformer Engine's delayed scaling, its per-tensor "
                     "current scaling (Megatron-Core's fp8_recipe tensorwise, Megatron-Bridge's "
                     "FP8-CS), dynamic tensorwise scaling as torchao runs it (torchtitan's "
                     "Float8), or Transformer Engine's MXFP8 block scaling (needs a GPU with "
                     "block_scaling, Blackwell)",
          .lands = "TrainingSpec::fp8_recipe",
          .example = "delayed"},
         +[](T& t, std::string_view r) {
             t.fp8_recipe = r == "tensorwise" ? models::Fp8Recipe::tensorwise
                            : r == "current"  ? models::Fp8Recipe::current
                            : r == "mxfp8"    ? models::Fp8Recipe::mxfp8
                                              : models::Fp8Recipe::delayed;
         }},
        {{.name = "fp8_dot_product_attention",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--fp8-dot-product-attention (TransformerConfig.fp8_dot_product_attention)",
          .meaning = "with dtype fp8 (fp8_recipe delayed, current or mxfp8): Transformer "
                     "Engine's FP8 attention, cuDNN's fused kernel on FP8 operands quantized "
                     "as the recipe scales them; needs a hardware file with its measured rates "
                     "(compute.fused_attention.fp8_backward_scores_per_sm_clock, mxfp8_...: "
                     "the Blackwell presets)",
          .lands = "TrainingSpec::fp8_dot_product_attention",
          .example = "false",
          .commented = true},
         field<&T::fp8_dot_product_attention>},
        {{.name = "fp8_output_proj",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "TransformerConfig.fp8_output_proj",
          .meaning = "with dtype fp8 and fp8_recipe mxfp8: the LM head's three GEMMs in MXFP8 "
                     "(Megatron-Core's TELMHeadColumnParallelLinear), its input quantized, its "
                     "weights' MXFP8 copies kept; not with tied embeddings",
          .lands = "TrainingSpec::fp8_output_proj",
          .example = "false",
          .commented = true},
         field<&T::fp8_output_proj>},
        {{.name = "fp4_recipe",
          .type = KeyType::choice,
          .fallback = "nvfp4",
          .choices = {"nvfp4"},
          .mirrors = "--fp4-recipe",
          .meaning = "with dtype fp4: Transformer Engine's NVFP4 block scaling (16-element "
                     "blocks, random Hadamard transforms, stochastic rounding of gradients)",
          .lands = "TrainingSpec::quant_recipe()",
          .example = "nvfp4",
          .commented = true},
         +[](T&, std::string_view) {}},
    };
    keys.push_back(framework_training_key());
    for (auto& k : maxtext_training_keys())
        keys.push_back(std::move(k));
    for (auto& k : cuda_graph_training_keys())
        keys.push_back(std::move(k));
    for (auto& k : memory_training_keys())
        keys.push_back(std::move(k));
    for (auto& k : op_fuser_training_keys())
        keys.push_back(std::move(k));
    return keys;
}

/// LoRA's keys (Megatron-Bridge's PEFT LoRA config, peft/lora.py).
std::vector<Key<TrainingSpec>> lora_training_keys() {
    using T = TrainingSpec;
    std::vector<Key<T>> keys{
        {{.name = "peft",
          .type = KeyType::choice,
          .fallback = "none",
          .choices = {"none", "lora"},
          .mirrors = "Megatron-Bridge's ConfigContainer.peft (peft/lora.py, LoRA)",
          .meaning = "parameter-efficient fine-tuning: lora freezes every base weight (no "
                     "weight gradients, no optimizer state) and trains low-rank adapters",
          .lands = "TrainingSpec::lora",
          .example = "lora",
          .group = "lora",
          .commented = true},
         +[](T& t, std::string_view v) {
             if (v == "lora") {
                 t.lora.dim = t.lora.dim > 0 ? t.lora.dim : 32;
                 t.lora.alpha = t.lora.alpha > 0 ? t.lora.alpha : 32;
                 if (t.lora.targets == 0)
                     t.lora.targets = 0xF;
             } else {
                 t.lora = models::Lora{};
             }
         }},
        {{.name = "lora_dim",
          .fallback = "32",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "LoRA.dim (peft.dim)",
          .meaning = "with peft: lora, the adapters' rank r",
          .lands = "TrainingSpec::lora.dim",
          .example = "16",
          .group = "lora",
          .commented = true},
         +[](T& t) -> int& { return t.lora.dim; }},
        {{.name = "lora_alpha",
          .type = KeyType::number,
          .fallback = "32",
          .number_min = 0,
          .mirrors = "LoRA.alpha (peft.alpha)",
          .meaning = "with peft: lora, the adapters' scale alpha / dim (no cost of its own)",
          .lands = "TrainingSpec::lora.alpha",
          .example = "32",
          .group = "lora",
          .commented = true},
         +[](T& t) -> double& { return t.lora.alpha; }},
        {{.name = "lora_target_modules",
          .type = KeyType::list,
          .fallback = "[linear_qkv, linear_proj, linear_fc1, linear_fc2]",
          .choices = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"},
          .mirrors = "LoRA.target_modules (peft.target_modules)",
          .meaning = "with peft: lora, the linear layers that get adapters",
          .lands = "TrainingSpec::lora.targets",
          .example = "[linear_qkv, linear_proj]",
          .group = "lora",
          .commented = true}},
    };
    return keys;
}

} // namespace

const std::vector<Key<TrainingSpec>>& training_keys() {
    static const std::vector<Key<TrainingSpec>> keys = [] {
        std::vector<Key<TrainingSpec>> k = core_training_keys();
        for (auto& l : lora_training_keys())
            k.push_back(std::move(l));
        return k;
    }();
    return keys;
}

} // namespace clustersim::strategies::parallel
