// clustersim compare-hardware EXPERIMENT.yaml --hardware dgx-h100,dgx-b200,gb200-nvl72 --gpus
// 64,128: which to rent. For each hardware preset (or file) and GPU count, scale's search
// (explore/scale_plan.h) finds the best layout that fits; the rows put side by side the step
// time, tokens/s per GPU, the time to train and, where the preset carries a list price, the
// cost; per count it names the fastest and the cheapest. --plot draws tokens/s per GPU against
// GPUs, one line per hardware.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/output.h"
#include "app/scale_render.h"
#include "app/svg_plot.h"
#include "base/error.h"
#include "base/text.h"
#include "explore/grid.h"
#include "explore/scale_plan.h"
#include "strategies/models/model_spec.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <optional>

namespace clustersim::app {
namespace {

namespace sp = strategies::parallel;

struct CompareOptions : ExperimentOptions {
    std::string experiment;
    std::string hardware;
    std::string gpus;
    std::string tokens;
    double goodput = 1;
    std::string max_memory;
    std::string format = "table";
    std::string out;
    std::string plot;
};

/// One hardware's plan and what it was priced with.
struct Candidate {
    std::string hardware;
    sp::ExperimentSpec base;
    explore::ScalePlan plan;
    double price = 0;         ///< per GPU-hour; 0: the preset states none
    std::string price_source; ///< "" without a price
};

std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string item =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.empty())
            throw InputError(flag +
                             ": expected a comma-separated list of hardware presets or "
                             "files, e.g. dgx-h100,dgx-b200,gb200-nvl72, got '" +
                             text + "'");
        out.push_back(item);
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    if (out.size() > 32)
        throw InputError(flag + ": at most 32 hardware to compare, got " +
                         std::to_string(out.size()));
    return out;
}

Candidate plan_on(const CompareOptions& o, const std::string& hardware) {
    sp::Settings overrides = o.overrides();
    overrides.emplace_back("hardware", hardware);
    const sp::ExperimentVariants variants(o.experiment, overrides);
    Candidate c{hardware, variants.read({}), {}, 0, ""};
    explore::ScaleRequest r;
    r.gpus = o.gpus.empty() ? std::vector<int>{c.base.gpus}
                            : explore::parse_gpu_counts("--gpus", o.gpus);
    if (const hardware::ListPrice& list = c.base.cluster.price; list.per_gpu_hour > 0) {
        c.price = r.price_per_gpu_hour = list.per_gpu_hour;
        c.price_source = fmt::format("{} in {}, read {}; {}",
                                     fmt::format("${:.2f} per GPU-hour", list.per_gpu_hour),
                                     list.region, list.date, list.source);
    }
    r.goodput = o.goodput; // plan_scale refuses one outside (0, 1]
    const double parameters =
        static_cast<double>(strategies::models::parameter_counts(c.base.model).total);
    r.tokens = o.tokens.empty() ? 20 * parameters : explore::parse_count("--tokens", o.tokens);
    for (const auto& [key, value] : overrides)
        r.search.fixed_keys.push_back(key);
    r.evaluation = o.eval_options();
    r.evaluation.max_memory = explore::parse_max_memory(o.max_memory);
    r.jobs = o.threads();
    c.plan = explore::plan_scale(variants, r);
    return c;
}

double per_gpu(const explore::ScalePoint& p) {
    return p.outcome.result.tokens_per_s / p.gpus;
}

/// Per GPU count (in the order given): the index of the fastest and of the cheapest candidate
/// that found a layout there (cheapest: only among those with a price).
struct Best {
    std::optional<std::size_t> fastest, cheapest;
};
Best best_at(const std::vector<Candidate>& cs, std::size_t point) {
    Best b;
    for (std::size_t i = 0; i < cs.size(); ++i) {
        const auto& p = cs[i].plan.points[point];
        if (p.verdict != explore::ScaleVerdict::found)
            continue;
        if (!b.fastest || p.train_s < cs[*b.fastest].plan.points[point].train_s)
            b.fastest = i;
        if (cs[i].price > 0 && (!b.cheapest || p.cost < cs[*b.cheapest].plan.points[point].cost))
            b.cheapest = i;
    }
    return b;
}

