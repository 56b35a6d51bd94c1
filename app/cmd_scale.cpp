// clustersim scale EXPERIMENT.yaml --gpus 8,16,...,4096: per GPU count, the best configuration
// of the parallel knobs (a sweep of tp, pp, micro-batch, recompute and virtual stages), its step
// time and throughput, the scaling efficiency against the smallest count, and the time and cost
// to train a number of tokens; --plot draws throughput and efficiency against GPUs.
#include "app/cli.h"
#include "app/output.h"
#include "app/run_report.h"
#include "app/svg_plot.h"
#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "explore/evaluator.h"
#include "explore/grid.h"
#include "explore/scale_search.h"
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

struct ScaleOptions {
    std::string experiment;
    std::string gpus;
    std::vector<std::string> sets;
    double price = 0;
    std::string tokens;
    std::string plot;
    std::string max_memory;
    int jobs = 0;
    std::string fidelity = "analytic";
};

/// "300B", "3.5T", "2e12", "1000000": tokens (K, M, B or G, T: powers of 1000).
double parse_count(const std::string& flag, const std::string& text) {
    double scale = 1;
    std::string digits = text;
    if (!digits.empty()) {
        switch (digits.back()) {
        case 'K':
        case 'k':
            scale = 1e3;
            break;
        case 'M':
            scale = 1e6;
            break;
        case 'B':
        case 'G':
            scale = 1e9;
            break;
        case 'T':
            scale = 1e12;
            break;
        default:
            break;
        }
        if (scale != 1)
            digits.pop_back();
    }
    double v = 0;
    std::size_t used = 0;
    try {
        v = std::stod(digits, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (digits.empty() || used != digits.size() || !(v > 0) || !std::isfinite(v))
        throw InputError(flag + ": expected a positive count like 300B or 3.5T, got '" + text +
                         "'");
    return v * scale;
}

/// A count's search (explore/scale_search.h) with what the table adds.
struct Point : explore::ScalePoint {
    std::string layout;
    double train_s = 0;
};

std::string duration(double s) {
    if (s >= 2 * 86400)
        return fmt::format("{:.1f} days", s / 86400);
    if (s >= 2 * 3600)
        return fmt::format("{:.1f} h", s / 3600);
    return base::format_time(sim::Time::from_seconds(s));
}

std::string money(double x) {
    const auto whole = static_cast<long long>(std::llround(x));
    std::string digits = std::to_string(whole);
    std::string s;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            s += ',';
        s += digits[i];
    }
    return "$" + s;
}

std::string scale_svg(const sp::ExperimentSpec& base, const std::vector<Point>& points) {
    LineChart c;
    c.title = fmt::format("{} on {} clusters: best configuration per GPU count", base.model.name,
                          base.cluster.node.gpu.name);
    c.subtitle = fmt::format("global batch {} x {} tokens; tp, pp, micro-batch, recompute and "
                             "virtual stages searched at each count",
                             base.training.global_batch, base.model.seq);
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
    for (const Point& p : points)
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
    const Point* first = nullptr;
    for (const Point& p : points) {
        if (!p.found)
            continue;
        if (first == nullptr)
            first = &p;
        thr.x.push_back(p.gpus);
        thr.y.push_back(p.best.result.tokens_per_s);
        ideal.x.push_back(p.gpus);
        ideal.y.push_back(first->best.result.tokens_per_s * p.gpus / first->gpus);
        eff.x.push_back(p.gpus);
        eff.y.push_back(p.efficiency);
    }
    c.series = {thr, ideal, eff};
    return render_svg(c);
}

void run_scale(const ScaleOptions& o, Io io) {
    const auto counts = explore::parse_int_list("--gpus", o.gpus);
    // nan compares false with everything: test for the finite, non-negative prices.
    if (!(std::isfinite(o.price) && o.price >= 0))
        throw InputError(fmt::format(
            "--price-per-gpu-hour: expected a finite price >= 0 (dollars), got {}", o.price));
    if (o.jobs < 0)
        throw InputError("--jobs: expected a positive number of threads");
    Settings fixed;
    for (const auto& s : o.sets)
        fixed.push_back(sp::parse_override(s));
    const std::int64_t max_memory = explore::parse_max_memory(o.max_memory);
    const sp::ExperimentVariants variants(o.experiment, fixed);
    const sp::ExperimentSpec base = variants.read({});
    const double parameters =
        static_cast<double>(strategies::models::parameter_counts(base.model).total);
    const double tokens = o.tokens.empty() ? 20 * parameters : parse_count("--tokens", o.tokens);
    const int jobs = o.jobs > 0 ? o.jobs : explore::default_jobs();

    explore::ScaleRequest request;
    request.gpus = counts;
    request.max_memory = max_memory;
    request.jobs = jobs;
    request.fidelity = o.fidelity == "flow" ? sp::Fidelity::flow : sp::Fidelity::analytic;
    std::vector<Point> points;
    const Point* first = nullptr;
    for (explore::ScalePoint& found : explore::search_scale(variants, request)) {
        Point p;
        static_cast<explore::ScalePoint&>(p) = std::move(found);
        if (p.found) {
            p.layout = describe_parallel(p.experiment);
            p.train_s = tokens / p.best.result.tokens_per_s;
        }
        points.push_back(std::move(p));
    }
    for (const Point& p : points) {
        if (p.found && first == nullptr)
            first = &p;
    }

    // The GPU counts come from --gpus; what the experiment fixes is the node they are made of.
    fmt::print(io.out,
               "{:<10}{}: {} ({:.1f}B parameters) on {} nodes ({} x {} each), {} fidelity\n",
               "scale", o.experiment, base.model.name, parameters / 1e9, base.cluster.name,
               base.cluster.node.gpus, base.cluster.node.gpu.name, o.fidelity);
    fmt::print(
        io.out,
        "{:<10}per GPU count the best of tp (divisors of {}), pp (divisors of {}), "
        "micro-batch 1/2/4/8, recompute none/selective/full{}; dp = gpus / (tp x pp); "
        "global batch {}\n",
        "search", base.cluster.node.gpus,
        base.parallel.split.account_for_embedding || base.parallel.split.account_for_loss
            ? fmt::format("{} layers + the embedding/loss counted as layers", base.model.layers)
            : fmt::format("{} layers", base.model.layers),
        base.parallel.schedule == sp::PipelineSchedule::interleaved_1f1b
            ? ", 1F1B or 2/3/4/6/8 virtual stages"
            : "",
        base.training.global_batch);
    fmt::print(io.out, "{:<10}{:.3g} tokens to train{}{}\n", "tokens", tokens,
               o.tokens.empty() ? " (20 per parameter, Chinchilla)" : "",
               o.price > 0 ? fmt::format(" at ${:.2f} per GPU-hour", o.price) : "");
    if (first != nullptr)
        fmt::print(io.out, "{:<10}efficiency = tokens/s per GPU against {} GPUs\n", "baseline",
                   first->gpus);
    fmt::print(io.out, "\n");

    std::vector<std::vector<std::string>> table;
    table.push_back({"GPUs", "tried", "fit", "best configuration", "step time", "tokens/s",
                     "per GPU", "MFU", "efficiency", "time to train"});
    if (o.price > 0)
        table.back().push_back("cost");
    for (const Point& p : points) {
        std::vector<std::string> line{std::to_string(p.gpus), std::to_string(p.tried),
                                      std::to_string(p.fit)};
        if (!p.found) {
            line.push_back(p.valid > 0 ? "none fits in memory" : "none valid");
            while (line.size() < table.front().size())
                line.push_back("-");
        } else {
            const auto& r = p.best.result;
            line.push_back(p.layout);
            line.push_back(base::format_time(sim::Time::from_seconds(r.step_time_s)));
            line.push_back(fmt::format("{:.0f}", r.tokens_per_s));
            line.push_back(fmt::format("{:.0f}", r.tokens_per_s / p.gpus));
            line.push_back(base::percent(r.mfu));
            line.push_back(base::percent(p.efficiency));
            line.push_back(duration(p.train_s));
            if (o.price > 0)
                line.push_back(money(p.train_s / 3600 * p.gpus * o.price));
        }
        table.push_back(std::move(line));
    }
    std::vector<std::size_t> width(table.front().size(), 0);
    for (const auto& line : table) {
        for (std::size_t c = 0; c < line.size(); ++c)
            width[c] = std::max(width[c], line[c].size());
    }
    for (const auto& line : table) {
        std::string s;
        for (std::size_t c = 0; c < line.size(); ++c) {
            const bool left = c == 3; // the configuration reads left to right
            s += (c == 0 ? "" : "  ") + (left ? fmt::format("{:<{}}", line[c], width[c])
                                              : fmt::format("{:>{}}", line[c], width[c]));
        }
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        io.out << s << "\n";
    }
    if (!o.plot.empty()) {
        write_file_atomically(o.plot, scale_svg(base, points));
        fmt::print(io.out, "\n{:<10}{}\n", "plot", o.plot);
    }
}

} // namespace

