// clustersim run's output files through app::run_cli: the Perfetto trace (a process per
// simulated GPU, memory as a counter track), the Gantt chart and the memory timeline; and that
// the memory timeline's curves are the step's memory (held state plus activations, back to the
// held state at the end, never above the reported peak).
#include "app/cli.h"
#include "cli_run.h"
#include "svg_check.h"

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace clustersim;
using namespace clustersim::test;
namespace fs = std::filesystem;

namespace {
const std::string kExperiment =
    CLUSTERSIM_SOURCE_DIR "/configs/experiments/pipeline-schedules.yaml";
} // namespace

TEST_CASE("cli run: trace, timeline and memory timeline files", "[app][run]") {
    const test::TempDir scratch("cmd-run");
    const fs::path& dir = scratch.path;
    const Run r = run({"run", kExperiment, "--trace", (dir / "t.json").string(), "--timeline",
                       (dir / "g.svg").string(), "--memory-timeline", (dir / "m.svg").string()});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("memory      " + (dir / "m.svg").string()));

    // The trace: one process per simulated pipeline rank (pp 4), memory counters on each.
    const auto trace = nlohmann::json::parse(slurp(dir / "t.json"));
    std::set<int> pids, counter_pids;
    for (const auto& ev : trace["traceEvents"]) {
        if (ev["ph"] == "X")
            pids.insert(ev["pid"].get<int>());
        if (ev["ph"] == "C" && ev["name"] == "memory")
            counter_pids.insert(ev["pid"].get<int>());
    }
    CHECK(pids.size() == 4);
    CHECK(counter_pids == pids);

    // The Gantt chart and the memory chart are well-formed SVG; the memory chart has one line
    // per stage and the capacity in its legend.
    test::check_svg(slurp(dir / "g.svg"));
    const std::string mem = slurp(dir / "m.svg");
    test::check_svg(mem);
    for (const char* name : {"stage 0 / GPU 0", "stage 3 / GPU 24", "capacity"})
        CHECK_THAT(mem, Catch::Contains(name));
    fs::remove(dir / "m.svg");

    // Bad input leaves no file: an unknown key fails before anything is written.
    const Run bad = run({"run", kExperiment, "--set", "parallel.colour=red", "--memory-timeline",
                         (dir / "m.svg").string()});
    CHECK(bad.code == 2);
    CHECK_FALSE(fs::exists(dir / "m.svg"));
}

TEST_CASE("memory timeline: held state plus activations, back to the held state, under the peak",
          "[app][run][memory]") {
    namespace par = strategies::parallel;
    const par::ExperimentSpec e = par::load_experiment(kExperiment, {});
    par::StepOptions o;
    o.timeline = true;
    const par::StepResult r = par::simulate_step(e, o);
    REQUIRE(r.memory.size() == 4);
    for (std::size_t p = 0; p < r.memory.size(); ++p) {
        const auto& m = r.memory[p];
        const std::int64_t held =
            m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.gathered_bytes;
        std::int64_t highest = 0, last = -1;
        int points = 0;
        for (const auto& pt : r.memory_points) {
            if (static_cast<std::size_t>(pt.rank) != p)
                continue;
            ++points;
            CHECK(pt.activations_bytes >= 0);
            highest = std::max(highest, pt.activations_bytes);
            last = pt.activations_bytes;
        }
        INFO("stage " << p);
        CHECK(points > 0);
        CHECK(last == 0); // every activation freed by its backward
        CHECK(held + highest <= m.peak_bytes);
        // The allocated peak is the held state plus the activations' peak (kept and
        // transient); the allocator reserves more, the device adds what it does not count.
        CHECK(m.peak_bytes == held + m.activations_bytes);
        CHECK(highest <= m.activations_bytes);
        CHECK(m.reserved_bytes > m.peak_bytes);
        CHECK(m.device_bytes == m.reserved_bytes + m.runtime_bytes);
    }
}

