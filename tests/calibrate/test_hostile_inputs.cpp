// What a hostile or mistaken file does to calibrate's readers: long lines (std::regex crashed
// on them), files of any size (read up to a stated bound), duplicate JSON keys, long strings
// echoed in errors, trailing gzip data, timestamps and dimensions out of range, and the step
// tables' messages. The fuzz corpus (tests/fuzz/corpus, the crashing inputs among it) is
// replayed here through the fuzzers' own expansion, so the normal suite runs it too.
#include "base/error.h"
#include "base/text.h"
#include "calibrate/import.h"
#include "calibrate/import_util.h"
#include "calibrate/kineto.h"
#include "calibrate/measurements.h"
#include "config/bounded_read.h"
#include "config/csv.h"
#include "config/preset.h"
#include "fuzz/stretch.h"
#include "support/gzip.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include <sys/stat.h>

using namespace clustersim;
using namespace clustersim::calibrate;
using clustersim::test::gzip;
using clustersim::test::input_error_of;
using clustersim::test::slurp;

namespace {

const std::string kCorpus = CLUSTERSIM_SOURCE_DIR "/tests/fuzz/corpus/";

// A one-table nccl-tests log (the A100 rows of the corpus), to which lines are added.
const std::string kTable =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)\n"
    "     1048576        262144     float     sum      -1    52.61   19.93   34.88      0    "
    "53.03   19.77   34.60      0\n"
    "# Out of bounds values : 0 OK\n"
    "# Avg bus bandwidth    : 34.74\n";

/// Eight `# Rank` lines (the table is of 8 GPUs), each from `line(rank)`.
std::string rank_lines(const std::function<std::string(int)>& line) {
    std::string out;
    for (int rank = 0; rank < 8; ++rank)
        out += line(rank) + "\n";
    return out;
}

ImportResult import_log(const std::string& head) {
    return import_text(head + kTable, "all_reduce_perf-8gpu.log", {});
}

/// Each file of a corpus folder, expanded as its fuzzer expands it, through `read`: it may
/// be refused (InputError), nothing else.
template <typename Read>
void replay(const std::string& folder, Read read) {
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(kCorpus + folder)) {
        const std::string text = fuzz::stretch(slurp(entry.path().string()));
        INFO(entry.path().string());
        try {
            read(text);
        } catch (const InputError&) {
        }
        ++files;
    }
    CHECK(files >= 2);
}

} // namespace

TEST_CASE("hostile inputs: the fuzz corpus replays without a crash", "[calibrate][hostile]") {
    replay("nccl_tests_log", [](const std::string& t) {
        (void)import_nccl_tests_log(t, "all_reduce_perf-8gpu.log", {});
    });
    replay("import_csv",
           [](const std::string& t) { (void)import_csv(t, "all_reduce-8gpu.csv", {}); });
    replay("measurements_json",
           [](const std::string& t) { (void)parse_measurements(t, "f.json"); });
    replay("kineto", [](const std::string& t) {
        ImportOptions options;
        options.device = "NVIDIA H200";
        (void)import_text(t, "fuzz.json", options);
    });
}

