// cuBLASLt GEMMs over a grid of shapes per dtype, on the first GPU: square sizes, skinny
// shapes (few rows: decoding and small batches; small k or n: thin projections), and the
// shapes the caller passes (a model preset's GEMMs). Each shape is timed with the algorithm
// cuBLASLt's heuristic picks first, as frameworks do; inputs are pseudo-random in [-1, 1)
// (all-zero inputs would run faster than real data on some GPUs).
#include "calibrate/cuda/kernels.h"
#include "calibrate/cuda/runners.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

namespace clustersim::calibrate::cuda {
namespace {

using hardware::Dtype;

struct DtypeSetup {
    cudaDataType_t ab;
    cudaDataType_t cd;
    cublasComputeType_t compute;
    ElementType fill;
    std::size_t ab_size;
    std::size_t cd_size;
};

DtypeSetup setup_for(Dtype d) {
    switch (d) {
    case Dtype::fp32:
        return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, ElementType::f32, 4, 4};
    case Dtype::tf32:
        return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, ElementType::f32, 4, 4};
    case Dtype::fp16:
        return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, ElementType::f16, 2, 2};
    case Dtype::bf16:
        return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, ElementType::bf16, 2, 2};
    case Dtype::fp8:
        // e4m3 inputs, bf16 output, fp32 accumulation: the transformer-engine recipe.
        return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, ElementType::f8e4m3, 1, 2};
    case Dtype::fp64:
    case Dtype::fp4:
        break;
    }
    throw InputError(std::string(hardware::to_string(d)) + " GEMMs are not measured");
}

/// The lowest compute capability (major * 10 + minor) with tensor-core support for a dtype.
int min_capability(Dtype d) {
    switch (d) {
    case Dtype::tf32:
    case Dtype::bf16:
        return 80;
    case Dtype::fp8:
        return 89;
    case Dtype::fp16:
        return 53;
    default:
        return 0;
    }
}

/// The built-in grid.
std::vector<GemmShape> grid(bool quick) {
    std::vector<GemmShape> shapes;
    const std::vector<std::int64_t> square =
        quick ? std::vector<std::int64_t>{512, 2048, 8192}
              : std::vector<std::int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384};
    for (auto s : square)
        shapes.push_back({s, s, s, "TN"});
    const std::int64_t big = 8192;
    const std::vector<std::int64_t> thin =
        quick ? std::vector<std::int64_t>{16, 256} : std::vector<std::int64_t>{1, 16, 64, 256};
    for (auto t : thin)
        shapes.push_back({t, big, big, "TN"}); // few rows: small batches, decoding
    const std::vector<std::int64_t> narrow =
        quick ? std::vector<std::int64_t>{256} : std::vector<std::int64_t>{64, 256, 1024};
    for (auto t : narrow) {
        shapes.push_back({big, t, big, "TN"}); // narrow output
        shapes.push_back({big, big, t, "TN"}); // short reduction
    }
    return shapes;
}

template <typename T, cublasStatus_t (*Destroy)(T)>
struct LtHandle {
    T h = nullptr;
    ~LtHandle() {
        if (h != nullptr)
            (void)Destroy(h);
    }
};

struct Operands {
    DeviceBuffer a, b, d;
};

/// What one run of the suite's GEMMs shares: the handle, its workspace and the stream.
struct GemmBench {
    const Context& ctx;
    int device;
    Stream& stream;
    cublasLtHandle_t lt;
    DeviceBuffer& workspace;
    std::size_t workspace_bytes;
};

