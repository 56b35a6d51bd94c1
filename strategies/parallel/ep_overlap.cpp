#include "strategies/parallel/ep_overlap.h"
#include "strategies/parallel/ep_overlap_host.h"

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/overlap_interference.h"

#include <algorithm>

namespace clustersim::strategies::parallel {

namespace {

/// The host's clock over a layer pair: it issues node after node; a node's kernels run once
/// issued, on their stream, after what they wait for.
class HostIssue {
public:
    explicit HostIssue(const EpOverlapHost& h)
        : h_(h) {}

    /// Node `n`, `g` GPU seconds, on a stream free (and its inputs ready) at `ready`: when it
    /// ends. Its first kernel starts no earlier than the host reaches it, its last no earlier
    /// than the host has issued it.
    double run(EpNode n, double ready, double g) {
        const EpNodeHost& node = h_[n];
        // The alltoall dispatcher's split sizes, copied to the host after the routing, are
        // waited for when the dispatch is issued (token_dispatcher.py,
        // _maybe_dtoh_and_synchronize: the copy at before_permutation_1, d2h_event.synchronize()
        // at before_ep_alltoall, in token_dispatch: the dispatch node).
        if (n == EpNode::dispatch_fwd && routing_ > 0)
            host_ = std::max(host_, routing_);
        double start = std::max(ready, host_);
        double issue = node.issue;
        if (node.sync) {
            const double reached = std::max(start + node.gpu_to_sync, host_ + node.issue_to_sync);
            if (n == EpNode::attn_fwd) {
                routing_ = reached; // waited for at the dispatch
            } else {
                // A blocking copy: the host waits for the GPU there, then issues the rest.
                host_ = reached;
                start = reached;
                g = std::max(0.0, g - node.gpu_to_sync);
                issue = std::max(0.0, issue - node.issue_to_sync);
            }
        }
        const double end = std::max(start + g, host_ + issue);
        host_ += issue;
        return end;
    }

private:
    const EpOverlapHost& h_;
    double host_ = 0;
    double routing_ = 0;
};

} // namespace

double ep_sequential_seconds(const EpOverlapLayer& l) {
    return ep_sequential_seconds(l, EpOverlapHost{});
}

double ep_sequential_seconds(const EpOverlapLayer& l, const EpOverlapHost& h) {
    // Forward then backward on one stream, the host issuing in that order.
    HostIssue host(h);
    double t = 0;
    t = host.run(EpNode::attn_fwd, t, l.attn_fwd);
    t = host.run(EpNode::dispatch_fwd, t, l.dispatch_fwd);
    t = host.run(EpNode::mlp_fwd, t, l.mlp_fwd);
    t = host.run(EpNode::combine_fwd, t, l.combine_fwd);
    t = host.run(EpNode::post_fwd, t, l.post_fwd);
    t = host.run(EpNode::pre_bwd, t, l.pre_bwd);
    t = host.run(EpNode::combine_bwd, t, l.combine_bwd);
    t = host.run(EpNode::mlp_bwd, t, l.mlp_bwd);
    t = host.run(EpNode::mlp_wgrad, t, l.mlp_wgrad);
    t = host.run(EpNode::dispatch_bwd, t, l.dispatch_bwd);
    return host.run(EpNode::attn_bwd, t, l.attn_bwd);
}

double ep_overlapped_seconds(const EpOverlapLayer& l, bool delay_wgrad) {
    return ep_overlapped_seconds(l, EpOverlapHost{}, delay_wgrad);
}

double ep_overlapped_seconds(const EpOverlapLayer& l, const EpOverlapHost& h, bool delay_wgrad) {
    // Each stream runs its nodes in order; a node starts when its stream is free and the node
    // whose output it reads is done (TransformerLayerSchedulePlan.run's events), and once the
    // host, issuing the nodes in run's order (ep_overlap_host.h), has reached it.
    HostIssue host(h);
    const double pre = host.run(EpNode::pre_bwd, 0, l.pre_bwd); // the backward's kernels
    const double combine_bwd = host.run(EpNode::combine_bwd, pre, l.combine_bwd);
    const double attn_fwd = host.run(EpNode::attn_fwd, pre, l.attn_fwd); // beside it
    // The experts' data gradients wait for combine_bwd; the weight gradients follow them.
    const double mlp_bwd = host.run(EpNode::mlp_bwd, std::max(attn_fwd, combine_bwd), l.mlp_bwd);
    const double dispatch_fwd =
        host.run(EpNode::dispatch_fwd, std::max(combine_bwd, attn_fwd), l.dispatch_fwd);
    const double wgrad = host.run(EpNode::mlp_wgrad, mlp_bwd, l.mlp_wgrad);
    // dispatch_bwd waits for the data gradients (and, without delay_wgrad_compute, for the
    // weight gradients, which mlp_bwd then computes before returning).
    const double dispatch_bwd =
        host.run(EpNode::dispatch_bwd, std::max(dispatch_fwd, delay_wgrad ? mlp_bwd : wgrad),
                 l.dispatch_bwd);
    const double mlp_fwd = host.run(EpNode::mlp_fwd, std::max(wgrad, dispatch_fwd), l.mlp_fwd);
    const double combine_fwd =
        host.run(EpNode::combine_fwd, std::max(dispatch_bwd, mlp_fwd), l.combine_fwd);
    const double attn_bwd = host.run(EpNode::attn_bwd, std::max(mlp_fwd, dispatch_bwd), l.attn_bwd);
    // The forward's kernels after the combine wait for it (on the compute stream after
    // attn_bwd).
    const double post = host.run(EpNode::post_fwd, std::max(attn_bwd, combine_fwd), l.post_fwd);
    return std::max(post, combine_fwd);
}

double ep_overlap_saving(const EpOverlapLayer& l, bool delay_wgrad) {
    return ep_overlap_saving(l, EpOverlapHost{}, delay_wgrad);
}

double ep_overlap_saving(const EpOverlapLayer& l, const EpOverlapHost& h, bool delay_wgrad) {
    const double hidden = ep_sequential_seconds(l, h) - ep_overlapped_seconds(l, h, delay_wgrad);
    if (hidden <= 0)
        return 0;
    return std::max(0.0, hidden - overlap_slowdown(hidden, l.compute(), l.comm_share));
}

int flex_dispatcher_sms(const ParallelSpec& p, bool spans_domains) {
    if (!p.hybridep)
        return p.deepep_sms;
    if (p.hybridep_sms > 0)
        return p.hybridep_sms;
    return spans_domains ? kHybridEpDefaultSmsAcross : kHybridEpDefaultSmsOneDomain;
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
