// clustersim compare-hardware through app::run_cli: one row per hardware and GPU count, each the
// layout scale's search finds there; cost = days x 24 x GPUs x the preset's list price; a count
// one hardware cannot run is a row saying why while the others are predicted; bad lists exit 2.
#include "cli_run.h"
#include "hardware/hardware_loader.h"
#include "svg_check.h"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

using namespace clustersim;
using namespace clustersim::test;
namespace fs = std::filesystem;

namespace {
const std::string kExperiment =
    std::string(CLUSTERSIM_SOURCE_DIR) + "/configs/experiments/llama3-70B-64xH100-p5.yaml";
} // namespace

TEST_CASE("compare-hardware: side by side, priced where the preset has a price",
          "[app][compare-hardware]") {
    const Run r = run({"compare-hardware", kExperiment, "--hardware", "aws-p5,dgx-b200", "--gpus",
                       "64,128", "--format", "json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["rows"].size() == 4);
    std::map<std::pair<std::string, int>, nlohmann::json> rows;
    for (const auto& row : j["rows"]) {
        REQUIRE(row["found"] == true);
        rows[{row["hardware"], row["gpus"].get<int>()}] = row;
    }
    const double price = hardware::load_hardware("aws-p5").price.per_gpu_hour;
    for (int gpus : {64, 128}) {
        const auto& p5 = rows.at({"aws-p5", gpus});
        CHECK(p5["cost"].get<double>() ==
              Approx(p5["train_days"].get<double>() * 24 * gpus * price).epsilon(1e-9));
        // dgx-b200 states no price: no cost, and no made-up one.
        CHECK(rows.at({"dgx-b200", gpus})["cost"].is_null());
        // A B200 has 2.27x an H100's dense bf16 peak and 2.3x its HBM bandwidth: faster per GPU.
        CHECK(rows.at({"dgx-b200", gpus})["tokens_per_s_per_gpu"].get<double>() >
              p5["tokens_per_s_per_gpu"].get<double>());
    }

    const Run table =
        run({"compare-hardware", kExperiment, "--hardware", "aws-p5,dgx-b200", "--gpus", "64"});
    REQUIRE(table.code == 0);
    CHECK_THAT(table.out, Catch::Contains("64 GPUs   fastest dgx-b200, cheapest of those priced "
                                          "aws-p5"));
    CHECK_THAT(table.out, Catch::Contains("dgx-b200: none stated"));
}

TEST_CASE("compare-hardware: a count one hardware cannot run is a row, the rest are predicted",
          "[app][compare-hardware][nvl72]") {
    const test::TempDir scratch("compare-hardware");
    const fs::path svg = scratch.path / "cmp.svg";
    const Run r = run({"compare-hardware", kExperiment, "--hardware", "dgx-h100,gb200-nvl72",
                       "--gpus", "10", "--set", "model=llama3-8B", "--set",
                       "training.global_batch=250", "--format", "json", "--plot", svg.string()});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["rows"].size() == 2);
    for (const auto& row : j["rows"]) {
        INFO(row.dump());
        if (row["hardware"] == "gb200-nvl72") {
            CHECK(row["found"] == false);
            CHECK_THAT(row["reason"].get<std::string>(), Catch::Contains("tray"));
        }
    }
    // One line, dgx-h100's: gb200-nvl72 has no point at 66 GPUs.
    const auto doc = test::check_svg(slurp(svg.string()));
    CHECK(doc.error.empty());
    CHECK_THAT(slurp(svg.string()), Catch::Contains("dgx-h100") && !Catch::Contains("gb200-nvl72"));
}

TEST_CASE("compare-hardware: bad lists and unknown hardware exit 2", "[app][compare-hardware]") {
    for (const char* bad : {"dgx-h100,,dgx-b200", "", "no-such-preset"}) {
        INFO(bad);
        const Run r = run({"compare-hardware", kExperiment, "--hardware", bad});
        CHECK(r.code == 2);
        CHECK(!r.err.empty());
    }
}
