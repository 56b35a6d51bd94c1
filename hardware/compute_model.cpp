#include "hardware/compute_model.h"

#include "base/error.h"
#include "hardware/time_limit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace clustersim::hardware {

namespace {
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

/// Above this exponent the smooth roofline is max() to within 1e-6 (and pow would overflow).
constexpr double kMaxSharpness = 64;
} // namespace

ComputeModel::ComputeModel(const GpuSpec& gpu, const ComputeSpec& c)
    : gpu_name_(gpu.name)
    , launch_(c.launch_overhead) {
    auto require = [&](bool ok, const char* what) {
        if (!ok)
            throw InputError("GPU '" + gpu.name + "': the hardware file's compute: section " +
                             "lacks " + what);
    };
    require(gpu.sm_count > 0, "an SM count (gpu.sm_count)");
    require(c.gemm_tile_count > 0, "the GEMM tiles (compute.gemm.tiles)");
    require(c.gemm_full_rate_tile.m > 0 && c.gemm_full_rate_tile.n > 0,
            "compute.gemm.full_rate_tile");
    require(c.gemm_ctas_per_sm > 0, "compute.gemm.ctas_per_sm");
    require(c.roofline_sharpness >= 1, "compute.gemm.roofline_sharpness");
    require(c.memory_efficiency > 0 && gpu.hbm_bandwidth > 0,
            "compute.memory.efficiency (and gpu.hbm.bandwidth)");
    require(c.gemm_half_efficiency_flops >= 0, "compute.gemm.half_efficiency_flops");
    require(c.memory_half_efficiency_bytes >= 0, "compute.memory.half_efficiency_bytes");
    require(c.launch_overhead >= sim::Time::zero(), "compute.launch_overhead");
    // Tensor-core rates scale with the clock sustained under load (power limit or cap); the
    // efficiencies were fitted on short benchmarks at the boost clock. HBM is on its own clock.
    // fp32 GEMMs run on the CUDA cores, a load that stays below the power limit: an H200's
    // fp32 GEMMs ran 48-51 TFLOP/s at every size in both sessions of
    // data/measurements/nvidia-h200 while its 16-bit ones fell 11% from the 3 s run to the 16 s
    // one.
    const double sustained = gpu.sustained_fraction();
    for (Dtype d : kAllDtypes) {
        peak_[index(d)] = gpu.peak(d);
        const double clock = d == Dtype::fp32 ? 1.0 : sustained;
        if (gpu.supports(d) && c.gemm_eff(d) > 0)
            inv_rate_[index(d)] = 1.0 / (gpu.peak(d) * clock * c.gemm_eff(d));
    }
    auto intensity = [](GemmTile t) {
        return static_cast<double>(t.m) * t.n / static_cast<double>(t.m + t.n);
    };
    const double full_rate = intensity(c.gemm_full_rate_tile);
    for (Dtype d : kAllDtypes) {
        if (gpu.supports(d) && c.fused_attention_efficiency > 0)
            inv_attention_rate_[index(d)] =
                1.0 / (gpu.peak(d) * sustained * c.fused_attention_efficiency);
    }
    // The softmax's exponentials on the SFU (MUFU.EX2), on the SM clock as the tensor cores.
    require(c.fused_attention_exposed_exp >= 0 && c.fused_attention_exposed_exp <= 1,
            "compute.fused_attention.exposed_exp in [0, 1]");
    if (c.fused_attention_exp2_per_sm_clock > 0 && gpu.clock_mhz > 0)
        exp_seconds_per_score_ =
            c.fused_attention_exposed_exp /
            (gpu.sm_count * gpu.clock_mhz * 1e6 * sustained * c.fused_attention_exp2_per_sm_clock);
    // FP8 attention's backward quantization of P and dS, per score, on the SM clock.
    const std::array<double, 2> quantized{c.fused_attention_fp8_backward_scores_per_sm_clock,
                                          c.fused_attention_mxfp8_backward_scores_per_sm_clock};
    for (std::size_t i = 0; i < quantized.size(); ++i)
        if (quantized[i] > 0 && gpu.clock_mhz > 0)
            fp8_attention_seconds_per_score_[i] =
                1.0 / (gpu.sm_count * gpu.clock_mhz * 1e6 * sustained * quantized[i]);
    tile_count_ = c.gemm_tile_count;
    for (int i = 0; i < tile_count_; ++i) {
        const GemmTile t = c.gemm_tiles[static_cast<std::size_t>(i)];
        require(t.m > 0 && t.n > 0, "a positive size for every tile in compute.gemm.tiles");
        tiles_[static_cast<std::size_t>(i)] = {t, 2.0 * t.m * t.n, intensity(t) / full_rate};
    }
    slots_ = static_cast<std::int64_t>(gpu.sm_count) * c.gemm_ctas_per_sm;
    half_flops_ = c.gemm_half_efficiency_flops;
    // The fill and drain of the tile pipeline is a time: fitted on 16-bit (and fp8) GEMMs, it
    // costs a dtype slower than 16-bit (fp32, tf32, fp64) no longer than it costs 16-bit ones.
    double fastest_16bit = 0;
    for (Dtype d : {Dtype::fp16, Dtype::bf16}) {
        if (inv_rate_[index(d)] > 0)
            fastest_16bit = fastest_16bit > 0 ? std::min(fastest_16bit, inv_rate_[index(d)])
                                              : inv_rate_[index(d)];
    }
    // The feed bound in bytes per second: what the 16-bit peak needs from the full-rate tile,
    // a type needs in proportion to its peak and its element size.
    double peak_16bit = 0;
    for (Dtype d : {Dtype::fp16, Dtype::bf16})
        peak_16bit = std::max(peak_16bit, peak_[index(d)]);
    for (Dtype d : kAllDtypes) {
        const double peak = peak_[index(d)];
        feed_[index(d)] =
            peak > 0 && peak_16bit > 0
                ? (peak_16bit / peak) * (16.0 / static_cast<double>(bits_per_element(d)))
                : 1.0;
    }
    for (Dtype d : kAllDtypes) {
        const double inv_rate = inv_rate_[index(d)];
        half_seconds_[index(d)] =
            half_flops_ * (fastest_16bit > 0 ? std::min(inv_rate, fastest_16bit) : inv_rate);
    }
    p_ = std::min(c.roofline_sharpness, kMaxSharpness);
    inv_p_ = 1.0 / p_;
    inv_bandwidth_ = 1.0 / (gpu.hbm_bandwidth * c.memory_efficiency);
    half_bytes_ = static_cast<double>(c.memory_half_efficiency_bytes);
    launch_seconds_ = launch_.seconds();
}

