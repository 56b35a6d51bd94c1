// clustersim scale EXPERIMENT.yaml --gpus 8,16,...,4096: a planner. Per GPU count the best
// configuration of the knobs that decide a run (explore/scale_plan.h searches them), its step
// time, throughput, where the step goes and the memory left, the scaling efficiency against the
// smallest count, and the time and cost to train a number of tokens, each with its error band;
// with --target-days or --budget, the cheapest count and layout that meets them. --out writes
// the same as CSV (with a JSON sidecar) or JSON, --plot draws throughput and efficiency.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/output.h"
#include "app/scale_render.h"
#include "app/svg_plot.h"
#include "base/error.h"
#include "explore/grid.h"
#include "explore/scale_plan.h"
#include "explore/thread_pool.h"
#include "strategies/models/model_spec.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace clustersim::app {
namespace {

namespace sp = strategies::parallel;
using sp::Settings;

struct ScaleOptions : ExperimentOptions {
    std::string experiment;
    std::string gpus;
    double price = 0;
    bool price_given = false;
    std::string tokens;
    std::string plot;
    std::string max_memory;
    double target_days = 0;
    double budget = 0;
    double goodput = 1;
    std::string global_batch;
    std::string tokens_per_step;
    std::string out;
    std::string format = "table";
    bool wide = false;
};

std::string scale_svg(const sp::ExperimentSpec& base, const explore::ScalePlan& plan) {
    LineChart c;
    c.title = fmt::format("{} on {} clusters: best configuration per GPU count", base.model.name,
                          base.cluster.node.gpu.name);
    c.subtitle = fmt::format("{} tokens per sequence; tp, pp, cp, ep, ZeRO, micro-batch, "
                             "recompute and virtual stages searched at each count",
                             base.model.seq);
    c.footnote = "efficiency: tokens/s per GPU against the smallest count; dashed: linear scaling "
                 "from the smallest count";
    c.x.label = "GPUs";
    c.x.scale = AxisScale::log2;
    c.x.format = TickFormat::integer;
    c.y.label = "throughput (tokens/s)";
    c.y.scale = AxisScale::log10;
    Axis y2;
    y2.label = "scaling efficiency";
    y2.format = TickFormat::percent;
    y2.min = 0.0;
    double top = 1.0;
    for (const auto& p : plan.points)
        top = std::max(top, p.efficiency);
    y2.max = top > 1.0 ? std::ceil(top * 10) / 10 : 1.0;
    c.y2 = y2;
    Series thr;
    thr.name = "throughput";
    thr.group = "throughput";
    Series ideal;
    ideal.name = "linear scaling";
    ideal.line = LineStyle::dashed;
    ideal.markers = false;
    ideal.group = "throughput";
    Series eff;
    eff.name = "efficiency";
    eff.right_axis = true;
    eff.group = "efficiency";
    const explore::ScalePoint* first = nullptr;
    for (const auto& p : plan.points) {
        if (p.verdict != explore::ScaleVerdict::found)
            continue;
        if (first == nullptr)
            first = &p;
        thr.x.push_back(p.gpus);
        thr.y.push_back(p.outcome.result.tokens_per_s);
        ideal.x.push_back(p.gpus);
        ideal.y.push_back(first->outcome.result.tokens_per_s * p.gpus / first->gpus);
        eff.x.push_back(p.gpus);
        eff.y.push_back(p.efficiency);
    }
    c.series = {thr, ideal, eff};
    return render_svg(c);
}

/// The request of the options, with the price and where it came from.
explore::ScaleRequest make_request(const ScaleOptions& o, const sp::ExperimentSpec& base,
                                   ScaleContext& context) {
    explore::ScaleRequest r;
    r.gpus = explore::parse_gpu_counts("--gpus", o.gpus);
    if (o.price_given) {
        // nan compares false with everything: test for the finite, non-negative prices.
        if (!(std::isfinite(o.price) && o.price >= 0))
            throw InputError(fmt::format(
                "--price-per-gpu-hour: expected a finite price >= 0 (dollars), got {}", o.price));
        r.price_per_gpu_hour = o.price;
        context.price_source = "--price-per-gpu-hour";
    } else if (const hardware::ListPrice& list = base.cluster.price; list.per_gpu_hour > 0) {
        r.price_per_gpu_hour = list.per_gpu_hour;
        context.price_source = fmt::format("{}'s on-demand list price in {}, read {}; {}",
                                           base.cluster.name, list.region, list.date, list.source);
    }
    if (!(std::isfinite(o.target_days) && o.target_days >= 0))
        throw InputError(fmt::format("--target-days: expected a positive number of days, got {}",
                                     o.target_days));
    if (!(std::isfinite(o.budget) && o.budget >= 0))
        throw InputError(
            fmt::format("--budget: expected a positive amount (dollars), got {}", o.budget));
    if (!(std::isfinite(o.goodput) && o.goodput > 0 && o.goodput <= 1))
        throw InputError(fmt::format("--goodput: expected the share of wall-clock time that "
                                     "trains, in (0, 1] (e.g. 0.9), got {}",
                                     o.goodput));
    if (o.budget > 0 && r.price_per_gpu_hour <= 0)
        throw InputError("--budget: needs a price: give --price-per-gpu-hour (the hardware '" +
                         base.cluster.name + "' states no list price)");
    r.target_s = o.target_days * 86400;
    r.budget = o.budget;
    r.goodput = o.goodput;
    const double parameters =
        static_cast<double>(strategies::models::parameter_counts(base.model).total);
    r.tokens = o.tokens.empty() ? 20 * parameters : explore::parse_count("--tokens", o.tokens);
    if (!o.global_batch.empty() && !o.tokens_per_step.empty())
        throw InputError("--global-batch and --tokens-per-step both set the global batch: give "
                         "one");
    if (!o.global_batch.empty())
        r.search.global_batches = explore::parse_int_list("--global-batch", o.global_batch);
    if (!o.tokens_per_step.empty())
        r.search.tokens_per_step = explore::parse_count("--tokens-per-step", o.tokens_per_step);
    for (const auto& [key, value] : o.overrides())
        r.search.fixed_keys.push_back(key);
    r.evaluation = o.eval_options();
    r.evaluation.max_memory = explore::parse_max_memory(o.max_memory);
    r.jobs = o.threads();
    return r;
}

void run_scale(const ScaleOptions& o, Io io) {
    const OutKind out_kind = check_planner_outputs(o.format, o.out, o.plot, o.experiment);
    const sp::ExperimentVariants variants(o.experiment, o.overrides());
    const sp::ExperimentSpec base = variants.read({});
    ScaleContext context;
    context.experiment = o.experiment;
    context.fidelity = o.fidelity;
    context.tokens_given = !o.tokens.empty();
    context.wide = o.wide;
    const explore::ScaleRequest request = make_request(o, base, context);
    context.request = &request;
    const explore::ScalePlan plan = explore::plan_scale(variants, request);

    // Everything is rendered before anything is written: an error leaves no partial file.
    const nlohmann::ordered_json record = scale_json(base, plan, context);
    const std::string csv = out_kind == OutKind::csv || o.format == "csv"
                                ? scale_csv(base, plan, context)
                                : std::string();
    const std::string svg = o.plot.empty() ? std::string() : scale_svg(base, plan);
    if (o.format == "json")
        io.out << record.dump(2) << "\n";
    else if (o.format == "csv")
        io.out << csv;
    else
        print_scale_table(io.out, base, plan, context);
    write_table_output(o.out, out_kind, csv, record, "points");
    if (!svg.empty())
        write_file_atomically(o.plot, svg);
    if (o.format == "table") {
        if (!o.out.empty())
            fmt::print(io.out, "{:<10}{}{}\n", "written", o.out,
                       out_kind == OutKind::csv ? " (and its metadata, " + o.out + ".json)" : "");
        if (!o.plot.empty())
            fmt::print(io.out, "{:<10}{}\n", "plot", o.plot);
    }
}

} // namespace

