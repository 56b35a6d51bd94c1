// Command-line edges of issue 13, each through app::run_cli: an output that is an input is
// refused (run --trace/--timeline, sweep --out, calibrate split/fit --out), two sweeps on one
// CSV (the second refused, the first's rows intact), empty output names, --gpus 0, prices that
// are not numbers, a negative seed, and validate with nothing it could predict. Each: exit 2,
// one line naming the flag, nothing clobbered.
#include "base/error.h"
#include "cli_run.h"
#include "explore/resume.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

using namespace clustersim;
using namespace clustersim::test;
namespace fs = std::filesystem;

namespace {

const std::string kExperiment =
    CLUSTERSIM_SOURCE_DIR "/configs/experiments/lecture-mlp-tensor.yaml";

/// Two A100 all-reduce points in the measurement format (docs/measurements.md).
const char* const kCollectives = R"({
  "format": "clustersim-measurements",
  "version": 1,
  "environment": {"device": "NVIDIA A100-SXM4-80GB", "device_count": 8},
  "collectives": [
    {"op":"all_reduce","gpus":8,"bytes":1048576,"dtype":"fp32","in_place":false,"time_us":52.61},
    {"op":"all_reduce","gpus":8,"bytes":67108864,"dtype":"fp32","in_place":false,"time_us":420.0}
  ],
  "gemms": [], "copies": [], "p2p": [], "launches": [], "steps": []
}
)";

/// Exit 2 with one error line that contains every one of `says` (and, for errors CLI11 finds
/// while parsing, its "Run with --help" hint on a second line).
void check_refused(const Run& r, const std::vector<std::string>& says) {
    INFO(r.err);
    CHECK(r.code == 2);
    const auto err = lines(r.err);
    REQUIRE(!err.empty());
    CHECK_THAT(err[0], Catch::StartsWith("clustersim: error: "));
    CHECK((err.size() == 1 || (err.size() == 2 && err[1] == "Run with --help for usage.")));
    for (const auto& s : says)
        CHECK_THAT(err[0], Catch::Contains(s));
}

} // namespace

TEST_CASE("cli edges: an output that is an input is refused and the input kept",
          "[app][errors][output]") {
    const TempDir dir("edges-clobber");
    const std::string exp = dir.file("exp.yaml");
    const std::string text = slurp(kExperiment);
    REQUIRE_FALSE(text.empty());
    spit(exp, text);

    SECTION("run --trace, --timeline, --memory-timeline") {
        for (const char* flag : {"--trace", "--timeline", "--memory-timeline"}) {
            INFO(flag);
            check_refused(run({"run", exp, flag, exp}), {flag, "is an input", "exp.yaml"});
            CHECK(slurp(exp) == text);
        }
        // Through another spelling of the path.
        check_refused(run({"run", exp, "--trace", (dir.path / "." / "exp.yaml").string()}),
                      {"--trace", "is an input"});
        CHECK(slurp(exp) == text);
    }

    SECTION("sweep --out") {
        check_refused(run({"sweep", exp, "--vary", "parallel.tp=1,2", "--out", exp}),
                      {"--out", "is an input"});
        CHECK(slurp(exp) == text);
    }

    SECTION("calibrate split --out, --rest, and --out equal to --rest") {
        const std::string m = dir.file("m.json");
        spit(m, kCollectives);
        const std::vector<std::string> base{"calibrate", "split",  m,  "--fraction",
                                            "0.5",       "--seed", "1"};
        auto with = [&](std::vector<std::string> extra) {
            std::vector<std::string> args = base;
            args.insert(args.end(), extra.begin(), extra.end());
            return run(args);
        };
        check_refused(with({"--out", m, "--rest", dir.file("rest.json")}),
                      {"--out", "is an input"});
        check_refused(with({"--out", dir.file("fit.json"), "--rest", m}),
                      {"--rest", "is an input"});
        CHECK(slurp(m) == kCollectives);
        check_refused(with({"--out", dir.file("a.json"), "--rest", dir.file("a.json")}),
                      {"--out", "--rest", "the same file"});
        CHECK_FALSE(fs::exists(dir.file("a.json")));
        // The same command with two new files works, and splits the two points.
        const Run ok = with({"--out", dir.file("a.json"), "--rest", dir.file("b.json")});
        INFO(ok.err);
        CHECK(ok.code == 0);
        CHECK(fs::exists(dir.file("a.json")));
        CHECK(fs::exists(dir.file("b.json")));
    }

    SECTION("calibrate fit --out over a measurement file") {
        const std::string m = dir.file("m.json");
        spit(m, kCollectives);
        check_refused(run({"calibrate", "fit", m, "--hardware", "dgx-a100", "--out", m}),
                      {"--out", "is an input"});
        CHECK(slurp(m) == kCollectives);
    }
}

