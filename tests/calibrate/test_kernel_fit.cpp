// Fitting traced kernel classes on some shapes and validating on shapes left out
// (calibrate/kernel_fit.h, split_measurements_by_shape), on a synthetic set of eight traced
// configurations whose kernels run a known factor slower (or faster) than the kernel model on
// the H200 preset, with a deterministic +-3% scatter: the fit must recover the factors from the
// chosen shapes and predict the held-out ones within the targets (each class within
// 10%, the step within 5%), where the unfitted model misses by more.
#include "base/error.h"
#include "calibrate/kernel_fit.h"
#include "calibrate/predict.h"
#include "calibrate/split.h"
#include "calibrate/validation.h"
#include "hardware/compute_model.h"
#include "strategies/parallel/platform.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <set>

using namespace clustersim;
using namespace clustersim::calibrate;
using sim::Time;

namespace {

constexpr double kGemmFactor = 1.25;       // kernels 25% slower than the model
constexpr double kElementwiseFactor = 0.8; // 20% faster

/// +-3%, deterministic.
double scatter(int i) {
    return 1.0 + 0.03 * std::sin(1.7 * i + 0.3);
}

struct Config {
    int hidden, heads, micro_batch, seq;
};

MeasurementFile synthetic_traces(const strategies::parallel::Platform& platform) {
    MeasurementFile f;
    f.environment.device = "NVIDIA H200";
    f.environment.device_count = 1;
    const Config configs[] = {{1024, 16, 1, 2048}, {2048, 16, 2, 2048}, {4096, 32, 1, 4096},
                              {1024, 16, 8, 2048}, {2048, 16, 4, 4096}, {8192, 64, 1, 2048},
                              {4096, 32, 2, 2048}, {1024, 16, 2, 8192}};
    const hardware::ComputeModel cm(platform.cluster);
    int n = 0;
    strategies::parallel::Platform truth = platform;
    truth.framework.gemm_efficiency = 1.0 / kGemmFactor;
    truth.framework.memory_efficiency = 1.0 / kElementwiseFactor;
    for (std::size_t c = 0; c < std::size(configs); ++c) {
        const Config& x = configs[c];
        const std::string file = fmt::format("trace-{}.json.gz", c);
        const std::int64_t b = x.micro_batch, s = x.seq, h = x.hidden, a = x.heads;
        auto add = [&](KernelMeasurement k, double factor) {
            k.dtype = hardware::Dtype::bf16;
            k.calls = 2;
            k.phase = "forward";
            k.source = fmt::format("{}: traceEvents[{}]", file, n);
            const double p = *predict_kernel_seconds(platform, k);
            k.time = Time::from_seconds(p * 2 * factor * scatter(n++));
            f.kernels.push_back(k);
        };
        for (std::int64_t out : {3 * h, h, 4 * h}) {
            KernelMeasurement k;
            k.kernel_class = KernelClass::gemm;
            k.op = "aten::linear";
            k.kernel = "sm90_xmma_gemm";
            k.shapes = {{b, s, h}, {out, h}, {out}};
            add(k, kGemmFactor);
        }
        KernelMeasurement attn;
        attn.kernel_class = KernelClass::attention;
        attn.op = "aten::_scaled_dot_product_flash_attention";
        attn.kernel = "pytorch_flash::flash_fwd_kernel";
        attn.shapes = {{b, a, s, h / a}, {b, a, s, h / a}, {b, a, s, h / a}};
        attn.flops = hardware::ComputeModel::fused_attention_flops(b * a, s, h / a, true, false);
        add(attn, kGemmFactor);
        KernelMeasurement ln;
        ln.kernel_class = KernelClass::elementwise;
        ln.op = "aten::native_layer_norm";
        ln.kernel = "vectorized_layer_norm_kernel";
        ln.shapes = {{b, s, h}, {}, {h}, {h}, {}};
        ln.bytes = (b * s * h + 2 * h) * 2;
        add(ln, kElementwiseFactor);
        KernelMeasurement nccl; // not predicted: counted in a note
        nccl.kernel_class = KernelClass::collective;
        nccl.op = "record_param_comms";
        nccl.kernel = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
        nccl.collective = "all_reduce";
        nccl.gpus = 2;
        nccl.bytes = h * h * 2;
        nccl.calls = 1;
        nccl.time = Time::us(100);
        nccl.source = fmt::format("{}: traceEvents[{}]", file, n++);
        f.kernels.push_back(nccl);

        StepMeasurement step;
        step.gpus = 1;
        step.model = {{"kind", std::string("transformer")},
                      {"layers", std::int64_t{2}},
                      {"hidden", h},
                      {"heads", a},
                      {"seq", s},
                      {"vocab", std::int64_t{50257}},
                      {"attention", std::string("flash")}};
        step.training = {{"micro_batch", b}, {"global_batch", b}, {"dtype", std::string("bf16")}};
        step.parallel = {{"tp", std::int64_t{1}}, {"pp", std::int64_t{1}}, {"dp", std::int64_t{1}}};
        step.source = file + ": ProfilerStep#1 to ProfilerStep#3";
        step.time = Time::from_seconds(predict_step(truth, step) * scatter(n++));
        f.steps.push_back(step);
    }
    return f;
}

} // namespace