TEST_CASE("cli run: tensor parallelism as DTensor and ZeRO-3's gathered memory in the report",
          "[app][run][memory]") {
    const test::TempDir scratch("cmd-run-dtensor");
    const fs::path exp = scratch.path / "fsdp-tp.yaml";
    // grand-teton-h100's framework runs tensor parallelism as DTensor (torchtitan's).
    std::ofstream(exp) << "name: fsdp-tp\nhardware: grand-teton-h100\ngpus: 16\n"
                          "model: llama3-8B\n"
                          "training: {global_batch: 2, micro_batch: 1, dtype: bf16}\n"
                          "parallel: {tp: 8, dp: 2, sequence_parallel: true, fsdp: true}\n";
    const Run text = run({"run", exp.string()});
    REQUIRE(text.code == 0);
    CHECK_THAT(text.out, Catch::Contains("tensor parallel as DTensor"));
    CHECK_THAT(text.out, Catch::Contains("activations  gathered  allocated  reserved  runtime"));
    const Run js = run({"run", exp.string(), "--format", "json"});
    REQUIRE(js.code == 0);
    const auto j = nlohmann::json::parse(js.out);
    CHECK(j["parallel"]["tensor_parallel"] == "dtensor");
    const auto& m = j["memory"]["per_stage"][0];
    CHECK(m["gathered_bytes"].get<std::int64_t>() > 0);
    CHECK(m["peak_bytes"].get<std::int64_t>() ==
          m["weights_bytes"].get<std::int64_t>() + m["grads_bytes"].get<std::int64_t>() +
              m["optimizer_bytes"].get<std::int64_t>() +
              m["activations_bytes"].get<std::int64_t>() + m["gathered_bytes"].get<std::int64_t>());
    CHECK(m["device_bytes"].get<std::int64_t>() ==
          m["reserved_bytes"].get<std::int64_t>() + m["runtime_bytes"].get<std::int64_t>());
    CHECK(j["memory"]["peak_reserved_bytes_max"].get<std::int64_t>() >=
          j["memory"]["peak_bytes_max"].get<std::int64_t>());

    // Megatron's tensor parallelism (dgx-a100), no ZeRO-3: neither.
    const Run megatron = run({"run", kExperiment});
    REQUIRE(megatron.code == 0);
    CHECK_THAT(megatron.out, !Catch::Contains("DTensor"));
    CHECK_THAT(megatron.out, !Catch::Contains("gathered"));
    const Run mj = run({"run", kExperiment, "--format", "json"});
    REQUIRE(mj.code == 0);
    const auto k = nlohmann::json::parse(mj.out);
    CHECK(k["parallel"]["tensor_parallel"] == "megatron");
    CHECK(k["memory"]["per_stage"][0]["gathered_bytes"] == 0);
}

TEST_CASE("cli run: Megatron-LM's argument names read as the keys they mirror", "[app][run]") {
    const std::string mixtral =
        CLUSTERSIM_SOURCE_DIR "/configs/experiments/mixtral-8x7B-64xH100.yaml";
    // The same experiment with --tensor-model-parallel-size, --pipeline-model-parallel-size and
    // --expert-model-parallel-size as its keys.
    std::string text = slurp(mixtral);
    for (const auto& [ours, theirs] : std::vector<std::pair<std::string, std::string>>{
             {"  tp: 1\n", "  tensor_model_parallel_size: 1\n"},
             {"  pp: 4\n", "  pipeline_model_parallel_size: 4\n"},
             {"  ep: 8\n", "  expert_model_parallel_size: 8\n"}}) {
        const auto at = text.find(ours);
        REQUIRE(at != std::string::npos);
        text.replace(at, ours.size(), theirs);
    }
    TempDir dir("megatron-names");
    const std::string renamed = dir.file("mixtral.yaml");
    spit(renamed, text);
    const Run a = run({"run", mixtral, "--format", "json"});
    const Run b = run({"run", renamed, "--format", "json"});
    INFO(b.err);
    REQUIRE(a.code == 0);
    REQUIRE(b.code == 0);
    CHECK(nlohmann::json::parse(a.out)["step_time_s"] ==
          nlohmann::json::parse(b.out)["step_time_s"]);
    CHECK(nlohmann::json::parse(a.out)["parallel"] == nlohmann::json::parse(b.out)["parallel"]);
    // --set under the other name of a key the file gives: refused, naming both.
    const Run both = run({"run", mixtral, "--set", "parallel.tensor_model_parallel_size=2"});
    CHECK(both.code == 2);
    CHECK_THAT(both.err, Catch::Contains("tensor_model_parallel_size"));
    CHECK_THAT(both.err, Catch::Contains("not both"));
}

