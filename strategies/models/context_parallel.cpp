#include "strategies/models/context_parallel.h"

#include "base/error.h"

#include <algorithm>
#include <string>

namespace clustersim::strategies::models {

std::string_view to_string(CpCommType c) {
    return c == CpCommType::all_gather ? "all_gather" : "p2p";
}

std::optional<CpCommType> parse_cp_comm_type(std::string_view s) {
    if (s == "p2p")
        return CpCommType::p2p;
    if (s == "all_gather")
        return CpCommType::all_gather;
    return std::nullopt;
}

void check_context_parallel(const ModelSpec& m, int cp, int tp, bool sequence_parallel) {
    if (cp < 1)
        throw InputError("context-parallel size must be at least 1, got " + std::to_string(cp));
    if (cp == 1)
        return;
    if (!m.is_transformer())
        throw InputError("context parallelism cp=" + std::to_string(cp) +
                         " splits a transformer's sequence; model '" + m.name +
                         "' is an MLP: set cp to 1");
    if (m.attention != AttentionKind::flash)
        throw InputError("context parallelism cp=" + std::to_string(cp) +
                         " runs fused attention (Transformer Engine's); model '" + m.name +
                         "' has unfused attention: set model.attention: flash, or cp to 1");
    if (m.seq % (2 * cp) != 0) {
        std::string fits;
        for (int c = 2; c <= 64 && c <= m.seq / 2; ++c) {
            if (m.seq % (2 * c) == 0)
                fits += (fits.empty() ? "" : ", ") + std::to_string(c);
        }
        throw InputError("context parallelism cp=" + std::to_string(cp) + " needs seq " +
                         std::to_string(m.seq) +
                         " divisible by 2 x cp = " + std::to_string(2 * cp) +
                         " (causal load balancing: 2 chunks per rank); cp values that fit: " +
                         (fits.empty() ? std::string("none above 1") : fits));
    }
    if (sequence_parallel && tp > 1 && (m.seq / cp) % tp != 0)
        throw InputError("sequence parallelism splits each CP rank's " +
                         std::to_string(m.seq / cp) + " tokens over tp " + std::to_string(tp) +
                         ", which does not divide them; choose cp with seq / cp divisible by tp");
}

CpAttention cp_attention(std::int64_t batch_heads, std::int64_t seq, std::int64_t head_dim, int cp,
                         hardware::Dtype dtype, bool backward, const hardware::ComputeModel& cm,
                         hardware::AttentionScaling scaling) {
    using hardware::ComputeModel;
    CpAttention a;
    const std::int64_t local = seq / cp;
    a.first_step_seconds =
        cm.fused_attention_seconds(batch_heads, local, head_dim, dtype, true, backward, 0, scaling);
    a.flops = ComputeModel::fused_attention_flops(batch_heads, local, head_dim, true, backward);
    a.bytes = ComputeModel::fused_attention_bytes(batch_heads, local, head_dim, dtype, backward);
    if (cp > 1) {
        // Half a local x local block without a mask: as many FLOPs as 2 x batch_heads full
        // blocks of a chunk (s / 2cp) each.
        const std::int64_t chunk = seq / (2 * cp);
        a.step_seconds = cm.fused_attention_seconds(2 * batch_heads, chunk, head_dim, dtype, false,
                                                    backward, 0, scaling);
        a.flops += (cp - 1) * ComputeModel::fused_attention_flops(2 * batch_heads, chunk, head_dim,
                                                                  false, backward);
        a.bytes += (cp - 1) * ComputeModel::fused_attention_bytes(2 * batch_heads, chunk, head_dim,
                                                                  dtype, backward);
    }
    return a;
}

double cp_attention_flops_closed_form(std::int64_t batch_heads, std::int64_t seq,
                                      std::int64_t head_dim, int cp, bool backward) {
    const double s = static_cast<double>(seq);
    const double forward =
        2.0 * static_cast<double>(batch_heads) * s * s * static_cast<double>(head_dim) / cp;
    return backward ? 2.5 * forward : forward;
}

std::int64_t cp_kv_bytes(const ModelSpec& m, int tp, int cp, int micro_batch,
                         hardware::Dtype dtype) {
    const std::int64_t tokens = std::int64_t{micro_batch} * m.seq / cp;
    const std::int64_t e = hardware::bytes_per_element(dtype);
    if (m.is_mla())
        return tokens * (m.heads / tp) * (m.mla_qk_dim() + m.v_head_dim) * e;
    return 2 * tokens * (m.kv_heads / tp) * m.head_dim() * e;
}

CpRingExposure cp_ring_exposure(int cp, double kv, double kv_dkv, double first_forward,
                                double step_forward, double first_backward, double step_backward) {
    CpRingExposure x;
    if (cp < 2)
        return x;
    // Forward: the exchange for step i + 1 runs beside step i (i = 0 .. cp - 2).
    x.forward = std::max(0.0, kv - first_forward) + (cp - 2) * std::max(0.0, kv - step_forward);
    // Backward: step i's exchange runs beside step i and is waited for at its end.
    x.backward = std::max(0.0, kv - first_backward) +
                 (cp - 2) * std::max(0.0, kv_dkv - step_backward) +
                 std::max(0.0, kv - step_backward);
    return x;
}

} // namespace clustersim::strategies::models