TEST_CASE("cli edges: a second sweep on a CSV being written is refused", "[app][sweep]") {
    const TempDir dir("edges-lock");
    const std::string csv = dir.file("s.csv");
    spit(csv, "# rows of a sweep in progress\n");
    {
        // A sweep in progress holds the lock for as long as it writes.
        explore::LineWriter first(csv);
        check_refused(
            run({"sweep", kExperiment, "--vary", "training.micro_batch=64,128", "--out", csv}),
            {csv, "another sweep is writing", "--out"});
        check_refused(run({"sweep", kExperiment, "--vary", "training.micro_batch=64,128", "--out",
                           csv, "--resume"}),
                      {"another sweep is writing"});
        // Nothing truncated, nothing appended.
        CHECK(slurp(csv) == "# rows of a sweep in progress\n");
        CHECK_THROWS_AS([&] { explore::LineWriter second(csv); }(), InputError);
    }
    // Once it has finished, the file is free again.
    const Run r =
        run({"sweep", kExperiment, "--vary", "training.micro_batch=64,128", "--out", csv});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK_THAT(slurp(csv + ".json"), Catch::Contains("sweep-id"));
}

TEST_CASE("cli edges: flags with values that cannot mean anything", "[app][errors]") {
    const TempDir dir("edges-flags");

    SECTION("--gpus 0: a short message, not a 309-digit range") {
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"hardware", "show", "dgx-a100", "--gpus", "0"},
              {"transfer", "--hardware", "dgx-a100", "--gpus", "0", "--from", "gpu0", "--to",
               "gpu1", "--bytes", "1MiB"},
              {"sweep", kExperiment, "--vary", "parallel.tp=1,2", "--gpus", "0"}}) {
            INFO(args.front());
            const Run r = run(args);
            check_refused(r, {"--gpus", "at least 1"});
            CHECK(r.err.size() < 200);
        }
    }

    SECTION("--price-per-gpu-hour: nan, inf and negative prices") {
        for (const char* price : {"nan", "inf", "-1", "-inf"}) {
            INFO(price);
            check_refused(
                run({"scale", kExperiment, "--gpus", "2,4", "--price-per-gpu-hour", price}),
                {"--price-per-gpu-hour", "finite price >= 0"});
        }
    }

    // Issue 37: a direct all-reduce on 16,384 GPUs ran for minutes in flow fidelity (268 M
    // flows in one round); it is refused before any flow is made, and analytic still answers.
    SECTION("a flow simulation whose round would hold more flows than it can") {
        const std::vector<std::string> direct{
            "collective", "-H",   "dgx-a100", "--gpus", "16384",  "--op",  "all_reduce",
            "-b",         "1GiB", "-e",       "1GiB",   "--algo", "direct"};
        auto flow = direct;
        flow.insert(flow.end(), {"--fidelity", "flow"});
        check_refused(run(flow), {"direct", "268419072 flows", "--fidelity analytic"});
        const Run analytic = run(direct);
        CHECK(analytic.code == 0);
        // An all-to-all on 2 GPUs (4 pairs, its own block included) stays far under the bound.
        CHECK(run({"collective", "-H", "dgx-a100", "--gpus", "2", "--op", "all_to_all", "-b",
                   "1MiB", "-e", "1MiB", "--fidelity", "flow"})
                  .code == 0);
    }

    SECTION("an empty output name is refused, not taken for no output") {
        check_refused(run({"run", kExperiment, "--trace", ""}), {"--trace", "file name"});
        check_refused(run({"run", kExperiment, "--timeline", ""}), {"--timeline", "file name"});
        check_refused(run({"sweep", kExperiment, "--vary", "parallel.tp=1,2", "--out", ""}),
                      {"--out", "file name"});
    }

    SECTION("calibrate split --seed: an integer from 0 to 2^64-1") {
        const std::string m = dir.file("m.json");
        spit(m, kCollectives);
        for (const char* seed : {"-1", "1.5", "", "18446744073709551616"}) {
            INFO(seed);
            check_refused(run({"calibrate", "split", m, "--fraction", "0.5", "--seed", seed,
                               "--out", dir.file("a.json"), "--rest", dir.file("b.json")}),
                          {"--seed", "18446744073709551615"});
            CHECK_FALSE(fs::exists(dir.file("a.json")));
        }
    }
}