double ComputeModel::smooth_roofline(double t_comp, double t_mem) const {
    // Written as t_big * (1 + (t_small/t_big)^p)^(1/p) so it never overflows.
    const double big = std::max(t_comp, t_mem);
    const double small = std::min(t_comp, t_mem);
    const double r = small / big;
    return r < 1e-4 ? big : big * std::pow(1.0 + std::pow(r, p_), inv_p_);
}

ComputeModel::TileChoice ComputeModel::choose_tile(std::int64_t m, std::int64_t n, std::int64_t k,
                                                   std::int64_t batch, Dtype dtype) const {
    TileChoice best;
    const double slots_k = static_cast<double>(slots_) * static_cast<double>(k);
    const double feed = feed_[index(dtype)];
    for (int i = 0; i < tile_count_; ++i) {
        const Tile& t = tiles_[static_cast<std::size_t>(i)];
        const double flops_per_k = t.flops / std::min(1.0, t.intensity_ratio * feed);
        const std::int64_t tiles = batch * ceil_div(m, t.tile.m) * ceil_div(n, t.tile.n);
        const std::int64_t waves = ceil_div(tiles, slots_);
        // Whole waves of whole tiles: padding and idle SMs in the last wave cost as much as
        // useful work. Ties keep the earlier tile, so the choice is deterministic.
        const double work = static_cast<double>(waves) * slots_k * flops_per_k;
        if (i == 0 || work < best.work)
            best = {t.tile, tiles, waves, work};
    }
    return best;
}