/// One GEMM of `shape` in `dtype` run as `variant` (GemmVariant: the output in fp32 with beta 1
/// for accumulate_fp32, CUBLASLT_MATMUL_DESC_FAST_ACCUM for fast_accum), timed with the
/// algorithm cuBLASLt's heuristic picks first; nullopt (with a warning) where it does not fit
/// or cuBLASLt has no algorithm.
std::optional<GemmMeasurement> time_gemm(const GemmBench& bench, const GemmShape& shape,
                                         Dtype dtype, GemmVariant variant) {
    DtypeSetup su = setup_for(dtype);
    const bool accumulate = variant == GemmVariant::accumulate_fp32;
    if (accumulate) {
        su.cd = CUDA_R_32F;
        su.cd_size = 4;
    }
    const bool ta = shape.layout[0] == 'T';
    const bool tb = shape.layout[1] == 'T';
    const auto m = static_cast<std::uint64_t>(shape.m);
    const auto n = static_cast<std::uint64_t>(shape.n);
    const auto k = static_cast<std::uint64_t>(shape.k);
    const std::string what =
        fmt::format("GEMM {}x{}x{} {} {}{}", m, n, k, hardware::to_string(dtype), shape.layout,
                    variant == GemmVariant::plain ? "" : " " + std::string(to_string(variant)));
    const std::size_t need = (m * k + k * n) * su.ab_size + m * n * su.cd_size;
    if (need + bench.workspace_bytes > free_memory(bench.device) * 9 / 10) {
        bench.ctx.warn(
            fmt::format("{} skipped: its {} of operands do not fit", what, format_size(need)));
        return std::nullopt;
    }
    Operands ops{DeviceBuffer(bench.device, m * k * su.ab_size),
                 DeviceBuffer(bench.device, k * n * su.ab_size),
                 DeviceBuffer(bench.device, m * n * su.cd_size)};
    check(fill_random(ops.a.get(), m * k, su.fill, 1, bench.stream.get()), "fill_random");
    check(fill_random(ops.b.get(), k * n, su.fill, 2, bench.stream.get()), "fill_random");
    if (accumulate) // the accumulator a weight gradient is added into: finite values
        check(fill_random(ops.d.get(), m * n, ElementType::f32, 3, bench.stream.get()),
              "fill_random");

    LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc;
    check(cublasLtMatmulDescCreate(&desc.h, su.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
          "cublasLtMatmulDescSetAttribute");
    check(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
          "cublasLtMatmulDescSetAttribute");
    if (variant == GemmVariant::fast_accum) {
        const std::int8_t fast = 1;
        check(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                             sizeof fast),
              "cublasLtMatmulDescSetAttribute");
    }
    // Column-major storage: op(A) is m x k, so A is k x m when transposed.
    LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> la, lb, lc;
    check(cublasLtMatrixLayoutCreate(&la.h, su.ab, ta ? k : m, ta ? m : k, ta ? k : m),
          "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&lb.h, su.ab, tb ? n : k, tb ? k : n, tb ? n : k),
          "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&lc.h, su.cd, m, n, m), "cublasLtMatrixLayoutCreate");
    LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
    check(cublasLtMatmulPreferenceCreate(&pref.h), "cublasLtMatmulPreferenceCreate");
    check(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &bench.workspace_bytes,
                                               sizeof bench.workspace_bytes),
          "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(bench.lt, desc.h, la.h, lb.h, lc.h,
                                                             lc.h, pref.h, 1, &heuristic, &found);
    if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
        // Unsupported combinations (fp8 needs TN and dimensions that are multiples of 16) are
        // skipped, not failed.
        bench.ctx.warn(fmt::format("{} skipped: cuBLASLt has no algorithm for it ({})", what,
                                   cublasLtGetStatusString(hs)));
        return std::nullopt;
    }
    const float alpha = 1.0f;
    const float beta = accumulate ? 1.0f : 0.0f;
    auto run = [&] {
        check(cublasLtMatmul(bench.lt, desc.h, &alpha, ops.a.get(), la.h, ops.b.get(), lb.h, &beta,
                             ops.d.get(), lc.h, ops.d.get(), lc.h, &heuristic.algo,
                             bench.workspace.get(), bench.workspace_bytes, bench.stream.get()),
              "cublasLtMatmul");
    };
    const double seconds = time_median(bench.ctx.timing, {&bench.stream}, run);
    GemmMeasurement g;
    g.m = shape.m;
    g.n = shape.n;
    g.k = shape.k;
    g.dtype = dtype;
    g.layout = shape.layout;
    g.library = "cublaslt";
    g.variant = variant;
    g.time = std::max(sim::Time::from_seconds(seconds), sim::Time::ps(1));
    return g;
}

/// The variants training runs beside the plain multiply (GemmVariant), per input type:
/// Transformer Engine's fp8 forward GEMMs without fp32 promotion, and weight gradients added
/// into fp32 main_grad (bf16 and fp8 inputs).
std::vector<GemmVariant> variants_of(Dtype d) {
    if (d == Dtype::fp8)
        return {GemmVariant::fast_accum, GemmVariant::accumulate_fp32};
    if (d == Dtype::bf16)
        return {GemmVariant::accumulate_fp32};
    return {};
}

} // namespace