TEST_CASE("split by shape: a trace's points stay together, same seed same split",
          "[kernel-fit][split]") {
    const auto platform = strategies::parallel::load_platform("hgx-h200");
    const MeasurementFile f = synthetic_traces(platform);
    const MeasurementSplit s = split_measurements_by_shape(f, 0.5, 7);
    std::set<std::string> chosen, rest;
    for (const auto& k : s.chosen.kernels)
        chosen.insert(shape_group(k));
    for (const auto& k : s.rest.kernels)
        rest.insert(shape_group(k));
    for (const auto& g : chosen)
        CHECK(rest.count(g) == 0);
    CHECK(chosen.size() == 4);
    CHECK(rest.size() == 4);
    CHECK(s.chosen.kernels.size() + s.rest.kernels.size() == f.kernels.size());
    // The step goes with its trace's kernels.
    for (const auto& st : s.chosen.steps)
        CHECK(chosen.count(shape_group(st)) == 1);
    CHECK(split_measurements_by_shape(f, 0.5, 7).chosen == s.chosen);
    CHECK_THROWS_AS(split_measurements_by_shape(f, 1.0, 7), InputError);
    MeasurementFile one;
    one.kernels.push_back(f.kernels.front());
    CHECK_THROWS_WITH(split_measurements_by_shape(one, 0.5, 7), Catch::Contains("two or more"));
}

TEST_CASE("fit-kernels: factors from the chosen shapes predict the held-out ones", "[kernel-fit]") {
    // At the boost clock: the synthetic steps mix GEMMs 25% slow and elementwise kernels 20%
    // fast in the proportions of that clock, so no step's unfitted errors cancel by chance.
    auto platform = strategies::parallel::load_platform("hgx-h200");
    platform.cluster.node.gpu.sustained_clock_mhz = 0;
    // The synthetic GPUs are alike: no slowest GPU for the step model to wait for. The
    // unfitted model is the kernel model itself (the preset's fitted factors would offset the
    // synthetic ones by their own amount, and could cancel them on a step).
    platform.framework.gpu_speed_spread = 0;
    platform.framework.gemm_efficiency = 1.0;
    platform.framework.memory_efficiency = 1.0;
    const MeasurementFile f = synthetic_traces(platform);
    const MeasurementSplit s = split_measurements_by_shape(f, 0.5, 7);
    const KernelFit fit = fit_kernel_classes(platform, s.chosen, "fit.json");
    const auto& g = fit.classes[static_cast<std::size_t>(KernelClass::gemm)];
    const auto& e = fit.classes[static_cast<std::size_t>(KernelClass::elementwise)];
    CHECK(g.fitted);
    CHECK(g.factor == Approx(kGemmFactor).epsilon(0.03));
    CHECK(e.factor == Approx(kElementwiseFactor).epsilon(0.03));
    CHECK_FALSE(fit.classes[static_cast<std::size_t>(KernelClass::collective)].fitted);
    CHECK(fit.notes.size() == 1); // the NCCL groups
    CHECK(fit.gemm_efficiency == Approx(1 / kGemmFactor).epsilon(0.03));
    CHECK(g.origin.find("fit.json") != std::string::npos);

    const KernelValidation v = validate_kernel_classes(platform, fit, s.rest, "holdout.json");
    REQUIRE(v.classes.size() == 3);
    for (const auto& c : v.classes) {
        CHECK(std::abs(c.error()) < 0.10);
        CHECK(std::abs(c.error_unfitted()) > 0.15);
    }
    REQUIRE(v.steps.size() == s.rest.steps.size());
    for (const auto& st : v.steps) {
        CHECK(std::abs(st.error()) < 0.05);
        CHECK(std::abs(st.error_unfitted()) > std::abs(st.error()));
    }
}

TEST_CASE("validate says it leaves traced kernels to fit-kernels", "[kernel-fit]") {
    const auto platform = strategies::parallel::load_platform("hgx-h200");
    MeasurementFile f = synthetic_traces(platform);
    f.steps.clear();
    const Validation v = validate_measurements(platform, f, "t.json");
    REQUIRE(v.skipped.size() == 1);
    CHECK_THAT(v.skipped[0], Catch::Contains("48 kernel groups") && Catch::Contains("fit-kernels"));
}

TEST_CASE("fit-kernels: nothing to fit is an error that says what to import", "[kernel-fit]") {
    const auto platform = strategies::parallel::load_platform("hgx-h200");
    MeasurementFile f;
    CHECK_THROWS_WITH(fit_kernel_classes(platform, f, "empty.json"),
                      Catch::Contains("record_shapes=True"));
}
