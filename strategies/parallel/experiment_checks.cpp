// An experiment's checks (validate_experiment, experiment_error): each refusal names the key
// the fix would change, with what the tool it mirrors (Megatron-Core, torchtitan, MaxText)
// would say. Moved from experiment.cpp, which reads the file.
#include "strategies/parallel/experiment.h"

#include "base/error.h"
#include "strategies/parallel/device_mesh.h"
#include "strategies/parallel/ep_overlap.h"
#include "strategies/parallel/framework_profile.h"
#include "strategies/parallel/nvlink_domains.h"
#include "strategies/parallel/precision.h"
#include "strategies/parallel/torchtune_features.h"

#include <fmt/format.h>

namespace clustersim::strategies::parallel {

namespace {

/// What a check of experiment_error gives when it refuses: [[nodiscard]], so that a check that
/// calls fail(...) and forgets to return it breaks the build (-Werror) instead of letting the
/// configuration through; it becomes the returned error.
struct [[nodiscard]] Refusal {
    InputError error;
    operator std::optional<InputError>() && { return std::move(error); }
};

/// Expert parallelism's rules: Megatron-LM's argument checks (megatron/training/arguments.py:
/// num_experts set and divisible by expert_model_parallel_size), Megatron-Core's group sizes
/// (megatron/core/parallel_state.py, initialize_model_parallel: the world divisible by
/// etp x ep x pp, the expert-data-parallel size the quotient), and its MoE layer's refusal of
/// tensor parallelism without sequence parallelism in training
/// (megatron/core/transformer/moe/moe_layer.py).
template <typename Fail>
std::optional<InputError> validate_expert_parallel(const ExperimentSpec& e, Fail fail) {
    const ParallelSpec& p = e.parallel;
    const models::ModelSpec& m = e.model;
    if (!m.is_moe()) {
        // etp has nothing to split in a dense model and is ignored, as in Megatron-Core.
        if (p.ep > 1)
            return fail("ep " + std::to_string(p.ep) + " needs a model with experts, but '" +
                            m.name +
                            "' is dense (num_experts 0); set ep: 1, or choose a mixture of experts",
                        "parallel.ep");
        return std::nullopt;
    }
    if (!p.expert_layout())
        return std::nullopt;
    if (m.num_experts % p.ep != 0) {
        std::string fits;
        for (int k = 1; k <= m.num_experts; ++k) {
            if (m.num_experts % k == 0)
                fits += (fits.empty() ? "" : ", ") + std::to_string(k);
        }
        return fail("ep " + std::to_string(p.ep) + " does not divide the model's " +
                        std::to_string(m.num_experts) + " experts; choose ep from " + fits,
                    "parallel.ep");
    }
    const int etp = p.expert_tp();
    if (m.moe_ffn_hidden_size % etp != 0)
        return fail("etp " + std::to_string(etp) +
                        " does not divide the experts' moe_ffn_hidden_size " +
                        std::to_string(m.moe_ffn_hidden_size) + "; choose etp dividing it",
                    p.etp > 0 ? "parallel.etp" : "parallel.tp");
    const std::int64_t dense = std::int64_t{p.tp} * p.cp * p.dp;
    const std::int64_t expert = std::int64_t{etp} * p.ep;
    if (dense % expert != 0)
        return fail(
            "etp " + std::to_string(etp) + " x ep " + std::to_string(p.ep) + " = " +
                std::to_string(expert) + " does not divide tp " + std::to_string(p.tp) +
                (p.cp > 1 ? " x cp " + std::to_string(p.cp) : std::string()) + " x dp " +
                std::to_string(p.dp) + " = " + std::to_string(dense) +
                " GPUs per pipeline stage, so the expert-data-parallel size (tp x cp x dp) / "
                "(etp x ep) is not whole (Megatron-Core's rule); choose ep dividing " +
                std::to_string(dense / etp),
            "parallel.ep");
    if (p.tp > 1 && !p.sequence_parallel && !e.training.forward_only)
        return fail("expert parallelism (ep " + std::to_string(p.ep) + ", etp " +
                        std::to_string(etp) + ") with tp " + std::to_string(p.tp) +
                        " needs sequence_parallel: true (Megatron-Core's MoE layer refuses tensor "
                        "parallelism without it in training); set it, or tp: 1",
                    "parallel.sequence_parallel");
    // ZeRO-3 with experts laid out apart as FSDP2 runs it under torchtitan: the routed experts
    // sharded and gathered over the expert-data-parallel group (its efsdp, dp_shard x cp x tp /
    // ep; param_gathers.h), the rest over the data-parallel shard group. DeepSpeed's ZeRO-3
    // with its MoE is not modelled, nor hybrid sharding's replicas of the experts' shards.
    if (p.zero >= 3 && !p.fsdp2)
        return fail("ZeRO-3 with expert parallelism is modelled as FSDP2 shards the experts "
                    "(torchtitan's efsdp group); set parallel.fsdp: true with etp: 1, or zero: 1 "
                    "(Megatron-Core's distributed optimizer)",
                    "parallel.zero");
    // torchtitan splits no expert over the tensor-parallel ranks: its sparse mesh is (pp,
    // dp_replicate, efsdp, ep) with efsdp = dp_shard x cp x tp / ep (torchtitan/distributed/
    // parallel_dims.py at b5bcd76c6).
    if (p.zero >= 3 && etp != 1)
        return fail("FSDP2 with expert parallelism (torchtitan) splits no expert over tensor-"
                    "parallel ranks (etp " +
                        std::to_string(etp) + "); set etp: 1",
                    p.etp > 0 ? "parallel.etp" : "parallel.tp");
    if (p.zero >= 3 && p.dp_replicate > 1)
        return fail("hybrid sharding (data_parallel_replicate_degree " +
                        std::to_string(p.dp_replicate) +
                        ") with expert parallelism is not modelled: the experts' shards would "
                        "be replicated over the replicate groups; set "
                        "data_parallel_replicate_degree: 1",
                    "parallel.data_parallel_replicate_degree");
    return std::nullopt;
}

/// Builds the refusals of an experiment's checks: each names the key the fix would change
/// (load_experiment points at its line). Returned, not thrown: a sweep meets many invalid
/// configurations, and unwinding a throw through the checks cost more than the checks
/// (~76,000 instructions a configuration).
struct Refuse {
    const ExperimentSpec& e;
    Refusal operator()(const std::string& what, const char* key) const {
        return Refusal{
            InputError(SourceLocation{e.file, 0, 0, key}, what, InputError::KeyShown::no)};
    }
};

/// What LoRA (training.peft: lora) asks of the run: a backward, a dense transformer with the
/// targeted linears, unsharded frozen weights, and a rank the tensor-parallel size divides
/// (Megatron-Bridge's adapters split linear_in or linear_out over the tensor-parallel ranks:
/// a column-parallel linear_in of dim outputs, which Megatron-Core requires tp to divide).
std::optional<InputError> lora_error(const ExperimentSpec& e) {
    const Refuse fail{e};
    const models::Lora& l = e.training.lora;
    if (!l.on())
        return std::nullopt;
    if (e.training.forward_only)
        return fail("peft: lora fine-tunes (a backward and an optimizer step); forward_only: true "
                    "runs neither: leave one of them out",
                    "training.peft");
    if (!e.model.is_transformer() || e.model.is_moe())
        return fail("peft: lora is modelled for dense transformers; model '" + e.model.name +
                        "' is " + (e.model.is_moe() ? "a mixture of experts" : "not a transformer"),
                    "training.peft");
    if (e.model.is_mla() && (l.targets & models::lora_bit(models::LoraTarget::linear_qkv)) != 0)
        return fail("linear_qkv: model '" + e.model.name +
                        "' has multi-head latent attention, no fused QKV projection; choose "
                        "from linear_proj, linear_fc1, linear_fc2",
                    "training.lora_target_modules");
    if (e.parallel.zero > 0)
        return fail("peft: lora with ZeRO or FSDP (zero " + std::to_string(e.parallel.zero) +
                        ") is not modelled: the frozen base weights are held whole; set zero: 0",
                    "parallel.zero");
    if (l.dim % e.parallel.tp != 0)
        return fail("lora_dim " + std::to_string(l.dim) + " is not a multiple of tp " +
                        std::to_string(e.parallel.tp) +
                        " (the adapters' rank is split over the tensor-parallel ranks)",
                    "training.lora_dim");
    return std::nullopt;
}

/// The layer scopes of a per-layer CUDA graph against the model's layers and the recompute, as
/// Megatron-Core checks them (transformer_config.py __post_init__, core_v0.17.1 and
/// d98e8a64dd).
std::optional<InputError> cuda_graph_model_error(const ExperimentSpec& e) {
    const Refuse fail{e};
    const TrainingSpec& t = e.training;
    if (t.cuda_graph_impl != CudaGraphImpl::local &&
        t.cuda_graph_impl != CudaGraphImpl::transformer_engine)
        return std::nullopt;
    const auto has = [&](GraphScope s) { return (t.cuda_graph_scope & graph_bit(s)) != 0; };
    if (!e.model.is_moe() && (has(GraphScope::moe) || has(GraphScope::moe_router)))
        return fail("cuda_graph_scope " + std::string(has(GraphScope::moe) ? "moe" : "moe_router") +
                        " captures a mixture of experts; model '" + e.model.name +
                        "' has none (Megatron-Core: \"moe cuda graph is only supported for "
                        "MoE\"): use attn and mlp",
                    "training.cuda_graph_scope");
    if (e.model.is_moe() && e.model.moe_layers() == e.model.layers && has(GraphScope::mlp))
        return fail("cuda_graph_scope mlp captures a dense layer's MLP; every layer of model '" +
                        e.model.name +
                        "' has experts (Megatron-Core: \"mlp cuda graph is only supported for "
                        "dense layers\"): use moe or moe_router",
                    "training.cuda_graph_scope");
    // recompute: auto chooses full recompute for some layers where memory asks for it.
    if (e.parallel.recompute == RecomputePolicy::full ||
        e.parallel.recompute == RecomputePolicy::automatic)
        return fail("cuda_graph_impl " + std::string(to_string(t.cuda_graph_impl)) +
                        " captures layers that full recompute reruns (Megatron-Core: \"full "
                        "recompute is only supported with full iteration CUDA graph\")" +
                        (e.parallel.recompute == RecomputePolicy::automatic
                             ? ", and recompute: auto may choose it"
                             : "") +
                        ": use recompute: selective or none, or cuda_graph_impl: full_iteration",
                    "training.cuda_graph_impl");
    if (t.cuda_graph_impl == CudaGraphImpl::transformer_engine &&
        e.parallel.recompute == RecomputePolicy::selective && has(GraphScope::moe_router) &&
        (e.parallel.recompute_modules & models::recompute_bit(models::RecomputeModule::moe)) != 0)
        return fail("recompute_modules moe reruns the whole MoE block, of which cuda_graph_scope "
                    "moe_router captures a part under cuda_graph_impl transformer_engine "
                    "(Megatron-Core: \"moe recompute is not supported with moe_router CUDA "
                    "graph\"): drop moe from recompute_modules (moe_act recomputes the experts' "
                    "activation), or the moe_router scope",
                    "parallel.recompute_modules");
    return std::nullopt;
}

/// The flex dispatcher's SM count on its backend (ParallelSpec::deepep_sms, hybridep_sms; the
/// other backend's is not read, as Megatron-Core hands each to its own): DeepEP's
/// Buffer.set_num_sms asserts "The SM count must be even" (deep_ep/buffer.py at
/// deepseek-ai/DeepEP@34152ae28f80bcc3ee38d7a12cb2ad87cfd4ea72); HybridEP's Configurer asserts
/// the GPU's SM count >= the dispatch's and the combine's (csrc/hybrid_ep/config.cuh).
std::optional<InputError> flex_sms_error(const ExperimentSpec& e) {
    const Refuse fail{e};
    const ParallelSpec& p = e.parallel;
    if (!p.flex_dispatcher)
        return std::nullopt;
    // The key, and its name in the parallel: section for the message.
    const auto [key, name] =
        p.hybridep ? std::pair{"parallel.moe_hybridep_num_sms", "moe_hybridep_num_sms"}
                   : std::pair{"parallel.moe_deepep_num_sms", "moe_deepep_num_sms"};
    const int sms = p.hybridep ? p.hybridep_sms : p.deepep_sms;
    if (!p.hybridep && sms % 2 != 0)
        return fail(std::string(name) + " " + std::to_string(sms) +
                        ": DeepEP runs two SMs per channel and refuses an odd count; give an "
                        "even one",
                    key);
    const int gpu_sms = e.cluster.node.gpu.sm_count;
    if (sms > gpu_sms)
        return fail(std::string(name) + " " + std::to_string(sms) + ": the GPU has " +
                        std::to_string(gpu_sms) + " SMs; give at most that many",
                    key);
    return std::nullopt;
}

/// What the recompute, the token dispatcher and context parallelism ask of the model.
std::optional<InputError> model_feature_error(const ExperimentSpec& e) {
    const Refuse fail{e};
    const ParallelSpec& p = e.parallel;
    if (p.selective_op && (e.model.is_moe() || e.model.is_mla()))
        return fail("selective_recompute: op is torchtitan's policy for dense layers with standard "
                    "attention; model '" +
                        e.model.name + "' has " +
                        (e.model.is_moe() ? "experts" : "multi-head latent attention") +
                        ": use selective_recompute: attention",
                    "parallel.selective_recompute");
    if (p.recompute_block && p.recompute != RecomputePolicy::full)
        return fail("recompute_method: block recomputes whole layers; it applies to recompute: "
                    "full (set it, or remove recompute_method)",
                    "parallel.recompute_method");
    if (!p.recompute_block && p.recompute_num_layers != 1)
        return fail("recompute_num_layers " + std::to_string(p.recompute_num_layers) +
                        " with recompute_method uniform checkpoints groups of layers, which is "
                        "not modelled: use 1 (a checkpoint per layer), or recompute_method: block "
                        "(the first layers of each model chunk)",
                    "parallel.recompute_num_layers");
    // Megatron-Core refuses mla_up_proj without latent attention and moe_act without grouped
    // experts (transformer_config.py); the modules a model does not have are refused alike
    // rather than silently recomputing nothing.
    const auto module = [&](models::RecomputeModule m) {
        return (p.recompute_modules & models::recompute_bit(m)) != 0;
    };
    if (p.recompute == RecomputePolicy::selective) {
        if (module(models::RecomputeModule::mla_up_proj) && !e.model.is_mla())
            return fail(
                "recompute_modules: mla_up_proj recomputes latent attention's up projections; "
                "model '" +
                    e.model.name + "' has no multi-head latent attention: leave it out",
                "parallel.recompute_modules");
        for (auto m : {models::RecomputeModule::moe_act, models::RecomputeModule::moe,
                       models::RecomputeModule::shared_experts}) {
            if (module(m) && !e.model.is_moe())
                return fail("recompute_modules: " + std::string(models::to_string(m)) +
                                " recomputes a mixture of experts; model '" + e.model.name +
                                "' has none: leave it out",
                            "parallel.recompute_modules");
        }
        if (module(models::RecomputeModule::mlp) && e.model.is_moe() &&
            e.model.moe_layers() == e.model.layers)
            return fail(
                "recompute_modules: mlp recomputes a dense layer's MLP; every layer of model '" +
                    e.model.name + "' has experts: use moe (or moe_act, shared_experts)",
                "parallel.recompute_modules");
        if (module(models::RecomputeModule::shared_experts) &&
            e.model.moe_shared_expert_intermediate_size == 0)
            return fail("recompute_modules: shared_experts, but model '" + e.model.name +
                            "' has no shared experts: leave it out",
                        "parallel.recompute_modules");
    }
    if (p.flex_dispatcher && !e.model.is_moe())
        return fail("moe_token_dispatcher: flex dispatches tokens to experts; model '" +
                        e.model.name + "' has none: leave the key out",
                    "parallel.moe_token_dispatcher");
    if (auto err = flex_sms_error(e))
        return err;
    if (const auto refusal = ep_overlap_refusal(p))
        return fail(refusal->first, refusal->second);
    // transformer_config.py (__post_init__, d98e8a64dd): "MTP supports at most one layer when
    // enabling overlap_moe_expert_parallel_comm" (core_v0.17.1 asserts the same in other
    // words).
    if (p.ep_overlap && e.model.mtp_num_layers > 1)
        return fail("overlap_moe_expert_parallel_comm with " +
                        std::to_string(e.model.mtp_num_layers) +
                        " multi-token prediction layers: Megatron-Core supports at most one "
                        "beside the overlap; set mtp_num_layers to 1 or leave the overlap out",
                    "parallel.overlap_moe_expert_parallel_comm");
    if (auto err = cuda_graph_model_error(e))
        return err;
    if (p.cp > 1) {
        try {
            models::check_context_parallel(e.model, p.cp, p.tp, p.sequence_parallel);
        } catch (const InputError& err) {
            return fail(err.what(), "parallel.cp");
        }
    }
    return std::nullopt;
}

/// The GPU count against tp x pp x cp x dp (dp derived where it is not given) and torchtitan's
/// replicate and shard degrees.
std::optional<InputError> layout_error(ExperimentSpec& e) {
    const Refuse fail{e};
    ParallelSpec& p = e.parallel;
    // The context-parallel size multiplies tp x pp wherever the GPU count is split (it is 1,
    // and the messages are as before, without context parallelism).
    const int tp_pp = p.tp * p.pp * p.cp;
    const std::string cp_text = p.cp > 1 ? " x cp " + std::to_string(p.cp) : std::string();
    const std::string tp_pp_name = p.cp > 1 ? "tp x pp x cp" : "tp x pp";
    if (p.dp == 0) {
        if (e.gpus % tp_pp != 0)
            return fail("tp " + std::to_string(p.tp) + " x pp " + std::to_string(p.pp) + cp_text +
                            " = " + std::to_string(tp_pp) + " does not divide the " +
                            std::to_string(e.gpus) + " GPUs; choose " +
                            (p.cp > 1 ? "tp, pp and cp" : "tp and pp") +
                            " whose product divides the GPU count",
                        p.cp > 1   ? "parallel.cp"
                        : p.pp > 1 ? "parallel.pp"
                                   : "parallel.tp");
        p.dp = e.gpus / tp_pp;
    }
    // torchtitan's ParallelDims._validate: dp_replicate x dp_shard = the data-parallel ranks.
    if (p.dp % p.dp_replicate != 0)
        return fail("data_parallel_replicate_degree " + std::to_string(p.dp_replicate) +
                        " does not divide the data-parallel size " + std::to_string(p.dp) +
                        "; choose a replicate degree dividing " + std::to_string(p.dp),
                    "parallel.data_parallel_replicate_degree");
    if (p.dp_shard > 0 && static_cast<std::int64_t>(p.dp_shard) * p.dp_replicate != p.dp)
        return fail("data_parallel_shard_degree " + std::to_string(p.dp_shard) +
                        " x data_parallel_replicate_degree " + std::to_string(p.dp_replicate) +
                        " = " + std::to_string(std::int64_t{p.dp_shard} * p.dp_replicate) +
                        ", not the data-parallel size " + std::to_string(p.dp) + "; use -1 or " +
                        std::to_string(p.dp / p.dp_replicate),
                    "parallel.data_parallel_shard_degree");
    // Replicas of unsharded weights (shard degree 1) are plain data parallelism (torchtitan's
    // DDP): nothing differs from one data-parallel group.
    if (p.dp_replicate > 1 && p.zero != 3 && p.dp_shard_size() == 1) {
        p.dp_replicate = 1;
        p.dp_shard = 0;
    }
    if (p.dp_replicate > 1 && p.zero != 3)
        return fail("data_parallel_replicate_degree " + std::to_string(p.dp_replicate) +
                        " with a shard degree of " + std::to_string(p.dp_shard_size()) +
                        " is hybrid sharding (FSDP2): it needs zero: 3; set zero: 3, or "
                        "data_parallel_replicate_degree: 1",
                    "parallel.data_parallel_replicate_degree");
    if (static_cast<std::int64_t>(tp_pp) * p.dp != e.gpus)
        return fail("tp " + std::to_string(p.tp) + " x pp " + std::to_string(p.pp) + cp_text +
                        " x dp " + std::to_string(p.dp) + " = " +
                        std::to_string(std::int64_t{tp_pp} * p.dp) +
                        " GPUs, but the experiment has " + std::to_string(e.gpus) +
                        "; set gpus: " + std::to_string(std::int64_t{tp_pp} * p.dp) +
                        (e.gpus % tp_pp == 0
                             ? " or dp: " + std::to_string(e.gpus / tp_pp)
                             : " (no dp fits " + std::to_string(e.gpus) + " GPUs: " + tp_pp_name +
                                   " = " + std::to_string(tp_pp) + " does not divide it)"),
                    "parallel.dp");
    return std::nullopt;
}

/// Tensor parallelism against the model's heads and widths.
std::optional<InputError> tensor_split_error(const ExperimentSpec& e) {
    const Refuse fail{e};
    const ParallelSpec& p = e.parallel;
    const models::ModelSpec& m = e.model;
    if (m.is_transformer()) {
        if (m.heads % p.tp != 0)
            return fail("the model's " + std::to_string(m.heads) +
                            " attention heads are not divisible by tp " + std::to_string(p.tp) +
                            "; choose tp dividing " + std::to_string(m.heads),
                        "parallel.tp");
        if (m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0)
            return fail("the model's " + std::to_string(m.kv_heads) +
                            " key/value heads do not split over tp " + std::to_string(p.tp),
                        "parallel.tp");
        if (m.ffn % p.tp != 0)
            return fail("the model's ffn " + std::to_string(m.ffn) + " is not divisible by tp " +
                            std::to_string(p.tp),
                        "parallel.tp");
    } else if (m.hidden % p.tp != 0) {
        return fail("the MLP's dim " + std::to_string(m.hidden) + " is not divisible by tp " +
                        std::to_string(p.tp),
                    "parallel.tp");
    }
    return std::nullopt;
}

/// The pipeline schedule, its chunks and the layers of each stage (e.stage_layers).
std::optional<InputError> pipeline_error(ExperimentSpec& e) {
    const Refuse fail{e};
    // DeepSpeed's engine without its PipelineEngine runs bf16 only under ZeRO from v0.6.2 to
    // v0.7.4 (deepspeed/runtime/engine.py, _configure_distributed_model at v0.7.0: "When not
    // running ZeRO, BF16 training support is only supported for Pipeline parallelism"), the
    // releases of the 2021-22 stacks its profile models; v0.7.5 runs it (microsoft/DeepSpeed
    // ee39187d8, "Make bf16_optimizer work for non pipeline").
    if (e.framework.grad_accumulation == GradAccumulation::deepspeed &&
        !e.framework.deepspeed_pipeline && e.training.dtype == hardware::Dtype::bf16 &&
        e.parallel.zero == 0)
        return fail("bf16 without ZeRO runs on DeepSpeed's engine only under its PipelineEngine "
                    "(DeepSpeed v0.6.2-v0.7.4 raise NotImplementedError); set zero: 1, "
                    "pipeline_engine: deepspeed in the framework, or fp16",
                    "parallel.zero");
    // BF16_Optimizer (precision.h) always keeps fp32 master weights and optimizer state, and
    // its gradient reduction refuses a model with DeepSpeed's MoE layers
    // (DeepSpeedEngine.buffered_allreduce_fallback with grads given: `assert not
    // self.has_moe_layers`, deepspeed/runtime/engine.py at v0.7.0).
    if (detail::bf16_optimizer(e) && !e.training.master_weights)
        return fail("DeepSpeed's BF16_Optimizer (bf16 without ZeRO) keeps fp32 master weights "
                    "and optimizer state; remove master_weights: false",
                    "training.master_weights");
    if (detail::bf16_optimizer(e) && e.model.is_moe() && e.parallel.expert_layout())
        return fail("DeepSpeed's BF16_Optimizer (bf16 without ZeRO) does not reduce the "
                    "gradients of expert-parallel layers (v0.7.0 asserts no MoE layers); set "
                    "training.dtype: fp16",
                    "training.dtype");
    // DeepSpeed's PipelineEngine (FrameworkSpec::deepspeed_pipeline) runs TrainSchedule, a
    // 1F1B, and no other (deepspeed/runtime/pipe/engine.py, train_batch); it turns the
    // backward's gradient all-reduce off and reduces after the last step's backward
    // (ReduceGrads), whatever the experiment asks.
    if (e.framework.deepspeed_pipeline) {
        if (e.parallel.pp > 1 && e.parallel.schedule != PipelineSchedule::one_f_one_b)
            return fail("schedule " + std::string(to_string(e.parallel.schedule)) +
                            " is not one DeepSpeed's PipelineEngine runs (framework " +
                            (e.framework.profile ? std::string(to_string(*e.framework.profile))
                                                 : std::string("pipeline_engine deepspeed")) +
                            "): it has one, TrainSchedule's 1F1B; set schedule: 1f1b, or a "
                            "Megatron stack (training.framework: megatron-lm)",
                        e.parallel.schedule_key.data());
        // The engine refuses ZeRO stages 2 and 3 (deepspeed/runtime/pipe/engine.py,
        // PipelineEngine.__init__: `assert self.zero_optimization_stage() < 2`, at
        // microsoft/DeepSpeed@5fe9d61065), at every pipeline size: it runs whenever the model
        // is a PipelineModule (Megatron-DeepSpeed's GPTModelPipe unless
        // --no-pipeline-parallel), one stage too.
        if (e.parallel.zero >= 2)
            return fail("ZeRO stage " + std::to_string(e.parallel.zero) +
                            " does not run under DeepSpeed's PipelineEngine (it asserts stage "
                            "< 2, at every pipeline size); set zero: 0 or 1, pipeline_engine: "
                            "megatron in the framework (--no-pipeline-parallel), or a Megatron "
                            "stack (training.framework: megatron-lm)",
                        "parallel.zero");
        // Its gradient reduction under bf16 runs BF16_Optimizer's (ZeRO off) and raises
        // NotImplementedError under ZeRO-1 (PipelineEngine._exec_reduce_grads, "only bf16 +
        // z1 are supported", from microsoft/DeepSpeed 56c522386, v0.6.2, until dcb4a7d66,
        // v0.9.2, "Add ZeRO 1 support to PP for BF16").
        // The engine runs at every pipeline size under the profile (Megatron-DeepSpeed's
        // GPTModelPipe unless --no-pipeline-parallel), so pp 1 too.
        if (e.parallel.zero == 1 && e.training.dtype == hardware::Dtype::bf16)
            return fail("bf16 with ZeRO-1 does not run under DeepSpeed's PipelineEngine of "
                        "v0.6.2-v0.9.1 (its gradient reduction raises NotImplementedError); set "
                        "zero: 0 (BF16_Optimizer shards the fp32 state itself), or "
                        "training.dtype: fp16",
                        "parallel.zero");
        e.parallel.dp_overlap = false;
    }
    const ParallelSpec& p = e.parallel;
    const models::ModelSpec& m = e.model;
    if (p.schedule != PipelineSchedule::interleaved_1f1b && p.virtual_stages != 1)
        return fail(
            "virtual_stages " + std::to_string(p.virtual_stages) +
                " needs schedule: interleaved-1f1b" +
                (p.schedule == PipelineSchedule::zb_v || p.schedule == PipelineSchedule::dualpipe
                     ? std::string(" (") + std::string(to_string(p.schedule)) +
                           " always runs two chunks per GPU; remove virtual_stages)"
                     : std::string()),
            "parallel.virtual_stages");
    if (p.schedule == PipelineSchedule::interleaved_1f1b && p.virtual_stages < 2)
        return fail("schedule interleaved-1f1b needs virtual_stages >= 2",
                    "parallel.virtual_stages");
    // DualPipe.step's assertions (github.com/deepseek-ai/DualPipe, dualpipe/dualpipe.py): an
    // even number of pipeline ranks, and micro-batches even and at least twice the ranks.
    if (p.schedule == PipelineSchedule::dualpipe && p.pp % 2 != 0)
        return fail(
            "schedule dualpipe needs an even pp (it runs the pipeline from both ends, half the "
            "micro-batches each way), got pp " +
                std::to_string(p.pp) + "; use pp " + std::to_string(p.pp + 1) +
                (p.pp > 1 ? " or " + std::to_string(p.pp - 1) : std::string()) +
                ", or schedule zb-v",
            "parallel.pp");
    const int stages = p.pp * chunks_per_rank(p.schedule, p.virtual_stages) /
                       (p.schedule == PipelineSchedule::dualpipe ? 2 : 1);
    if (!p.split.given() && m.layers % stages != 0)
        return fail(
            "the model's " + std::to_string(m.layers) + " layers are not divisible by pp " +
                std::to_string(p.pp) +
                (p.virtual_stages > 1 ? " x virtual_stages " + std::to_string(p.virtual_stages) +
                                            " = " + std::to_string(stages)
                 : p.schedule == PipelineSchedule::zb_v
                     ? " x 2 chunks of zb-v = " + std::to_string(stages)
                     : std::string()) +
                "; choose a divisor of " + std::to_string(m.layers) +
                ", or split unevenly (decoder_first/last_pipeline_num_layers, "
                "account_for_embedding/loss_in_pipeline_split, pipeline_model_parallel_layout)",
            "parallel.pp");
    {
        const Placement placement = placement_of(p.schedule);
        // Megatron-Core's first/last-stage counts name its looped pipeline's first and last
        // ranks; a V or bidirectional placement holds the model's ends on one rank, where
        // they have no meaning: a layout string says such a split exactly.
        for (const auto& [given, key] :
             {std::pair{p.split.first_stage_layers, "parallel.decoder_first_pipeline_num_layers"},
              std::pair{p.split.last_stage_layers, "parallel.decoder_last_pipeline_num_layers"}})
            if (given >= 0 && placement != Placement::looped)
                return fail(
                    std::string(key).substr(9) + " splits Megatron-Core's looped pipeline; " +
                        std::string(to_string(p.schedule)) +
                        " places each rank's chunks in a V or both directions: give the split "
                        "as pipeline_model_parallel_layout instead",
                    key);
        const int P = p.pp;
        StageGrid grid{P, stages, [placement, P](int chunk, int rank) {
                           if (placement == Placement::looped)
                               return chunk * P + rank;
                           if (placement == Placement::bidirectional)
                               return rank;
                           return chunk == 0 ? rank : 2 * P - 1 - rank;
                       }};
        // assign_layers reports through a callback that must not return: thrown there (an
        // uneven split's error, rare in a sweep) and returned here.
        try {
            e.stage_layers = assign_layers(
                m.layers, p.split, grid,
                [&](const std::string& what, const char* key) { throw fail(what, key).error; },
                m.mtp_num_layers);
        } catch (const InputError& err) {
            return err;
        }
    }
    return std::nullopt;
}

/// The batch against the micro-batch, dp and the schedule's rules, and the dtype against the
/// GPU.
std::optional<InputError> batch_error(const ExperimentSpec& e) {
    const Refuse fail{e};
    const ParallelSpec& p = e.parallel;
    const std::int64_t per_step = std::int64_t{e.training.micro_batch} * p.dp;
    if (e.training.global_batch % per_step != 0)
        return fail("global_batch " + std::to_string(e.training.global_batch) +
                        " is not divisible by micro_batch " +
                        std::to_string(e.training.micro_batch) + " x dp " + std::to_string(p.dp) +
                        " = " + std::to_string(per_step) + "; use a multiple of " +
                        std::to_string(per_step),
                    "training.global_batch");
    // A schedule holds a pass per micro-batch, chunk and direction on every stage, so the
    // micro-batches per pipeline are bounded where the schedule still fits in memory: 2^16,
    // far above the hundreds to thousands a training run uses (2^30 was bad_alloc at once,
    // 2^40 overflowed the int count).
    constexpr std::int64_t kMaxMicroBatches = std::int64_t{1} << 16;
    if (e.training.global_batch / per_step > kMaxMicroBatches)
        return fail("global_batch " + std::to_string(e.training.global_batch) + " is " +
                        std::to_string(e.training.global_batch / per_step) +
                        " micro-batches per pipeline (global_batch / (micro_batch x dp)), more "
                        "than the " +
                        std::to_string(kMaxMicroBatches) +
                        " a schedule holds; use a larger micro_batch or a smaller global_batch",
                    "training.global_batch");
    const int mb = e.micro_batches();
    if (p.schedule == PipelineSchedule::interleaved_1f1b && mb % p.pp != 0)
        return fail(
            "interleaved-1f1b needs the micro-batches per pipeline (global_batch / (micro_batch x "
            "dp) = " +
                std::to_string(mb) + ") to be a multiple of pp " + std::to_string(p.pp) +
                " (Megatron's rule); use global_batch " +
                std::to_string((mb / p.pp + 1) * p.pp * per_step) + " or schedule 1f1b",
            "training.global_batch");
    if (e.training.dtype == hardware::Dtype::fp8 && !e.cluster.node.gpu.supports(e.training.dtype))
        return fail(
            "the GPU " + e.cluster.node.gpu.name +
                " has no fp8 peak in its hardware file (no FP8 tensor cores: those came with "
                "Hopper, H100/H200); set training.dtype: bf16, or choose an H100/H200 cluster",
            "training.dtype");
    if (p.schedule == PipelineSchedule::dualpipe && (mb % 2 != 0 || mb < 2 * p.pp)) {
        const int want = std::max(2 * p.pp, mb + mb % 2);
        return fail(
            "schedule dualpipe needs an even number of micro-batches per pipeline, at least 2 x "
            "pp = " +
                std::to_string(2 * p.pp) +
                " (DualPipe's rule), got global_batch / (micro_batch "
                "x dp) = " +
                std::to_string(mb) + "; use global_batch " +
                std::to_string(std::int64_t{want} * per_step),
            "training.global_batch");
    }
    if (!e.cluster.node.gpu.supports(e.training.dtype))
        return fail("the GPU " + e.cluster.node.gpu.name + " has no " +
                        std::string(hardware::to_string(e.training.dtype)) +
                        " peak in its hardware file",
                    "training.dtype");
    return std::nullopt;
}

/// A number format the GPU lacks, decided from its hardware file: NVFP4 needs an fp4 peak and
/// block-scaled tensor cores, MXFP8 block-scaled ones (Transformer Engine asks for compute
/// capability 10.0, Blackwell, for both: pytorch/quantization.py, _compute_mxfp8_support and
/// _compute_nvfp4_support).
std::optional<InputError> precision_error(ExperimentSpec& e) {
    const Refuse fail{e};
    const hardware::GpuSpec& gpu = e.cluster.node.gpu;
    if (e.training.dtype == hardware::Dtype::fp4 &&
        (!gpu.supports(hardware::Dtype::fp4) || !gpu.block_scaling))
        return fail("NVFP4 (training.dtype: fp4) needs FP4 tensor cores that scale each block of "
                    "16 elements (Blackwell's); the GPU " +
                        gpu.name + "'s hardware file has " +
                        (gpu.supports(hardware::Dtype::fp4) ? "no gpu.block_scaling"
                                                            : "no fp4 peak (gpu.peak_flops.fp4)") +
                        "; set training.dtype: fp8 or bf16, or choose a Blackwell cluster "
                        "(dgx-b200, dgx-b300, gb200-nvl72, gb300-nvl72)",
                    "training.dtype");
    if (e.training.dtype == hardware::Dtype::fp8 &&
        e.training.fp8_recipe == models::Fp8Recipe::mxfp8 && !gpu.block_scaling)
        return fail(
            "MXFP8 (training.fp8_recipe: mxfp8) needs tensor cores that apply a scale "
            "per block of 32 elements inside the MMA (gpu.block_scaling: Blackwell's, "
            "CDNA 4's); the GPU " +
                gpu.name +
                "'s hardware file has none (Hopper's and CDNA 3's FP8 take one scale per "
                "tensor); set fp8_recipe: delayed, current or tensorwise, or choose a Blackwell "
                "cluster or mi355x",
            "training.fp8_recipe");
    if (e.training.fp8_fsdp_all_gather &&
        (e.training.dtype != hardware::Dtype::fp8 || !e.parallel.fsdp2))
        return fail("fp8_fsdp_all_gather is torchao's FP8 all-gather of FSDP2's weights: it needs "
                    "training.dtype fp8 and parallel.fsdp (set both, or remove it)",
                    "training.fp8_fsdp_all_gather");
    // torchtitan turns it on only with data-parallel sharding (Float8Handler:
    // parallel_dims.dp_shard_enabled, torchtitan/float8.py at 9dec370): FSDP over the
    // context-parallel ranks alone gathers bf16 weights.
    if (e.training.fp8_fsdp_all_gather && e.parallel.dp_shard_size() <= 1)
        return fail("fp8_fsdp_all_gather needs a data-parallel shard group of more than one GPU "
                    "(torchtitan enables it with dp_shard only); remove it",
                    "training.fp8_fsdp_all_gather");
    return std::nullopt;
}

/// Transformer Engine's FP8 attention (training.fp8_dot_product_attention) where it runs:
/// Megatron-Core puts fp8_dpa in the recipe it builds for --fp8 only (megatron/core/
/// fp8_utils.py get_fp8_recipe at NVIDIA/Megatron-LM@cd4afffa648426a959dc7cb1e24b5ce7d0c3ff54),
/// and Transformer Engine's backend choice (TransformerEngine@4329ff84bfbdaa778a33cba02a15fb0
/// 807c64689:transformer_engine/pytorch/attention/dot_product_attention/utils.py,
/// get_attention_backend) leaves no backend for training with the NVFP4 recipe ("Disabling
/// FusedAttention for NVFP4BlockScaling"), with FP8 current scaling before sm100, or in an
/// unfused attention; FlashAttention does not take FP8 in training. The fused kernel's FP8
/// rates must be in the hardware file (measured on Blackwell).
std::optional<InputError> fp8_attention_error(const ExperimentSpec& e) {
    if (!e.training.fp8_dot_product_attention)
        return std::nullopt;
    const Refuse fail{e};
    const char* key = "training.fp8_dot_product_attention";
    if (e.training.dtype != hardware::Dtype::fp8)
        return fail("fp8_dot_product_attention is Transformer Engine's FP8 attention, part of "
                    "the FP8 recipe: it needs training.dtype fp8 (with fp4, Transformer Engine "
                    "has no attention backend for the NVFP4 recipe); remove it or set dtype fp8",
                    key);
    if (e.training.fp8_recipe == models::Fp8Recipe::tensorwise)
        return fail("fp8_dot_product_attention is Transformer Engine's; fp8_recipe tensorwise is "
                    "torchao's Float8 (bf16 attention): set fp8_recipe current, delayed or mxfp8, "
                    "or remove it",
                    key);
    if (e.model.attention != models::AttentionKind::flash)
        return fail("FP8 attention runs in the fused attention kernel (Transformer Engine "
                    "disables its unfused attention for FP8): set model.attention: flash",
                    key);
    const hardware::GpuSpec& gpu = e.cluster.node.gpu;
    if (e.training.fp8_recipe == models::Fp8Recipe::current && !gpu.block_scaling)
        return fail("Transformer Engine runs FP8 attention with current scaling on Blackwell "
                    "(sm100) only; the GPU " +
                        gpu.name + " is not: set fp8_recipe delayed, or remove it",
                    key);
    const bool mxfp8 = e.training.fp8_recipe == models::Fp8Recipe::mxfp8;
    const double rate = mxfp8 ? e.cluster.compute.fused_attention_mxfp8_backward_scores_per_sm_clock
                              : e.cluster.compute.fused_attention_fp8_backward_scores_per_sm_clock;
    if (!(rate > 0))
        return fail("the hardware file of " + gpu.name + " has no measured " +
                        (mxfp8 ? "MXFP8" : "FP8") + " attention (compute.fused_attention." +
                        (mxfp8 ? "mxfp8" : "fp8") +
                        "_backward_scores_per_sm_clock): add it, or remove "
                        "fp8_dot_product_attention",
                    key);
    return std::nullopt;
}

/// Megatron-Core's fp8_output_proj (training.fp8_output_proj) where it runs: TransformerConfig
/// refuses it without fp8 or with a recipe other than mxfp8, and TELMHeadColumnParallelLinear
/// refuses the weight a tied embedding passes at run time and skip_weight_param_allocation
/// (megatron/core/transformer/transformer_config.py and extensions/transformer_engine.py at
/// NVIDIA/Megatron-LM@d98e8a64dd).
std::optional<InputError> fp8_output_proj_error(const ExperimentSpec& e) {
    if (!e.training.fp8_output_proj)
        return std::nullopt;
    const Refuse fail{e};
    const char* key = "training.fp8_output_proj";
    if (e.training.dtype != hardware::Dtype::fp8 ||
        e.training.fp8_recipe != models::Fp8Recipe::mxfp8)
        return fail("fp8_output_proj runs the LM head under Megatron-Core's MXFP8 recipe only: "
                    "set training.dtype fp8 with fp8_recipe mxfp8, or remove it",
                    key);
    if (e.model.tied_embeddings)
        return fail("fp8_output_proj's LM head (TELMHeadColumnParallelLinear) takes no weight "
                    "shared with the embedding: set model.tied_embeddings false, or remove it",
                    key);
    return std::nullopt;
}

} // namespace

void validate_experiment(ExperimentSpec& e) {
    if (auto error = experiment_error(e))
        throw std::move(*error);
}

/// The groups `parallel.inside_nvlink` keeps inside one NVLink domain, checked on the layout.
std::optional<InputError> nvlink_domain_error(const ExperimentSpec& e) {
    if (e.parallel.inside_nvlink == 0)
        return std::nullopt;
    const int domain = e.cluster.node.gpus;
    for (const GroupPlacement& g : nvlink_placement(e)) {
        if ((e.parallel.inside_nvlink & group_bit(g.group)) == 0 || g.fit == DomainFit::inside)
            continue;
        const std::string name(to_string(g.group));
        const std::string why =
            g.size > domain ? fmt::format("{} {} is larger than the NVLink domain of {} GPUs", name,
                                          g.size, domain)
            : g.span > domain
                ? fmt::format("in Megatron-Core's rank order a {} group's {} ranks span {} "
                              "consecutive GPUs, more than an NVLink domain of {}",
                              name, g.size, g.span, domain)
                : fmt::format("in Megatron-Core's rank order {} {} puts some groups across "
                              "two NVLink domains of {} GPUs ({} is not a multiple of their "
                              "span, {})",
                              name, g.size, domain, domain, g.span);
        return Refuse{e}(fmt::format("inside_nvlink asks {} to stay inside one NVLink domain, "
                                     "but {}; choose sizes whose groups fit a domain, a hardware "
                                     "file with larger domains, or leave {} out of inside_nvlink",
                                     name, why, name),
                         "parallel.inside_nvlink")
            .error;
    }
    return std::nullopt;
}

std::optional<InputError> experiment_error(ExperimentSpec& e) {
    if (auto error = resolve_mesh(e))
        return error;
    if (auto error = lora_error(e))
        return error;
    if (auto error = model_feature_error(e))
        return error;
    if (auto error = layout_error(e))
        return error;
    if (auto error = tensor_split_error(e))
        return error;
    if (auto error = precision_error(e))
        return error;
    if (auto error = fp8_attention_error(e))
        return error;
    if (auto error = fp8_output_proj_error(e))
        return error;
    if (auto error = pipeline_error(e))
        return error;
    if (auto error = batch_error(e))
        return error;
    if (const auto refusal = torchtune_feature_refusal(e)) // torchtune_features.h
        return Refuse{e}(refusal->first, refusal->second);
    if (auto error = validate_expert_parallel(e, Refuse{e}))
        return error;
    if (auto error = nvlink_domain_error(e))
        return error;
    // ZeRO with dp 1 shards over one rank (no effect) and sequence parallelism with tp 1 has
    // nothing to split (Megatron turns it off): both are allowed, and change nothing.
    return std::nullopt;
}

} // namespace clustersim::strategies::parallel
