// PyTorch profiler (Kineto) traces: calibrate import's reading of a hand-written trace in the
// exact layout Kineto writes (tests/calibrate/data/kineto-one-layer.json: one profiler step, one
// layer's forward GEMM, flash attention and layer norm, the GEMM's two backward GEMMs, an NCCL
// all-reduce and a fused optimizer kernel), and its refusals of bad input.
#include "base/error.h"
#include "calibrate/import.h"
#include "calibrate/kineto.h"
#include "calibrate/measurements.h"
#include "hardware/compute_model.h"
#include "support/gzip.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

using namespace clustersim;
using namespace clustersim::calibrate;
using clustersim::test::gzip;
using sim::Time;

namespace {

const std::string kTrace = CLUSTERSIM_SOURCE_DIR "/tests/calibrate/data/kineto-one-layer.json";

std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string error_of(std::string_view text, const ImportOptions& options = {}) {
    try {
        import_text(text, "t.json", options);
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

const KernelMeasurement& kernel(const MeasurementFile& f, KernelClass c, std::string_view op) {
    const auto it = std::find_if(f.kernels.begin(), f.kernels.end(),
                                 [&](const auto& k) { return k.kernel_class == c && k.op == op; });
    REQUIRE(it != f.kernels.end());
    return *it;
}

} // namespace

TEST_CASE("kineto: kernels get their op, class, shapes, layer and phase", "[kineto][import]") {
    const std::string text = read(kTrace);
    const KinetoTrace t = read_kineto_trace(text, "k.json", {});
    const MeasurementFile& f = t.imported.measurements;
    CHECK(f.environment.device == "NVIDIA H200");
    CHECK(f.environment.device_count == 2); // distributedInfo.world_size
    CHECK(f.environment.cuda_version == "runtime 12.4");
    REQUIRE(t.kernels.size() == 8);
    REQUIRE(t.steps.size() == 1);

    // The forward GEMM: aten::addmm(bias, a[2048, 1024], b[1024, 4096]), in layer0.
    const auto& fwd = kernel(f, KernelClass::gemm, "aten::addmm");
    CHECK(fwd.phase == "forward");
    CHECK(fwd.layer == 0);
    CHECK(fwd.dtype == hardware::Dtype::bf16);
    CHECK(fwd.flops == 2.0 * 2048 * 1024 * 4096);
    CHECK(fwd.calls == 1);
    CHECK(fwd.time == Time::us(100));
    CHECK(fwd.kernel == "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
                        "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas");

    // Flash attention: the shapes and causality of SDPA's op, not of the flash op below it.
    const auto& attn =
        kernel(f, KernelClass::attention, "aten::_scaled_dot_product_flash_attention");
    CHECK(attn.shapes.at(0) == std::vector<std::int64_t>{2, 16, 1024, 64});
    CHECK(attn.flops ==
          hardware::ComputeModel::fused_attention_flops(2 * 16, 1024, 64, true, false));
    CHECK(attn.kernel == "pytorch_flash::flash_fwd_kernel");
    CHECK(attn.layer == 0);

    // Layer norm: bytes of its tensor inputs (x, weight, bias in bf16).
    const auto& ln = kernel(f, KernelClass::elementwise, "aten::native_layer_norm");
    CHECK(ln.bytes == (2 * 1024 * 1024 + 1024 + 1024) * 2);
    CHECK(ln.kernel == "at::native::{anonymous}::vectorized_layer_norm_kernel");

    // Backward: both mm calls of AddmmBackward0 belong to layer 0 through its sequence number.
    int backward = 0;
    for (const auto& k : f.kernels) {
        if (k.op == "aten::mm") {
            ++backward;
            CHECK(k.phase == "backward");
            CHECK(k.layer == 0);
            CHECK(k.kernel_class == KernelClass::gemm);
        }
    }
    CHECK(backward == 2);

    // NCCL: nccl-tests' size from the args Kineto copies onto the kernel.
    const auto& ar = kernel(f, KernelClass::collective, "record_param_comms");
    CHECK(ar.collective == "all_reduce");
    CHECK(ar.gpus == 2);
    CHECK(ar.bytes == 4198400 * 2);
    CHECK(ar.stream == 20);

    // The optimizer's fused kernel (a TensorList input: no shapes it can use).
    const auto& opt = kernel(f, KernelClass::elementwise, "aten::_foreach_add_");
    CHECK(opt.phase == "optimizer");
    CHECK(opt.layer == -1);

    // The copy.
    const auto it = std::find_if(f.kernels.begin(), f.kernels.end(),
                                 [](const auto& k) { return k.kernel_class == KernelClass::copy; });
    REQUIRE(it != f.kernels.end());
    CHECK(it->bytes == 65536);
}

TEST_CASE("kineto: GEMMs in cuBLAS terms, launches and the whole step", "[kineto][import]") {
    const MeasurementFile f = import_kineto(read(kTrace), "k.json", {}).measurements;
    // addmm(a[2048,1024], b[1024,4096] transposed view): cuBLAS C^T = B^T A^T, m = 4096.
    REQUIRE(f.gemms.size() == 3);
    auto has = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::string_view layout) {
        return std::any_of(f.gemms.begin(), f.gemms.end(), [&](const GemmMeasurement& g) {
            return g.m == m && g.n == n && g.k == k && g.layout == layout && g.library == "torch" &&
                   g.time == Time::us(100);
        });
    };
    CHECK(has(4096, 2048, 1024, "TN"));
    CHECK(has(1024, 2048, 4096, "TN")); // mm(dY[2048,4096], W[4096,1024] as W^T view)
    CHECK(has(1024, 4096, 2048, "NT")); // mm(X^T view [4096,2048], dY[2048,1024])

    // Launch calls: 5.5, 4.5, 5, 5, 5, 6, 5 us (the memcpy call is not a launch).
    CHECK(f.launches.empty());
    REQUIRE(f.trace_steps.size() == 1);
    CHECK(f.trace_steps[0].launch == Time::us(5));

    // One step of 1000 us; kernels busy 10 + 100 + 80 + 20 + 100 + 100 + 50 + 30 us.
    REQUIRE(f.trace_steps.size() == 1);
    CHECK(f.trace_steps[0].steps == 1);
    CHECK(f.trace_steps[0].time == Time::us(1000));
    CHECK(f.trace_steps[0].busy == Time::us(490));
    CHECK(f.trace_steps[0].kernels == 8);

    // Written and read back unchanged.
    const std::string written = format_measurements(f, "out.json");
    CHECK(parse_measurements(written, "out.json") == f);
}

TEST_CASE("kineto: --set describes the model and records the training step", "[kineto][import]") {
    ImportOptions o;
    o.step_settings = {"model.kind=transformer", "model.hidden=1024", "model.layers=1",
                       "training.micro_batch=2"};
    const MeasurementFile f = import_kineto(read(kTrace), "k.json", o).measurements;
    REQUIRE(f.steps.size() == 1);
    CHECK(f.steps[0].gpus == 2);
    CHECK(f.steps[0].time == Time::us(1000));
}

TEST_CASE("kineto: gzip is read, and the same as the plain file", "[kineto][import]") {
    const std::string text = read(kTrace);
    const std::string gz = gzip(text);
    CHECK(is_gzip(gz));
    CHECK(import_text(gz, "k.json.gz", {}).measurements ==
          import_text(text, "k.json.gz", {}).measurements);
    // Cut short: the gzip stream ends early.
    const std::string cut = gz.substr(0, gz.size() / 2);
    CHECK_THROWS_WITH(import_text(cut, "k.json.gz", {}),
                      Catch::Contains("truncated") && Catch::Contains("k.json.gz"));
    CHECK_THROWS_WITH(gunzip(gz, "k.json.gz", 1000), Catch::Contains("more than"));
}

TEST_CASE("kineto: a trace recorded without record_shapes is read by kernel class",
          "[kineto][import]") {
    // Most production traces (the Holistic Trace Analysis project's test traces among them)
    // have no "Input Dims": the same kernels, classes, phases, layers and step, without the
    // per-shape points.
    const std::string text = read(kTrace);
    std::string no_shapes = text;
    for (auto at = no_shapes.find("\"Input Dims\""); at != std::string::npos;
         at = no_shapes.find("\"Input Dims\""))
        no_shapes.replace(at, 12, "\"Input Xims\"");
    REQUIRE(no_shapes != text);
    const KinetoTrace with = read_kineto_trace(text, "t.json", {});
    const KinetoTrace without = read_kineto_trace(no_shapes, "t.json", {});
    REQUIRE(without.kernels.size() == with.kernels.size());
    for (std::size_t i = 0; i < with.kernels.size(); ++i) {
        const TracedKernel& a = with.kernels[i];
        const TracedKernel& b = without.kernels[i];
        CHECK(b.kernel_class == a.kernel_class);
        CHECK(b.start == a.start);
        CHECK(b.duration == a.duration);
        CHECK(b.phase == a.phase);
        CHECK(b.layer == a.layer);
        CHECK(b.step == a.step);
        CHECK(without.names[static_cast<std::size_t>(b.name)] ==
              with.names[static_cast<std::size_t>(a.name)]);
    }
    REQUIRE(without.steps.size() == with.steps.size());
    CHECK(without.steps.front().end - without.steps.front().start ==
          with.steps.front().end - with.steps.front().start);
    // Every class is there (GEMM, attention, collective, ...), but no GEMM shape to fit, and
    // the import says why.
    const MeasurementFile& f = without.imported.measurements;
    CHECK(f.gemms.empty());
    CHECK_FALSE(with.imported.measurements.gemms.empty());
    CHECK(std::any_of(f.kernels.begin(), f.kernels.end(),
                      [](const auto& k) { return k.kernel_class == KernelClass::gemm; }));
    CHECK(std::all_of(f.kernels.begin(), f.kernels.end(),
                      [](const auto& k) { return k.shapes.empty() && !(k.flops > 0); }));
    const auto& w = without.imported.warnings;
    CHECK(std::any_of(w.begin(), w.end(), [](const std::string& s) {
        return s.find("record_shapes=True") != std::string::npos;
    }));
}

TEST_CASE("kineto: bad input exits with what is missing and how to record it",
          "[kineto][import][bad-input]") {
    const std::string text = read(kTrace);
    // Truncated JSON.
    CHECK_THAT(error_of(text.substr(0, text.size() / 2)),
               Catch::Contains("truncated") && Catch::Contains("export it again"));
    // No deviceProperties: the GPU is not described (unless --device says).
    std::string no_device = text;
    no_device.replace(no_device.find("\"deviceProperties\""), 18, "\"deviceXroperties\"");
    CHECK_THAT(error_of(no_device), Catch::Contains("--device"));
    ImportOptions with_device;
    with_device.device = "NVIDIA H200";
    CHECK_NOTHROW(import_text(no_device, "t.json", with_device));
    ImportOptions other_device;
    other_device.device = "NVIDIA A100-SXM4-80GB";
    CHECK_THAT(error_of(text, other_device), Catch::Contains("--device says"));
    // Not Kineto: a Chrome trace without schemaVersion, and clustersim's own trace.
    CHECK_THAT(error_of(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]})"),
               Catch::Contains("not a PyTorch profiler (Kineto) trace"));
    CHECK_THAT(error_of(R"({"displayTimeUnit": "ms", "otherData": {"clustersim": "0.1.0"},
                           "traceEvents": []})"),
               Catch::Contains("clustersim wrote"));
    // No GPU activity.
    CHECK_THAT(error_of(R"({"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.5,
         "dur": 2, "args": {"Input Dims": [[2, 2], [2, 2]]}}]})"),
               Catch::Contains("ProfilerActivity.CUDA"));
    // A number beyond a double, in a trace and in a measurement file (was an internal error).
    CHECK_THAT(error_of(R"({"schemaVersion": 1e999, "traceEvents": []})"),
               Catch::Contains("t.json"));
    CHECK_THAT(error_of(R"({"format": 1e999})"), Catch::Contains("not valid JSON"));
    // Timestamps beyond what nanoseconds in 64 bits hold (found by fuzz_kineto: an overflow,
    // caught by the sanitizer build): read as missing, never wrapped.
    for (const char* ts : {"14444444444444440.5", "-9223372036854775808", "9223372036854775807",
                           "99999999999999999999.999"}) {
        std::string huge = text;
        const auto at = huge.find("\"ts\": 102.000");
        REQUIRE(at != std::string::npos);
        huge.replace(at, 14, std::string("\"ts\": ") + ts);
        CHECK_NOTHROW(error_of(huge));
    }
    // Deep nesting is refused, not recursed into.
    std::string deep = R"({"schemaVersion": 1, "traceEvents": [)";
    deep += std::string(100000, '[') + std::string(100000, ']') + "]}";
    CHECK_THAT(error_of(deep), Catch::Contains("nesting deeper than 64"));
}

TEST_CASE("kineto: every prefix of a trace is an InputError or a result, never a crash",
          "[kineto][import][bad-input]") {
    const std::string text = read(kTrace);
    int errors = 0;
    for (std::size_t n = 0; n < text.size(); n += 97) {
        try {
            import_text(text.substr(0, n), "t.json", {});
        } catch (const InputError&) {
            ++errors;
        }
    }
    CHECK(errors == static_cast<int>((text.size() + 96) / 97));
}
