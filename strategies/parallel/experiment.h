#pragma once
/// \file
/// An experiment: a cluster, a model, how it is trained and how it is split. The value type of
/// the experiment file (`clustersim init` writes a template with every key, app/cmd_init.cpp),
/// loaded and validated once.
///
/// Knob names follow Megatron-LM where one exists: tp (--tensor-model-parallel-size), pp
/// (--pipeline-model-parallel-size), virtual_stages (--num-layers-per-virtual-pipeline-stage,
/// given as a count), sequence_parallel (--sequence-parallel), recompute
/// (--recompute-granularity selective | full), micro_batch (--micro-batch-size), global_batch
/// (--global-batch-size), zero (DeepSpeed ZeRO stage / FSDP), overlap_grad_reduce (also read as
/// dp_overlap) and dp_bucket (--overlap-grad-reduce, DDP's bucket size), overlap_param_gather
/// (--overlap-param-gather), tp_comm_overlap (--tp-comm-overlap, Transformer Engine's
/// userbuffers). Megatron-Core's DistributedDataParallelConfig
/// (megatron/core/distributed/distributed_data_parallel_config.py) defaults all three overlaps
/// to off; here overlap_grad_reduce stays on by default (it was before these keys existed, and
/// the calibrated presets were fitted with it), the other two are off as in Megatron.
///
/// Expert parallelism (Megatron-Core's names, megatron/core/parallel_state.py,
/// initialize_model_parallel): ep (--expert-model-parallel-size) spreads a mixture's experts over
/// ep GPUs; etp (--expert-tensor-parallel-size) splits each expert's matrices over etp GPUs and
/// defaults to tp as Megatron-Core's does (arguments.py sets it to --tensor-model-parallel-size
/// when not given). The expert layers' ranks are ordered tp-ep-dp-pp with tp = etp, so the
/// expert-data-parallel size (over which expert gradients are reduced) is
/// tp x cp x dp / (etp x ep) per pipeline stage, and must be whole.
/// cp (--context-parallel-size) and cp_comm_type (--cp-comm-type p2p | all_gather) split each
/// sequence over cp GPUs (strategies/models/context_parallel.h); dp = gpus / (tp x pp x cp).

#include "base/error.h"
#include "hardware/specs.h"
#include "strategies/models/context_parallel.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_spec.h"
#include "strategies/parallel/cuda_graphs.h"
#include "strategies/parallel/layer_assignment.h"
#include "strategies/parallel/mesh_axes.h"
#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/platform.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim::strategies::parallel {

/// Recompute as the experiment asks for it; `automatic` chooses per layer (the plan is part of
/// the result).
enum class RecomputePolicy : std::uint8_t { none, selective, full, automatic };
std::string_view to_string(RecomputePolicy r);

