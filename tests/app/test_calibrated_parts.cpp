// A step on a hardware file fitted on collectives alone has no band for steps, but it is not
// "uncalibrated" either: run says which parts of the model the file calibrated (table and
// JSON), counted by the sections of its calibration records (results/uncertainty.h).
#include "cli_run.h"
#include "support/scratch.h"

#include "results/uncertainty.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace clustersim;
using namespace clustersim::test;

namespace {

const std::string kGpt3 = CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml";

strategies::parallel::CalibrationRecord record(const std::string& key) {
    strategies::parallel::CalibrationRecord r;
    r.key = key;
    r.value = "1";
    return r;
}

} // namespace

TEST_CASE("calibrated parts: records counted by the section of their key",
          "[app][run][uncertainty]") {
    strategies::parallel::Provenance p;
    CHECK(results::calibrated_text(p).empty());
    CHECK(results::calibrated_json(p).is_null());
    for (const char* key : {"collectives.launch_latency", "collectives.ll.nvlink.efficiency",
                            "compute.gemm.efficiency.fp16", "compute.gemm.half_efficiency_flops",
                            "compute.launch_overhead", "framework.host_overhead", "elsewhere.key"})
        p.calibration.push_back(record(key));
    const auto parts = results::calibrated_parts(p);
    REQUIRE(parts.size() == 5);
    CHECK(parts[0].values == 2); // collectives
    CHECK(parts[1].values == 2); // GEMMs
    CHECK(parts[2].values == 0); // memory-bound kernels
    CHECK(parts[3].values == 1); // kernel launch
    CHECK(parts[4].values == 1); // framework
    CHECK(results::calibrated_text(p) ==
          "collectives (2 values), GEMMs (2 values), kernel launch (1 value), framework "
          "overheads (1 value); from the datasheet: memory-bound kernels");
    CHECK(results::calibrated_json(p).dump() ==
          R"({"collectives":2,"gemms":2,"memory_kernels":0,"launch":1,"framework":1})");
}

TEST_CASE("run on a file fitted on collectives alone says what is calibrated",
          "[app][run][uncertainty]") {
    TempDir dir("calibrated-parts");
    const std::string hw = dir.file("a100-nccl.yaml");
    spit(hw, "extends: dgx-a100\nname: a100-nccl\n"
             "calibration:\n"
             "  - {key: collectives.launch_latency, value: 34.852us, points: 4096}\n"
             "  - {key: collectives.memory_passes, value: 3.722, points: 4096}\n"
             "uncertainty:\n  basis: held-out\n"
             "  collectives: {points: 2048, p10: -0.017, p50: -0.003, p90: 0.02}\n");
    const Run table = run({"run", kGpt3, "--set", "hardware=" + hw});
    REQUIRE(table.code == 0);
    // No band for the step (no step was measured), and the collectives are calibrated.
    CHECK_THAT(table.out, Catch::Contains("uncertainty uncalibrated (hardware 'a100-nccl' has no "
                                          "uncertainty for steps)"));
    CHECK_THAT(table.out,
               Catch::Contains("calibrated  collectives (2 values); from the datasheet: GEMMs, "
                               "memory-bound kernels, kernel launch, framework overheads"));
    const Run json = run({"run", kGpt3, "--set", "hardware=" + hw, "--format", "json"});
    REQUIRE(json.code == 0);
    const auto j = nlohmann::json::parse(json.out);
    CHECK(j["step_time_band"] == "uncalibrated");
    CHECK(j["calibrated"]["collectives"] == 2);
    CHECK(j["calibrated"]["gemms"] == 0);

    // A datasheet preset has no calibration records: neither the line nor the key.
    const Run preset = run({"run", kGpt3, "--format", "json"});
    REQUIRE(preset.code == 0);
    CHECK_FALSE(nlohmann::json::parse(preset.out).contains("calibrated"));
    CHECK_THAT(run({"run", kGpt3}).out, !Catch::Contains("calibrated  "));
}
