// calibrate fit and validate on bad input: another GPU's measurements, duplicates across files,
// too few points, unknown devices; and the hardware loader's calibration and uncertainty
// sections (kept, inherited, refused when malformed).
#include "fit_data.h"

#include "base/error.h"
#include "calibrate/fit.h"
#include "calibrate/validation.h"
#include "hardware/hardware_loader.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::calibrate;
using namespace clustersim::calibrate::testing;
using clustersim::test::input_error_of;

namespace {

MeasurementFile two_collectives(const std::string& device) {
    MeasurementFile f;
    f.environment.device = device;
    for (std::int64_t bytes : {std::int64_t{1} << 20, std::int64_t{1} << 26}) {
        CollectiveMeasurement c;
        c.gpus = 8;
        c.bytes = bytes;
        c.time = sim::Time::us(bytes == (1 << 20) ? 50 : 420);
        f.collectives.push_back(c);
    }
    return f;
}

} // namespace

TEST_CASE("fit: which GPU a measurement file may calibrate", "[calibrate][fit][errors]") {
    CHECK(device_mismatch("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB").empty());
    CHECK(device_mismatch("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB").empty());
    CHECK(device_mismatch("NVIDIA H200", "H200-SXM-141GB").empty());
    CHECK(device_mismatch("NVIDIA H100 80GB HBM3", "A100-SXM4-80GB") == "a H100 is not a A100");
    CHECK_THAT(device_mismatch("NVIDIA A100-SXM4-40GB", "A100-SXM4-80GB"),
               Catch::Contains("memory differs (40GB against 80GB)"));
    CHECK_THAT(device_mismatch("NVIDIA A100 80GB PCIe", "A100-SXM4-80GB"),
               Catch::Contains("form factor differs (pcie against sxm)"));
}

TEST_CASE("fit: another GPU's measurements are refused, naming the file",
          "[calibrate][fit][errors]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    const std::string e = input_error_of([&] {
        fit_hardware(base, {{"a100.json", a100_all_reduce(8)},
                            {"h100.json", two_collectives("NVIDIA H100 80GB HBM3")}});
    });
    CHECK_THAT(e, Catch::StartsWith("h100.json: measured on 'NVIDIA H100 80GB HBM3', but "
                                    "hardware 'dgx-a100' has A100-SXM4-80GB GPUs (a H100 is not "
                                    "a A100)"));
    // validate refuses them the same way.
    CHECK_THAT(input_error_of([&] {
                   check_device(base.cluster, two_collectives("NVIDIA H100 80GB HBM3"),
                                "h100.json");
               }),
               Catch::StartsWith("h100.json: measured on"));
}

TEST_CASE("fit: an unknown device is a warning, not a silent assumption",
          "[calibrate][fit][errors]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    MeasurementFile f = a100_all_reduce(8);
    f.environment.device = "unknown";
    const FitResult r = fit_hardware(base, {{"anon.json", f}});
    REQUIRE_FALSE(r.warnings.empty());
    CHECK_THAT(r.warnings[0], Catch::Contains("anon.json: the device is unknown; its points are "
                                              "taken as measured on A100-SXM4-80GB"));
}

TEST_CASE("fit: the same point in two files is an error", "[calibrate][fit][errors]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    const std::string e = input_error_of([&] {
        fit_hardware(base,
                     {{"a.json", two_collectives(kA100)}, {"b.json", two_collectives(kA100)}});
    });
    CHECK_THAT(e, Catch::StartsWith("a.json, b.json: collectives[2]: duplicate point"));
}

TEST_CASE("fit: too few points to determine the parameters", "[calibrate][fit][errors]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    // Two sizes on one GPU count keep the launch latency and the NVLink efficiency: two
    // parameters need at least four points.
    const std::string e = input_error_of([&] {
        fit_hardware(base, {{"two.json", two_collectives(kA100)}});
    });
    CHECK_THAT(e,
               Catch::Contains("two.json: nothing could be fitted") &&
                   Catch::Contains("2 points cannot determine 2 parameters (at least 4 needed)"));
    CHECK_THAT(input_error_of([&] {
                   fit_hardware(base, {{"empty.json", MeasurementFile{}}});
               }),
               Catch::Contains("empty.json: no measured points to fit"));
}

TEST_CASE("fit: steps that cannot be built are skipped with a warning",
          "[calibrate][fit][errors]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    MeasurementFile f;
    f.environment.device = kA100;
    StepMeasurement s = megatron_steps().steps[0];
    s.parallel["tp"] = std::int64_t{3}; // 16 heads are not divisible by 3
    s.parallel.erase("dp");
    s.parallel.erase("pp");
    s.gpus = 3;
    s.source = "steps.csv:7";
    f.steps.push_back(s);
    f.collectives = a100_all_reduce(8).collectives;
    const FitResult r = fit_hardware(base, {{"mixed.json", f}});
    REQUIRE_FALSE(r.warnings.empty());
    CHECK_THAT(r.warnings.back(),
               Catch::StartsWith("1 step skipped: mixed.json: ") && Catch::Contains("steps.csv:7"));
}