struct TrainingSpec {
    std::int64_t global_batch = 0; ///< samples per iteration (all data-parallel replicas)
    int micro_batch = 1;           ///< samples per micro-batch on one replica
    hardware::Dtype dtype = hardware::Dtype::bf16;
    models::Optimizer optimizer = models::Optimizer::adam;
    bool forward_only = false; ///< inference-style: no backward, no optimizer (the lecture's demos)
    /// The block's elementwise chains fused or eager (models::Fusions; Megatron-Core's
    /// TransformerConfig knobs apply_rope_fusion, bias_activation_fusion (Megatron-LM's
    /// --no-bias-swiglu-fusion and
    /// --no-bias-gelu-fusion set it), masked_softmax_fusion, and norm_fusion), all on by default.
    models::Fusions fusions;
    /// torch.compile (torchtitan's [training] compile): Inductor fuses every chain of pointwise
    /// ops into one kernel, so the chains cost as fused whatever `fusions` says.
    bool compile = false;
    /// The loss's cross-entropy as the framework runs it (models::CrossEntropy): what it holds
    /// around the head's backward. Megatron's fused one by default.
    models::CrossEntropy cross_entropy = models::CrossEntropy::fused;
    /// With cross_entropy chunked: the slices (torchtune's CEWithChunkedOutputLoss
    /// num_output_chunks).
    int cross_entropy_chunks = 8;
    /// Mixed precision's fp32 master weights (true), or pure 16-bit training (false,
    /// torchtune's dtype bf16): weights, gradients and optimizer states all in `dtype`.
    bool master_weights = true;
    /// Automatic mixed precision as torch.cuda.amp's autocast runs it (Hugging Face Trainer's
    /// fp16): the weights, gradients and optimizer states in fp32, each linear layer's inputs
    /// and weights cast to `dtype` per op (the weights' casts cached for the forward),
    /// softmax and norms in fp32 (models::LayerConfig::autocast).
    bool autocast = false;
    /// torchtune's optimizer_in_bwd: each parameter's optimizer step run in its gradient's
    /// post-accumulate hook, the gradient freed after it (one GPU, one micro-batch per step).
    bool optimizer_in_bwd = false;
    /// torchtune's enable_activation_offloading (OffloadActivations, with full recompute):
    /// the checkpointed layer inputs copied to the host in the forward and back in the
    /// backward.
    bool activation_offloading = false;
    /// With dtype fp8, Megatron-Core's fp8_recipe: delayed (Transformer Engine's delayed
    /// scaling, the default), tensorwise (dynamic tensorwise scaling as torchao.float8 runs
    /// it under torchtitan) or mxfp8 (Transformer Engine's MXFP8 block scaling); models/fp8.h.
    models::Fp8Recipe fp8_recipe = models::Fp8Recipe::delayed;
    /// With dtype fp8: Transformer Engine's FP8 attention (Megatron-Core's
    /// fp8_dot_product_attention, --fp8-dot-product-attention; Megatron-Bridge's
    /// mixed_precision.fp8_dot_product_attention), models::LayerConfig.
    bool fp8_dot_product_attention = false;
    /// With dtype fp8 and fp8_recipe mxfp8: the LM head's GEMMs in MXFP8 (Megatron-Core's
    /// fp8_output_proj: TELMHeadColumnParallelLinear in place of the bf16
    /// ColumnParallelLinear), models::LayerConfig.
    bool fp8_output_proj = false;
    /// torchao's FSDP float8 all-gather (Float8LinearConfig.enable_fsdp_float8_all_gather,
    /// torchtitan's [float8] enable_fsdp_float8_all_gather), with dtype fp8 under FSDP2: each
    /// Float8Linear weight is cast to FP8 before its all-gather (WeightWithDynamicFloat8CastTensor.
    /// fsdp_pre_all_gather) and the unsharded weight is the gathered FP8 data (fsdp_post_all_gather
    /// wraps it in a Float8Tensor; torchao/float8/fsdp_utils.py at pytorch/ao@eab345c): the
    /// layers' gathered weights take one byte each, not the 16-bit type's two.
    bool fp8_fsdp_all_gather = false;
    /// The recipe the quantized GEMMs run: with dtype fp4, NVFP4 (Megatron-Core's fp4_recipe,
    /// whose one choice clustersim models), else fp8_recipe.
    models::Fp8Recipe quant_recipe() const {
        return dtype == hardware::Dtype::fp4 ? models::Fp8Recipe::nvfp4 : fp8_recipe;
    }
    /// The fusions the layers run with.
    models::Fusions kernels() const; // torch.compile's fusions, the op fuser's choice kept
    /// Parameter-efficient fine-tuning (`peft: lora`, Megatron-Bridge's ConfigContainer.peft):
    /// LoRA with `lora_dim` (LoRA.dim, the rank), `lora_alpha` (LoRA.alpha) and
    /// `lora_target_modules` (LoRA.target_modules); models::Lora. Off (dim 0) by default.
    models::Lora lora;
    /// MaxText's per_device_batch_size (0: not given): global_batch = it x the devices
    /// (device_mesh.h). May be a fraction of one as long as whole sequences result.
    double per_device_batch_size = 0;
    /// MaxText's remat_policy; device_mesh.h maps it onto ParallelSpec::recompute.
    RematPolicy remat = RematPolicy::not_given;
    /// CUDA graphs (Megatron-Core's cuda_graph_impl and cuda_graph_scope; cuda_graphs.h): none,
    /// the layer scopes `cuda_graph_scope` (GraphScope bits; 0: the whole layer) under local
    /// or transformer_engine, or the whole forward-backward (full_iteration).
    CudaGraphImpl cuda_graph_impl = CudaGraphImpl::none;
    std::uint8_t cuda_graph_scope = 0;
    /// The training stack by name (`framework`, framework_profile.h), applied over the
    /// hardware file's framework: section when the experiment is read; none: that section's.
    std::optional<FrameworkProfile> framework;

