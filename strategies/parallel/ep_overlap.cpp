#include "strategies/parallel/ep_overlap.h"

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/overlap_interference.h"

#include <algorithm>

namespace clustersim::strategies::parallel {

double ep_sequential_seconds(const EpOverlapLayer& l) {
    return l.compute() + l.communication();
}

double ep_overlapped_seconds(const EpOverlapLayer& l, bool delay_wgrad) {
    // Each stream runs its nodes in order; a node starts when its stream is free and the node
    // whose output it reads is done (TransformerLayerSchedulePlan.run's events).
    double comp = l.pre_bwd;            // the backward's kernels before combine
    double comm = comp + l.combine_bwd; // combine_bwd
    comp += l.attn_fwd;                 // attn_fwd beside it
    const double dispatch_fwd = std::max(comm, comp) + l.dispatch_fwd;
    const double mlp_bwd = std::max(comp, comm) + l.mlp_bwd; // waits for combine_bwd
    double wgrad = mlp_bwd + l.mlp_wgrad;
    // dispatch_bwd waits for the data gradients (and, without delay_wgrad_compute, for the
    // weight gradients, which mlp_bwd then computes before returning).
    const double dispatch_bwd =
        std::max(dispatch_fwd, delay_wgrad ? mlp_bwd : wgrad) + l.dispatch_bwd;
    const double mlp_fwd = std::max(wgrad, dispatch_fwd) + l.mlp_fwd;
    const double combine_fwd = std::max(dispatch_bwd, mlp_fwd) + l.combine_fwd;
    const double attn_bwd = std::max(mlp_fwd, dispatch_bwd) + l.attn_bwd;
    // The forward's kernels after the combine wait for it (on the compute stream after
    // attn_bwd).
    const double post = std::max(attn_bwd, combine_fwd) + l.post_fwd;
    return std::max(post, combine_fwd);
}

double ep_overlap_saving(const EpOverlapLayer& l, bool delay_wgrad) {
    const double hidden = ep_sequential_seconds(l) - ep_overlapped_seconds(l, delay_wgrad);
    if (hidden <= 0)
        return 0;
    return std::max(0.0, hidden - overlap_slowdown(hidden, l.compute(), l.comm_share));
}

double ep_paired_share(int pp, int rank, int chunks, long long microbatches) {
    const long long total = microbatches * std::max(1, chunks);
    if (total <= 0)
        return 0;
    // The warmup forwards, and the one more the overlap schedules before the steady phase
    // (get_pp_rank_microbatches: "we schedule one extra micro-batch forward step before the
    // 1f1b stages"; without a pipeline the first forward runs alone).
    long long warm = 1;
    if (pp > 1)
        warm += chunks > 1 ? static_cast<long long>(pp - rank - 1) * 2 +
                                 static_cast<long long>(chunks - 1) * pp
                           : pp - rank - 1;
    return static_cast<double>(std::max(0LL, total - warm)) / static_cast<double>(total);
}

std::optional<std::pair<std::string, const char*>> ep_overlap_refusal(const ParallelSpec& p) {
    constexpr const char* kKey = "parallel.overlap_moe_expert_parallel_comm";
    if (p.ep_overlap && p.ep <= 1)
        return std::pair{"overlap_moe_expert_parallel_comm overlaps the expert-parallel "
                         "all-to-alls; with ep " +
                             std::to_string(p.ep) + " there are none: set ep > 1 or leave it out",
                         kKey};
    if (p.ep_overlap && p.pp > 1 && p.virtual_stages < 2)
        return std::pair{std::string("overlap_moe_expert_parallel_comm pairs 1F1B's passes under "
                                     "the interleaved schedule only (Megatron-Core asserts "
                                     "virtual_pipeline_model_parallel_size with pp > 1): set "
                                     "schedule: interleaved-1f1b and virtual_stages >= 2"),
                         kKey};
    if (p.ep_overlap && p.recompute == RecomputePolicy::full)
        return std::pair{std::string("overlap_moe_expert_parallel_comm runs without full "
                                     "recompute (Megatron-Core refuses the two together): use "
                                     "recompute: selective or none"),
                         kKey};
    // megatron/core/transformer/transformer_config.py (__post_init__, NVIDIA/Megatron-LM@
    // d98e8a64dd): "disable moe in recompute_modules" (a recompute method needs full
    // recompute, refused above).
    if (p.ep_overlap && p.recompute == RecomputePolicy::selective &&
        (p.recompute_modules & models::recompute_bit(models::RecomputeModule::moe)) != 0)
        return std::pair{std::string("overlap_moe_expert_parallel_comm splits the MoE block "
                                     "into its dispatch, experts and combine, which recompute "
                                     "module moe recomputes as one (Megatron-Core refuses the "
                                     "two together): drop moe from recompute_modules"),
                         kKey};
    if (p.delay_wgrad && !p.ep_overlap)
        return std::pair{std::string("delay_wgrad_compute delays the experts' weight gradients for "
                                     "overlap_moe_expert_parallel_comm: set it too, or leave "
                                     "delay_wgrad_compute out"),
                         "parallel.delay_wgrad_compute"};
    return std::nullopt;
}

} // namespace clustersim::strategies::parallel
