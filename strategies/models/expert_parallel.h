#pragma once
/// \file
/// Expert parallelism in closed form (Megatron-Core's alltoall token dispatcher): the experts
/// of each layer spread over `ep` GPUs, each GPU routing its own tokens, sending every token
/// copy to the GPU that holds its expert (dispatch, an all-to-all over the ep group),
/// computing its local experts' grouped GEMMs on the copies it receives, and sending the
/// results back (combine, the same all-to-all reversed). The busiest GPU sets the pace: it
/// receives `moe_load_imbalance` times the mean, capped by the capacity factor when tokens
/// are dropped. Expert tensor parallelism is Megatron-Core's default (= tp): each expert's
/// columns split over the tensor-parallel ranks as without expert parallelism.
///
/// Not yet part of the step plan (no `parallel.ep` experiment key): these are the per-GPU
/// quantities a schedule needs, with their tests.

#include "hardware/dtype.h"
#include "strategies/models/model_spec.h"

#include <cstdint>

namespace clustersim::strategies::models {

struct ExpertParallelWork {
    int local_experts = 0; ///< experts of one layer on each GPU: num_experts / ep
    /// Token copies one GPU routes: its tokens (its sequence shard with sequence parallelism)
    /// times top-k.
    std::int64_t routed_copies = 0;
    /// Token copies the busiest GPU's experts compute (imbalance and capacity applied).
    std::int64_t busiest_copies = 0;
    std::int64_t tokens_per_expert = 0; ///< on the busiest GPU, rounded up
    /// nccl-tests size of the dispatch all-to-all per GPU: its whole send buffer, routed
    /// copies x hidden x element bytes (the share for its own experts included, as nccl-tests
    /// counts it; busbw's (n-1)/n removes it). The combine sends the same back.
    std::int64_t dispatch_bytes = 0;
    std::int64_t combine_bytes = 0;
    /// Bytes the busiest GPU receives from the others in one dispatch: its copies from the
    /// other ep - 1 GPUs.
    std::int64_t busiest_receive_bytes = 0;
    /// Expert weights of one layer on each GPU (the router and shared experts excluded): its
    /// local experts, split over tp.
    std::int64_t expert_parameters = 0;
};

/// Expected number of `bins` (equal consecutive shares of the experts: the nodes or the GPUs
/// of the expert-parallel group) that one token's top-k experts fall in, when the router picks
/// uniformly (Megatron-Core's moe_router_force_load_balancing draws random logits): the sum
/// over bins of the chance that at least one of the k lands there, 1 - C(S - x, k) / C(S, k)
/// with S the experts the token may pick and x those of the bin. With group-limited routing
/// (moe_router_num_groups dividing into the bins or the bins into the groups) S is the
/// group_topk chosen groups' experts and x follows from how many of the bin's groups were
/// chosen (hypergeometric); groups that straddle bins count as no grouping. 1 for one bin.
double expected_bins_per_token(const ModelSpec& m, int bins);

/// Bytes one GPU sends in one dispatch (the combine returns as many) with a deduplicating
/// dispatcher (Megatron-Core's flex dispatcher on DeepEP, deepseek-ai/DeepEP README: across
/// nodes a token crosses the network once per destination node, to the GPU of the same local
/// rank there, which forwards it over NVLink to the GPUs of its experts; inside a node it
/// goes once per destination GPU): `tokens` x the expected destinations x hidden x element
/// bytes, as the size of an all-to-all over the `nodes` GPUs of its rail (nodes > 1), or over
/// the `ep` GPUs of one node. The own node's (own GPU's) block is included, as nccl-tests
/// counts an all-to-all's size.
std::int64_t flex_dispatch_bytes(const ModelSpec& m, int ep, int nodes, std::int64_t tokens,
                                 hardware::Dtype dtype);

/// Refuses an expert-parallel size that does not divide the model's experts (or a model
/// without experts for ep > 1), naming the sizes that would. Throws InputError.
void check_expert_parallel(const ModelSpec& m, int ep);

/// One layer with experts on one GPU for one micro-batch of `micro_batch` samples, tokens in
/// `dtype`.
ExpertParallelWork expert_parallel_work(const ModelSpec& m, int ep, int tp, bool sequence_parallel,
                                        int micro_batch, hardware::Dtype dtype);

} // namespace clustersim::strategies::models
