#pragma once
/// \file
/// A pipeline as PyTorch's torch.distributed.pipelining runs it (torchtitan's pipeline_llama at
/// pytorch/torchtitan@9dec370, on the PyTorch of December 2024, the benchmark page's
/// pytorch/pytorch@1963fc83): ScheduleInterleaved1F1B's pass order, which differs from
/// Megatron's where every rank has as many micro-batches as ranks, and what each stage holds
/// beside its layers' activations (the outputs it keeps for the step's merge, a receive buffer
/// per micro-batch, the input gradients left on those buffers). Included by step_plan.cpp and
/// memory_accounting.cpp only.

#include "strategies/parallel/pipeline_schedule.h"

#include <cstdint>
#include <vector>

namespace clustersim::strategies::parallel {

struct ExperimentSpec;
struct StepPlan;

/// Whether the experiment's pipeline is torch.distributed.pipelining's: a pipeline (pp > 1)
/// beside FSDP2 or tensor parallelism as DTensor, which only PyTorch-native stacks (torchtitan)
/// run; Megatron's and DeepSpeed's pipelines are their own.
bool torch_pipelining(const ExperimentSpec& e);

/// ScheduleInterleaved1F1B's order (torch/distributed/pipelining/schedules.py of December
/// 2024, _calculate_single_rank_operations and _get_1f1b_rank_ops): on rank p,
/// min((v - 1) r + 2 (P - 1 - p), m v) forwards first, r = m / max(1, m / P) micro-batches a
/// round (P where P divides m), then a forward and a backward in turn, then the remaining
/// backwards; the k-th forward on chunk (k / r) mod v, the j-th backward on chunk
/// v - 1 - (j / r) mod v, each chunk's micro-batches in order. Unlike Megatron's
/// forward_backward_pipelining_with_interleaving, nothing runs every forward first when m == P:
/// the last rank starts its last chunk's one-forward-one-backward after (v - 1) P forwards.
std::vector<std::vector<PipePass>> torch_interleaved_order(const PipelineShape& s);

/// What one virtual stage of torch.distributed.pipelining holds beside its layers' activations,
/// per tensor-parallel rank (stage.py and _backward.py of December 2024):
/// - `held`, for the whole step: the receive buffers _prepare_forward_infra allocates for
///   every micro-batch on a stage after the first (args_recv_info, one input each) and
///   _prepare_backward_infra for every micro-batch on a stage before the last (grad_recv_info,
///   one output gradient each); the stage keeps them from its first step on.
/// - `per_forward`, added by each forward and kept to the step's end: forward_one_chunk
///   appends the stage's output to output_chunks ("for final output merge or reduction"),
///   cleared only by the next step's clear_runtime_states, on every stage: the activation sent
///   on, or the last stage's 16-bit logits. Less, on a stage after the first, the input its
///   first layer keeps for the backward (counted in the stage's activations), which is the
///   receive buffer counted in `held`; and less, on the last stage under a compiled loss, the
///   logits that loss saves (counted in the head's activations), which are the output kept.
/// - `per_backward`, added by each backward and kept to the step's end: stage_backward runs
///   torch.autograd.backward and returns `val.grad` of the received inputs, which the buffer
///   keeps (no `val.grad = None`, added in 2025) until clear_runtime_states: an input's bytes,
///   and the input again, which the backward frees with the stage's activations though its
///   receive buffer stays (counted in `held`, taken off by `per_forward`); and a compiled
///   loss's logits, freed with the activations though output_chunks keeps them.
struct TorchStageBuffers {
    std::int64_t held = 0;
    std::int64_t per_forward = 0;
    std::int64_t per_backward = 0;
};
/// The buffers of virtual stage `vs` under torch_pipelining; all 0 otherwise, forward-only or
/// under DualPipe's two directions.
TorchStageBuffers torch_stage_buffers(const StepPlan& plan, int vs);

} // namespace clustersim::strategies::parallel
