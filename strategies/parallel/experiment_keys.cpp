#include "strategies/parallel/experiment_keys.h"

#include "strategies/models/model_keys.h"
#include "strategies/parallel/framework_profile.h"

#include <set>
#include <string>
#include <utility>

namespace clustersim::strategies::parallel {

using config::field;
using config::Key;
using config::KeyType;

namespace {

/// A choice's setter through the enum's parser (which knows every choice of the table).
template <class Spec, auto Member, auto Parse>
void set_parsed(Spec& s, std::string_view text) {
    s.*Member = *Parse(text);
}

} // namespace

const std::vector<Key<ExperimentSpec>>& top_level_keys() {
    static const std::vector<Key<ExperimentSpec>> keys{
        {{.name = "name",
          .type = KeyType::text,
          .fallback = "the file's name",
          .meaning = "the experiment's name in reports",
          .lands = "ExperimentSpec::name",
          .example = "my-experiment"}},
        {{.name = "description",
          .type = KeyType::text,
          .fallback = "none",
          .meaning = "what this run is for",
          .lands = "ExperimentSpec::description",
          .example = "a first look at tensor parallelism"}},
        {{.name = "hardware",
          .type = KeyType::section,
          .required = true,
          .meaning = "a hardware preset (`clustersim list`), a path to a hardware file, or a "
                     "mapping that `extends:` one and changes any key (docs/hardware-files.md)",
          .lands = "ExperimentSpec::cluster, framework, provenance",
          .example = "dgx-a100"}},
        {{.name = "gpus",
          .fallback = "one node of the hardware",
          .min = 1,
          .max = 1 << 24,
          .meaning = "GPUs in the cluster, on as many nodes as they need",
          .lands = "ExperimentSpec::gpus",
          .example = "8"}},
        {{.name = "nodes",
          .fallback = "one node of the hardware",
          .min = 1,
          .max = 1 << 20,
          .meaning = "nodes in the cluster, instead of gpus",
          .lands = "ExperimentSpec::gpus (nodes x the node's GPUs)",
          .example = "1",
          .commented = true}},
        {{.name = "chips",
          .fallback = "one slice of the hardware",
          .min = 1,
          .max = 1 << 24,
          .meaning = "a TPU's chips, instead of gpus (which counts the devices JAX sees: 2 a "
                     "chip on TPU7x)",
          .lands = "ExperimentSpec::gpus (chips x devices per chip)",
          .example = "64",
          .commented = true}},
        {{.name = "slice",
          .type = KeyType::text,
          .fallback = "the shape documented for gpus (or chips)",
          .meaning = "a TPU slice's shape, like 4x4x8; with gpus or chips, that many in slices "
                     "of this shape joined over the DCN (multislice)",
          .lands = "ExperimentSpec::cluster (hardware::with_slice)",
          .example = "4x4x4",
          .commented = true}},
        {{.name = "model",
          .type = KeyType::section,
          .required = true,
          .meaning = "a model preset (`model: gpt3-175B`) or a mapping of the model's keys",
          .lands = "ExperimentSpec::model",
          .example = "gpt3-175B"}},
        {{.name = "training",
          .type = KeyType::section,
          .required = true,
          .meaning = "how it is trained: global_batch at least",
          .lands = "ExperimentSpec::training"}},
        {{.name = "parallel",
          .type = KeyType::section,
          .fallback = "no parallelism but data parallelism over every GPU",
          .meaning = "how it is split over the GPUs",
          .lands = "ExperimentSpec::parallel"}},
    };
    return keys;
}

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
          .meaning = "with dtype fp8 and FSDP2: the layers' weights gathered and held in FP8",
          .lands = "TrainingSpec::fp8_fsdp_all_gather",
          .example = "false",
          .commented = true},
         field<&T::fp8_fsdp_all_gather>},
    };
}

