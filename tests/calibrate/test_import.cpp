#include "base/error.h"
#include "calibrate/import.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::calibrate;
using sim::Time;

namespace {

const std::string kData = CLUSTERSIM_SOURCE_DIR "/data/reference";

std::string error_of(std::string_view text, const std::string& name,
                     const ImportOptions& options = {}) {
    try {
        import_text(text, name, options);
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

const CollectiveMeasurement& find(const MeasurementFile& f, std::int64_t bytes, bool in_place) {
    const auto it = std::find_if(f.collectives.begin(), f.collectives.end(), [&](const auto& c) {
        return c.bytes == bytes && c.in_place == in_place;
    });
    REQUIRE(it != f.collectives.end());
    return *it;
}

ImportOptions with_op(CollectiveOp op) {
    ImportOptions o;
    o.op = op;
    return o;
}

/// A small nccl-tests log as all_reduce_perf prints it (nccl-tests 2.13), 4 GPUs.
const std::string kLog =
    R"(# nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  43011 on     node-a device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  43011 on     node-a device  1 [0x0f] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  43011 on     node-a device  2 [0x47] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  43011 on     node-a device  3 [0x4e] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
     1048576        262144     float     sum      -1    20.00   52.43   78.64      0    21.00   49.93   74.90      0
     2097152        524288     float     sum      -1    30.00   69.91  104.86      0    31.00   67.65  101.48      0
     4194304       1048576     float     sum      -1    50.00   83.89  125.83      0    52.00   80.66  120.99      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 101.1167 
#
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
    const auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    return text.replace(pos, from.size(), to);
}

} // namespace

// ---------------------------------------------------------------------------------------------
// The reference files, one by one
// ---------------------------------------------------------------------------------------------

TEST_CASE("import: the whole nccl-tests log of 8x A100", "[calibrate][import]") {
    const std::string path = kData + "/nccl/a100-8gpu-all_reduce.nccl-tests.txt";
    ImportOptions options;
    options.device = "NVIDIA A100-SXM4-80GB";
    const ImportResult r = import_files({path}, options);
    const MeasurementFile& f = r.measurements;
    // 30 rows (8 B to 4 GiB), out-of-place and in-place each.
    REQUIRE(f.collectives.size() == 60);
    CHECK(f.environment.device == "NVIDIA A100-SXM4-80GB");
    CHECK(f.environment.device_count == 8);
    CHECK(r.warnings.empty());
    for (const auto& c : f.collectives) {
        CHECK(c.op == CollectiveOp::all_reduce); // from "all_reduce_perf" in the header
        CHECK(c.gpus == 8);                      // from "-g 8"
        CHECK(c.dtype == hardware::Dtype::fp32);
        CHECK(c.wrong == std::optional<std::int64_t>{0});
    }
    const auto& first = find(f, 8, false);
    CHECK(first.time == Time::ns(40'120));
    CHECK(first.source == path + ":5");
    CHECK(find(f, 8, true).time == Time::ns(38'850));
    const auto& last = find(f, std::int64_t{4} << 30, false);
    CHECK(last.time == Time::us(32'336));
    CHECK(last.busbw() / 1e9 == Approx(232.44).epsilon(1e-3));
    CHECK(find(f, std::int64_t{1} << 30, true).time == Time::ps(8'240'700'000));
    // Without --device the GPU is unknown, and the import says so.
    const ImportResult plain = import_files({path}, {});
    CHECK(plain.measurements.environment.device == "unknown");
    REQUIRE(plain.warnings.size() == 1);
    CHECK_THAT(plain.warnings.front(), Catch::Contains("does not name the GPU"));
}

TEST_CASE("import: the A100 all-reduce CSV tables (2, 4, 8 GPUs)", "[calibrate][import]") {
    struct Expect {
        int gpus;
        std::int64_t first_ns, first_in_place_ns, last_ns;
    };
    for (const Expect e :
         {Expect{2, 44'210, 45'100, 5'442'800}, Expect{4, 51'400, 52'740, 7'259'400},
          Expect{8, 92'790, 92'150, 8'193'000}}) {
        INFO(e.gpus << " GPUs");
        const std::string path =
            kData + "/a100-node/nccl-all-reduce-" + std::to_string(e.gpus) + "gpu.csv";
        const ImportResult r = import_files({path}, {});
        const MeasurementFile& f = r.measurements;
        // 1 MiB to 1 GiB in 1 MiB steps: 1024 rows, out-of-place then in-place.
        REQUIRE(f.collectives.size() == 2048);
        CHECK(f.environment.device_count == e.gpus);
        for (const auto& c : f.collectives) {
            CHECK(c.op == CollectiveOp::all_reduce); // from the file name
            CHECK(c.gpus == e.gpus);                 // from the file name
        }
        CHECK(find(f, 1048576, false).time == Time::ns(e.first_ns));
        CHECK(find(f, 1048576, true).time == Time::ns(e.first_in_place_ns));
        CHECK(find(f, std::int64_t{1} << 30, false).time == Time::ns(e.last_ns));
        CHECK(find(f, 1048576, false).source == path + ":2");
    }
    // busbw is checked against the GPU count: the 8-GPU table read as 4 GPUs is refused.
    ImportOptions four;
    four.gpus = 4;
    CHECK_THROWS_WITH(import_files({kData + "/a100-node/nccl-all-reduce-8gpu.csv"}, four),
                      Catch::Contains("GPU counts from --gpus and from the file name disagree"));
}

TEST_CASE("import: the per-device busbw table", "[calibrate][import]") {
    const std::string path = kData + "/nccl/busbw-8gpu-all_reduce-a100-h100-h200.csv";
    CHECK_THROWS_WITH(import_files({path}, {}),
                      Catch::Contains("the table has busbw for a100, h100, h200: choose one with "
                                      "--column"));
    ImportOptions options;
    options.column = "h100";
    options.in_place = true; // its header comment: "in-place busbw"
    const ImportResult r = import_files({path}, options);
    const MeasurementFile& f = r.measurements;
    REQUIRE(f.collectives.size() == 15); // 1 KiB to 8 GiB
    CHECK(f.environment.device == "h100");
    for (const auto& c : f.collectives) {
        CHECK(c.gpus == 8);
        CHECK(c.in_place);
    }
    // No time column: the time follows from busbw = (S / t) x 2(n-1)/n.
    const auto& big = find(f, std::int64_t{8} << 30, true);
    CHECK(big.busbw() / 1e9 == Approx(478.87).epsilon(1e-6));
    CHECK(big.time.seconds() == Approx(8589934592.0 / (478.87e9 / 1.75)).epsilon(1e-6));
    CHECK(find(f, 1024, true).busbw() / 1e9 == Approx(0.07).epsilon(1e-6));
    REQUIRE(r.warnings.size() == 1);
    CHECK_THAT(r.warnings.front(), Catch::Contains("15 times derived from the printed bandwidth"));
    // Every device column imports.
    for (const char* column : {"a100", "h200_busbw"}) {
        options.column = column;
        CHECK(import_files({path}, options).measurements.collectives.size() == 15);
    }
}

TEST_CASE("import: the single-node Megatron steps", "[calibrate][import]") {
    const std::string path = kData + "/a100-node/megatron-steps-single-node.csv";
    ImportOptions options;
    options.device = "NVIDIA A100-SXM4-80GB";
    // The conditions of these runs (data/reference/README.md), which the table does not hold.
    options.step_settings = {"model.vocab=50257", "training.dtype=fp16", "parallel.recompute=full",
                             "parallel.schedule=1f1b", "parallel.dp_overlap=false"};
    const ImportResult r = import_files({path}, options);
    const MeasurementFile& f = r.measurements;
    REQUIRE(f.steps.size() == 1440);
    CHECK(r.warnings.empty());
    CHECK(f.environment.device_count == 8);
    // Line 2: 2,16,8,1024,16,24,1024,1,1,2,372.160408
    const StepMeasurement& s = f.steps.front();
    CHECK(s.gpus == 2);
    CHECK(s.source == path + ":2");
    CHECK(s.time == Time::ps(372'160'408'000));
    CHECK(s.overrides() ==
          std::vector<std::string>{
              "model.heads=16", "model.hidden=1024", "model.kind=transformer", "model.layers=24",
              "model.seq=1024", "model.vocab=50257", "training.dtype=fp16",
              "training.global_batch=16", "training.micro_batch=8", "parallel.dp=1",
              "parallel.dp_overlap=false", "parallel.pp=2", "parallel.recompute=full",
              "parallel.schedule=1f1b", "parallel.tp=1"});
    // The last line: 4,64,8,1024,16,24,1024,1,4,1,474.725583
    const StepMeasurement& last = f.steps.back();
    CHECK(last.gpus == 4);
    CHECK(std::get<std::int64_t>(last.parallel.at("dp")) == 4);
    CHECK(last.time == Time::ps(474'725'583'000));
    for (const auto& step : f.steps) {
        const auto tp = std::get<std::int64_t>(step.parallel.at("tp"));
        const auto pp = std::get<std::int64_t>(step.parallel.at("pp"));
        const auto dp = std::get<std::int64_t>(step.parallel.at("dp"));
        CHECK(tp * pp * dp == step.gpus);
    }
}

TEST_CASE("import: the H200 busbw summary is not a table it can read", "[calibrate][import]") {
    // h200-8gpu-large-messages.yaml holds busbw plateaus without sizes' times: a summary for
    // the collectives' validation, not a sweep. Its import is refused, clearly.
    const std::string path = kData + "/nccl/h200-8gpu-large-messages.yaml";
    CHECK_THROWS_WITH(import_files({path}, {}), Catch::Contains(path + ": no nccl-tests table "
                                                                       "found"));
}

TEST_CASE("import: several files merge into one, deterministically", "[calibrate][import]") {
    const std::vector<std::string> paths{kData + "/a100-node/nccl-all-reduce-2gpu.csv",
                                         kData + "/a100-node/nccl-all-reduce-8gpu.csv",
                                         kData + "/nccl/a100-8gpu-all_reduce.nccl-tests.txt"};
    // The 8-GPU CSV and the 8-GPU nccl-tests log both measured 1 MiB, 2 MiB, 4 MiB, ...:
    // one file cannot hold both (fit them from separate files).
    CHECK_THROWS_WITH(import_files(paths, {}),
                      Catch::Contains("duplicate point (all_reduce, 8 GPUs, 1048576 B, fp32, "
                                      "out-of-place)"));
    const ImportResult r = import_files({paths[0], paths[1]}, {});
    CHECK(r.measurements.collectives.size() == 4096);
    CHECK(format_measurements(r.measurements) ==
          format_measurements(import_files({paths[0], paths[1]}, {}).measurements));
}

// ---------------------------------------------------------------------------------------------
// nccl-tests log variants
// ---------------------------------------------------------------------------------------------

TEST_CASE("import: nccl-tests log variants", "[calibrate][import]") {
    SECTION("a 4-GPU run with rank lines names its GPU, host and count") {
        const ImportResult r = import_text(kLog, "run.log", with_op(CollectiveOp::all_reduce));
        const MeasurementFile& f = r.measurements;
        REQUIRE(f.collectives.size() == 6);
        CHECK(f.environment.device == "NVIDIA H100 80GB HBM3");
        CHECK(f.environment.host == "node-a");
        CHECK(f.environment.device_count == 4);
        CHECK(find(f, 2097152, true).time == Time::us(31));
        CHECK(find(f, 2097152, true).source == "run.log:13");
    }
    SECTION("the op from the file name") {
        CHECK(import_text(kLog, "logs/all_reduce_perf-4.txt", {}).measurements.collectives.size() ==
              6);
    }
    SECTION("no op anywhere") {
        CHECK_THAT(error_of(kLog, "run.log"),
                   Catch::Contains("run.log:10: cannot tell which collective") &&
                       Catch::Contains("pass --op"));
    }
    SECTION("--op that contradicts the log") {
        const std::string log = "# all_reduce_perf -b 1M -e 4M -f 2 -g 4\n" + kLog;
        CHECK_THAT(error_of(log, "run.log", with_op(CollectiveOp::all_gather)),
                   Catch::Contains("the log and --op disagree: line 1 runs all_reduce_perf but "
                                   "--op says all_gather"));
    }
    SECTION("an MPI run: one process per GPU, tagged output, NCCL INFO lines") {
        std::string log;
        const std::string tag = "[1,0]<stdout>:";
        log += "node-a:43011:43011 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n";
        log += tag + "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304\n";
        for (int rank = 0; rank < 4; ++rank)
            log += tag + fmt::format("#  Rank {:2} Group  0 Pid {:6} on {:>10} device  {} [0x07] "
                                     "NVIDIA H100 80GB HBM3\n",
                                     rank, 43011 + rank, rank < 2 ? "node-a" : "node-b", rank % 2);
        const auto lines = kLog.substr(kLog.find("#                "));
        std::size_t start = 0;
        while (start < lines.size()) {
            const auto end = lines.find('\n', start);
            log += tag + lines.substr(start, end - start + 1);
            if (start == 0)
                log += "node-a:43011:43020 [0] NCCL INFO Channel 00/24 : 0 1 2 3\n";
            start = end + 1;
        }
        const ImportResult r = import_text(log, "alltoall.log", with_op(CollectiveOp::all_reduce));
        CHECK(r.measurements.collectives.size() == 6);
        CHECK(r.measurements.collectives.front().gpus == 4); // four rank lines, nGpus 1 each
        CHECK(r.measurements.environment.host == "node-a,node-b");
        CHECK(r.measurements.environment.nccl_version == "2.21.5");
    }
    SECTION("-c 0: #wrong is N/A") {
        std::string log = kLog;
        for (int i = 0; i < 3; ++i) {
            log = replace(log, "      0 ", "    N/A ");
            log = replace(log, "      0\n", "    N/A\n");
        }
        const auto f = import_text(log, "all_reduce.log", {}).measurements;
        REQUIRE(f.collectives.size() == 6);
        CHECK_FALSE(f.collectives.front().wrong);
    }
    SECTION("rows with wrong results are skipped with a warning") {
        const std::string log = replace(kLog, "78.64      0", "78.64     17");
        const ImportResult r = import_text(log, "all_reduce.log", {});
        CHECK(r.measurements.collectives.size() == 5);
        REQUIRE(r.warnings.size() == 1);
        CHECK_THAT(r.warnings.front(),
                   Catch::Contains("all_reduce.log:12: skipped all_reduce, 4 GPUs, 1048576 B") &&
                       Catch::Contains("17 wrong elements"));
    }
    SECTION("-o all: reductions other than sum are skipped with a warning") {
        const auto start = kLog.find("     1048576");
        const auto row = kLog.substr(start, kLog.find('\n', start) - start + 1);
        std::string prod = row;
        prod.replace(prod.find(" sum "), 5, " prod");
        std::string log = replace(kLog, row, row + prod);
        log = replace(log, "101.1167", "95.0300"); // the mean over all four rows
        const ImportResult r = import_text(log, "all_reduce.log", {});
        CHECK(r.measurements.collectives.size() == 6);
        REQUIRE(r.warnings.size() == 1);
        CHECK_THAT(r.warnings.front(),
                   Catch::Contains("all_reduce.log:10: skipped 1 rows with a reduction other "
                                   "than sum"));
    }
    SECTION("old nccl-tests: no redop/root, an 'error' column") {
        const std::string log = R"(# nccl-tests all_gather_perf -b 8M -e 8M -g 2
#                                             out-of-place                       in-place
#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     8388608       2097152   float    100.0   83.89   41.94  0e+00    101.0   83.05   41.53  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 41.735
)";
        const auto f = import_text(log, "old.log", {}).measurements;
        REQUIRE(f.collectives.size() == 2);
        CHECK(f.collectives.front().op == CollectiveOp::all_gather);
        CHECK(f.collectives.front().gpus == 2);
        CHECK_FALSE(f.collectives.front().wrong);
    }
    SECTION("two tests in one log") {
        const std::string second = R"(# Collective test starting: all_gather_perf
# nThread 1 nGpus 4 minBytes 4194304 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     4194304       1048576     float    none      -1    40.00  104.86   78.64      0    40.00  104.86   78.64      0
# Avg bus bandwidth    : 78.64
)";
        const std::string log = "# Collective test starting: all_reduce_perf\n" + kLog + second;
        const auto f = import_text(log, "two.log", {}).measurements;
        REQUIRE(f.collectives.size() == 8);
        CHECK(f.collectives.back().op == CollectiveOp::all_gather);
        CHECK(f.collectives.back().gpus == 4);
    }
    SECTION("times in ms, as the units line says") {
        std::string log = replace(kLog, "(us)  (GB/s)  (GB/s)            (us)",
                                  "(ms)  (GB/s)  (GB/s)            (us)");
        log = replace(log, "    20.00   52.43", "    0.020   52.43");
        log = replace(log, "    30.00   69.91", "    0.030   69.91");
        log = replace(log, "    50.00   83.89", "    0.050   83.89");
        const auto f = import_text(log, "all_reduce.log", {}).measurements;
        CHECK(find(f, 1048576, false).time == Time::us(20));
    }
}

TEST_CASE("import: bad nccl-tests logs", "[calibrate][import][errors]") {
    const std::string name = "all_reduce.log";
    SECTION("truncated: no footer") {
        const std::string log = kLog.substr(0, kLog.find("# Out of bounds"));
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:14: the table that starts at line 10 has no "
                                   "'# Avg bus bandwidth' line after it: the log looks truncated"));
    }
    SECTION("truncated: a row cut short") {
        const std::string log = kLog.substr(0, kLog.find("83.89")) + "\n";
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:14: expected 13 columns as the header at line "
                                   "10 says, got 6: the row is cut or garbled"));
    }
    SECTION("truncated at its start: rows without a header") {
        const std::string log = kLog.substr(kLog.find("     1048576"));
        CHECK_THAT(error_of(log, name), Catch::Contains("all_reduce.log:1: a table row before any "
                                                        "nccl-tests column header"));
    }
    SECTION("garbled: text inside a table") {
        const std::string log = replace(kLog, "     2097152  ", "Segmentation fault  ");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:13: expected a table row (the table started at "
                                   "line 10), got 'Segmentation fault"));
    }
    SECTION("garbled: a number that is not one") {
        const std::string log = replace(kLog, "30.00   69.91", "3O.00   69.91");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:13: time: expected a number, got '3O.00'"));
    }
    SECTION("mixed units: times in ms under a (us) header") {
        const std::string log = replace(kLog, "    20.00   52.43", "    0.020   52.43");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:12: algbw 52.43 GB/s disagrees with the "
                                   "5.243e+04 GB/s that size and time give"));
    }
    SECTION("an unknown unit") {
        const std::string log = replace(kLog, "(us)  (GB/s)  (GB/s)            (us)",
                                        "(min)  (GB/s)  (GB/s)            (us)");
        CHECK_THAT(error_of(log, name), Catch::Contains("all_reduce.log:11: unknown unit '(min)'"));
    }
    SECTION("a GPU count the busbw contradicts") {
        ImportOptions eight;
        eight.gpus = 8;
        std::string log = kLog;
        // Without rank lines, --gpus decides, and busbw says otherwise.
        while (log.find("#  Rank") != std::string::npos) {
            const auto start = log.find("#  Rank");
            log.erase(start, log.find('\n', start) - start + 1);
        }
        log = replace(log, "# nThread 1 nGpus 4", "# nThread 1 nGpus 8");
        CHECK_THAT(error_of(log, name, eight),
                   Catch::Contains("all_reduce.log:8: busbw 78.64 GB/s disagrees with the 91.75 "
                                   "GB/s that size and time give for all_reduce on 8 GPUs "
                                   "(busbw/algbw = 1.500 is the factor for 4 GPUs, not 8)"));
    }
    SECTION("--gpus that contradicts the rank lines") {
        ImportOptions two;
        two.gpus = 2;
        CHECK_THAT(error_of(kLog, name, two),
                   Catch::Contains("GPU counts disagree: the log lists 4 '# Rank' lines but "
                                   "--gpus says 2"));
    }
    SECTION("negative time") {
        const std::string log = replace(kLog, "    20.00   52.43", "   -20.00   52.43");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:12: time must be positive, got -20.00"));
    }
    SECTION("zero time") {
        const std::string log = replace(kLog, "    20.00   52.43", "     0.00   52.43");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:12: time must be positive, got 0.00"));
    }
    SECTION("a duplicate row") {
        const auto row =
            kLog.substr(kLog.find("     2097152"),
                        kLog.find('\n', kLog.find("     2097152")) - kLog.find("     2097152") + 1);
        std::string log = replace(kLog, row, row + row);
        log = replace(log, "101.1167", "100.4300");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:14: duplicate point (all_reduce, 4 GPUs, "
                                   "2097152 B, fp32, out-of-place): first at line 13"));
    }
    SECTION("a lost row: the footer's average disagrees") {
        const auto start = kLog.find("     2097152");
        std::string log = kLog;
        log.erase(start, kLog.find('\n', start) - start + 1);
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:15: the rows' busbw average 100.0900 GB/s but "
                                   "this footer says 101.1167: rows are missing or were edited"));
    }
    SECTION("a type clustersim does not model") {
        const std::string log = replace(kLog, "     float     sum      -1    20.00",
                                        "     int32     sum      -1    20.00");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:12: type 'int32' is not one clustersim models"));
    }
    SECTION("a test that is not a collective") {
        const std::string log = "# hypercube_perf -b 1M -e 4M -g 4\n" + kLog;
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:1: the log runs hypercube_perf, which is not a "
                                   "collective clustersim models"));
    }
    SECTION("not a log at all") {
        CHECK_THAT(error_of("hello\nworld\n", "notes.txt"),
                   Catch::Contains("notes.txt: no nccl-tests table found"));
    }
    SECTION("an unknown column") {
        const std::string log = replace(kLog, "time   algbw   busbw #wrong     time",
                                        "time   algbw   busbw #wrong     tyme");
        CHECK_THAT(error_of(log, name),
                   Catch::Contains("all_reduce.log:10: unknown column 'tyme'"));
    }
}

