// What a flag or a file can do to a command, as a careful reviewer would try it: sizes whose
// time overflows the clock, grids and value lists of billions of configurations, an output
// named as one of the inputs (directly or through what an input names), two outputs on one
// path, `init` over an existing file, a write killed by `ulimit -f`, and the rules that were
// applied unevenly (`--virtual-stages 0`). Each is refused up front with exit 2 and a message
// that names the bound; nothing an input was is ever replaced.
#include "app/output.h"
#include "base/error.h"
#include "cli_run.h"
#include "explore/grid.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <regex>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace clustersim;
using namespace clustersim::test;

namespace {

const std::string kConfigs = CLUSTERSIM_SOURCE_DIR "/configs/";
const std::string kMlp = kConfigs + "experiments/lecture-mlp-tensor.yaml";
const std::string kPipeline = kConfigs + "experiments/lecture-mlp-pipeline.yaml";

void refused(const Run& r, const std::string& message) {
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(message));
}

/// "v1,v2,...,vn": n numbers from 1.
std::string numbers(int n) {
    std::string s;
    for (int i = 1; i <= n; ++i)
        s += (i > 1 ? "," : "") + std::to_string(i);
    return s;
}

} // namespace

TEST_CASE("hostile flags: sizes whose time overflows the clock are refused", "[app][hostile]") {
    for (const char* fidelity : {"analytic", "flow"}) {
        const Run r = run({"collective", "-H", "dgx-a100", "--gpus", "8", "--op", "all_reduce",
                           "--bytes", "4611686018427387904", "--fidelity", fidelity});
        refused(r, "--bytes: 4611686018427387904 B of all_reduce on 8 GPUs is past what the "
                   "simulator can time");
        // The largest size it names runs, and its time is within the clock's quarter.
        std::smatch m;
        REQUIRE(
            std::regex_search(r.err, m, std::regex("the largest size it takes here is (\\d+) B")));
        const Run ok = run({"collective", "-H", "dgx-a100", "--gpus", "8", "--op", "all_reduce",
                            "--bytes", m[1].str(), "--format", "csv"});
        CHECK(ok.code == 0);
        const Run over =
            run({"collective", "-H", "dgx-a100", "--gpus", "8", "--op", "all_reduce", "--bytes",
                 std::to_string(std::stoll(m[1].str()) + (std::int64_t{1} << 20))});
        CHECK(over.code == 2);
    }
    refused(run({"collective", "-H", "dgx-a100", "--gpus", "16", "--op", "all_gather",
                 "--min-bytes", "1GiB", "--max-bytes", "4611686018427387904"}),
            "--max-bytes: ");
    refused(run({"transfer", "-H", "dgx-a100", "--gpus", "16", "--from", "gpu0", "--to", "gpu9",
                 "--bytes", "4611686018427387904"}),
            "B from gpu0 to gpu9 is past what the simulator can time");
    CHECK(run({"transfer", "-H", "dgx-a100", "--bytes", "1TiB"}).code == 0);
}

TEST_CASE("hostile flags: configurations are counted before anything runs", "[app][hostile]") {
    SECTION("a grid past --max-configurations") {
        const std::string thousand = numbers(1000);
        refused(run({"sweep", kMlp, "--vary", "training.global_batch=" + thousand, "--vary",
                     "training.micro_batch=" + thousand, "--vary", "model.hidden=" + thousand,
                     "--vary", "model.layers=" + thousand}),
                "1000000000000 configurations (1000 training.global_batch x 1000 "
                "training.micro_batch x 1000 model.hidden x 1000 model.layers) are more than "
                "--max-configurations 1000000");
        std::vector<std::string> seven{"sweep", kMlp};
        for (const char* key : {"training.global_batch", "training.micro_batch", "model.hidden",
                                "model.layers", "model.dim", "gpus", "parallel.tp"})
            seven.insert(seven.end(), {"--vary", std::string(key) + "=" + thousand});
        refused(run(seven), "has more than 2^63 configurations");
    }
    SECTION("the limit is the user's to raise") {
        refused(run({"sweep", kMlp, "--vary", "parallel.tp=1,2,4", "--max-configurations", "2"}),
                "3 configurations (3 parallel.tp) are more than --max-configurations 2");
        CHECK(
            run({"sweep", kMlp, "--vary", "parallel.tp=1,2,4", "--max-configurations", "3"}).code ==
            0);
        refused(run({"sweep", kMlp, "--vary", "parallel.tp=1,2", "--max-configurations", "0"}),
                "--max-configurations: expected a positive count, got 0");
    }
    SECTION("value lists") {
        refused(run({"bubble", kPipeline, "--micro-batches", "8,16,24,...,8000000"}),
                "--micro-batches: '8,16,24,...,8000000' holds about 1000000 values, more than "
                "the 10000 a list may hold");
        // Geometric runs end without overflow; the rule of explore/grid.h (two numbers
        // multiply, three fix the step) holds for every list.
        const auto geometric = explore::parse_int_list("--gpus", "1,2,...,4611686018427387904");
        CHECK(geometric.size() == 63);
        CHECK(geometric[62] == std::int64_t{1} << 62);
        CHECK_THROWS_AS(explore::parse_int_list("--gpus", "1,2,...,9223372036854775807"),
                        InputError);
        CHECK(explore::parse_int_list("-x", "3,5,7,...,11") ==
              std::vector<std::int64_t>{3, 5, 7, 9, 11});
        CHECK(explore::parse_int_list("-x", "1,3,...,9") == std::vector<std::int64_t>{1, 3, 9});
        CHECK(explore::parse_int_list("-x", "10,15,20,...,30") ==
              std::vector<std::int64_t>{10, 15, 20, 25, 30});
        CHECK(explore::parse_int_list("-x", "2,4,...,16") ==
              std::vector<std::int64_t>{2, 4, 8, 16});
        CHECK_THROWS_AS(explore::parse_int_list("-x", "2,4,...,15,16"), InputError);
    }
    SECTION("--virtual-stages: 0 is refused as -1 is") {
        for (const char* v : {"0", "-1"})
            refused(run({"bubble", kPipeline, "--micro-batches", "4,8", "--virtual-stages", v}),
                    std::string("--virtual-stages: expected positive whole numbers like "
                                "8,16,...,4096, got '") +
                        v + "'");
        refused(run({"bubble", kPipeline, "--micro-batches", "4,8", "--virtual-stages", "1"}),
                "--virtual-stages: interleaving needs 2 to 1024, got 1");
    }
}