TEST_CASE("fit and validate: many steps skipped for one reason make one line",
          "[calibrate][fit][validate][errors]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    MeasurementFile f;
    f.environment.device = kA100;
    for (int line = 7; line < 10; ++line) {
        StepMeasurement s = megatron_steps().steps[static_cast<std::size_t>(line - 7)];
        s.model.erase("vocab"); // each error names its own row first: "steps.csv:7: ..."
        s.source = "steps.csv:" + std::to_string(line);
        f.steps.push_back(s);
    }
    f.collectives = a100_all_reduce(8).collectives;
    const FitResult r = fit_hardware(base, {{"rows.json", f}});
    REQUIRE(r.warnings.size() == 1);
    CHECK_THAT(r.warnings.front(), Catch::StartsWith("3 steps skipped: rows.json: ") &&
                                       Catch::Contains("vocab") &&
                                       Catch::EndsWith("(e.g. steps.csv:7)"));
    const auto v = validate_measurements(base, f, "rows.json");
    REQUIRE(v.skipped.size() == 1);
    CHECK_THAT(v.skipped.front(), Catch::StartsWith("3 steps skipped: ") &&
                                      Catch::Contains("vocab") &&
                                      Catch::EndsWith("(e.g. steps.csv:7)"));
}

TEST_CASE("hardware files keep calibration and uncertainty sections",
          "[calibrate][fit][hardware]") {
    const std::string text = R"(extends: dgx-a100
name: a100-fitted
collectives:
  launch_latency: 31.5us
calibration:
  - key: collectives.launch_latency
    value: 31.5us
    method: huber-nelder-mead
    files: ["a.json", "b.json"]
    points: 4096
    mean_abs_error_pct: 2.5
    max_abs_error_pct: 11
uncertainty:
  basis: held-out
  collectives: {points: 2048, p10: -0.03, p50: 0.001, p90: 0.04}
  steps: {points: 10, p10: -0.1, p50: 0, p90: 0.2}
)";
    const auto s = strategies::parallel::parse_platform_yaml(text, "fitted.yaml");
    REQUIRE(s.provenance.calibration.size() == 1);
    CHECK(s.provenance.calibration[0].key == "collectives.launch_latency");
    CHECK(s.provenance.calibration[0].files == std::vector<std::string>{"a.json", "b.json"});
    CHECK(s.provenance.calibration[0].points == 4096);
    CHECK(s.provenance.calibration[0].mean_abs_error == Approx(0.025));
    CHECK(s.provenance.uncertainty.basis == "held-out");
    CHECK(s.provenance.uncertainty.collectives.points == 2048);
    CHECK(s.provenance.uncertainty.collectives.p90 == Approx(0.04));
    CHECK_FALSE(s.provenance.uncertainty.gemms.present());
    CHECK(s.provenance.uncertainty.steps.present());
    // Presets have none: uncalibrated.
    CHECK_FALSE(strategies::parallel::load_platform("dgx-a100").provenance.uncertainty.present());

    auto bad = [&](const std::string& replace, const std::string& with) {
        std::string t = text;
        t.replace(t.find(replace), replace.size(), with);
        return input_error_of([&] { strategies::parallel::parse_platform_yaml(t, "fitted.yaml"); });
    };
    CHECK_THAT(bad("p10: -0.03", "p10: 0.5"),
               Catch::StartsWith("fitted.yaml:15:") &&
                   Catch::Contains("uncertainty.collectives.p90': expected p10 <= p50 <= p90"));
    CHECK_THAT(bad("basis: held-out", "basis: guessed"),
               Catch::StartsWith("fitted.yaml:14:") && Catch::Contains("uncertainty.basis"));
    CHECK_THAT(bad("  steps:", "  launches:"),
               Catch::Contains("unknown key 'uncertainty.launches'"));
    CHECK_THAT(bad("points: 4096", "points: many"),
               Catch::StartsWith("fitted.yaml:10:") && Catch::Contains("calibration[0].points"));
    CHECK_THAT(bad("    method: huber-nelder-mead\n", "    colour: red\n"),
               Catch::Contains("unknown key 'calibration[0].colour'"));
    CHECK_THAT(input_error_of([] {
                   strategies::parallel::parse_platform_yaml("extends: dgx-a100\ncalibration: 3\n",
                                                             "c.yaml");
               }),
               Catch::StartsWith("c.yaml:2:14: key 'calibration': expected a list of records"));
}
