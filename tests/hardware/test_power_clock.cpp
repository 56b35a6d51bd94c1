#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "hardware/power_clock.h"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <string>

using namespace clustersim;
using namespace clustersim::hardware;

// cuBLAS bf16 GEMMs of random data, M = K = 8,192, on a B300 SXM6 capped at 1,100 W and at
// 600 W, TFLOP/s (ademeure/QuickRunCUDA 0bb48c3, b300_clean/CUBLAS_REAL_VALIDATION.md,
// "Comprehensive N sweep at fixed M=K=8192"). The rate of a compute-bound GEMM goes as its clock.
TEST_CASE("power-limited clock: Blackwell's exponent reproduces a B300's GEMMs at two limits",
          "[hardware][sustained]") {
    const double exponent = load_hardware("dgx-b300").node.gpu.power_clock_exponent;
    struct Row {
        int n;
        double at_1100w, at_600w;
    };
    for (const Row& r : std::array<Row, 4>{
             {{8192, 1492, 836}, {16384, 1496, 839}, {28672, 1487, 831}, {32768, 1503, 829}}}) {
        INFO("N = " << r.n);
        const double measured = r.at_1100w / r.at_600w;
        CHECK(power_limited_clock(1.0, 600, 1100, exponent) == Approx(measured).epsilon(0.015));
        // The cube root (P ~ f^3, the default) would give 1.22x.
        CHECK(power_limited_clock(1.0, 600, 1100) < 0.7 * measured);
    }
    CHECK(power_limited_clock(1270, 1200, 1400, 1.0) == Approx(1270.0 * 7 / 6));
    CHECK(power_limited_clock(1500, 700, 500) == Approx(1500 * std::cbrt(500.0 / 700)));
    CHECK(power_limited_clock(1500, 0, 500) == 1500); // no power to scale from
}

// A cap on a Blackwell preset follows its exponent; Hopper's presets keep the cube root.
TEST_CASE("power cap: the GPU's own exponent", "[hardware][sustained]") {
    ClusterSpec gb300 = load_hardware("gb300-nvl72");
    GpuSpec& g = gb300.node.gpu;
    const double uncapped = g.sustained_clock();
    g.power_cap_w = 1200;
    CHECK(g.sustained_clock() == Approx(uncapped * std::pow(1200.0 / 1400, 0.96)));
    CHECK(load_hardware("dgx-h100").node.gpu.power_clock_exponent == Approx(1.0 / 3));
}

TEST_CASE("hardware file: power_clock_exponent above 1 is refused with the key",
          "[hardware][sustained]") {
    const std::string yaml = "extends: dgx-h100\ngpu:\n  power_clock_exponent: 3\n";
    CHECK_THROWS_WITH(parse_hardware_yaml(yaml, "exp.yaml"),
                      Catch::Contains("exp.yaml:3") && Catch::Contains("power_clock_exponent") &&
                          Catch::Contains("(0, 1]"));
}

namespace {
double sustained_tflops(const ClusterSpec& c, Dtype d) {
    return ComputeModel(c).sustained_flops(d) / 1e12;
}
} // namespace

// The Blackwell presets' sustained clocks: two measured (a GB200's and a B300's fp8 GEMMs at
// their limits), the other two carried from the same die by the law above.
TEST_CASE("Blackwell presets: sustained clocks measured or carried by the power law",
          "[hardware][sustained][blackwell]") {
    const ClusterSpec b200 = load_hardware("dgx-b200"), gb200 = load_hardware("gb200-nvl72"),
                      b300 = load_hardware("dgx-b300"), gb300 = load_hardware("gb300-nvl72");
    // Measured: cuBLASLt fp8 at 32768^3 on an Azure ND GB200 v6 (random data, 10,000 warm-up
    // iterations), 2,973 TFLOP/s (Azure/AI-benchmarking-guide as forked at samuel-bohman/
    // AI-benchmarking-guide 154d35c0); cuBLAS fp8 at 8192 x 28672 x 8192 of random data on a
    // B300 at 1,100 W, 2,630 (ademeure/QuickRunCUDA 0bb48c3, "FP8 cuBLAS shape scan").
    CHECK(sustained_tflops(gb200, Dtype::fp8) == Approx(2973).epsilon(0.01));
    CHECK(sustained_tflops(b300, Dtype::fp8) == Approx(2630).epsilon(0.01));
    // Carried to the same die at another limit: a B200 is a GB200's GPU at 1,000 W, a GB300
    // a B300's at 1,400 W.
    const GpuSpec &b = b200.node.gpu, &g = gb200.node.gpu, &u = b300.node.gpu, &gu = gb300.node.gpu;
    CHECK(b.sustained_clock() ==
          Approx(power_limited_clock(g.sustained_clock(), g.power_limit_w, b.power_limit_w,
                                     b.power_clock_exponent))
              .margin(1));
    CHECK(gu.sustained_clock() ==
          Approx(power_limited_clock(u.sustained_clock(), u.power_limit_w, gu.power_limit_w,
                                     gu.power_clock_exponent))
              .margin(1));
    // Across the generations the law holds within 5%: the GB200's clock at a B300's 1,100 W
    // (1,168 MHz) against the B300's measured one (1,123: 4.0%; the cube root would miss by 10%).
    CHECK(power_limited_clock(g.sustained_clock(), g.power_limit_w, u.power_limit_w,
                              u.power_clock_exponent) == Approx(u.sustained_clock()).epsilon(0.05));
    // The same dense peaks per clock (dgxc): a GB300 against a GB200 is the clock's ratio.
    CHECK(sustained_tflops(gb300, Dtype::fp8) / sustained_tflops(gb200, Dtype::fp8) ==
          Approx(gu.sustained_clock() / g.sustained_clock()).epsilon(1e-9));
}
