// clustersim run EXPERIMENT.yaml: one training step, its breakdown and memory; a Perfetto trace
// and a Gantt chart of the pipeline on request (app/run_report.h renders them).
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/output.h"
#include "app/run_report.h"
#include "app/trace_compare.h"
#include "base/error.h"
#include "results/step_json.h"
#include "strategies/collectives/flow_estimate.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <memory>
#include <optional>

namespace clustersim::app {

using strategies::parallel::ExperimentSpec;
using strategies::parallel::StepResult;

namespace {
struct RunOptions : ExperimentOptions {
    std::string experiment;
    std::string trace;
    std::string timeline;
    std::string memory;
    std::string format = "table";
    std::string compare;
    std::string compare_trace;
    double max_seconds = strategies::collectives::kDefaultFlowMaxSeconds;
};
} // namespace

void register_run(CLI::App& app, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<RunOptions>();
    auto* cmd = app.add_subcommand("run", "Simulate one training step of an experiment");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML)")->required();
    o->add_to(*cmd, "Override a key, e.g. --set parallel.tp=4 (repeatable)", false);
    auto* trace_opt =
        cmd->add_option("--trace", o->trace, "Write a Chrome/Perfetto trace (JSON) of the step");
    auto* timeline_opt =
        cmd->add_option("--timeline", o->timeline, "Write a Gantt chart (SVG) of the pipeline");
    auto* memory_opt = cmd->add_option("--memory-timeline", o->memory,
                                       "Write each simulated GPU's memory over the step (SVG)");
    cmd->add_option("--compare", o->compare,
                    "A PyTorch profiler trace (.json or .json.gz) of this experiment's step: "
                    "measured vs predicted by kernel class and by layer");
    auto* compare_trace_opt =
        cmd->add_option("--compare-trace", o->compare_trace,
                        "With --compare: write both timelines as one Perfetto/Chrome trace (JSON)");
    cmd->add_option("--format", o->format, "table or json")
        ->check(CLI::IsMember({"table", "json"}))
        ->capture_default_str();
    cmd->add_option("--max-seconds", o->max_seconds,
                    "Flow fidelity: refuse a step whose simulation would take at least this many "
                    "CPU seconds (0: no bound)")
        ->capture_default_str();
    cmd->callback([o, io, trace_opt, timeline_opt, memory_opt, compare_trace_opt] {
        // Every output is checked before anything runs: an empty name (`--trace ''`, a shell
        // variable that was not set) is a mistake, not "no trace"; an output that is the
        // experiment file or the measured trace would destroy it.
        const std::vector<std::pair<CLI::Option*, const std::string*>> outputs{
            {trace_opt, &o->trace},
            {timeline_opt, &o->timeline},
            {memory_opt, &o->memory},
            {compare_trace_opt, &o->compare_trace}};
        for (const auto& [option, path] : outputs) {
            if (option->count() > 0 && path->empty())
                throw InputError(option->get_name() + ": expected a file name, got ''");
            refuse_output_over_input(*path, option->get_name(), {o->experiment, o->compare});
        }
        std::vector<std::pair<std::string, std::string>> named;
        for (const auto& [option, path] : outputs)
            named.emplace_back(option->get_name(), *path);
        refuse_same_outputs(named);
        const ExperimentSpec e =
            strategies::parallel::load_experiment(o->experiment, o->overrides());
        strategies::parallel::StepOptions options = o->step_options();
        options.straggler_band = true;
        options.flow_max_seconds = strategies::collectives::checked_max_seconds(o->max_seconds);
        options.timeline = !o->trace.empty() || !o->timeline.empty() || !o->memory.empty() ||
                           !o->compare_trace.empty();
        if (!o->compare_trace.empty() && o->compare.empty())
            throw InputError("--compare-trace: needs --compare TRACE");
        // The trace is read first: a bad trace fails before the simulation runs.
        std::optional<calibrate::KinetoTrace> measured;
        if (!o->compare.empty())
            measured = read_trace_file(o->compare);
        const StepResult r = strategies::parallel::simulate_step(e, options);
        if (measured) {
            const StepComparison c = compare_step(*measured, e, r);
            const std::string both =
                o->compare_trace.empty() ? "" : comparison_trace(*measured, e, r);
            if (!o->compare_trace.empty())
                write_file_atomically(o->compare_trace, both);
            print_comparison(io.out, c);
            if (!o->compare_trace.empty())
                fmt::print(io.out, "{:<12}{} (open in https://ui.perfetto.dev)\n", "compare",
                           o->compare_trace);
            return;
        }
        // Render everything before writing anything: no partial output on failure.
        const std::string trace = o->trace.empty() ? "" : step_trace(e, r);
        const std::string svg = o->timeline.empty() ? "" : step_timeline_svg(e, r);
        const std::string memory = o->memory.empty() ? "" : step_memory_svg(e, r);
        if (!o->trace.empty())
            write_file_atomically(o->trace, trace);
        if (!o->timeline.empty())
            write_file_atomically(o->timeline, svg);
        if (!o->memory.empty())
            write_file_atomically(o->memory, memory);
        if (o->format == "json") {
            io.out << results::step_json(e, r).dump(2) << "\n";
            return;
        }
        print_step_table(io.out, e, r);
        if (!o->trace.empty())
            fmt::print(io.out, "{:<12}{} (open in https://ui.perfetto.dev)\n", "trace", o->trace);
        if (!o->timeline.empty())
            fmt::print(io.out, "{:<12}{}\n", "timeline", o->timeline);
        if (!o->memory.empty())
            fmt::print(io.out, "{:<12}{}\n", "memory", o->memory);
    });
}

void register_compare(CLI::App& app, Io io, int& /*exit_code*/) {
    struct CompareOptions {
        std::string trace;
        std::string experiment;
        std::vector<std::string> sets;
        std::string out;
    };
    auto o = std::make_shared<CompareOptions>();
    auto* cmd = app.add_subcommand(
        "compare", "A PyTorch profiler trace of a step beside the simulated step of the "
                   "experiment it ran (by kernel class and by layer)");
    cmd->add_option("trace", o->trace, "The measured step: a PyTorch profiler trace (.json, .gz)")
        ->required();
    cmd->add_option("experiment", o->experiment,
                    "The simulated step: the experiment (YAML) that describes the traced run")
        ->required();
    cmd->add_option("--set", o->sets, "Override a key of the experiment (repeatable)");
    cmd->add_option("--trace", o->out, "Write both timelines as one Perfetto/Chrome trace (JSON)");
    cmd->callback([o, io] {
        std::vector<std::pair<std::string, std::string>> overrides;
        for (const auto& s : o->sets)
            overrides.push_back(strategies::parallel::parse_override(s));
        const calibrate::KinetoTrace measured = read_trace_file(o->trace);
        const ExperimentSpec e = strategies::parallel::load_experiment(o->experiment, overrides);
        strategies::parallel::StepOptions options;
        options.timeline = !o->out.empty();
        const StepResult r = strategies::parallel::simulate_step(e, options);
        const StepComparison c = compare_step(measured, e, r);
        if (!o->out.empty())
            write_file_atomically(o->out, comparison_trace(measured, e, r));
        print_comparison(io.out, c);
        if (!o->out.empty())
            fmt::print(io.out, "{:<12}{} (open in https://ui.perfetto.dev)\n", "trace", o->out);
    });
}

} // namespace clustersim::app
