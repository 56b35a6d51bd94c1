// The split-backward and bidirectional schedules through app::run_cli: a step of each runs and
// its timeline draws B and W apart; a layout a schedule cannot run exits 2 naming the file, the
// line, the key and the fix; `bubble --schedules` compares them.
#include "cli_run.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace clustersim;
using namespace clustersim::test;

namespace {

const std::string kExperiment =
    CLUSTERSIM_SOURCE_DIR "/configs/experiments/pipeline-schedules.yaml";

/// The pipeline-schedules experiment with `parallel.pp`'s line replaced by `pp` and the
/// schedule line by `schedule_line`.
std::string variant(const std::string& pp, const std::string& schedule_line) {
    std::string text = slurp(kExperiment);
    auto replace = [&](const std::string& from, const std::string& to) {
        const auto at = text.find(from);
        REQUIRE(at != std::string::npos);
        text.replace(at, from.size(), to);
    };
    replace("  pp: 4\n", "  pp: " + pp + "\n");
    replace("  schedule: 1f1b\n", schedule_line);
    return text;
}

/// The 1-based line of `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
    const auto at = text.find(needle);
    REQUIRE(at != std::string::npos);
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + long(at), '\n'));
}

} // namespace

TEST_CASE("zero bubble cli: DualPipe with an odd pp exits 2 naming file, line, key and fix",
          "[app][errors][zero-bubble]") {
    const TempDir dir("zb-odd-pp");
    const std::string exp = dir.file("exp.yaml");
    // pp 3 on 24 GPUs (tp 8): an odd pp.
    std::string text = variant("3", "  schedule: dualpipe\n");
    text.replace(text.find("gpus: 32"), 8, "gpus: 24");
    spit(exp, text);
    const Run r = run({"run", exp});
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains(exp + ":" + std::to_string(line_of(text, "  pp: 3"))));
    CHECK_THAT(r.err, Catch::Contains("parallel.pp"));
    CHECK_THAT(r.err, Catch::Contains("even pp") && Catch::Contains("use pp 4 or 2"));
}

TEST_CASE("zero bubble cli: DualPipe with fewer than 2 pp micro-batches exits 2 with the batch "
          "that fits",
          "[app][errors][zero-bubble]") {
    const TempDir dir("zb-few-mb");
    const std::string exp = dir.file("exp.yaml");
    // pp 4, 8 micro-batches fit; 6 do not.
    std::string text = variant("4", "  pipeline_schedule: dualpipe\n");
    text.replace(text.find("global_batch: 8"), 15, "global_batch: 6");
    spit(exp, text);
    const Run r = run({"run", exp});
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::Contains(exp + ":" + std::to_string(line_of(text, "global_batch"))));
    CHECK_THAT(r.err, Catch::Contains("training.global_batch") &&
                          Catch::Contains("at least 2 x pp = 8") &&
                          Catch::Contains("use global_batch 8"));
}

TEST_CASE("zero bubble cli: ZB-V refuses layers that two chunks per GPU cannot split",
          "[app][errors][zero-bubble]") {
    // 48 layers over pp 4 x 2 chunks = 8 split; over pp 5 x 2 = 10 they do not (tp 8 x 5 = 40
    // GPUs).
    const TempDir dir("zb-v-layers");
    const std::string exp = dir.file("exp.yaml");
    std::string text = variant("5", "  schedule: zb-v\n");
    text.replace(text.find("gpus: 32"), 8, "gpus: 40");
    spit(exp, text);
    const Run r = run({"run", exp});
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("parallel.pp") && Catch::Contains("2 chunks of zb-v = 10"));
}

TEST_CASE("zero bubble cli: a ZB-H1 step's timeline shows B and W as separate bars",
          "[app][zero-bubble]") {
    const TempDir dir("zb-timeline");
    const std::string svg = dir.file("t.svg");
    const Run r = run({"run", kExperiment, "--set", "parallel.schedule=zb-h1", "--timeline", svg});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("zb-h1"));
    const std::string text = slurp(svg);
    CHECK_THAT(text, Catch::Contains("weight grad"));
    CHECK_THAT(text, Catch::Contains(">B0<"));
    // 8 micro-batches' W bars on each of the 4 ranks, in the weight-gradient colour (one more
    // swatch in the legend).
    std::size_t bars = 0;
    for (auto at = text.find("#F5C710"); at != std::string::npos; at = text.find("#F5C710", at + 1))
        ++bars;
    CHECK(bars == 8 * 4 + 1);
}

TEST_CASE("torchtitan names: fsdp is ZeRO-3 as FSDP2, async TP is PyTorch's, HSDP runs",
          "[app][zero-bubble][torchtitan]") {
    const TempDir dir("titan");
    auto step = [&](const std::vector<std::string>& sets) {
        std::vector<std::string> args{"run",   kExperiment,     "--set", "parallel.pp=1",
                                      "--set", "parallel.dp=4", "--set", "parallel.schedule=1f1b"};
        for (const auto& s : sets)
            args.insert(args.end(), {"--set", s});
        return run(args);
    };
    const Run zero3 = step({"parallel.zero=3"});
    const Run fsdp = step({"parallel.fsdp=true"});
    const Run shard = step({"parallel.data_parallel_shard_degree=-1"});
    INFO(zero3.err << fsdp.err << shard.err);
    REQUIRE(zero3.code == 0);
    // FSDP2 by either name, with its copies (tests/strategies/test_fsdp2_async_tp.cpp): not
    // DeepSpeed's ZeRO-3.
    CHECK(shard.out == fsdp.out);
    CHECK(fsdp.out != zero3.out);
    CHECK_THAT(fsdp.out, Catch::Contains("FSDP2"));
    const Run te = step({"parallel.tp_comm_overlap=true"});
    const Run async_tp = step({"parallel.enable_async_tensor_parallel=true"});
    REQUIRE(te.code == 0);
    REQUIRE(async_tp.code == 0);
    CHECK(async_tp.out != te.out);
    CHECK_THAT(async_tp.out, Catch::Contains("async TP"));
    CHECK(te.out != step({}).out);
    const Run both_tp =
        step({"parallel.tp_comm_overlap=true", "parallel.enable_async_tensor_parallel=true"});
    CHECK(both_tp.code == 2);
    CHECK_THAT(both_tp.err, Catch::Contains("enable_async_tensor_parallel"));
    // Hybrid sharding (tests/strategies/test_hsdp.cpp): runs, and differs from FSDP over dp.
    const Run hsdp = step({"parallel.data_parallel_replicate_degree=2"});
    INFO(hsdp.err);
    CHECK(hsdp.code == 0);
    CHECK(hsdp.out != zero3.out);
    const Run odd = step({"parallel.data_parallel_replicate_degree=3"});
    CHECK(odd.code == 2);
    CHECK_THAT(odd.err, Catch::Contains("data_parallel_replicate_degree") &&
                            Catch::Contains("does not divide"));
    const Run both = step({"parallel.zero=1", "parallel.fsdp=true"});
    CHECK(both.code == 2);
    CHECK_THAT(both.err, Catch::Contains("parallel.zero"));
    const Run wrong = step({"parallel.data_parallel_shard_degree=2"});
    CHECK(wrong.code == 2);
    CHECK_THAT(wrong.err,
               Catch::Contains("data_parallel_shard_degree") && Catch::Contains("use -1 or 4"));
}