    bool operator==(const TrainingSpec&) const = default;
};

/// Megatron-Core's default SMs for DeepEP (transformer_config.py, moe_deepep_num_sms: 20 at
/// NVIDIA/Megatron-LM@2edffadb528ea07e261b0c02cdc42a7bb9c3197a and @d0b3b775498a8ae6870075f1
/// a5fc32bc260aa1b3; "None -> 20 (DeepEP's historical mcore default)" at @cd4afffa648426a95
/// 9dc7cb1e24b5ce7d0c3ff54), which _DeepepManager passes to DeepEP's Buffer.set_num_sms.
inline constexpr int kDeepEpDefaultSms = 20;

struct ParallelSpec {
    int tp = 1;
    int pp = 1;
    int dp = 0; ///< 0: derived as gpus / (tp * pp * cp)
    int cp = 1; ///< context-parallel size (Megatron-Core's context_parallel_size)
    models::CpCommType cp_comm_type = models::CpCommType::p2p;
    /// `schedule` (also read as `pipeline_schedule`): gpipe, 1f1b, interleaved-1f1b (or
    /// interleaved), zb-h1, zb-v, dualpipe.
    PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
    /// The key the schedule was given under, for errors.
    std::string_view schedule_key = "parallel.schedule";
    int virtual_stages = 1;
    /// How the layers split over the stages when not evenly (layer_assignment.h):
    /// decoder_first_pipeline_num_layers, decoder_last_pipeline_num_layers,
    /// account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split,
    /// pipeline_model_parallel_layout, as Megatron-Core names them.
    PipelineSplit split;
    bool sequence_parallel = false;
    RecomputePolicy recompute = RecomputePolicy::none;
    /// Full recompute of only the first `recompute_num_layers` layers of each model chunk
    /// (Megatron's --recompute-method block --recompute-num-layers N); false: every layer
    /// (--recompute-method uniform, with a checkpoint per layer: recompute_num_layers 1).
    bool recompute_block = false;
    int recompute_num_layers = 1;
    /// Groups that must stay inside one NVLink domain (`inside_nvlink`: a set of
    /// nvlink_domains.h's group_bit()s); a layout that puts one across domains is refused.
    std::uint8_t inside_nvlink = 0;
    /// What selective recompute recomputes (`selective_recompute`): false, `attention`:
    /// Megatron's core attention (nothing with flash attention); true, `op`: torchtitan's
    /// op-level selective activation checkpointing (models::LayerConfig::selective_op).
    bool selective_op = false;
    /// Megatron's selective recompute by module (`recompute_modules`, Megatron-Core's
    /// TransformerConfig.recompute_modules: a list of core_attn, moe_act, layernorm,
    /// mla_up_proj, mlp, moe, shared_experts): a set of models::recompute_bit()s. Not given:
    /// Megatron-Core's default, the core attention.
    std::uint8_t recompute_modules = models::recompute_bit(models::RecomputeModule::core_attn);
    int zero = 0; ///< 0..3
    /// ZeRO-3 as PyTorch's FSDP2 runs it (torchtitan's `fsdp` / data_parallel_shard_degree):
    /// per-parameter sharding, so each all-gather lands in one flat buffer that is copied out
    /// into the parameters, and each layer's gradients are copied into one reduce-scatter
    /// buffer (cast to the reduce dtype), both on the compute stream (param_gathers.h,
    /// fsdp2_copies). `zero: 3` alone is DeepSpeed's ZeRO-3 / FSDP1, whose flat
    /// parameters are views of the gathered buffer.
    bool fsdp2 = false;
    /// torchtitan's data_parallel_shard_degree when given as a count (0: not given, or -1: the
    /// data-parallel ranks left over by data_parallel_replicate_degree); validate_experiment
    /// resolves it to a count dividing dp once dp is known.
    int dp_shard = 0;
    /// torchtitan's data_parallel_replicate_degree: hybrid sharding (HSDP) when above 1 with
    /// FSDP, FSDP2 on the 2-D mesh (dp_replicate, dp_shard); dp_shard x dp_replicate = dp.
    int dp_replicate = 1;
    /// Gradient all-reduce overlapped with the backward pass in buckets (DDP,
    /// `overlap_grad_reduce`); false: one all-reduce of all gradients after the last backward.
    bool dp_overlap = true;
    /// With the distributed optimizer (zero 1-2): the parameter all-gather after the optimizer
    /// is issued per layer in the next forward instead, each layer's waited for by its first
    /// kernel and the next one prefetched (Megatron-Core's forward pre-hook,
    /// _ParamAndGradBucketGroup.finish_param_sync dispatching the next bucket group's
    /// all-gather). The step model charges it to the first forward of each chunk.
    bool overlap_param_gather = false;
    /// Tensor-parallel all-gathers and reduce-scatters (sequence parallelism) split into chunks
    /// that overlap the GEMMs they feed or drain (Transformer Engine's userbuffers,
    /// --tp-comm-overlap): ring exchange for the all-gathers before qkv/fc1 (and their
    /// data-gradient twins), a pipelined reduce-scatter after proj/fc2 on SMs taken from the GEMM.
    bool tp_comm_overlap = false;
    /// tp_comm_overlap as PyTorch's async TP runs it (torchtitan's enable_async_tensor_parallel:
    /// torch.distributed._symmetric_memory's fused_all_gather_matmul and
    /// fused_matmul_reduce_scatter, which Inductor's micro-pipeline pass substitutes): shards
    /// copied by the copy engines (no SMs taken), a GEMM chunk per rank, the local shard copied
    /// into the symmetric buffer before the first chunk and the reduce-scatter's partial sums
    /// added by a reduction kernel after the last (pass_clock.cpp, TpOverlap).
    bool async_tp = false;
    std::int64_t dp_bucket = std::int64_t{25} << 20; ///< bytes per bucket (PyTorch DDP: 25 MiB)
    /// Pipeline sends overlap the sender's next pass (--overlap-p2p-communication); false:
    /// the sender waits for each send to complete, as Megatron's default schedules do.
    bool pp_overlap = false;
    /// Expert-parallel size (Megatron-Core's expert_model_parallel_size); 1: every GPU holds
    /// all experts.
    int ep = 1;
    /// Expert tensor-parallel size (expert_tensor_parallel_size); 0: not given, = tp.
    int etp = 0;
    /// The token dispatcher (Megatron-Core's moe_token_dispatcher_type): false, "alltoall",
    /// one copy per (token, expert); true, "flex" on DeepEP or HybridEP, one per destination
    /// node across nodes and per destination GPU inside one.
    bool flex_dispatcher = false;
    /// The flex dispatcher's backend (moe_flex_dispatcher_backend): false, DeepEP; true,
    /// HybridEP, which permutes, pads and unpermutes the tokens itself, in its own kernels
    /// (models::LayerConfig::hybridep).
    bool hybridep = false;
    /// The SMs the flex dispatcher's dispatch and combine kernels run on, each kernel one
    /// block per SM for its whole run, so the kernels beside them get the others
    /// (flex_dispatcher_sms, ep_overlap.h). DeepEP's (Megatron-Core's moe_deepep_num_sms,
    /// default 20): Buffer.set_num_sms. HybridEP's (moe_hybridep_num_sms): its
    /// num_sms_dispatch_api and num_sms_combine_api; 0, not given, HybridEP's own default.
    int deepep_sms = kDeepEpDefaultSms;
    int hybridep_sms = 0;
    /// Megatron-Core's overlap_moe_expert_parallel_comm (ep_overlap.h): 1F1B's forward and
    /// backward of two micro-batches run together layer by layer, each one's all-to-alls
    /// beside the other's kernels; with delay_wgrad_compute (`delay_wgrad`) the experts'
    /// weight gradients run beside the dispatch's backward.
    bool ep_overlap = false;
    bool delay_wgrad = false;
    /// MaxText's mesh axes (mesh_axes.h); when given, device_mesh.h sets the sizes above from
    /// them and `device_order`.
    MeshAxes mesh;
    /// The device that runs each rank of Megatron-Core's order (gpu_of in step_plan.h), where
    /// the ranks are not the devices in order: a MaxText mesh placed on a torus as JAX's
    /// create_device_mesh places it (device_mesh.h). Empty: rank r runs on device r.
    std::vector<int> device_order;