// On a rack-scale NVLink domain (GB200 NVL72) the report says which parallel groups stay inside
// one domain in Megatron-Core's rank order (tp, cp, dp, pp), and a job that is not whole trays
// is refused with the key.
TEST_CASE("cli run: which groups cross an NVLink domain of a GB200 NVL72", "[app][run][nvl72]") {
    const test::TempDir scratch("cmd-run-nvl72");
    const fs::path exp = scratch.path / "nvl72.yaml";
    const std::string body = "model: llama3-8B\n"
                             "training: {global_batch: 64, micro_batch: 1, dtype: bf16}\n"
                             "parallel: {tp: 4, pp: 4, dp: 4, schedule: 1f1b}\n";
    // 16 of 18 trays per rack: a tp x dp block of 16 divides 64, so dp stays on NVLink.
    std::ofstream(exp)
        << "name: nvl72\nhardware:\n  extends: gb200-nvl72\n  node: {gpus_used: 64}\n"
           "gpus: 64\n"
        << body;
    const Run used = run({"run", exp.string()});
    REQUIRE(used.code == 0);
    CHECK_THAT(used.out, Catch::Contains("NVLink      64 GPUs each; inside one: tp 4, dp 4, pp 4"));
    // The whole rack of 72: the same 64-GPU job fills one domain, the groups stay inside.
    std::ofstream(exp) << "name: nvl72\nhardware: gb200-nvl72\ngpus: 64\n" << body;
    const Run whole = run({"run", exp.string()});
    REQUIRE(whole.code == 0);
    CHECK_THAT(whole.out, Catch::Contains("72 GPUs each; inside one: tp 4, dp 4, pp 4"));
    // 128 GPUs on racks of 72: of the four tp x dp blocks of 32 GPUs, [64, 96) straddles GPU 72;
    // the one pp block is all 128 GPUs.
    std::ofstream(exp) << "name: nvl72\nhardware: gb200-nvl72\ngpus: 128\n"
                       << "model: llama3-8B\n"
                          "training: {global_batch: 64, micro_batch: 1, dtype: bf16}\n"
                          "parallel: {tp: 4, pp: 4, dp: 8, schedule: 1f1b}\n";
    const Run two = run({"run", exp.string()});
    REQUIRE(two.code == 0);
    CHECK_THAT(two.out, Catch::Contains("72 GPUs each; inside one: tp 4; across domains: pp 4; "
                                        "some groups across: dp 8"));
    // A DGX node has no trays: no such line.
    CHECK_THAT(run({"run", kExperiment}).out, !Catch::Contains("NVLink      "));
    // Not whole trays: exit 2 naming the key.
    std::ofstream(exp) << "name: nvl72\nhardware: gb200-nvl72\ngpus: 66\n"
                       << "model: llama3-8B\n"
                          "training: {global_batch: 66, micro_batch: 1, dtype: bf16}\n"
                          "parallel: {tp: 1, pp: 1, dp: 66}\n";
    const Run odd = run({"run", exp.string()});
    CHECK(odd.code == 2);
    CHECK_THAT(odd.err, Catch::Contains("node.gpus_per_tray"));
}

TEST_CASE("cli run: a number format the GPU lacks exits 2 with the key and the fix",
          "[app][run][nvfp4]") {
    // kExperiment runs on A100s: no FP4 tensor cores, no block scaling.
    const Run nvfp4 = run({"run", kExperiment, "--set", "training.dtype=fp4"});
    CHECK(nvfp4.code == 2);
    CHECK_THAT(nvfp4.err, Catch::Contains("training.dtype") && Catch::Contains("NVFP4") &&
                              Catch::Contains("Blackwell"));
    const Run mxfp8 = run(
        {"run", kExperiment, "--set", "training.dtype=fp8", "--set", "training.fp8_recipe=mxfp8"});
    CHECK(mxfp8.code == 2);
    CHECK_THAT(mxfp8.err, Catch::Contains("training.fp8_recipe") &&
                              Catch::Contains("fp8_recipe: delayed, current or tensorwise"));
}

TEST_CASE("cli run: --max-seconds refuses a flow step that would take longer, before it runs",
          "[app][run][estimate]") {
    // GPT-3 175B on 64 A100s with two data-parallel replicas (tp 8, pp 4, dp 2): its
    // data-parallel collectives' flows are counted before any is made
    // (strategies/collectives/flow_estimate.h); a bound far below their listing's least cost
    // refuses the step, naming the estimate and the flag.
    auto step = [](std::vector<std::string> extra) {
        std::vector<std::string> a{
            "run",   CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml",
            "--set", "parallel.pp=4",
            "--set", "parallel.dp=2"};
        a.insert(a.end(), extra.begin(), extra.end());
        return run(a);
    };
    const Run refused = step({"--fidelity", "flow", "--max-seconds", "1e-9"});
    CHECK(refused.code == 2);
    CHECK(refused.out.empty());
    CHECK_THAT(refused.err, Catch::Contains("a step on 64 GPUs in flow fidelity would take at "
                                            "least") &&
                                Catch::Contains("flows listed over") &&
                                Catch::Contains("more than --max-seconds 1e-09"));
    const Run negative = step({"--fidelity", "flow", "--max-seconds", "-1"});
    CHECK(negative.code == 2);
    CHECK_THAT(negative.err, Catch::Contains("--max-seconds: expected a number of seconds"));
    // The default bound leaves the step to run, in flow and analytic fidelity alike.
    CHECK(step({"--fidelity", "flow"}).code == 0);
    CHECK(step({"--max-seconds", "1e-9"}).code == 0); // analytic: no flows
}