TEST_CASE("hostile flags: a schedule's micro-batches and empty stages", "[app][hostile]") {
    refused(run({"run", kPipeline, "--set", "training.global_batch=1073741824"}),
            "micro-batches per pipeline (global_batch / (micro_batch x dp)), more than the 65536 "
            "a schedule holds");
    refused(run({"run", kPipeline, "--set", "training.global_batch=1099511627776"}),
            "more than the 65536 a schedule holds");
    const std::string gpt3 = kConfigs + "experiments/gpt3-175B-64xA100.yaml";
    refused(run({"run", gpt3, "--set", "parallel.pp=8", "--set",
                 "parallel.decoder_first_pipeline_num_layers=48", "--set",
                 "parallel.decoder_last_pipeline_num_layers=48"}),
            "place all 96 layers on the first/last pipeline rank, leaving the other 6 ranks "
            "without a layer");
}

TEST_CASE("hostile flags: an output never replaces an input", "[app][hostile][output]") {
    const TempDir dir("hostile-outputs");
    const std::string hw_text = "extends: dgx-h100\n";
    const std::string hw = dir.write("hw.yaml", hw_text).string();
    std::string exp_text = slurp(kMlp);
    exp_text.replace(exp_text.find("hardware: dgx-h100"), 18, "hardware: ./hw.yaml");
    const std::string exp = dir.write("exp.yaml", exp_text).string();
    REQUIRE(run({"run", exp}).code == 0);
    const std::string input = "is an input of this command";

    SECTION("named by the experiment, or by an extends: chain") {
        refused(run({"run", exp, "--trace", hw}), input);
        CHECK(slurp(hw) == hw_text);
        const std::string base = dir.write("base.yaml", "extends: dgx-h100\n").string();
        dir.write("hw.yaml", "extends: ./base.yaml\n");
        refused(run({"run", exp, "--timeline", base}), input);
        CHECK(slurp(base) == "extends: dgx-h100\n");
        refused(run({"sweep", exp, "--vary", "training.global_batch=128,256", "--out", base}),
                input);
        CHECK(slurp(base) == "extends: dgx-h100\n");
    }
    SECTION("plots, dot files, imports") {
        refused(run({"scale", exp, "--gpus", "4", "--plot", exp}), input);
        refused(run({"scale", exp, "--gpus", "4", "--plot", hw}), input);
        refused(run({"hardware", "dot", hw, "--out", hw}), input);
        CHECK(slurp(hw) == hw_text);
        CHECK(slurp(exp) == exp_text);
        const std::string m =
            dir.write("m.json", slurp(CLUSTERSIM_SOURCE_DIR "/tests/fuzz/corpus/measurements_json/"
                                                            "step.json"))
                .string();
        const std::string before = slurp(m);
        refused(run({"calibrate", "import", m, "--out", m}), input);
        CHECK(slurp(m) == before);
    }
    SECTION("two outputs of one command on one path") {
        const std::string out = dir.file("x.out");
        refused(run({"run", exp, "--trace", out, "--timeline", out}),
                "--trace " + out + " and --timeline " + out + ": one file for two outputs");
        CHECK_FALSE(std::filesystem::exists(out));
    }
    SECTION("init over an existing file needs --force") {
        const std::string mine = dir.write("mine.yaml", "my experiment\n").string();
        refused(run({"init", "--out", mine}), "the file exists; pass --force");
        CHECK(slurp(mine) == "my experiment\n");
        CHECK(run({"init", "--out", mine, "--force"}).code == 0);
        CHECK(slurp(mine) == run({"init"}).out);
        CHECK(run({"init", "--out", dir.file("new.yaml")}).code == 0);
    }
    SECTION("a write killed by ulimit -f leaves no temporary file") {
        const std::string out = dir.file("big.txt");
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            rlimit fsize{4096, 4096};
            ::setrlimit(RLIMIT_FSIZE, &fsize);
            try {
                app::write_file_atomically(out, std::string(1 << 20, 'x'));
            } catch (...) {
            }
            ::_exit(0);
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == SIGXFSZ);
        for (const auto& e : std::filesystem::directory_iterator(dir.path))
            CHECK_THAT(e.path().filename().string(), !Catch::Contains(".tmp."));
        CHECK_FALSE(std::filesystem::exists(out));
    }
}

TEST_CASE("hostile flags: a missing presets folder is said", "[app][hostile]") {
    const char* old = std::getenv("CLUSTERSIM_CONFIG_DIR");
    const std::string saved = old ? old : "";
    ::setenv("CLUSTERSIM_CONFIG_DIR", "/nonexistent", 1);
    const Run r = run({"list"});
    if (old)
        ::setenv("CLUSTERSIM_CONFIG_DIR", saved.c_str(), 1);
    else
        ::unsetenv("CLUSTERSIM_CONFIG_DIR");
    refused(r, "/nonexistent/hardware: no such folder");
}