TEST_CASE("hostile inputs: long lines of nccl-tests logs are read in linear time",
          "[calibrate][hostile]") {
    const std::string spaces(200000, ' ');
    const std::string nines(200000, '9');
    SECTION("a line of spaces, and a tagged one") {
        const auto r = import_log(spaces + "\n" + spaces + "0: x\n");
        CHECK(r.measurements.collectives.size() == 2);
    }
    SECTION("a long NCCL version and library code are left out, a short one kept") {
        auto r = import_log("# NCCL version 2." + nines + "\n# nccl-library=" + nines + "\n");
        CHECK(r.measurements.environment.nccl_version == "");
        r = import_log("# NCCL version 2." + nines + " NCCL version 2.21.5\n");
        CHECK(r.measurements.environment.nccl_version == "2.21.5");
        r = import_log("# x nccl-library=x nccl-library=22105\n");
        CHECK(r.measurements.environment.nccl_version == "2.21.5");
    }
    SECTION("long # Rank, _perf and flag lines") {
        auto r = import_log(rank_lines([&](int rank) {
            return fmt::format("#  Rank {} Group  0 Pid 1 on host device {} [{}] NVIDIA A100", rank,
                               rank, spaces);
        }));
        CHECK(r.measurements.environment.device == "NVIDIA A100");
        r = import_log(rank_lines([&](int rank) {
            return fmt::format("#  Rank {} Pid {} on h device  0 [0x07] {}", rank, nines,
                               std::string(100000, 'A'));
        }));
        CHECK(r.measurements.environment.device == std::string(100000, 'A'));
        CHECK_THAT(input_error_of([&] { import_log("# all_reduce_perf -g " + nines + "\n"); }),
                   Catch::Contains("-g 99999999999999999999... is more than clustersim takes"));
        const std::string e =
            input_error_of([&] { import_log("# " + std::string(100000, '_') + "_perf\n"); });
        CHECK_THAT(e, Catch::Contains("which is not a collective"));
        CHECK(e.size() < 400);
    }
    SECTION("the patterns read as the regular expressions did") {
        // NCCL_ALGO=X forces X; a list or a per-op setting forces nothing.
        auto r = import_log("# NCCL_ALGO=Tree all_reduce_perf -g 8\n");
        CHECK(r.measurements.collectives.front().algorithm == "tree");
        r = import_log("# NCCL_ALGO=Ring,Tree all_reduce_perf -g 8\n");
        CHECK(r.measurements.collectives.front().algorithm == "");
        r = import_log("# NCCL_ALGO=allreduce:tree all_reduce_perf -g 8\n");
        CHECK(r.measurements.collectives.front().algorithm == "");
        // `# nThread 1 nGpus 2` and `-t 2 -g 4` count GPUs; `--ngpus=8` too.
        r = import_text("# nThread 2 nGpus 4 minBytes 8\n" + kTable, "all_reduce.log", {});
        CHECK(r.measurements.collectives.front().gpus == 8);
        r = import_text("# ./all_reduce_perf -t 2 -g 4\n" + kTable, "x.log", {});
        CHECK(r.measurements.collectives.front().gpus == 8);
        r = import_text("# ./all_reduce_perf_mpi --ngpus=8\n" + kTable, "x.log", {});
        CHECK(r.measurements.collectives.front().gpus == 8);
    }
    SECTION("the GPU count of a file name") {
        using detail::gpus_from_file_name;
        CHECK(gpus_from_file_name("nccl-8gpu.log") == 8);
        CHECK(gpus_from_file_name("dir/8_GPUs.csv") == 8);
        CHECK(gpus_from_file_name("run-16xgpu.log") == 16);
        CHECK(gpus_from_file_name("1024-gpus") == 1024);
        CHECK_FALSE(gpus_from_file_name("1234567gpu.log"));
        CHECK_FALSE(gpus_from_file_name("a8gpu.log"));
        CHECK_FALSE(gpus_from_file_name("8gpux.log"));
        CHECK_FALSE(gpus_from_file_name("8gpu..16gpu.log"));
        // Each match starts after the previous one's end, as std::sregex_iterator's did: the
        // '_' that ends "8gpu_" cannot start "_16gpu".
        CHECK(gpus_from_file_name("8gpu_16gpu.log") == 8);
        CHECK(gpus_from_file_name(std::string(100000, '8') + "gpu") == std::nullopt);
    }
}

TEST_CASE("hostile inputs: long CSV headers", "[calibrate][hostile]") {
    const std::string name(200000, 'a');
    auto r = import_csv("size(B)," + name + "_busbw\n1024,0.04\n", "all_reduce-8gpu.csv", {});
    REQUIRE(r.measurements.collectives.size() == 1);
    CHECK(r.measurements.environment.device == name);
    // 1024 B in 10 us: algbw 0.1024 GB/s, busbw x 7/4.
    r = import_csv("size(B),time (us),busbw_gbps\n1024,10,0.18\n", "all_reduce-8gpu.csv", {});
    CHECK(r.measurements.collectives.size() == 1);
    const std::string unit = input_error_of(
        [&] { import_csv("size(B),time(" + name + ")\n8,1\n", "all_reduce-8gpu.csv", {}); });
    CHECK_THAT(unit, Catch::Contains("unknown time unit"));
    CHECK(unit.size() < 400);
    CHECK_THAT(input_error_of([&] {
                   import_csv("size(B),time" + std::string(200000, ' ') + "(us\n8,1\n",
                              "all_reduce-8gpu.csv", {});
               }),
               Catch::Contains("unknown column"));
}