    /// Expert tensor-parallel size in effect.
    int expert_tp() const { return etp > 0 ? etp : tp; }
    /// Expert-data-parallel size: tp x cp x dp / (etp x ep) (valid experiments divide evenly;
    /// Megatron-Core folds the context-parallel ranks into it: parallel_state.py).
    int expert_dp() const { return tp * cp * dp / (expert_tp() * ep); }
    /// Whether the expert layers are laid out apart from the dense ones (ep > 1 or etp != tp):
    /// Megatron-Core's alltoall token dispatcher, expert gradients over the expert-data-parallel
    /// group. Otherwise every GPU holds every expert split as the dense layers (the all-gather
    /// dispatcher) and nothing differs from before expert parallelism.
    bool expert_layout() const { return ep > 1 || expert_tp() != tp; }

    /// The ranks that hold the same weights and reduce their gradients together: Megatron-Core
    /// reduces (and the distributed optimizer shards) over the data-parallel x context-parallel
    /// group.
    int dp_cp() const { return dp * cp; }
    /// The data-parallel ranks one copy of the weights is sharded over: dp / dp_replicate
    /// (all of dp without hybrid sharding).
    int dp_shard_size() const { return dp / std::max(1, dp_replicate); }
    /// The group ZeRO shards the model state over and reduce-scatters the gradients and
    /// gathers the parameters on: torchtitan's dp_shard_cp (FSDP2 shards over the
    /// data-parallel shard dimension x the context-parallel one); dp_cp() without hybrid
    /// sharding.
    int shard_cp() const { return dp_shard_size() * cp; }

