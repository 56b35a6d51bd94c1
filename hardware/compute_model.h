#pragma once
/// \file
/// The kernel cost model: how long one GPU kernel takes, from the GPU's datasheet rates and the
/// calibrated `compute:` section of its hardware file (ComputeSpec).
///
/// GEMM (C[m,n] = A[m,k] B[k,n], `batch` independent products for a batched GEMM):
///
///     for each CTA tile (tm x tn) the library has:
///       tiles = batch * ceil(m / tm) * ceil(n / tn)
///       waves = ceil(tiles / (SMs * ctas_per_sm))                  (wave quantisation)
///       rate  = min(1, I(tm, tn) / I(full_rate_tile) * feed[dtype]), I(a, b) = ab / (a + b)
///       feed  = (peak[16-bit] / peak[dtype]) * (2 / bytes[dtype])   (1 for 16-bit)
///       W     = waves * SMs * ctas_per_sm * 2 * tm * tn * k / rate  (the work the SMs spend)
///     W       = the smallest over the tiles (the library's heuristic picks the fastest)
///     t_comp  = (W + W_half) / (peak[dtype] * eff[dtype])          (efficiency W / (W + W_half))
///     t_mem   = (bytes + B_half) / (hbm_bandwidth * mem_eff)       (bytes = A + B, once)
///     t_epi   = C bytes / (hbm_bandwidth * mem_eff)                (C in the output type)
///     t       = (t_comp^p + t_mem^p)^(1/p) + t_epi + launch_overhead  (smooth roofline)
///
/// so one tile past a full wave costs a whole extra wave, small tiles pay for feeding their
/// operands from L2, small GEMMs pay the pipeline fill and drain, and skinny GEMMs meet the
/// memory roofline. The epilogue, each tile writing its C tile once the k loop is done, does
/// not overlap the k loop: an H200's cuBLASLt bf16 8192x8192xk (data/measurements/
/// nvidia-h200/full.json) took 46, 85 and 250 us for k = 64, 256 and 1024, the compute at the
/// large-k rate (12, 49 and 195 us) plus about the 134 MB output's write (33 us at its copy
/// bandwidth), where a roofline that overlaps the two predicted 38, 62 and 197 us. That is
/// what makes short-k GEMMs, and FP8 GEMMs more than 16-bit ones (their k loop runs twice
/// as fast, their output is the same bf16: gemm_output_dtype), reach a smaller fraction of
/// their peak. The feed bound is one of bytes per second, fitted on 16-bit tensor-core
/// GEMMs (full_rate_tile): a type with a lower peak per operand byte (fp32 on the CUDA cores:
/// 15x fewer FLOP/s from 2x the bytes) runs small tiles at full rate (measured on an H200:
/// 512^3 fp32 in 15 us, where charging the 16-bit feed penalty predicts 37 us). A memory-bound
/// kernel (softmax, dropout, layernorm, GeLU, residual add, optimizer update) moving `bytes`:
///
///     t = (bytes + B_half) / (hbm_bandwidth * mem_eff) + launch_overhead
///
/// i.e. an efficiency curve bytes / (bytes + B_half) that saturates at mem_eff. A fused
/// attention kernel (FlashAttention) runs one CTA per block of 128 queries of each head, in
/// waves over the SMs, at the fused-attention efficiency, against the memory roofline of
/// Q, K, V and O (and their gradients); its backward does 2.5x the forward's FLOPs (five
/// products instead of two, Dao 2023). Where the GPU's file gives the SFU's exponential rate,
/// the share of the softmax's exponentials the kernel does not hide adds to its compute time:
///
///     t_comp = FLOPs / (peak * eff_attn) + exposed * scores / (SMs * clock * exp2_per_clock)
///
/// one exponential per score a pass evaluates (s^2 per head, half and the diagonal blocks when
/// causal; the backward recomputes them), both terms at the sustained clock. It is what makes
/// Blackwell Ultra's attention faster than Blackwell's at the same tensor peak (twice the
/// MUFU.EX2 rate).
///
/// FP8 attention (`dtype` fp8: Transformer Engine's fp8_dpa, cuDNN's FP8 SDPA; Q, K and V
/// quantized before the kernel, O and dQ, dK, dV returned in bf16) runs the kernel's products
/// at the fp8 peak with the same efficiency, the exponentials as in bf16, and its backward
/// quantizes the recomputed probabilities P and their gradient dS to FP8 for its four
/// products (TransformerEngine@4329ff84bfbdaa778a33cba02a15fb0807c64689:transformer_engine/
/// pytorch/attention/dot_product_attention/backends.py, FusedAttnFunc.backward hands
/// fused_attn_bwd its S and dP quantizers), a cost per score the forward does not show:
///
///     t_comp(fp8, backward) += scores / (SMs * clock * quantized_scores_per_sm_clock)
///
/// per-tensor scales or MXFP8's blocks of 32 (AttentionScaling), each rate measured on
/// cuDNN's own FP8 and MXFP8 benchmark (compute.fused_attention.*_backward_scores_per_sm_clock).
///
/// A ComputeModel precomputes every rate, so a call is a handful of integer divisions and one
/// `pow`: no allocation, no lookup by name (well under a microsecond; bench/bench_models.cpp).