TEST_CASE("hostile inputs: files are read up to a stated size", "[calibrate][hostile]") {
    SECTION("/dev/zero is refused at the data files' bound, by every reader") {
        const std::string bound = "larger than 64 MiB";
        CHECK_THAT(input_error_of([] { import_files({"/dev/zero"}, {}); }),
                   Catch::Contains("/dev/zero: " + bound));
        CHECK_THAT(input_error_of([] { read_measurements("/dev/zero"); }),
                   Catch::Contains("/dev/zero: " + bound) &&
                       Catch::Contains("as a measurement file"));
        CHECK_THAT(input_error_of([] { config::CsvTable::read("/dev/zero"); }),
                   Catch::Contains("/dev/zero: " + bound));
        CHECK(config::describe_limit(config::kMaxTraceFileBytes) == "1 GiB");
    }
    SECTION("a folder, a missing file") {
        CHECK_THAT(input_error_of([] { import_files({"/tmp"}, {}); }),
                   Catch::Contains("/tmp: is a directory"));
        CHECK_THAT(input_error_of([] { read_measurements("/nonexistent.json"); }),
                   Catch::Contains("/nonexistent.json: cannot read the file (No such file"));
    }
    SECTION("gzip inflates to at most the traces' bound") {
        const std::string gz = gzip(std::string(std::size_t{3} << 20, ' '));
        CHECK_THAT(input_error_of([&] { gunzip(gz, "big.json.gz", std::uint64_t{1} << 20); }),
                   Catch::Contains("decompresses to more than"));
    }
}

TEST_CASE("hostile inputs: JSON keys given twice, long strings in errors", "[calibrate][hostile]") {
    const std::string file = slurp(kCorpus + "measurements_json/step.json");
    REQUIRE(file.find("\"format\"") != std::string::npos);
    SECTION("a duplicate key is refused, at any depth") {
        std::string twice = file;
        twice.insert(twice.find('{') + 1, "\"version\": 1, ");
        CHECK_THAT(input_error_of([&] { parse_measurements(twice, "m.json"); }),
                   Catch::Contains("m.json: key 'version' appears twice in one object"));
        std::string nested = file;
        const auto env = nested.find("\"environment\"");
        REQUIRE(env != std::string::npos);
        nested.insert(nested.find('{', env) + 1, "\"device\": \"x\", ");
        CHECK_THAT(input_error_of([&] { parse_measurements(nested, "m.json"); }),
                   Catch::Contains("key 'device' appears twice"));
        CHECK(input_error_of([&] { parse_measurements(file, "m.json"); }) == "(no error)");
    }
    SECTION("a 20 MB string is cut in the message") {
        const std::string huge(20 << 20, 'x');
        std::string bad = file;
        const auto at = bad.find("clustersim-measurements");
        bad.replace(at, std::string("clustersim-measurements").size(), huge);
        const std::string e = input_error_of([&] { parse_measurements(bad, "m.json"); });
        CHECK_THAT(e, Catch::Contains("(20971520 bytes)"));
        CHECK(e.size() < 400);
        const std::string e2 =
            input_error_of([&] { parse_measurements("{\"a\": " + huge + "}", "m.json"); });
        CHECK_THAT(e2, Catch::Contains("not valid JSON"));
        CHECK(e2.size() < 400);
    }
}

TEST_CASE("hostile inputs: traces out of range are named", "[calibrate][hostile][kineto]") {
    const std::string trace = slurp(kCorpus + "kineto/one-kernel.json");
    ImportOptions options;
    options.device = "NVIDIA H200";
    REQUIRE(input_error_of([&] { import_text(trace, "t.json", options); }) == "(no error)");
    SECTION("17-digit timestamps") {
        std::string t = trace;
        for (std::size_t at = t.find("\"ts\": "); at != std::string::npos;
             at = t.find("\"ts\": ", at + 1))
            t.insert(at + 6, "1234567890123456"); // before "1.000": 17 digits
        CHECK_THAT(input_error_of([&] { import_text(t, "t.json", options); }),
                   Catch::Contains("their ts or dur is too large") &&
                       Catch::Contains("17-digit timestamp"));
    }
    SECTION("negative and huge tensor dimensions are warned of") {
        std::string t = trace;
        const auto at = t.find("[[64, 32]");
        REQUIRE(at != std::string::npos);
        t.replace(at, 9, "[[-64, 99999999999999]");
        const ImportResult r = import_text(t, "t.json", options);
        CHECK_THAT(base::join(r.warnings, "\n"),
                   Catch::Contains("t.json: 2 tensor dimensions in Input Dims or Input Strides "
                                   "are negative or above"));
    }
    SECTION("data after the gzip member is warned of") {
        const ImportResult plain = import_text(gzip(trace), "t.json.gz", options);
        for (const auto& w : plain.warnings)
            CHECK_THAT(w, !Catch::Contains("after the end of the gzip data"));
        const ImportResult r = import_text(gzip(trace) + "junk!", "t.json.gz", options);
        CHECK_THAT(base::join(r.warnings, "\n"),
                   Catch::Contains("t.json.gz: 5 bytes after the end of the gzip data were "
                                   "ignored"));
        CHECK(r.measurements.kernels.size() == plain.measurements.kernels.size());
    }
}