double ComputeModel::gemm_seconds(std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype,
                                  std::int64_t batch) const {
    const double inv_rate = inv_rate_[index(dtype)];
    if (!(inv_rate > 0))
        throw InputError("GPU '" + gpu_name_ + "' has no " + std::string(to_string(dtype)) +
                         " peak or GEMM efficiency in its hardware file");
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
        return 0;
    const double work = choose_tile(m, n, k, batch, dtype).work;
    const double t_comp = work * inv_rate + half_seconds_[index(dtype)];
    const auto out = gemm_output_bytes(m, n, dtype, batch);
    const double t_mem =
        (static_cast<double>(gemm_bytes(m, n, k, dtype, batch) - out) + half_bytes_) *
        inv_bandwidth_;
    const double t_epilogue = static_cast<double>(out) * inv_bandwidth_;
    return smooth_roofline(t_comp, t_mem) + t_epilogue + launch_seconds_;
}

namespace {
/// A kernel's time, refused past kLongestPrediction (time_limit.h) rather than saturated: a
/// saturated kernel summed into a step overflowed it, and a GEMM of a 16-million hidden size
/// printed an MFU above 100%. `what` names the kernel, formatted only when it is refused (this is a
/// hot path).
template <typename What>
sim::Time kernel_time(double seconds, What what) {
    if (!(seconds <= kLongestPrediction.seconds()))
        throw InputError(fmt::format("{} would take {:.3g} s, past what the simulator can time "
                                     "({:.1f} days): the model is too large for this hardware",
                                     what(), seconds, kLongestPrediction.seconds() / 86400));
    return sim::Time::from_seconds(seconds);
}
} // namespace

sim::Time ComputeModel::gemm(std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype,
                             std::int64_t batch) const {
    return kernel_time(gemm_seconds(m, n, k, dtype, batch), [&] {
        return fmt::format("a GEMM of {} x {} x {} (batch {})", m, n, k, batch);
    });
}

namespace {
/// Queries per CTA of a fused attention kernel (FlashAttention-2's block of rows).
constexpr std::int64_t kAttentionQueryBlock = 128;
} // namespace

double ComputeModel::fused_attention_flops(std::int64_t batch_heads, std::int64_t seq,
                                           std::int64_t head_dim, bool causal, bool backward,
                                           std::int64_t window) {
    const double s = static_cast<double>(seq);
    double flops = 4.0 * static_cast<double>(batch_heads) * s * s * static_cast<double>(head_dim);
    if (causal) { // the blocks below the diagonal, and the diagonal blocks whole
        double share = std::min(1.0, 0.5 * (1.0 + static_cast<double>(kAttentionQueryBlock) / s));
        // A sliding window: each query block's band of window + block keys, whole blocks.
        if (window > 0)
            share = std::min(share,
                             static_cast<double>(window + kAttentionQueryBlock) / std::max(s, 1.0));
        flops *= share;
    }
    return backward ? 2.5 * flops : flops;
}

std::int64_t ComputeModel::fused_attention_bytes(std::int64_t batch_heads, std::int64_t seq,
                                                 std::int64_t head_dim, Dtype dtype,
                                                 bool backward) {
    const std::int64_t tensors = backward ? 8 : 4;
    return tensors * batch_heads * seq * head_dim * bytes_per_element(dtype);
}

