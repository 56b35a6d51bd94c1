#pragma once
/// \file
/// Megatron-Core's expert-parallel communication overlap (overlap_moe_expert_parallel_comm,
/// with delay_wgrad_compute): in the steady phase of 1F1B (pipelined, interleaved or not
/// pipelined at all) the forward of one micro-batch and the backward of another run together,
/// layer by layer, the all-to-alls of each on a communication stream beside the other's
/// kernels on the compute stream. NVIDIA/Megatron-LM@core_v0.17.1:megatron/core/models/
/// common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run, schedules one layer
/// pair as
///
///     comm_stream: combine_bwd | dispatch_fwd -> dispatch_bwd     | combine_fwd
///     comp_stream: attn_fwd    | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | attn_bwd
///
/// each node waiting for the one whose output it reads (CUDA events): the backward's experts
/// for the combine's backward, the dispatch for the forward's attention (router, permutation),
/// the forward's experts for the dispatch, the dispatch's backward for the experts' data
/// gradients and, with delay_wgrad_compute, not for their weight gradients (mlp_bwd_dw runs
/// beside it), the combine for the forward's experts, the backward's attention for the
/// dispatch's backward. The pair takes the longer of the two streams' chains with their waits:
/// at least max(compute, communication), at most their sum (the plain schedule).
///
/// Only micro-batches in the steady phase pair up: the warmup forwards and cooldown backwards
/// of a pipeline rank run alone (megatron/core/pipeline_parallel/combined_1f1b.py and
/// schedules.py).

#include <optional>
#include <string>
#include <utility>

namespace clustersim::strategies::parallel {

struct ParallelSpec;

/// Why Megatron-Core refuses `p`'s overlap settings (TransformerConfig.__post_init__ at
/// core_v0.17.1: the overlap needs expert parallelism, the interleaved schedule under a
/// pipeline, no full recompute; delay_wgrad_compute needs the overlap): what is wrong and what
/// fixes it, and the key. nullopt: nothing.
std::optional<std::pair<std::string, const char*>> ep_overlap_refusal(const ParallelSpec& p);

/// HybridEP's SMs for its dispatch and combine kernels where Megatron-Core passes none
/// (moe_hybridep_num_sms None at 2edffadb and d0b3b775): deepseek-ai/DeepEP@34152ae28f80bcc3
/// ee38d7a12cb2ad87cfd4ea72 (hybrid-ep, the commit Megatron-Bridge v0.5.0 and v0.6.0 build:
/// docker/Dockerfile.ci DEEPEP_COMMIT), csrc/hybrid_ep/config.cuh, Configurer:
/// num_sms_dispatch_api.value_or((num_of_nodes == 1) ? 24 : 8), the same for the combine, a
/// node being an NVLink domain (NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN ranks).
inline constexpr int kHybridEpDefaultSmsOneDomain = 24;
inline constexpr int kHybridEpDefaultSmsAcross = 8;

/// The SMs the flex dispatcher's dispatch and combine kernels hold while they run
/// (ParallelSpec::deepep_sms or hybridep_sms; HybridEP's default by whether the
/// expert-parallel group `spans_domains`). Each kernel runs one block per SM for its whole
/// run: DeepEP's normal kernels num_sms blocks, two per channel (DeepEP@34152ae csrc/kernels/
/// internode.cu: channel_id = sm_id / 2; csrc/config.hpp: num_channels = num_sms / 2),
/// HybridEP's num_of_blocks_dispatch_api = num_sms_dispatch_api blocks (config.cuh,
/// Configurer) whose shared-memory stages fill an SM ("only 1 block per SM", Megatron-Core's
/// moe_hybridep_num_blocks_permute at cd4afffa). What they take from the kernels beside
/// them is this share of the SMs (CollectiveTimes::run_on_sms), not NCCL's CTAs. Their own
/// time stays the all-to-all's over the links: no source here gives their speed per SM (the
/// only word, transformer_config.py at d0b3b775: "In pure NVL scenarios, 16 SMs can generally
/// achieve good bandwidth").
int flex_dispatcher_sms(const ParallelSpec& p, bool spans_domains);

/// One layer with experts as the overlap splits it: seconds on the GPU of each node.
struct EpOverlapLayer {
    // The forward (micro-batch n + 1).
    double attn_fwd = 0;     ///< kernels before the dispatch (attention, router, permutation)
                             ///< and the shared experts
    double dispatch_fwd = 0; ///< the dispatch all-to-all
    double mlp_fwd = 0;      ///< the kernels between dispatch and combine (the experts)
    double combine_fwd = 0;  ///< the combine all-to-all
    double post_fwd = 0;     ///< the kernels after the combine (unpermute, residual add)
    // The backward (micro-batch n).
    double pre_bwd = 0;      ///< kernels before the combine's backward (the MLP's recompute)
    double combine_bwd = 0;  ///< the combine's all-to-all reversed
    double mlp_bwd = 0;      ///< the experts' data gradients and elementwise backward
    double mlp_wgrad = 0;    ///< the experts' weight gradients
    double dispatch_bwd = 0; ///< the dispatch's all-to-all reversed
    double attn_bwd = 0;     ///< the kernels after it (permutation, router, attention, its
                             ///< recompute) and the shared experts' backward
    /// What the all-to-all kernels take from the kernels beside them (overlap_interference.h):
    /// their SM share for tensor-core kernels and HBM share for memory-bound ones, weighted by
    /// the layer's mix of the two.
    double comm_share = 0;

    double compute() const {
        return attn_fwd + mlp_fwd + post_fwd + pre_bwd + mlp_bwd + mlp_wgrad + attn_bwd;
    }
    double communication() const { return dispatch_fwd + combine_fwd + combine_bwd + dispatch_bwd; }
};

/// The layer pair one after the other on one stream (the schedule without the overlap).
double ep_sequential_seconds(const EpOverlapLayer& l);

/// The layer pair under the overlap's two streams (the file comment's schedule);
/// `delay_wgrad`: the experts' weight gradients run beside the dispatch's backward instead of
/// before it.
double ep_overlapped_seconds(const EpOverlapLayer& l, bool delay_wgrad);

/// What the overlap saves a layer pair: the all-to-all time it hides
/// (ep_sequential_seconds - ep_overlapped_seconds) less what those all-to-alls, now beside
/// the kernels, cost them (overlap_slowdown with the layer's comm_share). Never negative.
double ep_overlap_saving(const EpOverlapLayer& l, bool delay_wgrad);

/// The share of a pipeline rank's passes that run paired: of its `microbatches` x `chunks`
/// forwards, those after the warmup (Megatron-Core's get_pipeline_parallel_order: 1F1B's
/// pp - rank - 1 warmup forwards, the interleaved schedule's (pp - rank - 1) x 2 +
/// (chunks - 1) x pp, none without a pipeline) and the first of the steady phase, which pairs
/// with no backward.
double ep_paired_share(int pp, int rank, int chunks, long long microbatches);

} // namespace clustersim::strategies::parallel
