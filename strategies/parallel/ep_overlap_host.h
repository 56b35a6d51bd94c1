#pragma once
/// \file
/// The host side of Megatron-Core's expert-parallel overlap (ep_overlap.h): the host issues
/// each node's kernels (the framework's host_overhead per kernel, one launch per captured run
/// of a CUDA graph, nothing inside a whole-iteration graph: cuda_graphs.h) and, at a kernel
/// that makes it wait for the GPU (models::Op::host_sync: the alltoall dispatcher's split
/// sizes, a blocking copy), waits before issuing what follows, as pass_clock.cpp's UnitRun
/// does for an ordinary pass.
///
/// One Python thread issues both streams' nodes, one after the other, in the order
/// TransformerLayerSchedulePlan.run calls them (NVIDIA/Megatron-LM@
/// d98e8a64ddf34856e74b24714e3bedb2f5a39553:megatron/core/models/common/
/// model_chunk_schedule_plan.py; each node's forward or backward in
/// megatron/core/pipeline_parallel/utils.py ScheduleNode, under torch.cuda.stream(its stream)):
///
///     combine_bwd, attn_fwd, mlp_bwd, dispatch_fwd, mlp_bwd_dw, dispatch_bwd, mlp_fwd,
///     combine_fwd, attn_bwd
///
/// (the backward's kernels before the combine's first, the forward's after it last, as
/// ep_overlapped_seconds places them on the compute stream). A host wait inside a node so
/// waits for everything queued before it on that node's stream: in the overlap, the
/// forward's routing waits for the backward's kernels issued before it too, and the next
/// node's kernels are issued only then.

#include "strategies/parallel/ep_overlap.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace clustersim::strategies::models {
struct LayerWork;
}

namespace clustersim::strategies::parallel {

namespace detail {
struct PassEnv;
}

/// The nodes of a layer pair, in the host's issue order under the overlap.
enum class EpNode : std::uint8_t {
    pre_bwd,
    combine_bwd,
    attn_fwd,
    mlp_bwd,
    dispatch_fwd,
    mlp_wgrad,
    dispatch_bwd,
    mlp_fwd,
    combine_fwd,
    attn_bwd,
    post_fwd,
};
inline constexpr std::size_t kEpNodes = 11;

/// What the host does for one node.
struct EpNodeHost {
    double issue = 0;         ///< host seconds to issue its kernels
    double gpu = 0;           ///< the node's GPU seconds as counted here (the sync's place)
    bool sync = false;        ///< a kernel of it makes the host wait for the GPU
    double issue_to_sync = 0; ///< host seconds up to and including the last such kernel
    double gpu_to_sync = 0;   ///< GPU seconds up to and including it
};

struct EpOverlapHost {
    std::array<EpNodeHost, kEpNodes> nodes{};
    EpNodeHost& operator[](EpNode n) { return nodes[static_cast<std::size_t>(n)]; }
    const EpNodeHost& operator[](EpNode n) const { return nodes[static_cast<std::size_t>(n)]; }
};

/// The layer pair on one stream, forward then backward, the host issuing each node's
/// kernels in that order: a node ends no earlier than its GPU time after the one before and
/// no earlier than the host's last issue; after a host sync the host resumes when the GPU
/// reaches it. With no host time: ep_sequential_seconds(l).
double ep_sequential_seconds(const EpOverlapLayer& l, const EpOverlapHost& h);

/// The pair under the overlap's two streams (ep_overlapped_seconds' waits) with the host
/// issuing in the file comment's order. With no host time: ep_overlapped_seconds(l, delay).
double ep_overlapped_seconds(const EpOverlapLayer& l, const EpOverlapHost& h, bool delay_wgrad);

/// ep_overlap_saving with the host: the all-to-all time the overlap hides with the host
/// issuing both ways, less its slowdown of the kernels beside the all-to-alls.
double ep_overlap_saving(const EpOverlapLayer& l, const EpOverlapHost& h, bool delay_wgrad);

namespace detail {
/// The host side of `w`'s nodes (as ep_overlap_layer splits them) under `env`'s framework and
/// CUDA graphs; nullopt where ep_overlap_layer has none.
std::optional<EpOverlapHost> ep_overlap_host(const models::LayerWork& w, const PassEnv& env);
} // namespace detail

} // namespace clustersim::strategies::parallel