TEST_CASE("cli edges: validate with no point it could predict exits 2 and says why",
          "[app][validate]") {
    const TempDir dir("edges-validate");
    const std::string m = dir.file("m.json");
    spit(m, kCollectives);
    // Both points are below --min-bytes: nothing is predicted, so nothing passed.
    const Run skipped = run({"validate", "--hardware", "dgx-a100", "--measurements", m,
                             "--min-bytes", "1GiB", "--max-error", "5"});
    INFO(skipped.err);
    CHECK(skipped.code == 2);
    CHECK_THAT(skipped.err, Catch::Contains("no point could be predicted") &&
                                Catch::Contains("all 2 measured points were skipped"));
    // No point of the kinds asked for.
    const Run kinds =
        run({"validate", "--hardware", "dgx-a100", "--measurements", m, "--kind", "gemms"});
    CHECK(kinds.code == 2);
    CHECK_THAT(kinds.err, Catch::Contains("--kind gemms"));
    // An empty file.
    const std::string empty = dir.file("empty.json");
    spit(empty, R"({"format": "clustersim-measurements", "version": 1,
                    "environment": {"device": "NVIDIA A100-SXM4-80GB", "device_count": 8}})");
    const Run none = run({"validate", "--hardware", "dgx-a100", "--measurements", empty});
    CHECK(none.code == 2);
    CHECK_THAT(none.err, Catch::Contains("hold no measurements"));
    // The same file with its points predicted passes as before.
    const Run ok = run({"validate", "--hardware", "dgx-a100", "--measurements", m});
    INFO(ok.err);
    CHECK(ok.code == 0);
}

TEST_CASE("cli edges: a bad --set value blames --set, not the experiment file's line",
          "[app][errors]") {
    // lecture-mlp-tensor.yaml has `tp: 4` on a line of its own; the value given is --set's.
    check_refused(run({"run", kExperiment, "--set", "parallel.tp=abc"}),
                  {"--set parallel.tp=abc: expected an integer, got 'abc'"});
    const Run unknown = run({"run", kExperiment, "--set", "parallel.tpp=2"});
    check_refused(unknown, {"--set parallel.tpp=2: unknown key 'parallel.tpp'", "valid keys"});
    CHECK_THAT(unknown.err, !Catch::Contains("lecture-mlp-tensor.yaml"));
    // A bad value in the file itself still names the file and line.
    const TempDir dir("edges-set");
    spit(dir.file("e.yaml"), slurp(kExperiment) + "  pp: many\n");
    check_refused(run({"run", dir.file("e.yaml")}), {"e.yaml:", "key 'parallel.pp'"});
}

TEST_CASE("cli edges: numbers that disagree point at the key the fix would change",
          "[app][errors]") {
    const TempDir dir("edges-cross");
    const std::string exp = dir.file("x.yaml");
    spit(exp, "hardware: dgx-a100\n"
              "model: gpt3-175B\n"
              "training:\n"
              "  global_batch: 100\n"
              "  micro_batch: 1\n"
              "parallel:\n"
              "  tp: 8\n"
              "  pp: 3\n");
    // 8 x 3 does not divide the node's 8 GPUs: pp (line 8) is the key to change.
    check_refused(run({"run", exp}),
                  {exp + ":8:7: key 'parallel.pp': tp 8 x pp 3 = 24 does not divide the 8 GPUs"});
    // With pp fixed by --set, the batch that dp does not divide is line 4's.
    check_refused(run({"run", exp, "--set", "parallel.pp=1", "--set", "gpus=64"}),
                  {exp + ":4:17: key 'training.global_batch': global_batch 100 is not divisible"});
    // A value that came from --set is blamed on --set.
    check_refused(run({"run", exp, "--set", "parallel.pp=6"}),
                  {"--set parallel.pp=6: tp 8 x pp 6 = 48 does not divide the 8 GPUs"});
}

TEST_CASE("cli edges: an uneven split that cannot be met names its key and line",
          "[app][errors][uneven]") {
    const TempDir dir("edges-uneven");
    const std::string exp = dir.file("x.yaml");
    spit(exp, "hardware: dgx-a100\n"
              "model:\n"
              "  extends: gpt3-175B\n"
              "  layers: 10\n"
              "training:\n"
              "  global_batch: 8\n"
              "parallel:\n"
              "  tp: 2\n"
              "  pp: 4\n"
              "  decoder_first_pipeline_num_layers: 3\n");
    // 10 - 3 = 7 layers over the other 3 ranks: Megatron-Core's rule refuses it (line 10).
    check_refused(run({"run", exp}),
                  {exp + ":10:38: key 'parallel.decoder_first_pipeline_num_layers'",
                   "share the remaining 7 layers evenly"});
    // A layout with a multi-token-prediction layer, given by --set: blamed on --set.
    const std::string lay = dir.file("layout.yaml");
    spit(lay, "hardware: dgx-a100\nmodel:\n  extends: gpt3-175B\n  layers: 10\n"
              "training:\n  global_batch: 8\nparallel:\n  tp: 2\n  pp: 4\n");
    check_refused(
        run({"run", lay, "--set", "parallel.pipeline_model_parallel_layout=Et|ttt|ttt|tttmL"}),
        {"--set parallel.pipeline_model_parallel_layout=", "multi-token-prediction"});
    // The same split met: it runs.
    const Run ok = run({"run", exp, "--set", "parallel.decoder_first_pipeline_num_layers=1"});
    INFO(ok.err);
    CHECK(ok.code == 0);
    // The report says the split: 1 layer on the first stage, 3 on the others.
    CHECK_THAT(ok.out, Catch::Contains("layers      stage 0: 1, stages 1-3: 3 (transformer "
                                       "layers per model stage, in layer order)"));
}