void print_table(std::ostream& out, const CompareOptions& o, const std::vector<Candidate>& cs) {
    std::vector<std::string> names;
    for (const auto& c : cs)
        names.push_back(c.hardware);
    fmt::print(out, "{:<10}{}: {} on {}, {} fidelity\n", "compare", o.experiment,
               cs.front().base.model.name, base::join(names, ", "), o.fidelity);
    fmt::print(out,
               "{:<10}per hardware and GPU count the fastest layout that fits, searched as "
               "`scale` does (tp, pp, cp, ep, ZeRO, micro-batch, recompute, virtual stages)\n",
               "search");
    fmt::print(out, "{:<10}{:.3g} tokens to train{}; no failures or restarts unless --goodput\n\n",
               "tokens", cs.front().plan.tokens, o.tokens.empty() ? " (20 per parameter)" : "");
    std::vector<std::string> why;
    std::vector<std::vector<std::string>> rows{
        {"hardware", "GPU", "GPUs", "layout", "step", "tokens/s/GPU", "time to train", "cost"}};
    for (const auto& c : cs) {
        for (const auto& p : c.plan.points) {
            if (p.verdict != explore::ScaleVerdict::found) {
                rows.push_back({c.hardware, c.base.cluster.node.gpu.name, std::to_string(p.gpus),
                                "(none: below)", "", "", "", ""});
                why.push_back(fmt::format("{} at {} GPUs: {}", c.hardware, p.gpus,
                                          p.verdict == explore::ScaleVerdict::none_fits
                                              ? "no layout fits in memory"
                                              : "cannot run: " + p.reason));
                continue;
            }
            rows.push_back({c.hardware, c.base.cluster.node.gpu.name, std::to_string(p.gpus),
                            layout_code(p.layout, false), duration(p.outcome.result.step_time_s),
                            fmt::format("{:.0f}", per_gpu(p)), duration(p.train_s),
                            c.price > 0 ? money(p.cost) : "no price"});
        }
    }
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i)
            width[i] = std::max(width[i], r[i].size());
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); ++i) {
            const bool left = i < 2 || i == 3;
            line += (i ? "  " : "") + (left ? fmt::format("{:<{}}", r[i], width[i])
                                            : fmt::format("{:>{}}", r[i], width[i]));
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        fmt::print(out, "{}\n", line);
    }
    fmt::print(out, "\n");
    for (const auto& w : why)
        fmt::print(out, "{:<10}{}\n", "none", w);
    const auto& points = cs.front().plan.points;
    for (std::size_t k = 0; k < points.size(); ++k) {
        const Best b = best_at(cs, k);
        if (!b.fastest)
            continue;
        std::string line = fmt::format("fastest {}", cs[*b.fastest].hardware);
        if (b.cheapest)
            line += fmt::format(", cheapest of those priced {} ({})", cs[*b.cheapest].hardware,
                                money(cs[*b.cheapest].plan.points[k].cost));
        fmt::print(out, "{:<10}{}\n", fmt::format("{} GPUs", points[k].gpus), line);
    }
    for (const auto& c : cs)
        fmt::print(out, "{:<10}{}: {}\n", "price", c.hardware,
                   c.price > 0 ? c.price_source : "none stated (the preset has no list price)");
}

nlohmann::ordered_json to_json(const CompareOptions& o, const std::vector<Candidate>& cs) {
    nlohmann::ordered_json j;
    j["experiment"] = o.experiment;
    j["fidelity"] = o.fidelity;
    j["tokens"] = cs.front().plan.tokens;
    j["rows"] = nlohmann::ordered_json::array();
    for (const auto& c : cs) {
        for (const auto& p : c.plan.points) {
            nlohmann::ordered_json r;
            r["hardware"] = c.hardware;
            r["gpu"] = c.base.cluster.node.gpu.name;
            r["gpus"] = p.gpus;
            r["found"] = p.verdict == explore::ScaleVerdict::found;
            if (p.verdict == explore::ScaleVerdict::found) {
                r["layout"] = layout_code(p.layout, false);
                r["step_time_s"] = p.outcome.result.step_time_s;
                r["tokens_per_s_per_gpu"] = per_gpu(p);
                r["train_days"] = p.train_s / 86400;
                r["cost"] = c.price > 0 ? nlohmann::ordered_json(p.cost) : nullptr;
            } else {
                r["reason"] = p.verdict == explore::ScaleVerdict::none_fits
                                  ? "nothing fits in memory"
                                  : p.reason;
            }
            r["price_per_gpu_hour"] = c.price > 0 ? nlohmann::ordered_json(c.price) : nullptr;
            j["rows"].push_back(r);
        }
    }
    return j;
}

