#include "app/cli.h"
#include "base/error.h"
#include "calibrate/device.h"
#include "calibrate/measurements.h"
#include "calibrate/runner.h"
#include "cli_run.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace clustersim;
using namespace clustersim::test;
namespace fs = std::filesystem;

namespace {
const std::string kData = CLUSTERSIM_SOURCE_DIR "/data/reference";
} // namespace

TEST_CASE("cli: calibrate run without a GPU exits 3 and writes nothing", "[app][calibrate]") {
    TempDir dir("calibrate-run");
    const std::string out = dir.file("m.json");
    if (!calibrate::visible_gpus().empty()) {
        WARN("a GPU is visible: the no-GPU exit code is not tested here");
        return;
    }
    for (const bool quick : {true, false}) {
        std::vector<std::string> args{"calibrate", "run", "--out", out};
        if (quick)
            args.push_back("--quick");
        const Run r = run(args);
        CHECK(r.code == 3);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        if (calibrate::built_with_cuda())
            CHECK_THAT(r.err, Catch::Contains("needs a GPU and none is visible"));
        else
            CHECK_THAT(r.err, Catch::Contains("built without CUDA"));
        CHECK_THAT(r.err, Catch::Contains("calibrate import"));
        CHECK_FALSE(fs::exists(out));
        CHECK(fs::is_empty(dir.path)); // no temporary file left either
    }
    // The library says the same, with the type the CLI maps to exit code 3.
    CHECK_THROWS_AS(calibrate::run_calibration(calibrate::quick_run_options()), DeviceUnavailable);
}

TEST_CASE("cli: calibrate run checks its options before looking for a GPU",
          "[app][calibrate][errors]") {
    TempDir dir("calibrate-run-options");
    const std::string out = dir.file("m.json");
    SECTION("no --out") {
        const Run r = run({"calibrate", "run"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--out"));
    }
    SECTION("--out in a directory that does not exist") {
        const Run r = run({"calibrate", "run", "--out", "/nonexistent-dir/m.json"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--out: directory '/nonexistent-dir' does not exist"));
    }
    SECTION("a bad GEMM shape") {
        const Run r = run({"calibrate", "run", "--out", out, "--gemm", "4096x4096"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--gemm: expected MxNxK or MxNxK:LAYOUT"));
    }
    SECTION("a bad part") {
        const Run r = run({"calibrate", "run", "--out", out, "--only", "disks"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--only: unknown part 'disks'"));
    }
    SECTION("a bad size") {
        const Run r = run({"calibrate", "run", "--out", out, "--max-bytes", "lots"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("expected a size"));
    }
    SECTION("a factor of 1") {
        const Run r = run({"calibrate", "run", "--out", out, "--factor", "1"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--factor: expected 2 or more, got 1"));
    }
    CHECK_FALSE(fs::exists(out));
}

TEST_CASE("calibrate: GEMM shapes from the command line", "[calibrate][runner]") {
    CHECK(calibrate::parse_gemm_shape("4096x8192x1024", "--gemm") ==
          calibrate::GemmShape{4096, 8192, 1024, "TN"});
    CHECK(calibrate::parse_gemm_shape("16x8192x8192:NN", "--gemm") ==
          calibrate::GemmShape{16, 8192, 8192, "NN"});
    CHECK_THROWS_WITH(calibrate::parse_gemm_shape("16x8192x8192:XY", "--gemm"),
                      Catch::Contains("layout 'XY'"));
    CHECK_THROWS_WITH(calibrate::parse_gemm_shape("0x1x1", "--gemm"),
                      Catch::Contains("dimension '0'"));
    CHECK_THROWS_WITH(calibrate::parse_gemm_shape("1x2x3x4", "--gemm"),
                      Catch::Contains("expected MxNxK"));
}

TEST_CASE("cli: calibrate import writes a file that reads back", "[app][calibrate]") {
    TempDir dir("calibrate-import");
    const std::string out = dir.file("a100.json");
    const std::string log = kData + "/nccl/a100-8gpu-all_reduce.nccl-tests.txt";
    const std::string steps = kData + "/a100-node/megatron-steps-single-node.csv";
    const Run r =
        run({"calibrate", "import", log, steps, "--out", out, "--device", "NVIDIA A100-SXM4-80GB",
             "--set", "model.vocab=50257", "--set", "parallel.recompute=full"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == "wrote " + out +
                       ": 60 collectives, 1440 training steps on NVIDIA A100-SXM4-80GB (8 GPUs)\n");
    const calibrate::MeasurementFile f = calibrate::read_measurements(out);
    CHECK(f.collectives.size() == 60);
    CHECK(f.steps.size() == 1440);
    CHECK(f.environment.tool == "clustersim calibrate import");
    // Deterministic: the same import gives the same bytes.
    const std::string first = slurp(out);
    REQUIRE(
        run({"calibrate", "import", log, steps, "--out", out, "--device", "NVIDIA A100-SXM4-80GB",
             "--set", "model.vocab=50257", "--set", "parallel.recompute=full"})
            .code == 0);
    CHECK(slurp(out) == first);
    // A measurement file imports too (merging), unchanged.
    const std::string again = dir.file("again.json");
    REQUIRE(run({"calibrate", "import", out, "--out", again}).code == 0);
    CHECK(slurp(again) == first);
}

TEST_CASE("cli: calibrate import refuses bad input with exit 2 and no file",
          "[app][calibrate][errors]") {
    TempDir dir("calibrate-import-bad");
    const std::string out = dir.file("m.json");
    SECTION("a truncated log") {
        const std::string log = dir.file("all_reduce.log");
        std::ofstream(log) << "#  size count type redop root time algbw busbw #wrong\n"
                              "  1048576 262144 float sum -1 20.00 52.43 78.64 0\n";
        const Run r = run({"calibrate", "import", log, "--out", out, "--gpus", "4"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains(log + ":2: the table that starts at line 1 has no"));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    SECTION("an unknown --op") {
        const Run r =
            run({"calibrate", "import", kData + "/nccl/a100-8gpu-all_reduce.nccl-tests.txt",
                 "--out", out, "--op", "allreduse"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--op: unknown collective 'allreduse'"));
    }
    SECTION("a bad --set") {
        const Run r =
            run({"calibrate", "import", kData + "/a100-node/megatron-steps-single-node.csv",
                 "--out", out, "--set", "model.vocab=big"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--set: model.vocab: expected an integer, got 'big'"));
    }
    SECTION("a missing file") {
        const Run r = run({"calibrate", "import", dir.file("nothing.log"), "--out", out});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("nothing.log: cannot read the file"));
    }
    SECTION("--column for a table without device columns") {
        const Run r =
            run({"calibrate", "import", kData + "/nccl/busbw-8gpu-all_reduce-a100-h100-h200.csv",
                 "--column", "h100", kData + "/a100-node/nccl-all-reduce-2gpu.csv", "--device",
                 "NVIDIA A100-SXM4-80GB", "--out", out});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--column chooses among DEVICE_busbw columns"));
    }
    CHECK_FALSE(fs::exists(out));
}
