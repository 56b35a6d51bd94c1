#include "calibrate/runner.h"

#include "calibrate/import_util.h"

#include <fmt/format.h>

#include <algorithm>

#ifdef CLUSTERSIM_HAVE_CUDA
#include "calibrate/cuda/runners.h"
#endif

namespace clustersim::calibrate {

GemmShape parse_gemm_shape(std::string_view text, const std::string& where) {
    GemmShape shape;
    std::string_view dims = text;
    const auto colon = text.find(':');
    if (colon != std::string_view::npos) {
        shape.layout = std::string(text.substr(colon + 1));
        dims = text.substr(0, colon);
        if (shape.layout != "NN" && shape.layout != "NT" && shape.layout != "TN" &&
            shape.layout != "TT")
            throw InputError(fmt::format("{}: layout '{}' in '{}': expected NN, NT, TN or TT",
                                         where, shape.layout, text));
    }
    std::int64_t* out[] = {&shape.m, &shape.n, &shape.k};
    std::size_t start = 0;
    for (int i = 0; i < 3; ++i) {
        const auto x = dims.find('x', start);
        const bool last = i == 2;
        if (last != (x == std::string_view::npos))
            throw InputError(fmt::format("{}: expected MxNxK or MxNxK:LAYOUT (like "
                                         "4096x4096x4096:TN), got '{}'",
                                         where, text));
        const auto part = dims.substr(start, last ? std::string_view::npos : x - start);
        const auto v = detail::parse_integer(part);
        if (!v || *v < 1 || *v > (std::int64_t{1} << 20))
            throw InputError(fmt::format("{}: dimension '{}' in '{}': expected an integer from 1 "
                                         "to 1048576",
                                         where, part, text));
        *out[i] = *v;
        start = x + 1;
    }
    return shape;
}

RunOptions quick_run_options() {
    RunOptions o;
    o.quick = true;
    o.max_bytes = std::int64_t{1} << 30;
    o.in_place = false;
    return o;
}

const std::vector<std::string>& run_parts() {
    static const std::vector<std::string> parts{"collectives", "p2p", "gemm", "copy", "launch"};
    return parts;
}

namespace {
void check_options(const RunOptions& o) {
    for (const auto& p : o.only) {
        if (std::find(run_parts().begin(), run_parts().end(), p) == run_parts().end())
            throw InputError(fmt::format("--only: unknown part '{}' (valid: collectives, p2p, "
                                         "gemm, copy, launch)",
                                         p));
    }
    if (o.gpus < 0)
        throw InputError(fmt::format("--gpus: expected a positive count, got {}", o.gpus));
    if (o.min_bytes < 1 || o.max_bytes < o.min_bytes)
        throw InputError(fmt::format("--min-bytes/--max-bytes: expected 1 <= min <= max, got {} "
                                     "and {}",
                                     o.min_bytes, o.max_bytes));
    if (o.factor < 2)
        throw InputError(fmt::format("--factor: expected 2 or more, got {}", o.factor));
    for (auto d : o.gemm_dtypes) {
        if (d == hardware::Dtype::fp64)
            throw InputError("--gemm-dtype: fp64 GEMMs are not measured (fp32, tf32, fp16, bf16, "
                             "fp8)");
    }
}
} // namespace

#ifdef CLUSTERSIM_HAVE_CUDA

RunResult run_calibration(const RunOptions& options, const Progress& progress) {
    check_options(options);
    const int visible = cuda::device_count();
    if (visible == 0)
        throw DeviceUnavailable(fmt::format(
            "calibrate run needs a GPU and none is visible ({}); to use measurements taken "
            "elsewhere, run 'clustersim calibrate import'",
            cuda::why_no_device()));
    const int n = options.gpus > 0 ? options.gpus : visible;
    if (n > visible)
        throw DeviceUnavailable(fmt::format("--gpus {}: only {} GPU{} visible", options.gpus,
                                            visible, visible == 1 ? " is" : "s are"));
    RunResult result;
    std::vector<int> devices;
    for (int i = 0; i < n; ++i)
        devices.push_back(i);
    result.measurements.environment = cuda::environment(devices, result.warnings);
    result.measurements.environment.tool =
        options.quick ? "clustersim calibrate run --quick" : "clustersim calibrate run";

    cuda::Context ctx;
    ctx.devices = devices;
    ctx.options = &options;
    ctx.progress = &progress;
    ctx.warnings = &result.warnings;
    if (options.quick)
        ctx.timing = cuda::Timing{3, 10, 1e-3, 200};
    auto wanted = [&](std::string_view part) {
        return options.only.empty() ||
               std::find(options.only.begin(), options.only.end(), part) != options.only.end();
    };
    auto& m = result.measurements;
    ctx.report(fmt::format("calibrating {} x {}{}", n, m.environment.device,
                           options.quick ? " (quick)" : ""));
    cuda::raise_clocks(ctx, 0.5);
    if (wanted("launch")) {
        ctx.report("kernel launch overhead (GPU 0)");
        m.launches = cuda::run_launches(ctx);
    }
    if (wanted("copy")) {
        ctx.report("memory copies (GPU 0; peer copies from GPU 0)");
        m.copies = cuda::run_copies(ctx);
    }
    if (wanted("gemm")) {
        ctx.report("GEMMs, cuBLASLt (GPU 0)");
        m.gemms = cuda::run_gemms(ctx);
    }
    if (wanted("collectives") || wanted("p2p")) {
        if (n < 2) {
            result.warnings.push_back("collectives and point-to-point transfers skipped: they "
                                      "need 2 GPUs or more, and 1 is in use");
        } else {
            if (wanted("collectives"))
                m.collectives = cuda::run_collectives(ctx);
            if (wanted("p2p")) {
                ctx.report("point-to-point transfers, NCCL send/recv");
                m.p2p = cuda::run_p2p(ctx);
            }
        }
    }
    check_measurements(m, "the measurements");
    return result;
}

#else

RunResult run_calibration(const RunOptions& options, const Progress& /*progress*/) {
    check_options(options);
    throw DeviceUnavailable(
        "this clustersim was built without CUDA, so it cannot measure GPUs (rebuild with "
        "-DCLUSTERSIM_WITH_CUDA=ON on a machine with the CUDA toolkit, NCCL and cuBLAS); to use "
        "measurements taken elsewhere, run 'clustersim calibrate import'");
}

#endif

} // namespace clustersim::calibrate