void register_scale(CLI::App& app, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<ScaleOptions>();
    auto* cmd = app.add_subcommand(
        "scale", "Plan a run: the best configuration, throughput, time and cost per GPU count");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML)")->required();
    cmd->add_option("--gpus", o->gpus,
                    std::string("GPU counts, e.g. 8,16,...,4096; ") + explore::kValueListRule)
        ->required();
    o->add_to(*cmd, "Fix a key in every configuration (repeatable); a searched key it names is "
                    "no longer searched");
    cmd->add_option("--tokens", o->tokens,
                    "Tokens to train, e.g. 300B (default: 20 per parameter, Chinchilla)");
    cmd->add_option("--global-batch", o->global_batch,
                    "Global batches (sequences) to search, e.g. 512,1024,...,4096 (default: the "
                    "experiment's)");
    cmd->add_option("--tokens-per-step", o->tokens_per_step,
                    "Tokens per step, e.g. 4M: each layout's global batch is the nearest whole "
                    "number of micro-batch x dp sequences");
    cmd->add_option("--target-days", o->target_days,
                    "Pick the cheapest GPU count and layout that trains the tokens in this many "
                    "days");
    cmd->add_option("--budget", o->budget,
                    "Pick the fastest within this cost (dollars; needs a price)");
    auto* price = cmd->add_option("--price-per-gpu-hour", o->price,
                                  "Price of one GPU for one hour (dollars)");
    cmd->add_option("--goodput", o->goodput,
                    "Share of wall-clock time that trains (default 1: no failures, no "
                    "restarts; Llama 3 405B reported over 0.9)")
        ->capture_default_str();
    cmd->add_option("--max-memory", o->max_memory, "Memory per GPU (default: the GPU's HBM)");
    cmd->add_option("--out", o->out,
                    "Write the plan: F.csv (one row per GPU count, metadata in F.csv.json) or "
                    "F.json");
    cmd->add_option("--format", o->format, "table, json or csv (on standard output)")
        ->capture_default_str();
    cmd->add_flag("--wide", o->wide,
                  "Every column (the counts searched, the global batch, memory)");
    cmd->add_option("--plot", o->plot, "Write throughput and efficiency against GPUs (SVG)");
    cmd->callback([o, io, price] {
        o->price_given = price->count() > 0;
        run_scale(*o, io);
    });
}

} // namespace clustersim::app
