// clustersim bubble EXPERIMENT.yaml --micro-batches 1,2,4,...,64: the pipeline bubble and the
// step time against the number of micro-batches for GPipe, 1F1B and interleaved 1F1B (or the
// --schedules given: also ZB-H1, ZB-V and DualPipe), next to the closed forms; --plot draws the
// whiteboard picture.
#include "app/cli.h"
#include "app/output.h"
#include "app/svg_plot.h"
#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "explore/evaluator.h"
#include "explore/grid.h"
#include "explore/thread_pool.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

namespace clustersim::app {
namespace {

namespace sp = strategies::parallel;
using sp::Settings;

struct BubbleOptions {
    std::string experiment;
    std::string micro_batches;
    std::vector<std::string> sets;
    int virtual_stages = 0;
    bool virtual_stages_given = false; ///< given, 0 is refused as -1 is (one rule)
    std::string plot;
    std::string schedules = "gpipe,1f1b,interleaved-1f1b";
    int jobs = 0;
    std::string fidelity = "analytic";
};

struct Schedule {
    sp::PipelineSchedule schedule;
    std::string name;  ///< as in the experiment file
    std::string label; ///< for people
    int v = 1;
    std::string group;       ///< the chart's colour group
    std::string closed_name; ///< the closed form's legend
    /// The closed form is the app's (gpipe, 1f1b, interleaved: independent of the pass times)
    /// or the step's (the split schedules': from the stages' F, B and W).
    bool closed_from_step = false;
};

/// The schedules named in --schedules, in order.
std::vector<Schedule> parse_schedules(const std::string& list, int v) {
    std::vector<Schedule> out;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string name = list.substr(at, comma - at);
        at = comma + 1;
        if (name == "gpipe")
            out.push_back(
                {sp::PipelineSchedule::gpipe, name, "GPipe", 1, "gpipe", "(p-1)/(m+p-1)", false});
        else if (name == "1f1b")
            out.push_back({sp::PipelineSchedule::one_f_one_b, name, "1F1B", 1, "1f1b",
                           "(p-1)/(m+p-1)", false});
        else if (name == "interleaved-1f1b" || name == "interleaved")
            out.push_back({sp::PipelineSchedule::interleaved_1f1b, "interleaved-1f1b",
                           fmt::format("interleaved 1F1B (v={})", v), v, "interleaved",
                           "(p-1)/(v m+p-1)", false});
        else if (name == "zb-h1")
            out.push_back({sp::PipelineSchedule::zb_h1, name, "ZB-H1", 1, "zb-h1",
                           "ZB-H1 (p-1)(F+B-2W)", true});
        else if (name == "zb-v")
            out.push_back({sp::PipelineSchedule::zb_v, name, "ZB-V", 1, "zb-v",
                           "ZB-V timed with equal stages", true});
        else if (name == "dualpipe")
            out.push_back({sp::PipelineSchedule::dualpipe, name, "DualPipe", 1, "dualpipe",
                           "DualPipe (p/2-1)(F&B+B-3W)", true});
        else
            throw InputError("--schedules: unknown schedule '" + name +
                             "'; expected a comma-separated list of gpipe, 1f1b, interleaved, "
                             "zb-h1, zb-v, dualpipe");
        for (std::size_t i = 0; i + 1 < out.size(); ++i)
            if (out[i].schedule == out.back().schedule)
                throw InputError("--schedules: '" + name + "' is listed twice");
    }
    return out;
}

bool is_default(const std::vector<Schedule>& s) {
    return s.size() == 3 && s[0].schedule == sp::PipelineSchedule::gpipe &&
           s[1].schedule == sp::PipelineSchedule::one_f_one_b &&
           s[2].schedule == sp::PipelineSchedule::interleaved_1f1b;
}

struct Cell {
    std::int64_t m = 0;
    explore::Outcome outcome;
    double closed_form = 0;
};

/// The bubble's share of the pipeline phase: the step without the optimizer and the data-parallel
/// reduction left exposed after the last backward, the part of the step the closed forms
/// describe (they count only forward and backward slots). StepResult::bubble_fraction is the
/// share of the whole step.
double pipeline_bubble(const strategies::parallel::StepResult& r) {
    const double pipeline = r.step_time_s - r.breakdown.optimizer_s - r.breakdown.dp_comm_exposed_s;
    return pipeline > 0 ? r.breakdown.pp_bubble_s / pipeline : 0.0;
}

std::string bubble_svg(const sp::ExperimentSpec& base, const std::vector<Schedule>& schedules,
                       const std::vector<std::vector<Cell>>& cells) {
    const int p = base.parallel.pp;
    int v = 0;
    bool has_gpipe = false;
    for (const Schedule& s : schedules) {
        if (s.schedule == sp::PipelineSchedule::interleaved_1f1b)
            v = s.v;
        has_gpipe = has_gpipe || s.schedule == sp::PipelineSchedule::gpipe;
    }
    LineChart c;
    c.title = fmt::format("Pipeline bubble against micro-batches: {}", base.name);
    if (is_default(schedules)) {
        c.subtitle = fmt::format(
            "{} on p = {} stages (tp {} x dp {}), micro-batch {}, interleaved v = {}; "
            "GPipe and 1F1B coincide",
            base.model.name, p, base.parallel.tp, base.parallel.dp, base.training.micro_batch, v);
        c.footnote = "dashed: closed forms with equal stages and free communication, GPipe and "
                     "1F1B (p-1)/(m+p-1), interleaved (p-1)/(v m+p-1)";
    } else {
        c.subtitle =
            fmt::format("{} on p = {} stages (tp {} x dp {}), micro-batch {}{}", base.model.name, p,
                        base.parallel.tp, base.parallel.dp, base.training.micro_batch,
                        v > 0 ? fmt::format(", interleaved v = {}", v) : std::string());
        c.footnote = "dashed: closed forms with equal stages and free communication; F, B, W: "
                     "the mean stage's forward, backward and its weight-gradient part";
    }
    c.x.label = "micro-batches per step (m)";
    c.x.scale = AxisScale::log2;
    c.x.format = TickFormat::integer;
    c.y.label = "bubble fraction of the pipeline phase";
    c.y.format = TickFormat::percent;
    c.y.max = 1.0;
    std::vector<Series> solid, dashed;
    for (std::size_t s = 0; s < schedules.size(); ++s) {
        Series sim;
        sim.name = schedules[s].label;
        sim.group = schedules[s].group;
        Series cf;
        cf.name = schedules[s].closed_name;
        cf.line = LineStyle::dashed;
        cf.markers = false;
        cf.group = schedules[s].group;
        for (const Cell& cell : cells[s]) {
            if (!std::isnan(cell.closed_form)) {
                cf.x.push_back(static_cast<double>(cell.m));
                cf.y.push_back(cell.closed_form);
            }
            if (!cell.outcome.valid)
                continue;
            sim.x.push_back(static_cast<double>(cell.m));
            sim.y.push_back(pipeline_bubble(cell.outcome.result));
        }
        solid.push_back(sim);
        // GPipe and 1F1B share one closed form: draw it once.
        if (schedules[s].schedule != sp::PipelineSchedule::one_f_one_b || !has_gpipe)
            dashed.push_back(cf);
    }
    c.series = solid;
    c.series.insert(c.series.end(), dashed.begin(), dashed.end());
    return render_svg(c);
}

void run_bubble(const BubbleOptions& o, Io io) {
    const auto ms = explore::parse_int_list("--micro-batches", o.micro_batches);
    if ((o.virtual_stages_given && o.virtual_stages < 2) || o.virtual_stages < 0 ||
        o.virtual_stages == 1)
        throw InputError("--virtual-stages: interleaving needs at least 2, got " +
                         std::to_string(o.virtual_stages));
    if (o.jobs < 0)
        throw InputError("--jobs: expected a positive number of threads");
    Settings fixed;
    for (const auto& s : o.sets)
        fixed.push_back(sp::parse_override(s));
    const sp::ExperimentVariants variants(o.experiment, fixed);
    explore::EvalOptions eo;
    eo.fidelity = o.fidelity == "flow" ? sp::Fidelity::flow : sp::Fidelity::analytic;
    const explore::Evaluator evaluator(variants, eo);
    // The experiment as given must run: its tp, pp and dp are kept for every point.
    sp::ExperimentSpec base;
    try {
        base = evaluator.experiment({});
    } catch (const InputError& e) {
        throw InputError(std::string(e.what()) + " (the experiment itself must be valid)");
    }
    if (base.parallel.pp < 2)
        throw InputError(o.experiment + ": pp is " + std::to_string(base.parallel.pp) +
                         ": no pipeline, no bubble; set a pipeline, e.g. --set parallel.pp=4");
    const int v = o.virtual_stages > 0               ? o.virtual_stages
                  : base.parallel.virtual_stages > 1 ? base.parallel.virtual_stages
                                                     : 2;
    const std::vector<Schedule> schedules = parse_schedules(o.schedules, v);
    std::vector<Settings> configs;
    for (const Schedule& s : schedules) {
        for (std::int64_t m : ms) {
            configs.push_back({{"parallel.schedule", s.name},
                               {"parallel.virtual_stages", std::to_string(s.v)},
                               {"parallel.dp", std::to_string(base.parallel.dp)},
                               {"training.global_batch",
                                std::to_string(m * base.training.micro_batch * base.parallel.dp)}});
        }
    }
    const auto outcomes =
        explore::evaluate_all(evaluator, configs, o.jobs > 0 ? o.jobs : explore::default_jobs());
    std::vector<std::vector<Cell>> cells(schedules.size());
    std::size_t k = 0;
    for (std::size_t s = 0; s < schedules.size(); ++s) {
        for (std::int64_t m : ms) {
            Cell c;
            c.m = m;
            c.outcome = outcomes[k++];
            sp::PipelineShape shape;
            shape.ranks = base.parallel.pp;
            shape.micro_batches = static_cast<int>(m);
            shape.virtual_stages = schedules[s].v;
            if (!schedules[s].closed_from_step)
                c.closed_form = sp::ideal_bubble_fraction(schedules[s].schedule, shape);
            else
                c.closed_form = c.outcome.valid ? c.outcome.result.ideal_bubble_fraction
                                                : std::numeric_limits<double>::quiet_NaN();
            cells[s].push_back(std::move(c));
        }
    }

    fmt::print(io.out, "{:<10}{}: {}, pp {} x tp {} x dp {}, micro-batch {}, {} fidelity\n",
               "bubble", o.experiment, base.model.name, base.parallel.pp, base.parallel.tp,
               base.parallel.dp, base.training.micro_batch, o.fidelity);
    fmt::print(io.out,
               "{:<10}m micro-batches per step: global batch = m x micro-batch x dp; the closed "
               "form assumes equal stages and free communication\n",
               "sweep");
    fmt::print(io.out,
               "{:<10}bubble: idle share of the pipeline phase (forward and backward passes, "
               "without the optimizer step and exposed dp reduction), as the closed form counts "
               "it; of step: idle share of the whole step\n\n",
               "columns");
    std::vector<std::vector<std::string>> table;
    table.push_back({"schedule", "m", "bubble", "closed form", "of step", "step time",
                     "per micro-batch", "tokens/s", "peak GB", "fits"});
    std::map<std::string, int> reasons; // footnotes, numbered in order of first appearance
    std::vector<std::string> reason_text;
    for (std::size_t s = 0; s < schedules.size(); ++s) {
        for (const Cell& c : cells[s]) {
            std::vector<std::string> line{schedules[s].label, std::to_string(c.m)};
            if (!c.outcome.valid) {
                auto [it, inserted] =
                    reasons.emplace(c.outcome.reason, static_cast<int>(reasons.size()) + 1);
                if (inserted)
                    reason_text.push_back(c.outcome.reason);
                line.push_back(fmt::format("invalid [{}]", it->second));
                line.push_back(std::isnan(c.closed_form) ? "-" : base::percent(c.closed_form));
                while (line.size() < table.front().size())
                    line.push_back("-");
            } else {
                const auto& r = c.outcome.result;
                line.push_back(base::percent(pipeline_bubble(r)));
                line.push_back(base::percent(c.closed_form));
                line.push_back(base::percent(r.bubble_fraction));
                line.push_back(base::format_time(sim::Time::from_seconds(r.step_time_s)));
                line.push_back(base::format_time(
                    sim::Time::from_seconds(r.step_time_s / static_cast<double>(c.m))));
                line.push_back(fmt::format("{:.0f}", r.tokens_per_s));
                line.push_back(fmt::format("{:.1f}", static_cast<double>(r.peak_bytes_max) / 1e9));
                line.push_back(r.oom ? "OOM" : "yes");
            }
            table.push_back(std::move(line));
        }
    }
    std::vector<std::size_t> width(table.front().size(), 0);
    for (const auto& line : table) {
        for (std::size_t c = 0; c < line.size(); ++c)
            width[c] = std::max(width[c], line[c].size());
    }
    for (std::size_t i = 0; i < table.size(); ++i) {
        const auto& line = table[i];
        std::string s;
        for (std::size_t c = 0; c < line.size(); ++c)
            s += (c == 0 ? "" : "  ") + (c == 0 ? fmt::format("{:<{}}", line[c], width[c])
                                                : fmt::format("{:>{}}", line[c], width[c]));
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        io.out << s << "\n";
    }
    for (std::size_t i = 0; i < reason_text.size(); ++i)
        fmt::print(io.out, "[{}] {}\n", i + 1, reason_text[i]);
    if (!o.plot.empty()) {
        write_file_atomically(o.plot, bubble_svg(base, schedules, cells));
        fmt::print(io.out, "\n{:<10}{}\n", "plot", o.plot);
    }
}

} // namespace