#include "hardware/dtype.h"
#include "hardware/specs.h"
#include "sim/time.h"

#include <array>
#include <cstdint>
#include <string>

namespace clustersim::hardware {

/// How an FP8 attention kernel's operands are scaled (a fused attention kernel in fp8): one
/// scale per tensor (Transformer Engine's Float8CurrentScaling and DelayedScaling) or one per
/// block of 32 elements (MXFP8BlockScaling).
enum class AttentionScaling : std::uint8_t { per_tensor, mxfp8 };

class ComputeModel {
public:
    /// Builds the model of one GPU; throws InputError if `compute` lacks a parameter.
    ComputeModel(const GpuSpec& gpu, const ComputeSpec& compute);
    /// The model of the cluster's GPU.
    explicit ComputeModel(const ClusterSpec& cluster)
        : ComputeModel(cluster.node.gpu, cluster.compute) {}

    /// Time of C[m,n] = A[m,k] B[k,n] (`batch` of them in one batched kernel) in `dtype`.
    /// Throws InputError if the GPU has no peak for `dtype`.
    sim::Time gemm(std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype,
                   std::int64_t batch = 1) const;
    /// The same in seconds (for fits and reports).
    double gemm_seconds(std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype,
                        std::int64_t batch = 1) const;

    /// Time of a fused attention kernel over `batch_heads` (micro-batch x heads) independent
    /// heads of `seq` queries and keys of `head_dim`, forward or backward; `causal` skips the
    /// masked half of the scores; `window` > 0 (sliding-window attention, causal) lets each
    /// query see only itself and the `window` keys before it.
    /// In fp8, `scaling` says how its operands are scaled; throws InputError if the GPU's
    /// file lacks that FP8 attention's measured rate.
    sim::Time fused_attention(std::int64_t batch_heads, std::int64_t seq, std::int64_t head_dim,
                              Dtype dtype, bool causal, bool backward, std::int64_t window = 0,
                              AttentionScaling scaling = AttentionScaling::per_tensor) const;
    double fused_attention_seconds(std::int64_t batch_heads, std::int64_t seq,
                                   std::int64_t head_dim, Dtype dtype, bool causal, bool backward,
                                   std::int64_t window = 0,
                                   AttentionScaling scaling = AttentionScaling::per_tensor) const;
    /// Whether the GPU's file gives the measured rate FP8 attention with `scaling` needs.
    bool fp8_attention_measured(AttentionScaling scaling) const {
        return fp8_attention_seconds_per_score_[static_cast<std::size_t>(scaling)] > 0;
    }
    /// FLOPs a fused attention kernel executes: 4 s^2 d per head forward (QK^T and PV), half
    /// of it (plus the diagonal blocks) when causal, 2.5x that backward. With a `window` the
    /// kernel visits, for each block of queries, only the key blocks of its band: `window`
    /// keys before the block and the block itself (FlashAttention's local attention skips the
    /// blocks outside it), at most the causal prefix.
    static double fused_attention_flops(std::int64_t batch_heads, std::int64_t seq,
                                        std::int64_t head_dim, bool causal, bool backward,
                                        std::int64_t window = 0);
    /// The sliding window a fused attention kernel's cost follows: `window`, but none (the
    /// whole causal triangle) in cuDNN's FP8 backward, which does not skip the blocks outside
    /// the window (compute_model.cpp has the measurements that show it).
    static std::int64_t window_visited(Dtype dtype, bool backward, std::int64_t window) {
        return dtype == Dtype::fp8 && backward ? 0 : window;
    }
    /// HBM bytes of a fused attention kernel: Q, K, V, O forward; with dO, dQ, dK, dV backward.
    static std::int64_t fused_attention_bytes(std::int64_t batch_heads, std::int64_t seq,
                                              std::int64_t head_dim, Dtype dtype, bool backward);