double ComputeModel::fused_attention_seconds(std::int64_t batch_heads, std::int64_t seq,
                                             std::int64_t head_dim, Dtype dtype, bool causal,
                                             bool backward, std::int64_t window,
                                             AttentionScaling scaling) const {
    const double inv_rate = inv_attention_rate_[index(dtype)];
    const double quantize_per_score =
        dtype == Dtype::fp8 ? fp8_attention_seconds_per_score_[static_cast<std::size_t>(scaling)]
                            : 0.0;
    if (dtype == Dtype::fp8 && !(quantize_per_score > 0))
        throw InputError("GPU '" + gpu_name_ + "' has no measured FP8 attention (compute." +
                         "fused_attention." +
                         (scaling == AttentionScaling::mxfp8 ? "mxfp8" : "fp8") +
                         "_backward_scores_per_sm_clock in its hardware file)");
    if (!(inv_rate > 0))
        throw InputError("GPU '" + gpu_name_ + "' has no " + std::string(to_string(dtype)) +
                         " peak or fused attention efficiency in its hardware file");
    if (batch_heads <= 0 || seq <= 0 || head_dim <= 0)
        return 0;
    // window_visited: cuDNN's FP8 backward does not skip the blocks outside a sliding window; it
    // runs the whole causal triangle. NVIDIA's own benchmark of GPT-OSS's shape (head dim 64, a
    // 128-token window) on GB200 and GB300 times the FP8 and MXFP8 backward 4x longer per
    // doubling of the sequence (1.7 ms at 4,096 tokens, 90 ms at 32,768 on a GB200), where the
    // bf16 backward and every forward grow linearly; cuDNN 9.22 and 9.27 alike
    // (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/gpt_oss;
    // data/reference/attention/cudnn-sdpa-window-training.csv). Transformer Engine runs
    // sliding-window FP8 attention on cuDNN from v2.16 (sm_100 and cuDNN 9.21 on:
    // dot_product_attention/utils.py, get_attention_backend, "Filter: Sliding window attention").
    window = window_visited(dtype, backward, window);
    // One CTA per block of queries of each head, in whole waves; every CTA does the average
    // work (the scheduler balances causal blocks of unequal length).
    const std::int64_t ctas = batch_heads * ceil_div(seq, kAttentionQueryBlock);
    const std::int64_t waves = ceil_div(ctas, slots_);
    const double flops =
        fused_attention_flops(batch_heads, seq, head_dim, causal, backward, window);
    const double wave_share = static_cast<double>(waves * slots_) / static_cast<double>(ctas);
    const double work = flops * wave_share;
    // One exponential per score the pass evaluates: the forward's FLOPs over its 4 d per score.
    const double scores = fused_attention_flops(batch_heads, seq, head_dim, causal, false, window) /
                          (4.0 * static_cast<double>(head_dim)) * wave_share;
    // FP8's backward quantizes P and dS per score besides (0 in other types and forward).
    const double t_comp = work * inv_rate + scores * exp_seconds_per_score_ +
                          (backward ? scores * quantize_per_score : 0.0) +
                          half_seconds_[index(dtype)];
    const double t_mem =
        (static_cast<double>(fused_attention_bytes(batch_heads, seq, head_dim, dtype, backward)) +
         half_bytes_) *
        inv_bandwidth_;
    return smooth_roofline(t_comp, t_mem) + launch_seconds_;
}

sim::Time ComputeModel::fused_attention(std::int64_t batch_heads, std::int64_t seq,
                                        std::int64_t head_dim, Dtype dtype, bool causal,
                                        bool backward, std::int64_t window,
                                        AttentionScaling scaling) const {
    return kernel_time(fused_attention_seconds(batch_heads, seq, head_dim, dtype, causal, backward,
                                               window, scaling),
                       [&] {
                           return fmt::format("an attention kernel of {} heads x {} tokens",
                                              batch_heads, seq);
                       });
}

double ComputeModel::memory_bound_seconds(std::int64_t bytes) const {
    if (bytes <= 0)
        return 0;
    return (static_cast<double>(bytes) + half_bytes_) * inv_bandwidth_ + launch_seconds_;
}

sim::Time ComputeModel::memory_bound(std::int64_t bytes) const {
    return kernel_time(memory_bound_seconds(bytes),
                       [&] { return fmt::format("a memory-bound kernel of {} bytes", bytes); });
}

double ComputeModel::sustained_flops(Dtype d) const {
    const double inv = inv_rate_[index(d)];
    return inv > 0 ? 1.0 / inv : 0.0;
}

} // namespace clustersim::hardware