    bool operator==(const ParallelSpec&) const = default;
};

struct ExperimentSpec {
    std::string name; ///< file stem unless `name:` is given
    std::string description;
    std::string file; ///< where it came from, for messages
    // The platform (platform.h), its three parts kept apart so that the many readers of the
    // cluster alone (`e.cluster.node.gpus`) need not know of the others.
    hardware::ClusterSpec cluster; ///< sized to `gpus`
    FrameworkSpec framework;       ///< the training stack on it
    Provenance provenance;         ///< where the calibrated values came from; printed only
    int gpus = 0;
    models::ModelSpec model;
    TrainingSpec training;
    ParallelSpec parallel;
    /// Transformer layers of each model stage, in layer order (layer_assignment.h), set by
    /// validate_experiment from the model's layers and the parallel section's split.
    std::vector<int> stage_layers;

    /// Micro-batches per iteration on one pipeline: global_batch / (micro_batch * dp).
    int micro_batches() const {
        return static_cast<int>(training.global_batch /
                                (std::int64_t{training.micro_batch} * parallel.dp));
    }
    std::int64_t tokens_per_iteration() const {
        return training.global_batch * (model.is_transformer() ? model.seq : 1);
    }
};

/// Loads an experiment file, applying `overrides` ("parallel.tp" -> "4", as `--set`) first.
/// Validates it (validate_experiment). Throws InputError naming file, line, column and key.
ExperimentSpec
load_experiment(const std::string& path,
                const std::vector<std::pair<std::string, std::string>>& overrides = {});

/// An experiment on a given platform from settings alone ("model=gpt3-175B",
/// "model.layers=24", "training.global_batch=16", "parallel.tp=2"), as measurement files and
/// sweeps describe steps. `name` names it in messages. Validates it.
ExperimentSpec make_experiment(const Platform& platform, int gpus,
                               const std::vector<std::pair<std::string, std::string>>& settings,
                               const std::string& name);

/// Parses "KEY=VALUE" as given to --set; throws InputError if malformed.
std::pair<std::string, std::string> parse_override(const std::string& text);

/// Checks that the numbers agree: tp*pp*cp*dp = gpus; seq divisible by 2 cp; heads, kv heads and
/// ffn divisible by tp; layers by pp*virtual_stages (or split as the parallel section's
/// uneven-split knobs say: sets stage_layers); global batch by micro_batch*dp; interleaving's
/// micro-batches; the dtype supported by the GPU. Throws InputError saying which numbers disagree
/// and what would fix it. Derives dp when it is 0.
void validate_experiment(ExperimentSpec& e);
/// validate_experiment without the throw: the InputError it would throw, or nullopt when `e`
/// can run (completed as validate_experiment completes it). For sweeps, whose invalid
/// configurations are many and for which a throw cost more than the checks.
std::optional<InputError> experiment_error(ExperimentSpec& e);

} // namespace clustersim::strategies::parallel