void register_bubble(CLI::App& app, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<BubbleOptions>();
    auto* cmd = app.add_subcommand(
        "bubble", "Pipeline bubble and step time against micro-batches, with the closed forms");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML) with pp > 1")->required();
    cmd->add_option("--micro-batches", o->micro_batches,
                    "Micro-batch counts, e.g. 1,2,4,...,64 (... continues the steps)")
        ->required();
    cmd->add_option("--set", o->sets, "Override a key (repeatable)");
    auto* virtual_stages =
        cmd->add_option("--virtual-stages", o->virtual_stages,
                        "Virtual stages of the interleaved schedule (default: the experiment's, "
                        "or 2)");
    cmd->add_option("--schedules", o->schedules,
                    "Schedules to compare: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe")
        ->capture_default_str();
    cmd->add_option("--plot", o->plot, "Write the bubble against micro-batches (SVG)");
    cmd->add_option("--jobs", o->jobs, "Threads (default: every core)");
    cmd->add_option("--fidelity", o->fidelity, "analytic or flow")
        ->check(CLI::IsMember({"analytic", "flow"}))
        ->capture_default_str();
    cmd->callback([o, io, virtual_stages] {
        o->virtual_stages_given = virtual_stages->count() > 0;
        run_bubble(*o, io);
    });
}

} // namespace clustersim::app