// ---------------------------------------------------------------------------------------------
// CSV tables
// ---------------------------------------------------------------------------------------------

TEST_CASE("import: bad CSV tables", "[calibrate][import][errors]") {
    const std::string header = "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)\n";
    const std::string row1 = "1048576,262144,float,44210,23.72,45100,23.25\n";
    const std::string row2 = "2097152,524288,float,53430,39.25,51130,41.01\n";
    const std::string name = "nccl-all-reduce-2gpu.csv";
    REQUIRE(import_text(header + row1 + row2, name, {}).measurements.collectives.size() == 4);
    SECTION("times in ms are still a sweep, not training steps") {
        const auto f = import_text("size,time(ms),busbw(GB/s)\n1048576,0.04421,23.72\n", name, {})
                           .measurements;
        REQUIRE(f.collectives.size() == 1);
        CHECK(f.collectives.front().time == Time::ns(44'210));
    }
    SECTION("mixed units: times in us under a time(ns) header") {
        CHECK_THAT(error_of(header + "1048576,262144,float,44.21,23.72,45100,23.25\n", name),
                   Catch::Contains("nccl-all-reduce-2gpu.csv:2: busbw 23.72 GB/s disagrees with "
                                   "the 2.372e+04 GB/s that size and time give"));
    }
    SECTION("a time column without a unit") {
        CHECK_THAT(error_of("size,time,busbw(GB/s)\n1048576,44.21,23.72\n", name),
                   Catch::Contains("nccl-all-reduce-2gpu.csv:1: column 'time' has no unit"));
    }
    SECTION("an unknown unit") {
        CHECK_THAT(error_of("size,time(min),busbw(GB/s)\n1048576,44.21,23.72\n", name),
                   Catch::Contains("unknown time unit 'min'"));
    }
    SECTION("an unknown column") {
        CHECK_THAT(error_of("size,time(ns),speed\n1048576,44210,23.72\n", name),
                   Catch::Contains("nccl-all-reduce-2gpu.csv:1: unknown column 'speed'"));
    }
    SECTION("a row cut short") {
        CHECK_THAT(error_of(header + row1 + "2097152,524288,float,534\n", name),
                   Catch::Contains("nccl-all-reduce-2gpu.csv:3: expected 7 fields as the header "
                                   "at line 1 says, got 4"));
    }
    SECTION("negative time") {
        CHECK_THAT(error_of(header + "1048576,262144,float,-44210,23.72,45100,23.25\n", name),
                   Catch::Contains("nccl-all-reduce-2gpu.csv:2: time(ns): expected a positive "
                                   "number, got '-44210'"));
    }
    SECTION("zero time") {
        CHECK_THAT(error_of(header + "1048576,262144,float,0,23.72,45100,23.25\n", name),
                   Catch::Contains("expected a positive number, got '0'"));
    }
    SECTION("a duplicate row") {
        CHECK_THAT(error_of(header + row1 + row2 + row1, name),
                   Catch::Contains("nccl-all-reduce-2gpu.csv:4: duplicate point (all_reduce, 2 "
                                   "GPUs, 1048576 B, fp32, out-of-place): first at line 2"));
    }
    SECTION("no GPU count") {
        CHECK_THAT(error_of(header + row1, "all-reduce.csv"),
                   Catch::Contains("all-reduce.csv: cannot tell the GPU count"));
    }
    SECTION("no collective") {
        CHECK_THAT(error_of(header + row1, "sweep-2gpu.csv"),
                   Catch::Contains("sweep-2gpu.csv: cannot tell the collective: pass --op"));
    }
    SECTION("--op that contradicts the file name") {
        CHECK_THAT(error_of(header + row1, name, with_op(CollectiveOp::broadcast)),
                   Catch::Contains("disagree: --op says broadcast but the file name says "
                                   "all_reduce"));
    }
    SECTION("a data row with no header") {
        CHECK_THAT(error_of(row1, name), Catch::Contains("a data row with no header line"));
    }
    SECTION("text before the header") {
        CHECK_THAT(error_of("all-reduce results\n" + header + row1, name),
                   Catch::Contains("nccl-all-reduce-2gpu.csv:1: expected a comment ('#') or the "
                                   "header before the data"));
    }
}

TEST_CASE("import: bad training-step tables", "[calibrate][import][errors]") {
    const std::string header = "# GPUs,global batch,micro batch,hidden size,attention heads,"
                               "# layers,sequence length,tensor parallelism,data parallelism,"
                               "pipeline parallelism,iteration time (ms)\n";
    const std::string row = "8,32,4,1024,16,24,1024,2,2,2,219.732754\n";
    REQUIRE(import_text(header + row, "steps.csv", {}).measurements.steps.size() == 1);
    SECTION("parallel sizes that do not multiply to the GPUs") {
        CHECK_THAT(error_of(header + "8,32,4,1024,16,24,1024,2,2,1,219.7\n", "steps.csv"),
                   Catch::Contains("steps.csv:2: steps[0] (from steps.csv:2): parallel: tp 2 x "
                                   "pp 1 x dp 2 = 4 but gpus is 8"));
    }
    SECTION("zero step time") {
        CHECK_THAT(error_of(header + "8,32,4,1024,16,24,1024,2,2,2,0\n", "steps.csv"),
                   Catch::Contains("steps.csv:2: iteration time (ms): the step time must be "
                                   "positive, got 0"));
    }
    SECTION("a fractional layer count") {
        CHECK_THAT(error_of(header + "8,32,4,1024,16,24.5,1024,2,2,2,219.7\n", "steps.csv"),
                   Catch::Contains("steps.csv:2: # layers: expected a positive integer, got "
                                   "'24.5'"));
    }
    SECTION("a duplicate step") {
        CHECK_THAT(error_of(header + row + row, "steps.csv"),
                   Catch::Contains("steps.csv:3: duplicate step (same model, batch and parallel "
                                   "settings as line 2)"));
    }
    SECTION("an unknown column") {
        CHECK_THAT(error_of("gpus,flops,iteration time (ms)\n8,1,2\n", "steps.csv"),
                   Catch::Contains("steps.csv:1: unknown column 'flops' in a table of training "
                                   "steps"));
    }
    SECTION("--set of a key the table has") {
        ImportOptions o;
        o.step_settings = {"model.layers=12"};
        CHECK_THAT(error_of(header + row, "steps.csv", o),
                   Catch::Contains("--set model.layers=12: steps.csv already has a column for "
                                   "model.layers"));
    }
    SECTION("--set of an unknown key") {
        ImportOptions o;
        o.step_settings = {"parallel.pipeline=2"};
        CHECK_THAT(error_of(header + row, "steps.csv", o),
                   Catch::Contains("--set: unknown parallel key 'pipeline'"));
    }
}

TEST_CASE("import: files that cannot be read", "[calibrate][import][errors]") {
    CHECK_THROWS_WITH(import_files({"/nonexistent/x.log"}, {}),
                      Catch::Contains("/nonexistent/x.log: cannot read the file"));
    CHECK_THROWS_WITH(import_files({kData}, {}), Catch::Contains("is a directory"));
    CHECK_THROWS_WITH(import_files({}, {}), Catch::Contains("no files to import"));
}

TEST_CASE("import: counts in an nccl-tests log too large for a GPU count are errors naming the "
          "line",
          "[calibrate][import]") {
    // Found by fuzz_nccl_tests_log: std::stoi threw out_of_range on a long run of digits.
    const std::string huge = "3333333333333333333333333333333333333333333333333338";
    for (const std::string& header : std::vector<std::string>{
             "#  all_reduce_perf -b 8 -e 4G -f 2 -g " + huge + "\n",
             "# nThread 1 nGpus " + huge + " minBytes 8 maxBytes 8\n",
             std::string("# nThread 65536 nGpus 65536 minBytes 8 maxBytes 8\n"), // 2^32
             "# nranks: " + huge + "\n"}) {
        INFO(header);
        CHECK_THROWS_WITH(
            calibrate::import_nccl_tests_log("#\n" + header, "all_reduce_perf-8gpu.log", {}),
            Catch::Contains("all_reduce_perf-8gpu.log:2:") && Catch::Contains("at most"));
    }
}
