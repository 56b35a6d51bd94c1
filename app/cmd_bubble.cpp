// clustersim bubble EXPERIMENT.yaml --micro-batches 1,2,4,...,64: the pipeline bubble and the
// step time against the number of micro-batches for GPipe, 1F1B and interleaved 1F1B (or the
// --schedules given: also ZB-H1, ZB-V and DualPipe), next to the closed forms; --plot draws the
// whiteboard picture.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/output.h"
#include "app/svg_plot.h"
#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "explore/evaluator.h"
#include "explore/grid.h"
#include "explore/sweep_row.h"
#include "explore/thread_pool.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

namespace clustersim::app {
namespace {

namespace sp = strategies::parallel;
using sp::Settings;

struct BubbleOptions : ExperimentOptions {
    std::string experiment;
    std::string micro_batches;
    std::string virtual_stages;
    bool fixed_batch = false;
    std::string plot;
    std::string out;
    std::string format = "table";
    std::string schedules = "gpipe,1f1b,interleaved-1f1b";
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
std::vector<Schedule> parse_schedules(const std::string& list, const std::vector<int>& vs) {
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
        else if (name == "interleaved-1f1b" || name == "interleaved") {
            // One curve per number of virtual stages, in the same run.
            for (int v : vs)
                out.push_back(
                    {sp::PipelineSchedule::interleaved_1f1b, "interleaved-1f1b",
                     fmt::format("interleaved 1F1B (v={})", v), v,
                     vs.size() == 1 ? "interleaved" : fmt::format("interleaved-v{}", v),
                     vs.size() == 1 ? "(p-1)/(v m+p-1)" : fmt::format("(p-1)/({} m+p-1)", v),
                     false});
        } else if (name == "zb-h1")
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
            if (out[i].schedule == out.back().schedule && out[i].v == out.back().v)
                throw InputError("--schedules: '" + name + "' is listed twice");
    }
    return out;
}

bool is_default(const std::vector<Schedule>& s) {
    return s.size() == 3 && s[2].group == "interleaved" &&
           s[0].schedule == sp::PipelineSchedule::gpipe &&
           s[1].schedule == sp::PipelineSchedule::one_f_one_b &&
           s[2].schedule == sp::PipelineSchedule::interleaved_1f1b;
}

struct Cell {
    std::int64_t m = 0;
    std::int64_t micro_batch = 0, global_batch = 0; ///< sequences
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

/// What is held fixed as m grows: the micro-batch, or the global batch.
std::string batch_words(const sp::ExperimentSpec& base, bool fixed_batch) {
    return fixed_batch ? fmt::format("global batch {} fixed", base.training.global_batch)
                       : fmt::format("micro-batch {}", base.training.micro_batch);
}

std::string bubble_svg(const sp::ExperimentSpec& base, const std::vector<Schedule>& schedules,
                       const std::vector<std::vector<Cell>>& cells, bool fixed_batch) {
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
        c.subtitle = fmt::format("{} on p = {} stages (tp {} x dp {}), {}, interleaved v = {}; "
                                 "GPipe and 1F1B coincide",
                                 base.model.name, p, base.parallel.tp, base.parallel.dp,
                                 batch_words(base, fixed_batch), v);
        c.footnote = "dashed: closed forms with equal stages and free communication, GPipe and "
                     "1F1B (p-1)/(m+p-1), interleaved (p-1)/(v m+p-1)";
    } else {
        c.subtitle = fmt::format("{} on p = {} stages (tp {} x dp {}), {}{}", base.model.name, p,
                                 base.parallel.tp, base.parallel.dp, batch_words(base, fixed_batch),
                                 v > 0 ? fmt::format(", interleaved v = {}", v) : std::string());
        c.footnote = "dashed: closed forms with equal stages and free communication; F, B, W: "
                     "the mean stage's forward, backward and its weight-gradient part";
    }
    c.x.label = "micro-batches per step (m)";
    c.x.scale = AxisScale::log2;
    c.x.format = TickFormat::integer;
    c.y.label = "pipeline idle (share of the pipeline phase)";
    c.y.format = TickFormat::percent;
    c.y.max = 1.0;
    if (fixed_batch) {
        // The lecture's question: the same global batch cut into more micro-batches; the step
        // time beside the bubble (smaller micro-batches run their GEMMs less efficiently).
        c.title = fmt::format("The same global batch in more micro-batches: {}", base.name);
        Axis y2;
        y2.label = "step time (s)";
        c.y2 = y2;
    }
    std::vector<Series> solid, dashed, steps;
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
        if (fixed_batch) {
            Series st;
            st.name = schedules[s].label + " step time";
            st.line = LineStyle::dotted;
            st.right_axis = true;
            st.group = schedules[s].group;
            for (const Cell& cell : cells[s]) {
                if (!cell.outcome.valid)
                    continue;
                st.x.push_back(static_cast<double>(cell.m));
                st.y.push_back(cell.outcome.result.step_time_s);
            }
            steps.push_back(st);
        }
        // GPipe and 1F1B share one closed form: draw it once.
        if (schedules[s].schedule != sp::PipelineSchedule::one_f_one_b || !has_gpipe)
            dashed.push_back(cf);
    }
    c.series = solid;
    c.series.insert(c.series.end(), dashed.begin(), dashed.end());
    c.series.insert(c.series.end(), steps.begin(), steps.end());
    return render_svg(c);
}

/// The cells of every schedule and micro-batch count: with a fixed batch, the micro-batch is the
/// global batch / (m x dp), and an m that does not divide it is a cell with that reason.
std::vector<std::vector<Cell>> simulate_cells(const explore::Evaluator& evaluator,
                                              const sp::ExperimentSpec& base,
                                              const std::vector<Schedule>& schedules,
                                              const std::vector<std::int64_t>& ms, bool fixed_batch,
                                              int jobs) {
    const std::int64_t dp = base.parallel.dp;
    const std::int64_t per_replica = base.training.global_batch / dp;
    std::vector<Settings> configs;
    std::vector<std::vector<Cell>> cells(schedules.size());
    std::vector<std::pair<std::size_t, std::size_t>> where; // config -> cell
    for (std::size_t s = 0; s < schedules.size(); ++s) {
        for (std::int64_t m : ms) {
            Cell c;
            c.m = m;
            c.micro_batch = fixed_batch ? per_replica / m : base.training.micro_batch;
            c.global_batch =
                fixed_batch ? base.training.global_batch : m * base.training.micro_batch * dp;
            if (fixed_batch && per_replica % m != 0) {
                c.outcome.reason =
                    fmt::format("{} micro-batches do not divide the global batch: {} sequences "
                                "/ dp {} = {} a replica",
                                m, base.training.global_batch, dp, per_replica);
            } else {
                where.emplace_back(s, cells[s].size());
                configs.push_back({{"parallel.schedule", schedules[s].name},
                                   {"parallel.virtual_stages", std::to_string(schedules[s].v)},
                                   {"parallel.dp", std::to_string(dp)},
                                   {"training.micro_batch", std::to_string(c.micro_batch)},
                                   {"training.global_batch", std::to_string(c.global_batch)}});
            }
            sp::PipelineShape shape;
            shape.ranks = base.parallel.pp;
            shape.micro_batches = static_cast<int>(m);
            shape.virtual_stages = schedules[s].v;
            c.closed_form = schedules[s].closed_from_step
                                ? std::numeric_limits<double>::quiet_NaN()
                                : sp::ideal_bubble_fraction(schedules[s].schedule, shape);
            cells[s].push_back(std::move(c));
        }
    }
    const auto outcomes = explore::evaluate_all(evaluator, configs, jobs);
    for (std::size_t k = 0; k < outcomes.size(); ++k) {
        Cell& c = cells[where[k].first][where[k].second];
        c.outcome = outcomes[k];
        if (schedules[where[k].first].closed_from_step && c.outcome.valid)
            c.closed_form = c.outcome.result.ideal_bubble_fraction;
    }
    return cells;
}

void print_bubble_table(std::ostream& out, const std::vector<Schedule>& schedules,
                        const std::vector<std::vector<Cell>>& cells, bool fixed_batch) {
    std::vector<std::vector<std::string>> table;
    table.push_back({"schedule", "m"});
    if (fixed_batch)
        table.front().push_back("micro-batch");
    table.front().insert(table.front().end(),
                         {"bubble", "step time", "pipeline idle", "closed form", "per micro-batch",
                          "tokens/s", "peak GB", "fits"});
    std::map<std::string, int> reasons; // footnotes, numbered in order of first appearance
    std::vector<std::string> reason_text;
    for (std::size_t s = 0; s < schedules.size(); ++s) {
        for (const Cell& c : cells[s]) {
            std::vector<std::string> line{schedules[s].label, std::to_string(c.m)};
            if (fixed_batch)
                line.push_back(c.micro_batch > 0 ? std::to_string(c.micro_batch) : "-");
            if (!c.outcome.valid) {
                auto [it, inserted] =
                    reasons.emplace(c.outcome.reason, static_cast<int>(reasons.size()) + 1);
                if (inserted)
                    reason_text.push_back(c.outcome.reason);
                line.push_back(fmt::format("invalid [{}]", it->second));
                line.push_back("-");
                line.push_back("-");
                line.push_back(std::isnan(c.closed_form) ? "-" : base::percent(c.closed_form));
                while (line.size() < table.front().size())
                    line.push_back("-");
            } else {
                const auto& r = c.outcome.result;
                line.push_back(base::percent(r.bubble_fraction));
                line.push_back(base::format_time(sim::Time::from_seconds(r.step_time_s)));
                line.push_back(base::percent(pipeline_bubble(r)));
                line.push_back(base::percent(c.closed_form));
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
    for (const auto& line : table) {
        std::string s;
        for (std::size_t c = 0; c < line.size(); ++c)
            s += (c == 0 ? "" : "  ") + (c == 0 ? fmt::format("{:<{}}", line[c], width[c])
                                                : fmt::format("{:>{}}", line[c], width[c]));
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        out << s << "\n";
    }
    for (std::size_t i = 0; i < reason_text.size(); ++i)
        fmt::print(out, "[{}] {}\n", i + 1, reason_text[i]);
}

/// Every cell as a record: what --out F.json and --format json write (CSV: the same fields).
nlohmann::ordered_json bubble_json(const BubbleOptions& o, const sp::ExperimentSpec& base,
                                   const std::vector<Schedule>& schedules,
                                   const std::vector<std::vector<Cell>>& cells) {
    nlohmann::ordered_json j;
    j["experiment"] = o.experiment;
    j["model"] = base.model.name;
    j["pp"] = base.parallel.pp;
    j["tp"] = base.parallel.tp;
    j["dp"] = base.parallel.dp;
    j["fixed_batch"] = o.fixed_batch;
    j["fidelity"] = o.fidelity;
    j["bubble"] = "bubble_fraction: idle share of the step (as run and sweep report it); "
                  "pipeline_idle_fraction: idle share of the pipeline phase (the step without "
                  "the optimizer and the exposed data-parallel reduction), what the closed form "
                  "describes";
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (std::size_t s = 0; s < schedules.size(); ++s) {
        for (const Cell& c : cells[s]) {
            nlohmann::ordered_json r;
            r["schedule"] = schedules[s].name;
            r["virtual_stages"] = schedules[s].v;
            r["m"] = c.m;
            r["micro_batch"] = c.micro_batch;
            r["global_batch"] = c.global_batch;
            r["valid"] = c.outcome.valid;
            r["reason"] = c.outcome.valid ? nlohmann::ordered_json(nullptr)
                                          : nlohmann::ordered_json(c.outcome.reason);
            r["closed_form"] = std::isnan(c.closed_form) ? nlohmann::ordered_json(nullptr)
                                                         : nlohmann::ordered_json(c.closed_form);
            if (c.outcome.valid) {
                const auto& x = c.outcome.result;
                r["bubble_fraction"] = x.bubble_fraction;
                r["pipeline_idle_fraction"] = pipeline_bubble(x);
                r["step_time_s"] = x.step_time_s;
                r["tokens_per_s"] = x.tokens_per_s;
                r["peak_bytes_max"] = x.peak_bytes_max;
                r["oom"] = x.oom.has_value();
            }
            rows.push_back(std::move(r));
        }
    }
    j["rows"] = std::move(rows);
    return j;
}

std::string bubble_csv(const nlohmann::ordered_json& j) {
    static const char* const columns[] = {"schedule",
                                          "virtual_stages",
                                          "m",
                                          "micro_batch",
                                          "global_batch",
                                          "valid",
                                          "reason",
                                          "closed_form",
                                          "bubble_fraction",
                                          "pipeline_idle_fraction",
                                          "step_time_s",
                                          "tokens_per_s",
                                          "peak_bytes_max",
                                          "oom"};
    std::string s;
    for (const char* c : columns)
        s += std::string(s.empty() ? "" : ",") + c;
    s += "\n";
    for (const auto& r : j["rows"]) {
        std::string line;
        for (std::size_t k = 0; k < std::size(columns); ++k) {
            const char* c = columns[k];
            std::string cell;
            if (r.contains(c) && !r[c].is_null()) {
                const auto& v = r[c];
                cell = v.is_string()           ? explore::csv_field(v.get<std::string>())
                       : v.is_boolean()        ? (v.get<bool>() ? "true" : "false")
                       : v.is_number_integer() ? std::to_string(v.get<std::int64_t>())
                                               : explore::csv_number(v.get<double>());
            }
            line += (k == 0 ? "" : ",") + cell;
        }
        s += line + "\n";
    }
    return s;
}

void run_bubble(const BubbleOptions& o, Io io) {
    const auto ms = explore::parse_int_list("--micro-batches", o.micro_batches);
    std::vector<int> vs;
    if (!o.virtual_stages.empty()) {
        for (std::int64_t v : explore::parse_int_list("--virtual-stages", o.virtual_stages)) {
            if (v < 2 || v > 1024)
                throw InputError("--virtual-stages: interleaving needs 2 to 1024, got " +
                                 std::to_string(v));
            vs.push_back(static_cast<int>(v));
        }
    }
    const int jobs = o.threads();
    const OutKind out_kind = check_planner_outputs(o.format, o.out, o.plot, o.experiment);
    const sp::ExperimentVariants variants(o.experiment, o.overrides());
    const explore::EvalOptions eo = o.eval_options();
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
    if (vs.empty())
        vs.push_back(base.parallel.virtual_stages > 1 ? base.parallel.virtual_stages : 2);
    const std::vector<Schedule> schedules = parse_schedules(o.schedules, vs);
    const auto cells = simulate_cells(evaluator, base, schedules, ms, o.fixed_batch, jobs);
    const auto j = bubble_json(o, base, schedules, cells);
    // Everything is rendered before anything is written: an error leaves no partial file.
    const std::string csv =
        out_kind == OutKind::csv || o.format == "csv" ? bubble_csv(j) : std::string();
    const std::string svg =
        o.plot.empty() ? std::string() : bubble_svg(base, schedules, cells, o.fixed_batch);
    if (o.format == "json") {
        io.out << j.dump(2) << "\n";
    } else if (o.format == "csv") {
        io.out << csv;
    } else {
        fmt::print(io.out, "{:<10}{}: {}, pp {} x tp {} x dp {}, {}, {} fidelity\n", "bubble",
                   o.experiment, base.model.name, base.parallel.pp, base.parallel.tp,
                   base.parallel.dp, batch_words(base, o.fixed_batch), o.fidelity);
        fmt::print(io.out,
                   "{:<10}m micro-batches per step: {}; the closed form assumes equal stages and "
                   "free communication\n",
                   "sweep",
                   o.fixed_batch ? "micro-batch = global batch / (m x dp)"
                                 : "global batch = m x micro-batch x dp");
        fmt::print(io.out,
                   "{:<10}bubble: idle share of the step, as run and sweep report it; pipeline "
                   "idle: idle share of the pipeline phase (forward and backward passes, without "
                   "the optimizer step and exposed dp reduction), as the closed form counts it\n\n",
                   "columns");
        print_bubble_table(io.out, schedules, cells, o.fixed_batch);
    }
    write_table_output(o.out, out_kind, csv, j, "rows");
    if (!svg.empty())
        write_file_atomically(o.plot, svg);
    if (o.format == "table" && !o.plot.empty())
        fmt::print(io.out, "\n{:<10}{}\n", "plot", o.plot);
}

} // namespace

void register_bubble(CLI::App& app, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<BubbleOptions>();
    auto* cmd = app.add_subcommand(
        "bubble", "Pipeline bubble and step time against micro-batches, with the closed forms");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML) with pp > 1")->required();
    cmd->add_option("--micro-batches", o->micro_batches,
                    std::string("Micro-batch counts, e.g. 1,2,...,64; ") + explore::kValueListRule)
        ->required();
    o->add_to(*cmd, "Override a key (repeatable)");
    cmd->add_option("--virtual-stages", o->virtual_stages,
                    "Virtual stages of the interleaved schedule, one or a list (a curve each, "
                    "e.g. 2,4; default: the experiment's, or 2)");
    cmd->add_flag("--fixed-batch", o->fixed_batch,
                  "Keep the experiment's global batch and cut it into m micro-batches (the "
                  "micro-batch shrinks as m grows) instead of keeping the micro-batch");
    cmd->add_option("--schedules", o->schedules,
                    "Schedules to compare: gpipe, 1f1b, interleaved, zb-h1, zb-v, dualpipe")
        ->capture_default_str();
    cmd->add_option("--plot", o->plot,
                    "Write the bubble against micro-batches (SVG; with --fixed-batch the step "
                    "time too)");
    cmd->add_option("--out", o->out, "Write every point: F.csv (metadata in F.csv.json) or F.json");
    cmd->add_option("--format", o->format, "table, json or csv (on standard output)")
        ->capture_default_str();
    cmd->callback([o, io] { run_bubble(*o, io); });
}

} // namespace clustersim::app
