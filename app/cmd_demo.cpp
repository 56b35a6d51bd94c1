// clustersim demo: the built-in example a newcomer sees first: the lecture's three parallel
// MLPs side by side, then GPT-3 175B on 64 A100s, with traces and timelines written to a folder.
#include "app/cli.h"
#include "app/output.h"
#include "app/run_report.h"
#include "base/error.h"
#include "base/units.h"
#include "hardware/hardware_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <memory>

namespace clustersim::app {

namespace {

using strategies::parallel::ExperimentSpec;
using strategies::parallel::StepResult;

struct Ran {
    ExperimentSpec experiment;
    StepResult result;
    std::string trace;
    std::string timeline;
};

/// Runs a built-in experiment and writes its trace and timeline into `dir`.
Ran run_builtin(const std::string& name, const std::string& dir) {
    const std::string path = config::config_dir() + "/experiments/" + name + ".yaml";
    Ran r{strategies::parallel::load_experiment(path),
          {},
          dir + "/" + name + ".trace.json",
          dir + "/" + name + ".timeline.svg"};
    strategies::parallel::StepOptions o;
    o.timeline = true;
    r.result = strategies::parallel::simulate_step(r.experiment, o);
    write_file_atomically(r.trace, step_trace(r.experiment, r.result));
    write_file_atomically(r.timeline, step_timeline_svg(r.experiment, r.result));
    return r;
}

std::string t(double s) {
    return base::format_time(sim::Time::from_seconds(s));
}

void print_side_by_side(std::ostream& out, const std::vector<Ran>& runs) {
    auto row = [&](const std::string& name, auto&& cell) {
        fmt::print(out, "  {:<22}", name);
        for (const Ran& r : runs)
            fmt::print(out, "{:<24}", cell(r));
        fmt::print(out, "\n");
    };
    row("", [](const Ran& r) {
        return r.experiment.name.substr(std::string("lecture-mlp-").size()) + " parallel";
    });
    row("GPUs", [](const Ran& r) { return std::to_string(r.experiment.gpus); });
    row("split", [](const Ran& r) {
        const auto& p = r.experiment.parallel;
        if (p.dp > 1)
            return fmt::format("batch / {}", p.dp);
        if (p.tp > 1)
            return fmt::format("W[:, {}] per GPU", r.experiment.model.hidden / p.tp);
        return fmt::format("{} layers per GPU, {} mb", r.experiment.model.layers / p.pp,
                           r.result.micro_batches);
    });
    row("pass", [](const Ran& r) {
        return std::string(r.experiment.training.forward_only ? "forward"
                                                              : "forward+backward+AdamW");
    });
    row("step time", [](const Ran& r) { return t(r.result.step_time_s); });
    row("  compute", [](const Ran& r) { return t(r.result.breakdown.compute_s); });
    row("  host (kernel issue)", [](const Ran& r) { return t(r.result.breakdown.host_s); });
    row("  communication", [](const Ran& r) {
        const auto& b = r.result.breakdown;
        if (b.dp_comm_exposed_s > 0)
            return "DP all-reduce " + t(b.dp_comm_exposed_s);
        if (b.tp_comm_exposed_s > 0)
            return "TP all-gather " + t(b.tp_comm_exposed_s);
        return "PP send " + t(b.pp_comm_exposed_s);
    });
    row("  pipeline bubble", [](const Ran& r) { return t(r.result.breakdown.pp_bubble_s); });
    row("  optimizer", [](const Ran& r) { return t(r.result.breakdown.optimizer_s); });
    row("peak memory per GPU", [](const Ran& r) {
        return fmt::format("{:.2f} GB", static_cast<double>(r.result.peak_bytes_max) / 1e9);
    });
}

} // namespace

void register_demo(CLI::App& app, Io io, int& /*exit_code*/) {
    auto dir = std::make_shared<std::string>("clustersim-demo");
    auto* cmd = app.add_subcommand(
        "demo", "Run the built-in examples: the lecture's parallel MLPs, then GPT-3 175B");
    cmd->add_option("--out-dir", *dir, "Where traces and timelines go")->capture_default_str();
    cmd->callback([dir, io] {
        std::filesystem::create_directories(*dir);
        std::vector<Ran> mlps;
        for (const char* name : {"lecture-mlp-data", "lecture-mlp-tensor", "lecture-mlp-pipeline"})
            mlps.push_back(run_builtin(name, *dir));
        fmt::print(io.out,
                   "== The lecture's three parallel MLPs (CS336 \"Parallelism 2\"): "
                   "x = gelu(x @ W), 4 layers of 1024 x 1024, fp32, batch 128, on H100s\n\n");
        print_side_by_side(io.out, mlps);
        fmt::print(io.out, "\n  Small layers: the GPU waits on the host issuing kernels more than "
                           "it computes.\n");
        for (const Ran& r : mlps)
            fmt::print(io.out, "  {:<22}trace {}  timeline {}\n", r.experiment.name, r.trace,
                       r.timeline);

        const Ran gpt = run_builtin("gpt3-175B-64xA100", *dir);
        fmt::print(io.out, "\n== GPT-3 175B on 64 A100s (8 DGX A100 nodes)\n\n");
        print_step_table(io.out, gpt.experiment, gpt.result);
        fmt::print(io.out, "{:<12}{} (open in https://ui.perfetto.dev)\n", "trace", gpt.trace);
        fmt::print(io.out, "{:<12}{}\n", "timeline", gpt.timeline);
        fmt::print(io.out,
                   "\nNext: clustersim run configs/experiments/gpt3-175B-64xA100.yaml "
                   "--set parallel.pp=4 --set parallel.dp=2 --timeline t.svg   (see README.md)\n");
    });
}

} // namespace clustersim::app
