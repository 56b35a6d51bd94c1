#pragma once
/// \file
/// Parameter all-gathers of a sharded model, each framework's rule a named function: ZeRO-3 and
/// FSDP2's per-layer gathers in every pass (with FSDP2's copies on the compute stream, its root
/// unit, the last block it keeps gathered, and under a pipeline the chunks it keeps gathered for
/// the whole step), and Megatron-Core's distributed optimizer overlapping the next step's
/// gather with the forward (chained bucket by bucket up to core 0.8; issued a chunk at a time
/// by the interleaved schedule under align_param_gather from core 0.9). The sources are cited
/// at each rule. Internal to the step model.

#include "strategies/parallel/pass_clock.h"
#include "strategies/parallel/stage_cost.h"
#include "strategies/parallel/step_plan.h"

#include <cstdint>

namespace clustersim::strategies::parallel::detail {

/// Whether the routed experts are sharded over an expert-data-parallel group of their own with
/// more than one GPU (experts laid out apart): their gathers run even where the dense
/// parameters' data-parallel group is one GPU (tp 8, ep 2, etp 1, dp 1: expert dp 4).
inline bool experts_sharded_apart(const ParallelSpec& par, const models::ModelSpec& m) {
    return par.expert_layout() && m.is_moe() && par.expert_dp() > 1;
}

/// Time of all-gathering the parameters `params` (of one tensor-parallel rank) over the
/// data-parallel shard group, in the dtype they are kept in for compute, with FSDP2's copies
/// (fsdp2_copies). `expert_params` of them are routed experts': with experts laid out apart
/// they are gathered over the expert-data-parallel group instead, after the rest (torchtitan's
/// FSDP2 with expert parallelism shards them over efsdp = dp_shard x cp x tp / ep,
/// torchtitan/distributed/fsdp.py, apply_fsdp's shard_placement_fn, at
/// pytorch/torchtitan@b5bcd76c6). `float8_params` of them are Float8Linear weights, gathered
/// one byte each under torchao's FSDP float8 all-gather (TrainingSpec::fp8_fsdp_all_gather;
/// float8_gathered_weights), the rest in the 16-bit type.
Gather parameter_gather(PlanContext& ctx, std::int64_t params, std::int64_t expert_params = 0,
                        std::int64_t float8_params = 0);

/// Bytes FSDP2 gathers and holds for `params` parameters of which `float8_params` are
/// Float8Linear weights: one byte each of those under TrainingSpec::fp8_fsdp_all_gather, the
/// 16-bit type's bytes for every other.
std::int64_t gathered_bytes(const ExperimentSpec& e, std::int64_t params,
                            std::int64_t float8_params);

/// The weights of one transformer layer (`moe_layer`: one with experts) held by each of `tp`
/// ranks that torchao's Float8 training converts, and so that its FSDP float8 all-gather
/// gathers in FP8: its nn.Linear modules' weights alone. convert_to_float8_training swaps
/// every nn.Linear (swap_linear_layers: `isinstance(module, nn.Linear)`,
/// torchao/float8/float8_linear_utils.py at pytorch/ao@eab345c) and only the weight is wrapped
/// for the FP8 all-gather (WeightWithDynamicFloat8CastTensor in Float8Linear.from_float,
/// torchao/float8/float8_linear.py at eab345c); torchtitan's filter leaves out the output
/// layer (`fqn != "output"`, torchtitan/float8.py at pytorch/torchtitan@9dec370). So not the
/// norms (RMSNorm's weight is an nn.Parameter of its own), nor the linears' biases, nor the
/// routed experts (torchtitan's GroupedExperts holds them as nn.Parameter, not nn.Linear:
/// torchtitan/components/quantization/utils.py, module_filter_fn, at pytorch/torchtitan@
/// b5bcd76c6), nor the router's gate (its mixture-of-experts configs filter it:
/// `filter_fqns = ["output", "router.gate"]`, torchtitan/models/deepseek_v3/train_configs/*.toml
/// at pytorch/torchtitan@de335b321).
std::int64_t float8_gathered_weights(const models::ModelSpec& m, int tp, bool moe_layer);

/// FSDP2's copies of a unit of `params` parameters gathered as `bytes` on the compute stream
/// (Gather::copy_out, copy_in).
void fsdp2_copies(const PlanContext& ctx, std::int64_t params, std::int64_t bytes, Gather& g);

/// FSDP2 as torchtitan wraps it without a pipeline: a root unit (the embedding, the final norm
/// and the output layer) gathered once in the forward and kept through the backward, its
/// gradients reduce-scattered after the whole backward.
bool fsdp2_root_unit(const PlanContext& ctx);

/// torchtitan without a pipeline does not reshard the last transformer block after its
/// forward: the backward's first block gathers nothing.
bool fsdp2_last_block_kept(const PlanContext& ctx);

/// FSDP2 under a pipeline: each chunk's parameters gathered on its first forward and kept for
/// the whole step (no per-pass gathers, no re-gather in the backward).
bool fsdp2_gathered_per_step(const PlanContext& ctx);

/// Whether a chunk's first forward of the step waits for a parameter gather: the distributed
/// optimizer's overlapped gather, or FSDP2's gathered once per step under a pipeline.
bool first_forward_gathers(const PlanContext& ctx);

/// Megatron-Core's distributed optimizer with overlap_param_gather: moves the chunks' gathers
/// ahead of their first forwards as the framework version issues them, and re-costs those
/// chunks (their first forward's wait and slowdown).
void overlap_param_gathers(PlanContext& ctx, StepPlan& plan);

} // namespace clustersim::strategies::parallel::detail
