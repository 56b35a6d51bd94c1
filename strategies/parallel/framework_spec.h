#pragma once
/// \file
/// The training software stack (Megatron-LM on PyTorch by default) as it behaves on a given
/// cluster: what end-to-end steps show beyond the kernels' microbenchmarks. It lives here, not
/// in hardware/, because it describes what runs on the hardware, not the hardware: the
/// training-step model (strategies/parallel) is its only reader. It is still written in the
/// hardware file (the `framework:` section), since its values are fitted per cluster
/// (`clustersim calibrate fit`); platform.h loads the two together.

#include "sim/time.h"

#include <cstdint>
#include <optional>

namespace clustersim::strategies::parallel {

/// A training stack by name (framework_profile.h sets the behaviours each one bundles).
enum class FrameworkProfile : std::uint8_t { megatron_core, megatron_lm, megatron_deepspeed };

/// How a micro-batch's weight gradients join those of the micro-batches before it.
enum class GradAccumulation : std::uint8_t {
    /// Megatron-Core's gradient_accumulation_fusion (Megatron-LM from
    /// NVIDIA/Megatron-LM@9c5a830f, 2022-02-22, "grad_accum_fusion"): the weight-gradient GEMM
    /// adds into the main gradient itself (fused_weight_gradient_mlp_cuda), no kernel of its own.
    fused,
    /// One add kernel per parameter tensor after its weight gradient, reading the new 16-bit
    /// gradient and reading and writing the accumulator in the dtype gradients are reduced in
    /// (precision.h): 16-bit, autograd's AccumulateGrad into param.grad, which takes the first
    /// micro-batch's gradient without adding (Megatron-LM 2021's default fp16 run: --DDP-impl
    /// local without contiguous buffers); fp32, Megatron-LM's param hook
    /// `param.main_grad.add_(param.grad.data)` on every micro-batch (megatron/model/
    /// distributed.py, _make_param_hook, at NVIDIA/Megatron-LM@8cfef1bfe7).
    unfused,
    /// DeepSpeed's: fp16, and bf16 under ZeRO, as `unfused` in 16 bits (FP16_Optimizer and ZeRO
    /// keep param.grad); bf16 without ZeRO, BF16_Optimizer.update_hp_grads after every
    /// micro-batch's backward: per parameter
    /// tensor `hp_grad.add_(lp.grad.to(fp32))`, a cast and an add (2 kernels; 2 + 4 bytes, then
    /// 4 + 4 + 4 per parameter) into its fp32 gradients (deepspeed/runtime/bf16_optimizer.py
    /// and pipe/engine.py, _exec_backward_pass, at microsoft/DeepSpeed@5fe9d61065, v0.7.0).
    deepspeed,
};

/// Framework costs and settings of one cluster's training stack, calibrated from measured
/// training steps.
struct FrameworkSpec {
    /// Host (CPU) time to issue one kernel (Python, PyTorch dispatch, the launch call). A GPU
    /// starves when its kernels are shorter than this: small models are host-bound.
    sim::Time host_overhead = sim::Time::zero();
    /// Fraction of the microbenchmark rate GEMMs (and attention kernels) reach inside training:
    /// transposed layouts, epilogues, mixed shapes. 1 = as the compute model predicts.
    double gemm_efficiency = 1.0;
    /// The same for memory-bound kernels (unfused elementwise ops, softmax, optimizer).
    double memory_efficiency = 1.0;
    /// Time one pipeline send/receive costs beyond its transfer: the P2P call, its handshake
    /// and the device synchronisation Megatron puts around it.
    sim::Time p2p_overhead = sim::Time::zero();
    /// Host time per micro-batch and pipeline stage outside the layers, with the GPU idle: the
    /// batch fetched and broadcast to the tensor-parallel ranks (Megatron's get_batch, whose
    /// size exchange synchronises host and device), masks and position ids, the loss and its
    /// data-parallel average, the schedule's bookkeeping. Transformer models only: they run
    /// Megatron's loop; the MLP runs the lecture's plain PyTorch loop, which has none of this.
    sim::Time microbatch_overhead = sim::Time::zero();
    /// Which pipeline stages pay `microbatch_overhead`. true: every stage and every model chunk
    /// of the interleaved schedule, as Megatron-LM's get_batch ran before October 2023 (each
    /// stage fetched the batch and broadcast it over its tensor-parallel group). false: only
    /// the chunks that hold the embedding or the loss: from Megatron-LM commit a0e190c
    /// (2023-10-26, "Refactor dataset code and move to core") pretrain_gpt.py's get_batch
    /// returns None on a chunk that is neither the first nor the last virtual pipeline stage
    /// (is_pipeline_first_stage / is_pipeline_last_stage, which count virtual stages), so
    /// Megatron-Core and NeMo runs pay it on two chunks of the pipeline, not on pp x v.
    bool batch_on_every_stage = true;
    /// Pipeline activations and gradients travel as Megatron-LM did in 2021 without sequence
    /// parallelism (--scatter-gather-tensors-in-pipeline, on by default then): each
    /// tensor-parallel rank sends 1/tp of the tensor (split_tensor_into_1d_equal_chunks) and
    /// the receiver all-gathers the whole tensor over its tensor-parallel group
    /// (gather_split_1d_tensor) before the next pass can start: the exchange is synchronous
    /// (batch_isend_irecv, req.wait(), then torch.cuda.synchronize()), so the gather is exposed
    /// (NVIDIA/Megatron-LM@8cfef1bfe7, megatron/p2p_communication.py, _communicate; the release
    /// of April 2021, Narayanan et al.'s code). false: the transfer alone (sequence parallelism's
    /// shards need no gather). Analytic fidelity only: the flow fidelity plays a pipeline
    /// transfer as its send and receive on the network and adds neither this gather nor
    /// p2p_overhead.
    bool pipeline_tp_gather = false;
    /// Extra host time to issue a tensor-parallel collective beyond `host_overhead`: the
    /// autograd wrapper, the process group's stream and event handling, the NCCL enqueue.
    sim::Time collective_overhead = sim::Time::zero();
    /// Data-parallel gradients are reduced in 32-bit (Megatron's
    /// --accumulate-allreduce-grads-in-fp32, ZeRO's fp32 reduction); false: in the training
    /// dtype when it is 16-bit (Megatron-LM's fp16 default, DeepSpeed's fp16 engine).
    bool fp32_grad_reduce = true;
    /// Tensor parallelism as PyTorch's DTensor runs it (models::LayerConfig::dtensor_tp: no
    /// backward re-gather, the input gradient's reduce-scatter after the weight gradient), as
    /// torchtitan does; false: Megatron's tensor-parallel linear layers.
    bool dtensor_tp = false;
    /// How Megatron-Core's distributed optimizer issues its overlapped parameter all-gathers
    /// (ParallelSpec::overlap_param_gather) under the interleaved schedule: Megatron-Core's
    /// DistributedDataParallelConfig.align_param_gather (core_v0.9.0 on). true: the schedule
    /// issues each model chunk's whole gather, all its buckets at once (DistributedDataParallel.
    /// start_param_sync through config.param_sync_func): chunks 0 and 1 at the start of
    /// forward_backward_pipelining_with_interleaving, chunk c + 1 (c >= 1) at the forward whose
    /// virtual micro-batch id plus the pipeline rank is chunk c's first micro-batch, so every
    /// pipeline rank issues it at the same point of the schedule; the forward pre-hooks only
    /// wait (finish_param_sync with skip_next_bucket_dispatch), and the gathers queue on the
    /// data-parallel communicator in the order issued (megatron/core/pipeline_parallel/
    /// schedules.py, distributed/distributed_data_parallel.py, param_and_grad_buffer.py at
    /// NVIDIA/Megatron-LM core_v0.9.0 through core_v0.16.0). Megatron-LM's own training loop
    /// sets it whenever the schedule is interleaved (megatron/training/arguments.py:
    /// --no-align-param-gather, on by default, forced off without virtual stages), and so do
    /// Megatron-Bridge's recipes (src/megatron/bridge/training/comm_overlap.py,
    /// _get_optimizer_overlap_cfgs: dp > 1, pp > 1 and virtual stages > 1). false: Megatron-Core
    /// 0.8's chain, one bucket in flight, each issued by the pre-hook that waits for the one
    /// before, the first by the optimizer's zero_grad (megatron/core/optimizer/
    /// distrib_optimizer.py at core_v0.8.0). Other schedules: the chain either way.
    bool align_param_gather = false;
    /// GPU memory the stack takes outside PyTorch's caching allocator: the CUDA context and
    /// NCCL's buffers (cudaMalloc'd by NCCL itself). Neither torch.cuda.max_memory_allocated
    /// nor max_memory_reserved counts it; nvidia-smi's "used" does. Counted in every GPU's
    /// device total (StageMemory::device_bytes), which the capacity check uses.
    std::int64_t runtime_memory = 0;
    /// A single process's memory outside the allocator when it has no communicator (a run on
    /// one GPU): the CUDA context and the kernels loaded with it, without NCCL's buffers. 0:
    /// runtime_memory stands for it.
    std::int64_t context_memory = 0;
    /// The caching allocator's fragmentation: the share of the memory a step allocates and
    /// frees (activations, transients, ZeRO-3's gathered parameters) that it holds reserved
    /// beyond the live tensors at the peak (split blocks that cannot serve a larger request,
    /// cached on a stream no longer allocating). Not derivable from the allocator's rules
    /// alone: set it from a measured run's max_memory_reserved / max_memory_allocated. 0: only
    /// the segments' rounding (memory_accounting.h, allocator_slack_bytes).
    double allocator_fragmentation = 0;
    /// The spread of the compute rate across the cluster's GPUs: the relative standard
    /// deviation of one GPU's sustained GEMM and attention throughput around the median GPU's
    /// (manufacturing variation under the power limit's clock management). A step of N GPUs
    /// computes at the pace of the slowest of them (straggler.h). 0: every GPU alike. Only
    /// kernels bound by the SMs' clock are slowed; memory-bound kernels follow HBM.
    double gpu_speed_spread = 0;
    /// The spread of a rank's arrival at a host synchronisation of the step: the standard
    /// deviation of the delay that OS noise and the host's Python and launch path add to one
    /// rank between the point where its host waited for its GPU and the work it issues next.
    /// Each such point waits for the latest rank of the group the next exchange joins
    /// (straggler.h, sync_wait). 0: none.
    sim::Time sync_jitter = sim::Time::zero();
    /// The spread of an inter-node flow's bandwidth under the other jobs' traffic on a shared
    /// fabric (congestion, ECMP placement): the relative standard deviation of one flow's
    /// transfer time around the median flow's. A collective across nodes waits for its slowest
    /// flow (straggler.h, network_slowdown). 0: every flow at the fabric's bandwidth.
    double network_flow_spread = 0;
    /// Not a key: where in the distribution of the slowest flow of N the collectives run. 0:
    /// at its expectation; in (0, 1): at that quantile (StepOptions::straggler_band simulates
    /// the 5th and the 95th percentile).
    double network_quantile = 0;
    /// How gradients accumulate over micro-batches (GradAccumulation).
    GradAccumulation grad_accumulation = GradAccumulation::fused;
    /// The pipeline runs under DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/engine.py,
    /// schedule.py at microsoft/DeepSpeed@3293cf72a0, v0.5.10), as Megatron-DeepSpeed's GPT
    /// model does unless --no-pipeline-parallel (GPTModelPipe, a PipelineModule, at every
    /// pipeline size): one schedule, TrainSchedule's 1F1B (an experiment with another is
    /// refused); the data-parallel gradients reduced after the last backward whatever
    /// parallel.dp_overlap says (the engine turns the backward's all-reduce off,
    /// enable_backward_allreduce = False, and runs ReduceTiedGrads and ReduceGrads as the last
    /// step's instructions); and with pipeline_tp_gather, each stage that sent a partitioned
    /// activation gathers it back over its tensor-parallel group before that micro-batch's
    /// backward (_exec_backward_pass: PartitionedTensor.from_meta(...).full() restores the
    /// output it freed after the send), a third all-gather per micro-batch and stage boundary
    /// beside the two of the received activation and gradient (analytic fidelity, as
    /// pipeline_tp_gather's).
    bool deepspeed_pipeline = false;
    /// The profile the behaviours came from (none: each key as written or defaulted).
    std::optional<FrameworkProfile> profile;
    /// The behaviours a framework: section set by their own keys, which a profile leaves as
    /// they are (framework_profile.h, ProfileKey bits).
    std::uint8_t explicit_keys = 0;
};

} // namespace clustersim::strategies::parallel