std::string to_csv(const std::vector<Candidate>& cs) {
    std::string csv = "hardware,gpu,gpus,layout,step_time_s,tokens_per_s_per_gpu,train_days,"
                      "price_per_gpu_hour,cost\n";
    for (const auto& c : cs)
        for (const auto& p : c.plan.points) {
            if (p.verdict != explore::ScaleVerdict::found)
                continue;
            csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", c.hardware,
                               c.base.cluster.node.gpu.name, p.gpus, layout_code(p.layout, false),
                               p.outcome.result.step_time_s, per_gpu(p), p.train_s / 86400,
                               c.price > 0 ? fmt::format("{}", c.price) : "",
                               c.price > 0 ? fmt::format("{}", p.cost) : "");
        }
    return csv;
}

std::string plot_svg(const std::vector<Candidate>& cs) {
    LineChart chart;
    chart.title = fmt::format("{}: tokens/s per GPU by hardware", cs.front().base.model.name);
    chart.subtitle = "the fastest layout that fits at each count, searched as `scale` does";
    chart.x.label = "GPUs";
    chart.x.scale = AxisScale::log2;
    chart.x.format = TickFormat::integer;
    chart.y.label = "tokens/s per GPU";
    for (const auto& c : cs) {
        Series s;
        s.name = c.hardware;
        for (const auto& p : c.plan.points) {
            if (p.verdict != explore::ScaleVerdict::found)
                continue;
            s.x.push_back(p.gpus);
            s.y.push_back(per_gpu(p));
        }
        if (!s.x.empty())
            chart.series.push_back(s);
    }
    return render_svg(chart);
}

void run_compare(const CompareOptions& o, Io io) {
    const OutKind out_kind = check_planner_outputs(o.format, o.out, o.plot, o.experiment);
    std::vector<Candidate> cs;
    for (const auto& h : split_list("--hardware", o.hardware))
        cs.push_back(plan_on(o, h));
    // Everything is rendered before anything is written: an error leaves no partial file.
    const nlohmann::ordered_json record = to_json(o, cs);
    const std::string csv = to_csv(cs);
    const std::string svg = o.plot.empty() ? std::string() : plot_svg(cs);
    if (o.format == "json")
        io.out << record.dump(2) << "\n";
    else if (o.format == "csv")
        io.out << csv;
    else
        print_table(io.out, o, cs);
    write_table_output(o.out, out_kind, csv, record, "rows");
    if (!svg.empty())
        write_file_atomically(o.plot, svg);
}

} // namespace

void register_compare_hardware(CLI::App& app, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<CompareOptions>();
    auto* cmd = app.add_subcommand(
        "compare-hardware",
        "Which to rent: the best layout, speed, time and cost of a run on several hardware");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML)")->required();
    cmd->add_option("--hardware", o->hardware,
                    "Hardware presets or files, e.g. dgx-h100,dgx-b200,gb200-nvl72")
        ->required();
    cmd->add_option("--gpus", o->gpus,
                    std::string("GPU counts (default: the experiment's); ") +
                        explore::kValueListRule);
    o->add_to(*cmd, "Fix a key in every configuration (repeatable); a searched key it names is "
                    "no longer searched");
    cmd->add_option("--tokens", o->tokens,
                    "Tokens to train, e.g. 300B (default: 20 per parameter, Chinchilla)");
    cmd->add_option("--goodput", o->goodput,
                    "Share of wall-clock time that trains (default 1: no failures, no restarts)")
        ->capture_default_str();
    cmd->add_option("--max-memory", o->max_memory, "Memory per GPU (default: each GPU's HBM)");
    cmd->add_option("--out", o->out, "Write the rows: F.csv (metadata in F.csv.json) or F.json");
    cmd->add_option("--format", o->format, "table, json or csv (on standard output)")
        ->capture_default_str();
    cmd->add_option("--plot", o->plot, "Write tokens/s per GPU against GPUs per hardware (SVG)");
    cmd->callback([o, io] { run_compare(*o, io); });
}

} // namespace clustersim::app