std::vector<GemmMeasurement> run_gemms(const Context& ctx) {
    const RunOptions& o = *ctx.options;
    const int device = ctx.devices.front();
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    const int capability = prop.major * 10 + prop.minor;

    std::vector<Dtype> dtypes = o.gemm_dtypes;
    if (dtypes.empty())
        dtypes = {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8};
    std::vector<GemmShape> shapes = grid(o.quick);
    for (const auto& s : o.gemm_shapes) {
        if (std::find(shapes.begin(), shapes.end(), s) == shapes.end())
            shapes.push_back(s);
    }

    Stream stream(device);
    LtHandle<cublasLtHandle_t, cublasLtDestroy> lt;
    check(cublasLtCreate(&lt.h), "cublasLtCreate");
    const std::size_t workspace_bytes = std::size_t{32} << 20;
    DeviceBuffer workspace(device, workspace_bytes);
    const GemmBench bench{ctx, device, stream, lt.h, workspace, workspace_bytes};

    std::vector<GemmMeasurement> out;
    for (const Dtype dtype : dtypes) {
        if (capability < min_capability(dtype)) {
            ctx.warn(fmt::format("GEMMs in {} skipped: {} (compute capability {}.{}) has no "
                                 "tensor cores for it",
                                 hardware::to_string(dtype), prop.name, prop.major, prop.minor));
            continue;
        }
        double peak = 0;
        int points = 0;
        for (const auto& shape : shapes) {
            if (auto g = time_gemm(bench, shape, dtype, GemmVariant::plain)) {
                peak = std::max(peak, g->flop_rate());
                ++points;
                out.push_back(*g);
            }
        }
        // The variants on the square shapes of the full run (a layer's GEMMs at scale), each
        // beside its plain twin (gemm_variants.h).
        int variant_points = 0;
        if (!o.quick) {
            for (const GemmVariant v : variants_of(dtype))
                for (const auto& shape : shapes)
                    if (shape.m == shape.n && shape.n == shape.k && shape.m >= 1024)
                        if (auto g = time_gemm(bench, shape, dtype, v)) {
                            ++variant_points;
                            out.push_back(*g);
                        }
        }
        ctx.report(fmt::format("  GEMM {:<5} {} shapes, peak {:.1f} TFLOP/s{}",
                               hardware::to_string(dtype), points, peak / 1e12,
                               variant_points > 0
                                   ? fmt::format(", {} variant points", variant_points)
                                   : std::string()));
    }
    return out;
}

std::vector<SustainedSample> run_sustained(const Context& ctx, double seconds) {
    // One large bf16 GEMM (8192^3, TN: a transformer layer's shape class at scale), back to
    // back for `seconds`, its rate recorded per interval of about half a second: the burst at
    // the boost clock first, then the rate the GPU settles at under its power and thermal
    // limits (calibrate/sustained.h fits the two).
    const int device = ctx.devices.front();
    check(cudaSetDevice(device), "cudaSetDevice");
    const Dtype dtype = Dtype::bf16;
    const DtypeSetup su = setup_for(dtype);
    const std::uint64_t m = 8192, n = 8192, k = 8192;
    Stream stream(device);
    LtHandle<cublasLtHandle_t, cublasLtDestroy> lt;
    check(cublasLtCreate(&lt.h), "cublasLtCreate");
    const std::size_t workspace_bytes = std::size_t{32} << 20;
    DeviceBuffer workspace(device, workspace_bytes);
    Operands ops{DeviceBuffer(device, m * k * su.ab_size), DeviceBuffer(device, k * n * su.ab_size),
                 DeviceBuffer(device, m * n * su.cd_size)};
    check(fill_random(ops.a.get(), m * k, su.fill, 1, stream.get()), "fill_random");
    check(fill_random(ops.b.get(), k * n, su.fill, 2, stream.get()), "fill_random");
    LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> desc;
    check(cublasLtMatmulDescCreate(&desc.h, su.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t op_t = CUBLAS_OP_T;
    check(cublasLtMatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t),
          "cublasLtMatmulDescSetAttribute");
    LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> la, lb, lc;
    check(cublasLtMatrixLayoutCreate(&la.h, su.ab, k, m, k), "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&lb.h, su.ab, k, n, k), "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&lc.h, su.cd, m, n, m), "cublasLtMatrixLayoutCreate");
    LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
    check(cublasLtMatmulPreferenceCreate(&pref.h), "cublasLtMatmulPreferenceCreate");
    check(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace_bytes, sizeof workspace_bytes),
          "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(lt.h, desc.h, la.h, lb.h, lc.h, lc.h, pref.h, 1,
                                         &heuristic, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0)
        throw DeviceFailure("cuBLASLt has no bf16 algorithm for 8192x8192x8192 TN");
    const float alpha = 1.0f;
    const float beta = 0.0f;
    auto run = [&] {
        check(cublasLtMatmul(lt.h, desc.h, &alpha, ops.a.get(), la.h, ops.b.get(), lb.h, &beta,
                             ops.d.get(), lc.h, ops.d.get(), lc.h, &heuristic.algo, workspace.get(),
                             workspace_bytes, stream.get()),
              "cublasLtMatmul");
    };
    using clock = std::chrono::steady_clock;
    auto since = [](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double>(b - a).count();
    };
    const double flops = 2.0 * static_cast<double>(m * n * k);
    std::vector<SustainedSample> out;
    int batch = 4;
    const auto start = clock::now();
    for (;;) {
        const auto a = clock::now();
        for (int i = 0; i < batch; ++i)
            run();
        check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
        const auto b = clock::now();
        const double dt = since(a, b);
        if (dt < 0.25 && batch < (1 << 20)) {
            batch *= 2; // until an interval lasts about half a second
            continue;
        }
        out.push_back({since(start, b), flops * batch / dt / 1e12});
        if (out.size() % 60 == 0)
            ctx.report(fmt::format("  sustained bf16 GEMM: {:.0f} s, {:.1f} TFLOP/s",
                                   out.back().t_s, out.back().tflops));
        if (since(start, b) >= seconds)
            break;
    }
    return out;
}

} // namespace clustersim::calibrate::cuda
