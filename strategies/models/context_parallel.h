#pragma once
/// \file
/// Context parallelism (Megatron-Core's --context-parallel-size, `parallel.cp`) in closed
/// form: the sequence of every micro-batch split over `cp` GPUs, each holding s/cp tokens for
/// every layer, attention run as Transformer Engine runs it
/// (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py):
///
/// - Causal load balancing: the sequence is cut into 2 cp chunks and CP rank r holds chunks r
///   and 2cp-1-r, so that every rank does the same attention work (Megatron-Core's
///   get_batch_on_this_cp_rank). The sequence must divide by 2 cp.
/// - `p2p` (AttnFuncWithCPAndKVP2P, cp_comm_type "p2p"): K and V of the local tokens travel
///   around the CP ring in cp - 1 send/recv steps; at step i a rank attends its queries to the
///   block it holds while the next block is in flight (batch_isend_irecv on its own stream).
///   Step 0 is the local block, causal (its two chunks, 2 of the 4 chunk pairs' worth of
///   work); every later step is half of a full local x local block (both query chunks against
///   the block's first chunk, or the second query chunk against the whole block): the same
///   work, no mask. The backward runs the same cp steps, sending K, V and the accumulated dK,
///   dV together (step 0: K, V only; the last step: dK, dV only) and waits for each step's
///   exchange at the end of that step.
/// - `all_gather` (AttnFuncWithCPAndKVAllGather): K and V all-gathered over the CP group before
///   the attention (and again in the backward), dK and dV reduce-scattered after it; the same
///   attention work per rank.
///
/// Every other kernel of a layer runs on the local tokens (activations per GPU divided by cp);
/// the weights are whole on every CP rank, so gradients reduce over data-parallel x CP.

#include "hardware/compute_model.h"
#include "hardware/dtype.h"
#include "strategies/models/model_spec.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace clustersim::strategies::models {

/// How K and V reach the other CP ranks (Megatron-Core's --cp-comm-type; "a2a" and
/// "a2a+p2p" are not modelled).
enum class CpCommType : std::uint8_t { p2p, all_gather };
std::string_view to_string(CpCommType c);
/// "p2p", "all_gather"; nullopt otherwise.
std::optional<CpCommType> parse_cp_comm_type(std::string_view s);

/// Refuses a context-parallel size the model cannot run: seq not divisible by 2 cp (causal
/// load balancing), unfused attention (Transformer Engine's context parallelism runs fused
/// attention only), or, with sequence parallelism, s/cp not divisible by tp. Throws
/// InputError saying what would fit.
void check_context_parallel(const ModelSpec& m, int cp, int tp, bool sequence_parallel);

/// The attention of one layer on one CP rank, as the cp steps of the ring run it (all_gather
/// runs the same work in two chunk kernels; the model prices it with the same steps).
struct CpAttention {
    double first_step_seconds = 0; ///< step 0: the local block, causal
    double step_seconds = 0;       ///< each of the cp - 1 later steps (0 when cp = 1)
    double flops = 0;              ///< executed over all steps
    std::int64_t bytes = 0;        ///< HBM bytes over all steps
    double seconds(int cp) const { return first_step_seconds + (cp - 1) * step_seconds; }
};

/// `batch_heads` = micro-batch x heads per tensor-parallel rank, `seq` the whole sequence,
/// `head_dim` the attention head dimension. cp = 1 is the plain causal kernel over seq. In fp8
/// (FP8 attention), `scaling` says how its operands are scaled.
CpAttention
cp_attention(std::int64_t batch_heads, std::int64_t seq, std::int64_t head_dim, int cp,
             hardware::Dtype dtype, bool backward, const hardware::ComputeModel& cm,
             hardware::AttentionScaling scaling = hardware::AttentionScaling::per_tensor);

/// The attention FLOPs of a whole causal sequence divided over cp ranks, with the masked half
/// skipped exactly (4 s^2 d per head forward halved, 2.5x backward): 2 b a s^2 d / cp
/// forward. What causal balancing gives every rank (the executed FLOPs exceed it by the
/// diagonal blocks of step 0 only).
double cp_attention_flops_closed_form(std::int64_t batch_heads, std::int64_t seq,
                                      std::int64_t head_dim, int cp, bool backward);

/// Bytes of the K and V of one rank's s/cp tokens for one micro-batch on one tensor-parallel
/// rank: what one ring step sends (the backward's middle steps send twice that, with dK, dV).
/// Latent attention sends its per-head keys (qk + rotary dims) and values.
std::int64_t cp_kv_bytes(const ModelSpec& m, int tp, int cp, int micro_batch,
                         hardware::Dtype dtype);

/// Exposed time of the ring's communication in one layer's attention, given the time of one
/// K/V exchange (`kv`), of a K/V + dK/dV exchange (`kv_dkv`) and the attention steps'
/// compute (already including any framework factor): forward sum over the cp - 1 exchanges of
/// max(0, exchange - step it overlaps); backward the same over cp exchanges (K/V with step 0,
/// K/V + dK/dV with the middle ones, dK/dV with the last), as Transformer Engine orders them.
struct CpRingExposure {
    double forward = 0;
    double backward = 0;
};
CpRingExposure cp_ring_exposure(int cp, double kv, double kv_dkv, double first_forward,
                                double step_forward, double first_backward, double step_backward);

} // namespace clustersim::strategies::models
