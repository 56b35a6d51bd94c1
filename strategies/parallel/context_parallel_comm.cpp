#include "strategies/parallel/context_parallel_comm.h"

#include "strategies/parallel/overlap_interference.h"
#include "strategies/parallel/step_plan.h"

#include <algorithm>
#include <vector>

namespace clustersim::strategies::parallel {

namespace {

/// Predicted time of `c` on the GPUs `group` (from the cache when there is one).
double predict(const std::vector<int>& group, collectives::Collective c,
               const hardware::Topology& topology, collectives::CommunicatorCache* communicators) {
    c.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, static_cast<int>(group.size()));
    if (c.bytes <= 0)
        return 0;
    if (communicators != nullptr)
        return communicators->get(group).predict(c).seconds();
    return collectives::Communicator(topology, group).predict(c).seconds();
}

/// The load of `c` taking `seconds` on the GPUs `group` (overlap_interference.h).
CommLoad load_of(const std::vector<int>& group, collectives::Collective c, double seconds,
                 const hardware::Topology& topology,
                 collectives::CommunicatorCache* communicators) {
    c.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, static_cast<int>(group.size()));
    if (c.bytes <= 0)
        return {};
    if (communicators != nullptr)
        return nccl_load(communicators->get(group), c, seconds);
    return nccl_load(collectives::Communicator(topology, group), c, seconds);
}

} // namespace

CpExposure cp_exposure(const ExperimentSpec& e, const models::LayerWork& layer,
                       const hardware::ComputeModel& cm, double gemm_efficiency,
                       const hardware::Topology& topology,
                       collectives::CommunicatorCache* communicators) {
    CpExposure x;
    const ParallelSpec& par = e.parallel;
    if (par.cp < 2 || !e.model.is_transformer())
        return x;
    const models::Op* fwd = nullptr;
    const models::Op* bwd = nullptr;
    for (const models::Op& op : layer.forward.ops)
        if (op.kind == models::OpKind::fused_attention)
            fwd = &op;
    for (const models::Op& op : layer.backward.ops)
        if (op.kind == models::OpKind::fused_attention)
            bwd = &op;
    if (fwd == nullptr || bwd == nullptr)
        return x;
    // Attention runs in bf16 under FP8 and FP4 training (fp8.h), as does the exchange of K
    // and V.
    const hardware::Dtype dtype =
        hardware::is_quantized(e.training.dtype) ? hardware::Dtype::bf16 : e.training.dtype;
    const std::int64_t kv =
        models::cp_kv_bytes(e.model, par.tp, par.cp, e.training.micro_batch, dtype);
    std::vector<int> group;
    for (int c = 0; c < par.cp; ++c)
        group.push_back(gpu_of(par, 0, 0, 0, c));
    if (par.cp_comm_type == models::CpCommType::all_gather) {
        collectives::Collective c;
        c.dtype = dtype;
        c.bytes = kv * par.cp; // the gathered K and V of the whole sequence
        c.op = collectives::Op::all_gather;
        const double gather = predict(group, c, topology, communicators);
        c.op = collectives::Op::reduce_scatter;
        const double scatter = predict(group, c, topology, communicators);
        x.forward = gather;
        x.backward = gather + scatter;
        return x;
    }
    // One hop inside the group and the hop that closes the ring (across nodes, if any).
    auto hop = [&](std::int64_t bytes) {
        collectives::Collective c;
        c.op = collectives::Op::send_recv;
        c.dtype = dtype;
        c.bytes = bytes;
        return std::max(predict({group[0], group[1]}, c, topology, communicators),
                        predict({group.back(), group[0]}, c, topology, communicators));
    };
    // The SMs and HBM bandwidth an exchange takes from the attention step beside it: the
    // busier of the two hops (inside a node, and the one that closes the ring).
    auto share = [&](std::int64_t bytes, double seconds) {
        collectives::Collective c;
        c.op = collectives::Op::send_recv;
        c.dtype = dtype;
        c.bytes = bytes;
        const CommLoad a = load_of({group[0], group[1]}, c, seconds, topology, communicators);
        const CommLoad b = load_of({group.back(), group[0]}, c, seconds, topology, communicators);
        return std::max(a.of(models::OpKind::fused_attention),
                        b.of(models::OpKind::fused_attention));
    };
    const double inv = 1.0 / gemm_efficiency;
    const models::CpAttention f =
        models::cp_attention(fwd->batch, e.model.seq, fwd->k, par.cp, dtype, false, cm);
    const models::CpAttention b =
        models::cp_attention(bwd->batch, e.model.seq, bwd->k, par.cp, dtype, true, cm);
    const models::CpRingExposure r = models::cp_ring_exposure(
        par.cp, hop(kv), hop(2 * kv), f.first_step_seconds * inv, f.step_seconds * inv,
        b.first_step_seconds * inv, b.step_seconds * inv);
    x.forward = r.forward;
    x.backward = r.backward;
    // Each exchange beside the attention step it overlaps (the order of cp_ring_exposure).
    const double kv_time = hop(kv);
    const double kv_dkv_time = hop(2 * kv);
    const double s_kv = share(kv, kv_time);
    const double s_kv_dkv = share(2 * kv, kv_dkv_time);
    const double ff = f.first_step_seconds * inv;
    const double fs = f.step_seconds * inv;
    const double bf = b.first_step_seconds * inv;
    const double bs = b.step_seconds * inv;
    x.forward_slowdown =
        overlap_slowdown(kv_time, ff, s_kv) + (par.cp - 2) * overlap_slowdown(kv_time, fs, s_kv);
    x.backward_slowdown = overlap_slowdown(kv_time, bf, s_kv) +
                          (par.cp - 2) * overlap_slowdown(kv_dkv_time, bs, s_kv_dkv) +
                          overlap_slowdown(kv_time, bs, s_kv);
    return x;
}

} // namespace clustersim::strategies::parallel
