// The slowest of N GPUs (strategies/parallel/straggler.h): the expected maximum of N standard
// normals against its closed forms and tabulated values, its quantiles, and a step that waits
// for its slowest GPU.
#include "base/error.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/straggler.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

TEST_CASE("straggler: the expected maximum of N standard normals", "[parallel][straggler]") {
    const double sqrt_pi = std::sqrt(std::acos(-1.0));
    CHECK(expected_max_standard_normal(1) == 0.0);
    // Closed forms: E[max of 2] = 1/sqrt(pi), E[max of 3] = 3/(2 sqrt(pi)).
    CHECK(expected_max_standard_normal(2) == Approx(1.0 / sqrt_pi).epsilon(1e-9));
    CHECK(expected_max_standard_normal(3) == Approx(1.5 / sqrt_pi).epsilon(1e-9));
    // Tabulated expected normal order statistics (Harter 1961; Teichroew 1956): 5, 10, 100,
    // 1,000 samples.
    CHECK(expected_max_standard_normal(5) == Approx(1.16296).epsilon(1e-5));
    CHECK(expected_max_standard_normal(10) == Approx(1.53875).epsilon(1e-5));
    CHECK(expected_max_standard_normal(100) == Approx(2.50759).epsilon(1e-5));
    CHECK(expected_max_standard_normal(1000) == Approx(3.24144).epsilon(1e-5));
    // Grows with N, below the classic bound sqrt(2 ln N).
    double previous = 0;
    for (int n : {2, 8, 64, 512, 4096, 32768, 262144}) {
        const double m = expected_max_standard_normal(n);
        CHECK(m > previous);
        CHECK(m < std::sqrt(2 * std::log(static_cast<double>(n))));
        previous = m;
    }
}

TEST_CASE("straggler: quantiles of the slowest of N", "[parallel][straggler]") {
    // The max of one normal is the normal: its median 0, its 95th percentile 1.6449.
    CHECK(max_standard_normal_quantile(1, 0.5) == Approx(0.0).margin(1e-12));
    CHECK(max_standard_normal_quantile(1, 0.95) == Approx(1.644854).epsilon(1e-6));
    // P(max of n <= x) = Phi(x)^n: the median of the max of 2 is Phi^-1(sqrt(1/2)).
    CHECK(max_standard_normal_quantile(2, 0.5) == Approx(0.544952).epsilon(1e-5));
    // For every N the expected maximum lies between the 5th and 95th percentiles.
    for (int n : {2, 8, 1024, 100000}) {
        CHECK(max_standard_normal_quantile(n, 0.05) < expected_max_standard_normal(n));
        CHECK(max_standard_normal_quantile(n, 0.95) > expected_max_standard_normal(n));
    }
}

TEST_CASE("straggler: the band of a step", "[parallel][straggler]") {
    CHECK(straggler_slowdown(0.0, 1024) == 0.0);
    CHECK(straggler_slowdown(0.02, 1) == 0.0);
    CHECK(straggler_slowdown(0.02, 2) == Approx(0.02 / std::sqrt(std::acos(-1.0))));
    // 1,000 GPUs at spread 2%: the expected slowest 6.48% slower than the median GPU, between
    // its 5th and 95th percentiles (2.749 and 3.884 standard deviations: Phi^-1(0.05^(1/1000))
    // and Phi^-1(0.95^(1/1000))).
    const StragglerBand b = straggler_slowdowns(0.02, 1000);
    CHECK(b.slowdown == Approx(0.02 * 3.24144).epsilon(1e-5));
    CHECK(b.slowdown_p05 == Approx(0.02 * 2.74874).epsilon(1e-5));
    CHECK(b.slowdown_p95 == Approx(0.02 * 3.88440).epsilon(1e-5));
    CHECK(b.step_time_p05_s == 0.0); // not simulated here
    const StragglerBand none = straggler_slowdowns(0.0, 1000);
    CHECK(none.slowdown == 0.0);
    CHECK(none.slowdown_p95 == 0.0);
    // The framework at another slowdown: at_slowest_gpu then gives 1 / (1 + that) of the rate.
    FrameworkSpec fw;
    fw.gpu_speed_spread = 0.02;
    CHECK(at_slowest_gpu(with_slowest_gpu_at(fw, 1000, 0.1), 1000).gemm_efficiency ==
          Approx(1.0 / 1.1));
}

