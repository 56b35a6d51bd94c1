// The calibration suite behind `clustersim calibrate run` (calibrate/runner.h): checks the
// options, finds the GPUs, then runs each part's runner in turn.
#include "calibrate/cuda/runners.h"
#include "calibrate/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace clustersim::calibrate {

RunResult run_calibration(const RunOptions& options, const Progress& progress) {
    check_run_options(options);
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
    // Minutes long: only when asked for by name.
    if (std::find(options.only.begin(), options.only.end(), "sustained") != options.only.end()) {
        ctx.report(
            fmt::format("sustained bf16 GEMM loop, {:.0f} s (GPU 0)", options.sustained_seconds));
        result.sustained = cuda::run_sustained(ctx, options.sustained_seconds);
    }
    check_measurements(m, "the measurements");
    return result;
}

} // namespace clustersim::calibrate
