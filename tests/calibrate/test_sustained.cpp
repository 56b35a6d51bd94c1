// The sustained-rate fit (calibrate/sustained.h) on synthetic records.
#include "base/error.h"
#include "calibrate/sustained.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

using namespace clustersim;
using namespace clustersim::calibrate;

namespace {

/// A GEMM loop that starts at `burst` TFLOP/s and settles exponentially (time constant `tau`)
/// to `steady`, with a deterministic +-0.3% ripple, sampled every 0.5 s for `seconds`.
std::string record(double burst, double steady, double tau, double seconds) {
    std::string s = "# clustersim-sustained: synthetic, boost 1980 MHz\nt_s,tflops\n";
    for (int i = 1; 0.5 * i <= seconds; ++i) {
        const double t = 0.5 * i;
        const double rate = steady + (burst - steady) * std::exp(-t / tau);
        const double ripple = 1 + 0.003 * ((i % 3) - 1);
        s += std::to_string(t) + "," + std::to_string(rate * ripple) + "\n";
    }
    return s;
}

} // namespace

TEST_CASE("sustained fit: the steady rate over the burst rate scales the boost clock",
          "[calibrate][sustained]") {
    // 740 TFLOP/s at boost settling to 650 with a 20 s time constant, 240 s long.
    const auto r = parse_sustained(record(740, 650, 20, 240), "synthetic.csv");
    const SustainedFit f = fit_sustained(r, 1980);
    CHECK(f.steady_tflops == Approx(650).epsilon(0.004));
    // The burst median of the first 2 s has decayed by at most 5% of the gap.
    CHECK(f.burst_tflops == Approx(740 - 90 * (1 - std::exp(-1.0 / 20))).epsilon(0.01));
    CHECK(f.sustained_clock_mhz == Approx(1980 * f.steady_tflops / f.burst_tflops));
    CHECK(f.drift < 0.01);

    // A GPU that does not throttle keeps its boost clock.
    const SustainedFit flat = fit_sustained(parse_sustained(record(700, 700, 20, 60), "f"), 1410);
    CHECK(flat.sustained_clock_mhz == Approx(1410).epsilon(0.006));
}

TEST_CASE("sustained fit: a record still drifting or too short is refused",
          "[calibrate][sustained][errors]") {
    // 60 s of a 60 s time constant: the last quarter still falls by several percent.
    CHECK_THROWS_WITH(fit_sustained(parse_sustained(record(740, 600, 60, 60), "d.csv"), 1980),
                      Catch::Contains("d.csv") && Catch::Contains("steady state"));
    CHECK_THROWS_WITH(fit_sustained(parse_sustained(record(740, 600, 1, 3), "s.csv"), 1980),
                      Catch::Contains("s.csv") && Catch::Contains("longer"));
    CHECK_THROWS_WITH(parse_sustained("t_s,tflops\n1,700\n1,700\n", "t.csv"),
                      Catch::Contains("t.csv:3") && Catch::Contains("increase"));
    CHECK_THROWS_WITH(parse_sustained("t_s,rate\n1,700\n", "c.csv"), Catch::Contains("tflops"));
}

TEST_CASE("sustained clock and power cap scale the tensor rate, not memory-bound work",
          "[hardware][sustained]") {
    hardware::ClusterSpec c = hardware::load_hardware("dgx-h100");
    c.node.gpu.sustained_clock_mhz = 0; // the boost clock (the preset sets its sustained one)
    const hardware::ComputeModel boost(c);
    c.node.gpu.sustained_clock_mhz = 1750;
    const hardware::ComputeModel sustained(c);
    c.node.gpu.power_cap_w = 500;
    const hardware::ComputeModel capped(c);
    const auto g0 = boost.gemm(8192, 8192, 8192, hardware::Dtype::bf16);
    const auto g1 = sustained.gemm(8192, 8192, 8192, hardware::Dtype::bf16);
    const auto g2 = capped.gemm(8192, 8192, 8192, hardware::Dtype::bf16);
    // A large compute-bound GEMM: time scales as the inverse clock (less the fixed launch).
    const double launch = c.compute.launch_overhead.seconds();
    CHECK((g1.seconds() - launch) / (g0.seconds() - launch) == Approx(1980.0 / 1750).epsilon(0.01));
    CHECK((g2.seconds() - launch) / (g1.seconds() - launch) ==
          Approx(std::cbrt(700.0 / 500)).epsilon(0.01));
    CHECK(capped.memory_bound(std::int64_t{1} << 30) == boost.memory_bound(std::int64_t{1} << 30));
}

TEST_CASE("hardware file: a power cap above the limit or a sustained clock above boost is "
          "refused at its line",
          "[hardware][sustained][errors]") {
    const std::string base = "extends: dgx-h100\ngpu:\n";
    CHECK_THROWS_WITH(hardware::parse_hardware_yaml(base + "  power_cap_w: 800\n", "cap.yaml"),
                      Catch::Contains("cap.yaml:3") && Catch::Contains("power_cap_w"));
    CHECK_THROWS_WITH(
        hardware::parse_hardware_yaml(base + "  sustained_clock_mhz: 2500\n", "clk.yaml"),
        Catch::Contains("clk.yaml:3") && Catch::Contains("sustained_clock_mhz"));
    const auto ok = hardware::parse_hardware_yaml(base + "  power_cap_w: 500\n", "ok.yaml");
    // The cap scales the clock the preset sustains at its 700 W limit (dgx-h100: 1500 MHz).
    CHECK(ok.node.gpu.sustained_clock() == Approx(1500 * std::cbrt(500.0 / 700)));
}