namespace {

StepResult llama_step(const Platform& p, int gpus, bool band = false) {
    std::vector<std::pair<std::string, std::string>> s{{"model", "llama3-8B"},
                                                       {"training.dtype", "bf16"},
                                                       {"training.micro_batch", "1"},
                                                       {"training.global_batch", "64"},
                                                       {"parallel.tp", "8"}};
    StepOptions o;
    o.oom_advice = false;
    o.straggler_band = band;
    return simulate_step(make_experiment(p, gpus, s, "straggler"), o);
}

} // namespace

TEST_CASE("straggler: a step waits for its slowest GPU", "[parallel][straggler]") {
    Platform alike = load_platform("dgx-h100");
    REQUIRE(alike.framework.gpu_speed_spread > 0);
    const Platform varied = alike;
    alike.framework.gpu_speed_spread = 0;
    for (int gpus : {8, 64}) {
        const StepResult even = llama_step(alike, gpus);
        const StepResult slow = llama_step(varied, gpus);
        const double s = straggler_slowdown(varied.framework.gpu_speed_spread, gpus);
        CHECK(slow.straggler.slowdown == Approx(s));
        CHECK(even.straggler.slowdown == 0.0);
        // Only the SM-bound kernels slow down: the step grows, by less than the slowdown.
        CHECK(slow.step_time_s > even.step_time_s);
        CHECK(slow.step_time_s < even.step_time_s * (1 + s));
        // The compute does slow by most of it (GEMMs and attention dominate Llama's kernels).
        const double compute_ratio = slow.breakdown.compute_s / even.breakdown.compute_s;
        CHECK(compute_ratio > 1 + 0.7 * s);
        CHECK(compute_ratio <= 1 + s + 1e-12);
        CHECK(slow.straggler.step_time_p95_s == 0.0); // not asked for
        // The band: the step re-simulated with the slowest GPU at the 95th percentile equals
        // the step of a cluster whose spread puts its expected slowest GPU there.
        const StepResult banded = llama_step(varied, gpus, true);
        CHECK(banded.step_time_s == slow.step_time_s);
        Platform wider = varied;
        wider.framework.gpu_speed_spread *= banded.straggler.slowdown_p95 / s;
        CHECK(banded.straggler.step_time_p95_s ==
              Approx(llama_step(wider, gpus).step_time_s).epsilon(1e-9));
        CHECK(banded.straggler.step_time_p05_s < banded.step_time_s);
        CHECK(banded.straggler.step_time_p95_s > banded.step_time_s);
    }
    // More GPUs, a slower slowest one.
    CHECK(llama_step(varied, 64).straggler.slowdown > llama_step(varied, 8).straggler.slowdown);
}

TEST_CASE("straggler: gpu_speed_spread is a relative standard deviation", "[parallel][straggler]") {
    auto load = [](const std::string& v) {
        return parse_platform_yaml("extends: dgx-h100\nframework:\n  gpu_speed_spread: " + v + "\n",
                                   "spread.yaml");
    };
    CHECK(load("0.03").framework.gpu_speed_spread == Approx(0.03));
    CHECK(load("0").framework.gpu_speed_spread == 0.0);
    CHECK_THROWS_WITH(load("0.8"), Catch::Contains("spread.yaml:3:") &&
                                       Catch::Contains("gpu_speed_spread") &&
                                       Catch::Contains("[0, 0.5)"));
    CHECK_THROWS_AS(load("-0.1"), InputError);
}
