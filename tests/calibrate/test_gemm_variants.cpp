// GEMM variants (GemmVariant: fp8 fast accumulation, accumulation into fp32 main_grad): the
// measurement file's field, its checks, the ratios against the plain twin, and that fits and
// validation leave the variants out.
#include "fit_data.h"

#include "base/error.h"
#include "calibrate/fit.h"
#include "calibrate/gemm_variants.h"
#include "calibrate/measurements.h"
#include "calibrate/validation.h"
#include "hardware/compute_model.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace clustersim;
using namespace clustersim::calibrate;
using namespace clustersim::calibrate::testing;
using hardware::Dtype;

namespace {

GemmMeasurement gemm(std::int64_t s, Dtype d, GemmVariant v, double us) {
    GemmMeasurement g;
    g.m = g.n = g.k = s;
    g.dtype = d;
    g.variant = v;
    g.time = sim::Time::from_seconds(us * 1e-6);
    return g;
}

} // namespace

TEST_CASE("gemm variants: written only when not plain, read back, checked against the dtype",
          "[calibrate][measurements]") {
    MeasurementFile f;
    f.environment.device = kA100;
    f.gemms = {gemm(4096, Dtype::fp8, GemmVariant::plain, 100),
               gemm(4096, Dtype::fp8, GemmVariant::fast_accum, 90),
               gemm(4096, Dtype::bf16, GemmVariant::accumulate_fp32, 200)};
    const std::string text = format_measurements(f);
    CHECK_THAT(text, Catch::Contains(R"("library":"cublaslt","variant":"fast_accum","time_us")"));
    CHECK_THAT(text, Catch::Contains(R"("variant":"accumulate_fp32")"));
    CHECK(text.find(R"("variant":"plain")") == std::string::npos); // the default: left out
    const MeasurementFile back = parse_measurements(text, "v.json");
    CHECK(back == f);
    // A plain GEMM and its variant are two points; the same variant twice is a duplicate.
    f.gemms.push_back(f.gemms[1]);
    CHECK_THROWS_WITH(parse_measurements(format_measurements(f), "v.json"),
                      Catch::Contains("fast_accum"));
    // fast_accum is an fp8 mode: refused before it is written.
    f.gemms = {gemm(4096, Dtype::bf16, GemmVariant::fast_accum, 90)};
    CHECK_THROWS_WITH(format_measurements(f, "v.json"), Catch::Contains("gemms[0]") &&
                                                            Catch::Contains("fast_accum") &&
                                                            Catch::Contains("bf16"));
    // An unknown name is refused with the choices.
    CHECK_THROWS_WITH(parse_measurements(R"({"format": "clustersim-measurements", "version": 1,
  "environment": {"device": "NVIDIA A100-SXM4-80GB", "device_count": 1},
  "gemms": [{"m": 8, "n": 8, "k": 8, "dtype": "fp8", "layout": "TN", "library": "cublaslt",
             "variant": "split", "time_us": 1.0}]})",
                                         "v.json"),
                      Catch::Contains("variant") && Catch::Contains("fast_accum"));
}

TEST_CASE("gemm variants: each variant's time over its plain twin's, per dtype",
          "[calibrate][fit]") {
    const std::vector<GemmMeasurement> g = {
        gemm(2048, Dtype::fp8, GemmVariant::plain, 100),
        gemm(2048, Dtype::fp8, GemmVariant::fast_accum, 80),
        gemm(4096, Dtype::fp8, GemmVariant::plain, 400),
        gemm(4096, Dtype::fp8, GemmVariant::fast_accum, 360),
        gemm(8192, Dtype::fp8, GemmVariant::plain, 1000),
        gemm(8192, Dtype::fp8, GemmVariant::fast_accum, 850),
        gemm(4096, Dtype::bf16, GemmVariant::plain, 800),
        gemm(4096, Dtype::bf16, GemmVariant::accumulate_fp32, 880),
        gemm(1024, Dtype::bf16, GemmVariant::accumulate_fp32, 50), // no plain twin: left out
    };
    const auto r = gemm_variant_ratios(g);
    REQUIRE(r.size() == 2);
    CHECK(r[0].variant == GemmVariant::fast_accum);
    CHECK(r[0].dtype == Dtype::fp8);
    CHECK(r[0].shapes == 3);
    CHECK(r[0].median == Approx(0.85));
    CHECK(r[0].lowest == Approx(0.8));
    CHECK(r[0].highest == Approx(0.9));
    CHECK(r[1].variant == GemmVariant::accumulate_fp32);
    CHECK(r[1].dtype == Dtype::bf16);
    CHECK(r[1].shapes == 1);
    CHECK(r[1].median == Approx(1.1));
}

TEST_CASE("gemm variants: the fit and validation use plain GEMMs, the fit reports the ratios",
          "[calibrate][fit]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    const hardware::ComputeModel model(base.cluster);
    MeasurementFile f;
    f.environment.device = kA100;
    for (std::int64_t s : {1024, 2048, 4096, 8192}) {
        const double us = model.gemm_seconds(s, s, s, Dtype::bf16) * 1e6;
        f.gemms.push_back(gemm(s, Dtype::bf16, GemmVariant::plain, us));
        // Twice as slow: a fit that took these in would move the efficiency.
        f.gemms.push_back(gemm(s, Dtype::bf16, GemmVariant::accumulate_fp32, 2 * us));
    }
    const FitResult r = fit_hardware(base, {{"v.json", f}});
    const auto part = std::find_if(r.parts.begin(), r.parts.end(),
                                   [](const FitPart& p) { return p.name == "gemms"; });
    REQUIRE(part != r.parts.end());
    CHECK(part->points == 4);
    CHECK(r.fitted.cluster.compute.gemm_eff(Dtype::bf16) ==
          Approx(base.cluster.compute.gemm_eff(Dtype::bf16)).epsilon(0.02));
    CHECK(std::any_of(part->notes.begin(), part->notes.end(), [](const std::string& n) {
        return n.find("bf16 accumulate_fp32 (not fitted): 2.000x") != std::string::npos &&
               n.find("median of 4 shapes") != std::string::npos;
    }));
    const Validation v = validate_measurements(base, f, "v.json");
    CHECK(v.of(PointKind::gemm).size() == 4);
}