/// The training keys but LoRA's.
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
         &set_parsed<T, &T::dtype, hardware::parse_dtype>},
        {{.name = "optimizer",
          .type = KeyType::choice,
          .fallback = "adam",
          .choices = {"adam", "adamw", "sgd", "adamw8bit"},
          .mirrors = "--optimizer; adamw8bit: torchtune's bitsandbytes.optim.AdamW8bit",
          .meaning = "the optimizer, for its state and its step (adamw8bit: m and v in one byte "
                     "each with an fp32 scale per block of 256)",
          .lands = "TrainingSpec::optimizer",
          .example = "adam"},
         &set_parsed<T, &T::optimizer, models::parse_optimizer>},
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

namespace {

// check-function-size: a table (one declaration per key, no logic between them).
std::vector<Key<ParallelSpec>> core_parallel_keys() {
    using P = ParallelSpec;
    std::vector<Key<P>> keys{
        {{.name = "tp",
          .other_names = {"tensor_model_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--tensor-model-parallel-size",
          .meaning = "tensor-parallel size",
          .lands = "ParallelSpec::tp",
          .example = "8"},
         field<&P::tp>},
        {{.name = "pp",
          .other_names = {"pipeline_model_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--pipeline-model-parallel-size",
          .meaning = "pipeline stages",
          .lands = "ParallelSpec::pp",
          .example = "1"},
         field<&P::pp>},
        {{.name = "dp",
          .fallback = "gpus / (tp x pp x cp)",
          .min = 1,
          .max = 1 << 24,
          .meaning = "data-parallel size",
          .lands = "ParallelSpec::dp",
          .example = "1"},
         field<&P::dp>},
        {{.name = "cp",
          .other_names = {"context_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--context-parallel-size",
          .meaning = "context-parallel size: each sequence split over cp GPUs",
          .lands = "ParallelSpec::cp",
          .example = "1"},
         field<&P::cp>},
        {{.name = "cp_comm_type",
          .type = KeyType::choice,
          .fallback = "p2p",
          .choices = {"p2p", "all_gather"},
          .mirrors = "--cp-comm-type",
          .meaning = "context parallelism's exchange of keys and values",
          .lands = "ParallelSpec::cp_comm_type",
          .example = "p2p"},
         &set_parsed<P, &P::cp_comm_type, models::parse_cp_comm_type>},
        {{.name = "schedule",
          .other_names = {"pipeline_schedule"},
          .type = KeyType::choice,
          .fallback = "1f1b",
          .choices = {"gpipe", "1f1b", "interleaved-1f1b", "interleaved", "zb-h1", "zb-v",
                      "dualpipe"},
          .mirrors = "torchtitan's pipeline_parallel_schedule (interleaved: interleaved-1f1b)",
          .meaning = "the pipeline schedule",
          .lands = "ParallelSpec::schedule",
          .example = "1f1b"},
         +[](P& p, std::string_view s) {
             p.schedule = s == "gpipe"      ? PipelineSchedule::gpipe
                          : s == "1f1b"     ? PipelineSchedule::one_f_one_b
                          : s == "zb-h1"    ? PipelineSchedule::zb_h1
                          : s == "zb-v"     ? PipelineSchedule::zb_v
                          : s == "dualpipe" ? PipelineSchedule::dualpipe
                                            : PipelineSchedule::interleaved_1f1b;
         }},
        {{.name = "virtual_stages",
          .fallback = "1",
          .min = 1,
          .max = 1 << 10,
          .mirrors = "--num-layers-per-virtual-pipeline-stage (as a count)",
          .meaning = "model chunks per GPU, for interleaved-1f1b",
          .lands = "ParallelSpec::virtual_stages",
          .example = "1"},
         field<&P::virtual_stages>},
        {{.name = "decoder_first_pipeline_num_layers",
          .fallback = "an even split",
          .min = 0,
          .max = 1 << 20,
          .mirrors = "--decoder-first-pipeline-num-layers",
          .meaning = "layers of the first pipeline rank (the rest split evenly)",
          .lands = "ParallelSpec::split.first_stage_layers",
          .example = "15",
          .group = "split",
          .commented = true},
         +[](P& p) -> int& { return p.split.first_stage_layers; }},
        {{.name = "decoder_last_pipeline_num_layers",
          .fallback = "an even split",
          .min = 0,
          .max = 1 << 20,
          .mirrors = "--decoder-last-pipeline-num-layers",
          .meaning = "layers of the last pipeline rank",
          .lands = "ParallelSpec::split.last_stage_layers",
          .example = "15",
          .group = "split",
          .commented = true},
         +[](P& p) -> int& { return p.split.last_stage_layers; }},
        {{.name = "account_for_embedding_in_pipeline_split",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--account-for-embedding-in-pipeline-split",
          .meaning = "the embedding counts as a layer of an even split",
          .lands = "ParallelSpec::split.account_for_embedding",
          .example = "false",
          .group = "split"},
         +[](P& p) -> bool& { return p.split.account_for_embedding; }},
        {{.name = "account_for_loss_in_pipeline_split",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--account-for-loss-in-pipeline-split",
          .meaning = "the loss counts as a layer of an even split",
          .lands = "ParallelSpec::split.account_for_loss",
          .example = "false",
          .group = "split"},
         +[](P& p) -> bool& { return p.split.account_for_loss; }},
        {{.name = "pipeline_model_parallel_layout",
          .type = KeyType::text,
          .fallback = "none",
          .mirrors = "--pipeline-model-parallel-layout",
          .meaning = "the split as a string: E embedding, t layer, L loss, | between stages",
          .lands = "ParallelSpec::split.layout",
          .example = "Et|(tt|)*30L",
          .group = "split",
          .commented = true},
         +[](P& p) -> std::string& { return p.split.layout; }},
        {{.name = "sequence_parallel",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--sequence-parallel",
          .meaning = "the norms and dropouts split over tp along the sequence",
          .lands = "ParallelSpec::sequence_parallel",
          .example = "true"},
         field<&P::sequence_parallel>},
        {{.name = "recompute",
          .type = KeyType::choice,
          .fallback = "none",
          .choices = {"none", "selective", "full", "auto"},
          .mirrors = "--recompute-granularity",
          .meaning = "activations recomputed in the backward (auto: chosen per layer)",
          .lands = "ParallelSpec::recompute",
          .example = "selective"},
         +[](P& p, std::string_view r) {
             p.recompute = r == "none"        ? RecomputePolicy::none
                           : r == "selective" ? RecomputePolicy::selective
                           : r == "full"      ? RecomputePolicy::full
                                              : RecomputePolicy::automatic;
         }},
        {{.name = "recompute_method",
          .type = KeyType::choice,
          .fallback = "uniform",
          .choices = {"uniform", "block"},
          .mirrors = "--recompute-method",
          .meaning = "with recompute full: every layer (uniform), or the first "
                     "recompute_num_layers of each model chunk (block)",
          .lands = "ParallelSpec::recompute_block",
          .example = "block",
          .commented = true},
         +[](P& p, std::string_view m) { p.recompute_block = m == "block"; }},
        {{.name = "recompute_num_layers",
          .fallback = "1",
          .min = 1,
          .max = 1 << 20,
          .mirrors = "--recompute-num-layers",
          .meaning = "block: the layers of each model chunk recomputed; uniform: 1 (a checkpoint "
                     "per layer)",
          .lands = "ParallelSpec::recompute_num_layers",
          .example = "4",
          .commented = true},
         field<&P::recompute_num_layers>},
        {{.name = "selective_recompute",
          .type = KeyType::choice,
          .fallback = "attention",
          .choices = {"attention", "op"},
          .mirrors = "torchtitan's selective_ac_option op",
          .meaning = "what selective recomputes: Megatron's attention, or torchtitan's op "
                     "level (tp 1)",
          .lands = "ParallelSpec::selective_op",
          .example = "attention"},
         +[](P& p, std::string_view s) { p.selective_op = s == "op"; }},
        {{.name = "recompute_modules",
          .type = KeyType::list,
          .fallback = "[core_attn]",
          .choices = {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
                      "shared_experts", "mlpwi"},
          .mirrors = "--recompute-modules",
          .meaning = "the modules Megatron's selective recompute recomputes (mlpwi, not "
                     "Megatron's: a dense MLP's input projections and activation only, as "
                     "MaxText's save_dot_except_mlp)",
          .lands = "ParallelSpec::recompute_modules",
          .example = "[core_attn]"}},
        {{.name = "inside_nvlink",
          .type = KeyType::list,
          .fallback = "[] (no constraint)",
          .choices = {"tp", "cp", "ep", "dp", "pp"},
          .meaning = "groups that must stay inside one NVLink domain (a node; an NVL72 rack): "
                     "a layout that puts one across domains is refused",
          .lands = "ParallelSpec::inside_nvlink",
          .example = "[tp, ep]",
          .commented = true}},
        {{.name = "zero",
          .fallback = "0",
          .min = 0,
          .max = 3,
          .mirrors = "DeepSpeed's ZeRO stage (--use-distributed-optimizer is 1)",
          .meaning = "ZeRO stage: 1 optimizer state, 2 and gradients, 3 and parameters sharded",
          .lands = "ParallelSpec::zero",
          .example = "0"},
         field<&P::zero>},
        {{.name = "fsdp",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtitan's FSDP2",
          .meaning = "zero 3 as PyTorch's FSDP2 runs it (its copies on the compute stream)",
          .lands = "ParallelSpec::fsdp2, zero",
          .example = "true",
          .group = "fsdp",
          .commented = true}},
        {{.name = "data_parallel_shard_degree",
          .fallback = "-1 with a replicate degree, else none",
          .min = -1,
          .max = 1 << 24,
          .mirrors = "torchtitan's data_parallel_shard_degree",
          .meaning = "FSDP2's shard group (-1: the data-parallel ranks left)",
          .lands = "ParallelSpec::dp_shard, fsdp2, zero",
          .example = "-1",
          .group = "fsdp",
          .commented = true},
         field<&P::dp_shard>},
        {{.name = "data_parallel_replicate_degree",
          .fallback = "1",
          .min = 1,
          .max = 1 << 24,
          .mirrors = "torchtitan's data_parallel_replicate_degree",
          .meaning = "HSDP: shard over dp / R, all-reduce the shards over R",
          .lands = "ParallelSpec::dp_replicate",
          .example = "1",
          .group = "fsdp",
          .commented = true},
         field<&P::dp_replicate>},
        {{.name = "overlap_grad_reduce",
          .other_names = {"dp_overlap"},
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "--overlap-grad-reduce",
          .meaning = "gradient reduction overlapped with the backward, in buckets",
          .lands = "ParallelSpec::dp_overlap",
          .example = "true"},
         field<&P::dp_overlap>},
        {{.name = "overlap_param_gather",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--overlap-param-gather",
          .meaning = "zero 1-2: the parameter all-gather overlapped with the next forward",
          .lands = "ParallelSpec::overlap_param_gather",
          .example = "false"},
         field<&P::overlap_param_gather>},
        {{.name = "tp_comm_overlap",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--tp-comm-overlap",
          .meaning = "TP all-gathers and reduce-scatters overlapped with the GEMMs "
                     "(Transformer Engine; needs sequence_parallel)",
          .lands = "ParallelSpec::tp_comm_overlap",
          .example = "false"},
         field<&P::tp_comm_overlap>},
        {{.name = "enable_async_tensor_parallel",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtitan's enable_async_tensor_parallel",
          .meaning = "tp_comm_overlap as PyTorch's async TP (symmetric memory) runs it",
          .lands = "ParallelSpec::async_tp, tp_comm_overlap",
          .example = "true",
          .commented = true},
         field<&P::async_tp>},
        {{.name = "dp_bucket",
          .type = KeyType::bytes,
          .fallback = "25MiB",
          .min = 1,
          .mirrors = "--ddp-bucket-size",
          .meaning = "bytes per gradient bucket",
          .lands = "ParallelSpec::dp_bucket",
          .example = "25MiB"},
         field<&P::dp_bucket>},
        {{.name = "pp_overlap",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--overlap-p2p-communication",
          .meaning = "pipeline sends overlap the sender's next pass",
          .lands = "ParallelSpec::pp_overlap",
          .example = "false"},
         field<&P::pp_overlap>},
        {{.name = "ep",
          .other_names = {"expert_model_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--expert-model-parallel-size",
          .meaning = "a mixture's experts spread over ep GPUs",
          .lands = "ParallelSpec::ep",
          .example = "1"},
         field<&P::ep>},
        {{.name = "etp",
          .other_names = {"expert_tensor_parallel_size"},
          .fallback = "tp",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--expert-tensor-parallel-size",
          .meaning = "each expert's matrices split over etp GPUs",
          .lands = "ParallelSpec::etp",
          .example = "8"},
         field<&P::etp>},
        {{.name = "moe_token_dispatcher",
          .type = KeyType::choice,
          .fallback = "alltoall",
          .choices = {"alltoall", "flex"},
          .mirrors = "--moe-token-dispatcher-type",
          .meaning = "alltoall: a copy per (token, expert); flex: DeepEP, a copy per "
                     "destination node across nodes, per GPU inside one",
          .lands = "ParallelSpec::flex_dispatcher",
          .example = "alltoall"},
         +[](P& p, std::string_view d) { p.flex_dispatcher = d == "flex"; }},
        {{.name = "overlap_moe_expert_parallel_comm",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--overlap-moe-expert-parallel-comm",
          .meaning = "1F1B's forward and backward of two micro-batches run together layer by "
                     "layer, each one's all-to-alls beside the other's kernels (needs ep > 1; "
                     "with pp > 1 the interleaved schedule)",
          .lands = "ParallelSpec::ep_overlap",
          .example = "false"},
         field<&P::ep_overlap>},
        {{.name = "delay_wgrad_compute",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--delay-wgrad-compute",
          .meaning = "with overlap_moe_expert_parallel_comm, the experts' weight gradients run "
                     "beside the dispatch's backward all-to-all instead of before it",
          .lands = "ParallelSpec::delay_wgrad",
          .example = "false"},
         field<&P::delay_wgrad>},
    };
    return keys;
}

template <MeshAxis A, bool Dcn>
int& mesh_size(ParallelSpec& p) {
    return (Dcn ? p.mesh.dcn : p.mesh.ici)[static_cast<std::size_t>(A)];
}

/// The ici_ and dcn_ keys of one mesh axis (MaxText's base.yml).
template <MeshAxis A>
void add_mesh_keys(std::vector<Key<ParallelSpec>>& keys, std::string_view ici, std::string_view dcn,
                   std::string_view what, std::string_view ici_fallback,
                   std::string_view dcn_fallback) {
    keys.push_back({{.name = ici,
                     .fallback = ici_fallback,
                     .min = -1,
                     .max = 1 << 24,
                     .mirrors = "MaxText's ici_*_parallelism",
                     .meaning = what,
                     .lands = "ParallelSpec::mesh.ici",
                     .example = "1",
                     .group = "mesh",
                     .commented = true},
                    &mesh_size<A, false>});
    keys.push_back({{.name = dcn,
                     .fallback = dcn_fallback,
                     .min = -1,
                     .max = 1 << 24,
                     .mirrors = "MaxText's dcn_*_parallelism",
                     .meaning = "the same across slices (GPUs: nodes), over the DCN",
                     .lands = "ParallelSpec::mesh.dcn",
                     .example = "1",
                     .group = "mesh",
                     .commented = true},
                    &mesh_size<A, true>});
}

std::vector<Key<ParallelSpec>> mesh_keys() {
    using A = MeshAxis;
    std::vector<Key<ParallelSpec>> k;
    add_mesh_keys<A::data>(k, "ici_data_parallelism", "dcn_data_parallelism",
                           "replicas of the weights in a slice, each a share of the batch", "1",
                           "-1 unless another dcn axis is -1");
    add_mesh_keys<A::pipeline>(k, "ici_pipeline_parallelism", "dcn_pipeline_parallelism",
                               "pipeline stages (MaxText's stage axis; GPipe's schedule)", "1",
                               "1");
    add_mesh_keys<A::fsdp>(k, "ici_fsdp_parallelism", "dcn_fsdp_parallelism",
                           "weights, gradients and optimizer state sharded, a share of the "
                           "batch each (ZeRO-3)",
                           "-1 unless another ici axis is -1", "1");
    add_mesh_keys<A::fsdp_transpose>(
        k, "ici_fsdp_transpose_parallelism", "dcn_fsdp_transpose_parallelism",
        "FSDP on the weights' other dimension: sharded as fsdp", "1", "1");
    add_mesh_keys<A::context>(k, "ici_context_parallelism", "dcn_context_parallelism",
                              "each sequence split (keys and values all-gathered)", "1", "1");
    add_mesh_keys<A::tensor>(k, "ici_tensor_parallelism", "dcn_tensor_parallelism",
                             "heads and MLP split, activations sharded between layers (tensor "
                             "parallelism with sequence parallelism's collectives)",
                             "1", "1");
    add_mesh_keys<A::tensor_sequence>(k, "ici_tensor_sequence_parallelism",
                                      "dcn_tensor_sequence_parallelism",
                                      "tensor parallelism with the norms split along the "
                                      "sequence: counted into tp",
                                      "1", "1");
    add_mesh_keys<A::expert>(k, "ici_expert_parallelism", "dcn_expert_parallelism",
                             "a mixture's experts spread (ep), a share of the batch each", "1",
                             "1");
    return k;
}

} // namespace

const std::vector<Key<ParallelSpec>>& parallel_keys() {
    static const std::vector<Key<ParallelSpec>> keys = [] {
        std::vector<Key<ParallelSpec>> k = core_parallel_keys();
        for (auto& m : mesh_keys())
            k.push_back(std::move(m));
        return k;
    }();
    return keys;
}

const std::vector<config::KeySection>& experiment_sections() {
    static const std::vector<config::KeySection> sections{
        config::section_of("",
                           "The experiment: a cluster, a model, how it is trained and how "
                           "it is split.",
                           top_level_keys()),
        config::section_of("model",
                           "The model (`model:`): a preset or a mapping; a mapping may "
                           "`extends:` a preset and change any key.",
                           models::model_keys(),
                           {{"mla", "Multi-head latent attention (DeepSeek-V3; needs attention: "
                                    "flash) [--multi-latent-attention]"},
                            {"moe", "A mixture of experts (Megatron-Core's names; model: "
                                    "mixtral-8x7B, deepseek-v3)"}}),
        config::section_of("training", "How it is trained (`training:`).", training_keys(),
                           {{"fusions", "Elementwise chains fused (Megatron-Core's "
                                        "TransformerConfig knobs) or eager PyTorch, one kernel "
                                        "per op as torchtitan's Llama block writes them"},
                            {"lora", "LoRA fine-tuning (Megatron-Bridge's PEFT LoRA config, "
                                     "peft/lora.py; Hu et al. 2021)"},
                            {"maxtext", "MaxText's names (with parallel's mesh keys)"}}),
        config::section_of("parallel", "How it is split over the GPUs (`parallel:`).",
                           parallel_keys(),
                           {{"split", "Uneven pipeline splits (Megatron-Core's arguments; "
                                      "layer_assignment.h)"},
                            {"fsdp", "FSDP2 and HSDP (torchtitan's names): zero 3 as PyTorch's "
                                     "FSDP2 runs it"},
                            {"mesh", "MaxText's device mesh (its names; -1: the devices "
                                     "left), instead of the sizes above"}}),
    };
    return sections;
}

std::vector<std::string> experiment_key_paths() {
    std::set<std::string> keys;
    for (const config::KeySection& section : experiment_sections()) {
        const std::string prefix = section.path.empty() ? "" : std::string(section.path) + ".";
        for (const config::KeyInfo* k : section.keys) {
            // A section that only ever is a mapping takes no single value.
            if (k->name != "model" && experiment_section(k->name) != nullptr)
                continue;
            keys.insert(prefix + std::string(k->name));
            for (std::string_view other : k->other_names)
                keys.insert(prefix + std::string(other));
        }
    }
    return {keys.begin(), keys.end()};
}

const config::KeySection* experiment_section(std::string_view path) {
    for (const auto& s : experiment_sections()) {
        if (s.path == path)
            return &s;
    }
    return nullptr;
}

} // namespace clustersim::strategies::parallel