TEST_CASE("hostile inputs: step tables say what they are and what they lack",
          "[calibrate][hostile]") {
    // The corpus' step table (tests/fuzz/corpus/import_csv/steps.csv) and variations of it.
    const std::string columns = "global batch,micro batch,hidden size,attention heads,# layers,"
                                "sequence length,tensor parallelism,";
    const std::string head =
        "# GPUs," + columns + "data parallelism,pipeline parallelism,iteration time (ms)\n";
    SECTION("Megatron's data_parallel_size is a column") {
        const auto r = import_csv(columns + "data_parallel_size,pipeline parallelism,"
                                            "iteration time (ms)\n16,8,1024,16,24,1024,1,2,2,372\n",
                                  "steps.csv", {});
        REQUIRE(r.measurements.steps.size() == 1);
        CHECK(r.measurements.steps.front().gpus == 4);
    }
    SECTION("GPU counts past what a measurement may name") {
        for (const char* gpus : {"2147483648", "10000000"})
            CHECK_THAT(input_error_of([&] {
                           import_csv(head + gpus + ",16,8,1024,16,24,1024,1,1,2,372\n",
                                      "steps.csv", {});
                       }),
                       Catch::Contains(fmt::format("{} GPUs, more than the 1048576", gpus)));
        CHECK_THAT(input_error_of([&] {
                       import_csv(columns + "data parallelism,pipeline parallelism,iteration "
                                            "time (ms)\n16,8,1024,16,24,1024,4096,4096,4096,372\n",
                                  "steps.csv", {});
                   }),
                   Catch::Contains("tp x pp x dp is more than the 1048576 GPUs"));
    }
    SECTION("no time column") {
        CHECK_THAT(input_error_of([] { import_csv("# GPUs,tp,pp\n8,8,1\n", "steps.csv", {}); }),
                   Catch::Contains("looks like a table of training steps (column '# GPUs') "
                                   "but has no step time column"));
    }
    SECTION("a Megatron-LM training log") {
        const std::string log =
            " iteration       10/     100 | consumed samples:          640 | elapsed time per "
            "iteration (ms): 1520.3 | learning rate: 1.0E-04 |\n";
        CHECK_THAT(input_error_of([&] { import_text(log, "train.log", {}); }),
                   Catch::Contains("train.log: a Megatron-LM training log"));
    }
}

TEST_CASE("hostile inputs: the presets folder", "[config][hostile]") {
    const test::TempDir dir("presets");
    dir.write("hardware/real.yaml", "description: x\n");
    REQUIRE(::mkfifo(dir.file("hardware/fifo.yaml").c_str(), 0600) == 0);
    std::filesystem::create_directories(dir.path / "hardware/folder.yaml");
    const char* old = std::getenv("CLUSTERSIM_CONFIG_DIR");
    const std::string saved = old ? old : "";
    const config::PresetKind kind{"hardware", "hardware", ""};
    ::setenv("CLUSTERSIM_CONFIG_DIR", dir.path.c_str(), 1);
    // A FIFO would block forever when opened; a folder is no preset.
    const auto names = config::preset_names(kind);
    const std::string missing = input_error_of([&] { config::resolve_preset(kind, "fifo", {}); });
    ::setenv("CLUSTERSIM_CONFIG_DIR", (dir.path / "nonexistent").c_str(), 1);
    const std::string no_folder = input_error_of([&] { config::preset_names(kind); });
    if (old)
        ::setenv("CLUSTERSIM_CONFIG_DIR", saved.c_str(), 1);
    else
        ::unsetenv("CLUSTERSIM_CONFIG_DIR");
    CHECK(names == std::vector<std::string>{"real"});
    CHECK_THAT(missing, Catch::Contains("unknown hardware preset 'fifo' (presets: real"));
    CHECK_THAT(no_folder, Catch::Contains("nonexistent/hardware: no such folder") &&
                              Catch::Contains("CLUSTERSIM_CONFIG_DIR names a folder"));
}
