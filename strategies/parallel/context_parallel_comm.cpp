#include "strategies/parallel/context_parallel_comm.h"

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
    // Attention runs in bf16 under FP8 training (fp8.h), as does the exchange of K and V.
    const hardware::Dtype dtype =
        e.training.dtype == hardware::Dtype::fp8 ? hardware::Dtype::bf16 : e.training.dtype;
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
    return x;
}

} // namespace clustersim::strategies::parallel