void register_scale(CLI::App& app, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<ScaleOptions>();
    auto* cmd = app.add_subcommand(
        "scale", "Best configuration, throughput, efficiency and cost per GPU count");
    cmd->add_option("experiment", o->experiment, "Experiment file (YAML)")->required();
    cmd->add_option("--gpus", o->gpus, "GPU counts, e.g. 8,16,...,4096 (... continues the steps)")
        ->required();
    cmd->add_option("--set", o->sets, "Fix a key in every configuration (repeatable)");
    cmd->add_option("--price-per-gpu-hour", o->price, "Price of one GPU for one hour (dollars)");
    cmd->add_option("--tokens", o->tokens,
                    "Tokens to train, e.g. 300B (default: 20 per parameter, Chinchilla)");
    cmd->add_option("--plot", o->plot, "Write throughput and efficiency against GPUs (SVG)");
    cmd->add_option("--max-memory", o->max_memory, "Memory per GPU (default: the GPU's HBM)");
    cmd->add_option("--jobs", o->jobs, "Threads (default: every core)");
    cmd->add_option("--fidelity", o->fidelity, "analytic or flow")
        ->check(CLI::IsMember({"analytic", "flow"}))
        ->capture_default_str();
    cmd->callback([o, io] { run_scale(*o, io); });
}

} // namespace clustersim::app