    /// Time of a memory-bound kernel that reads and writes `bytes` in all.
    sim::Time memory_bound(std::int64_t bytes) const;
    double memory_bound_seconds(std::int64_t bytes) const;

    /// The tile the model picks for a GEMM, its tile count and its waves (wave quantisation).
    struct TileChoice {
        GemmTile tile;
        std::int64_t tiles = 0;
        std::int64_t waves = 0;
        double work = 0; ///< FLOPs the SMs spend (whole waves, divided by the tile's rate)
    };
    TileChoice choose_tile(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1,
                           Dtype dtype = Dtype::fp16) const;
    /// Tiles one wave holds: SMs * ctas_per_sm.
    std::int64_t wave_slots() const { return slots_; }

    sim::Time launch_overhead() const { return launch_; }
    bool supports(Dtype d) const { return inv_rate_[index(d)] > 0; }
    /// Sustained FLOP/s of large GEMMs in `d` (peak * efficiency).
    double sustained_flops(Dtype d) const;
    /// Sustained bytes/s of large memory-bound kernels.
    double sustained_bandwidth() const { return 1.0 / inv_bandwidth_; }
    /// Datasheet peak FLOP/s in `d`.
    double peak_flops(Dtype d) const { return peak_[index(d)]; }

    /// FLOPs of a GEMM: 2 m n k per product.
    static double gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k,
                             std::int64_t batch = 1) {
        return 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) *
               static_cast<double>(k);
    }
    /// The type a GEMM in `input` writes C in: bf16 for the quantized types (Transformer
    /// Engine's FP8 and FP4 GEMMs output the high-precision type; cuBLASLt's fp8 kernels take
    /// a bf16 D), the input type otherwise.
    static constexpr Dtype gemm_output_dtype(Dtype input) {
        return input == Dtype::fp8 || input == Dtype::fp4 ? Dtype::bf16 : input;
    }
    /// HBM bytes of C, written once in gemm_output_dtype.
    static std::int64_t gemm_output_bytes(std::int64_t m, std::int64_t n, Dtype dtype,
                                          std::int64_t batch = 1) {
        return batch * m * n * bytes_per_element(gemm_output_dtype(dtype));
    }
    /// Compulsory HBM traffic of a GEMM: A and B read once (fp4: half a byte an element,
    /// rounded up), C written once in its output type.
    static std::int64_t gemm_bytes(std::int64_t m, std::int64_t n, std::int64_t k, Dtype dtype,
                                   std::int64_t batch = 1) {
        return (batch * (m * k + k * n) * bits_per_element(dtype) + 7) / 8 +
               gemm_output_bytes(m, n, dtype, batch);
    }

private:
    /// (t_comp^p + t_mem^p)^(1/p).
    double smooth_roofline(double t_comp, double t_mem) const;
    static constexpr std::size_t index(Dtype d) { return static_cast<std::size_t>(d); }

    std::string gpu_name_;
    std::array<double, kDtypeCount> peak_{};
    std::array<double, kDtypeCount> inv_rate_{}; ///< 1 / (peak * eff); 0 = unsupported
    struct Tile {
        GemmTile tile;
        double flops = 0;           ///< 2 * tm * tn: per unit of k
        double intensity_ratio = 0; ///< I(tm, tn) / I(full_rate_tile)
    };
    std::array<double, kDtypeCount> feed_{}; ///< feed[dtype] above
    std::array<Tile, kMaxGemmTiles> tiles_{};
    int tile_count_ = 0;
    std::int64_t slots_ = 0;
    double half_flops_ = 0;
    std::array<double, kDtypeCount> half_seconds_{};       ///< fill and drain time per dtype
    std::array<double, kDtypeCount> inv_attention_rate_{}; ///< 1 / (peak * attention eff)
    /// exposed / (SMs * sustained clock * exp2 per SM clock): seconds per score; 0 = not costed
    double exp_seconds_per_score_ = 0;
    /// 1 / (SMs * sustained clock * quantized scores per SM clock) of FP8 attention's
    /// backward, by AttentionScaling; 0 = not measured
    std::array<double, 2> fp8_attention_seconds_per_score_{};
    double p_ = 0;
    double inv_p_ = 0;
    double inv_bandwidth_ = 0; ///< 1 / (hbm_bandwidth * mem_eff)
    double half_bytes_ = 0;
    double launch_seconds_ = 0;
    sim::Time launch_;
};

} // namespace clustersim::hardware
