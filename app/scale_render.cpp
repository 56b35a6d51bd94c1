#include "app/scale_render.h"

#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "explore/sweep_row.h"
#include "explore/validated_regimes.h"
#include "results/step_json.h"
#include "results/uncertainty.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>

namespace clustersim::app {
namespace {

namespace sp = strategies::parallel;
using explore::ScalePlan;
using explore::ScalePoint;
using explore::ScaleVerdict;

/// The goodput of large runs, cited where `--goodput` is explained: Llama 3's pre-training
/// (Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, Sec. 3.3.4) kept "higher
/// than 90% effective training time" through 466 job interruptions in a 54-day snapshot.
constexpr const char* kGoodputSource =
    "Llama 3 405B's pre-training kept over 90% effective training time through 466 "
    "interruptions in 54 days: Dubey et al. 2024, arXiv 2407.21783, Sec. 3.3.4";

} // namespace

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

namespace {

bool global_batch_searched(const ScaleContext& c) {
    return c.request != nullptr &&
           (!c.request->search.global_batches.empty() || c.request->search.tokens_per_step > 0);
}

const char* verdict_name(ScaleVerdict v) {
    switch (v) {
    case ScaleVerdict::found:
        return "found";
    case ScaleVerdict::none_fits:
        return "none_fits";
    case ScaleVerdict::none_valid:
        break;
    }
    return "none_valid";
}

/// Why a count has no row, in words.
std::string why_none(const ScalePoint& p) {
    if (p.verdict == ScaleVerdict::none_fits)
        return fmt::format("every one of the {} configurations that can run is out of memory",
                           p.valid);
    if (p.tried == 0)
        return p.reason;
    return fmt::format("none of the {} configurations can run; the first: {}", p.tried, p.reason);
}

/// The error band of a point's step time: the calibrated p10-p90 where the hardware has one,
/// else the nearest validated regime's mean |error|.
std::string error_cell(const sp::ExperimentSpec& base, const ScalePoint& p) {
    const auto& steps = base.provenance.uncertainty.steps;
    if (steps.present())
        return fmt::format("{:+.0f}/{:+.0f}%", 100 * steps.p10, 100 * steps.p90);
    const auto near = explore::nearest_step_regime(base.cluster.node.gpu.name, p.gpus);
    if (near.regime == nullptr)
        return "-";
    return fmt::format("{:.0f}%{}", 100 * near.regime->mean_abs_error,
                       near.same_gpu && near.inside_range ? "" : "*");
}

/// The terminal columns of UTF-8 text ("±" is two bytes, one column): its code points.
std::size_t columns_of(const std::string& s) {
    return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char ch) {
        return (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    }));
}

void print_columns(std::ostream& out, const std::vector<std::vector<std::string>>& table,
                   std::size_t left) {
    std::vector<std::size_t> width(table.front().size(), 0);
    for (const auto& line : table) {
        for (std::size_t c = 0; c < line.size(); ++c)
            width[c] = std::max(width[c], columns_of(line[c]));
    }
    for (const auto& line : table) {
        std::string s;
        for (std::size_t c = 0; c < line.size(); ++c) {
            const std::size_t pad = width[c] - columns_of(line[c]);
            s += c == 0 ? "" : "  ";
            s += c == left ? line[c] + std::string(pad, ' ') : std::string(pad, ' ') + line[c];
        }
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        out << s << "\n";
    }
}

void print_header(std::ostream& out, const sp::ExperimentSpec& base, const ScalePlan& plan,
                  const ScaleContext& c) {
    const auto& r = *c.request;
    const auto& s = r.search;
    fmt::print(out, "{:<10}{}: {} ({:.1f}B parameters) on {} nodes ({} x {} each), {} fidelity\n",
               "scale", c.experiment, base.model.name, plan.parameters / 1e9, base.cluster.name,
               base.cluster.node.gpus, base.cluster.node.gpu.name, c.fidelity);
    std::string searched = fmt::format(
        "per GPU count the fastest that fits of tp (divisors of {}), pp (divisors of {}), cp "
        "(powers of 2 to {}, at least {} tokens a rank), {}ZeRO {}, micro-batch {}, recompute "
        "none/selective/full (the lightest that fits){}; dp = gpus / (tp x cp x pp); global batch ",
        base.cluster.node.gpus,
        base.parallel.split.account_for_embedding || base.parallel.split.account_for_loss
            ? fmt::format("{} layers + the embedding/loss counted as layers", base.model.layers)
            : fmt::format("{} layers", base.model.layers),
        s.max_cp, s.min_cp_tokens,
        base.model.is_moe() ? fmt::format("ep (divisors of {} experts), ", base.model.num_experts)
                            : std::string(),
        fmt::format("{}", fmt::join(s.zero_stages, "/")),
        fmt::format("{}", fmt::join(s.micro_batches, "/")),
        base.parallel.schedule == sp::PipelineSchedule::interleaved_1f1b
            ? ", 1F1B or 2/3/4/6/8 virtual stages"
            : "");
    if (s.tokens_per_step > 0)
        searched += fmt::format("{:.3g} tokens a step (the nearest multiple of micro-batch x dp)",
                                s.tokens_per_step);
    else if (!s.global_batches.empty())
        searched += fmt::format("of {}", fmt::join(s.global_batches, "/"));
    else
        searched += fmt::format("{}", base.training.global_batch);
    fmt::print(out, "{:<10}{}\n", "search", searched);
    if (!s.fixed_keys.empty())
        fmt::print(out, "{:<10}fixed by --set, not searched: {}\n", "",
                   fmt::join(s.fixed_keys, ", "));
    fmt::print(out, "{:<10}{:.3g} tokens to train{}\n", "tokens", plan.tokens,
               c.tokens_given ? "" : " (20 per parameter, Chinchilla)");
    if (r.goodput < 1)
        fmt::print(out,
                   "{:<10}time to train = tokens / (tokens/s x goodput {:g}): {:.0f}% of the "
                   "wall-clock time trains\n",
                   "goodput", r.goodput, 100 * r.goodput);
    else
        fmt::print(out,
                   "{:<10}time to train assumes no failures and no restarts (goodput 1); "
                   "--goodput F gives the share of wall-clock time that trains ({})\n",
                   "goodput", kGoodputSource);
    if (c.price_source.empty())
        fmt::print(out,
                   "{:<10}none: the hardware '{}' states no list price (--price-per-gpu-hour "
                   "gives one)\n",
                   "price", base.cluster.name);
    else
        fmt::print(out, "{:<10}${:.2f} per GPU-hour ({})\n", "price", r.price_per_gpu_hour,
                   c.price_source);
    if (r.target_s > 0 || r.budget > 0)
        fmt::print(out, "{:<10}{}{}{}\n", "target",
                   r.target_s > 0 ? fmt::format("train in {:g} days", r.target_s / 86400) : "",
                   r.target_s > 0 && r.budget > 0 ? ", " : "",
                   r.budget > 0 ? "cost at most " + money(r.budget) : "");
    for (const auto& p : plan.points) {
        if (p.verdict == ScaleVerdict::found) {
            fmt::print(out, "{:<10}efficiency = tokens/s per GPU against {} GPUs\n", "baseline",
                       p.gpus);
            break;
        }
    }
    out << "\n";
}

void print_main_table(std::ostream& out, const sp::ExperimentSpec& base, const ScalePlan& plan,
                      const ScaleContext& c, std::vector<std::string>& notes) {
    const auto& r = *c.request;
    const bool target = r.target_s > 0 || r.budget > 0;
    const bool priced = r.price_per_gpu_hour > 0;
    std::vector<std::vector<std::string>> table;
    table.push_back(
        {"GPUs", "layout", "step", "tokens/s", "MFU", "eff.", "error", "time to train"});
    if (c.wide)
        table.front().insert(table.front().begin() + 1, {"tried", "simulated", "fit"});
    if (c.wide)
        table.front().insert(table.front().end(), {"per GPU", "batch"});
    if (priced)
        table.front().push_back("cost");
    if (target)
        table.front().push_back("target");
    const std::size_t left = c.wide ? 4 : 1;
    for (std::size_t i = 0; i < plan.points.size(); ++i) {
        const ScalePoint& p = plan.points[i];
        std::vector<std::string> line{std::to_string(p.gpus)};
        if (c.wide)
            line.insert(line.end(), {std::to_string(p.tried), std::to_string(p.simulated),
                                     std::to_string(p.fit)});
        if (p.verdict != ScaleVerdict::found) {
            notes.push_back(fmt::format("{} GPUs: {}", p.gpus, why_none(p)));
            line.push_back(fmt::format("{} [{}]",
                                       p.verdict == ScaleVerdict::none_fits ? "none fits in memory"
                                                                            : "none can run",
                                       notes.size()));
            while (line.size() < table.front().size())
                line.push_back("-");
            table.push_back(std::move(line));
            continue;
        }
        const auto& s = p.outcome.result;
        line.push_back(layout_code(p.layout, global_batch_searched(c)) +
                       (plan.pick && *plan.pick == i ? "  <- pick" : ""));
        line.push_back(base::format_time(sim::Time::from_seconds(s.step_time_s)));
        line.push_back(fmt::format("{:.0f}", s.tokens_per_s));
        line.push_back(base::percent(s.mfu));
        line.push_back(base::percent(p.efficiency));
        line.push_back(error_cell(base, p));
        line.push_back(duration(p.train_s));
        if (c.wide)
            line.insert(line.end(), {fmt::format("{:.0f}", s.tokens_per_s / p.gpus),
                                     std::to_string(p.layout.global_batch)});
        if (priced)
            line.push_back(money(p.cost));
        if (target)
            line.push_back(p.meets_target ? "meets" : "misses");
        table.push_back(std::move(line));
    }
    print_columns(out, table, left);
}

/// Where each count's best step goes: shares of the step time on the pipeline rank whose step
/// ends last, and the memory the fullest rank leaves.
void print_breakdown(std::ostream& out, const ScalePlan& plan) {
    std::vector<std::vector<std::string>> table{
        {"GPUs", "compute", "recompute", "TP comm", "EP comm", "DP comm", "PP comm", "bubble",
         "optimizer", "other", "device memory", "headroom"}};
    for (const ScalePoint& p : plan.points) {
        if (p.verdict != ScaleVerdict::found)
            continue;
        const auto& r = p.outcome.result;
        const auto& b = r.breakdown;
        const double t = r.step_time_s;
        const double parts[] = {b.compute_s,         b.recompute_s,       b.tp_comm_exposed_s,
                                b.ep_comm_exposed_s, b.dp_comm_exposed_s, b.pp_comm_exposed_s,
                                b.pp_bubble_s,       b.optimizer_s};
        std::vector<std::string> line{std::to_string(p.gpus)};
        double sum = 0;
        for (double x : parts) {
            line.push_back(base::percent(x / t));
            sum += x;
        }
        line.push_back(base::percent(std::max(0.0, t - sum) / t));
        line.push_back(base::format_bytes(r.device_bytes_max));
        line.push_back(
            base::format_bytes(std::max<std::int64_t>(0, r.capacity_bytes - r.device_bytes_max)));
        table.push_back(std::move(line));
    }
    if (table.size() == 1)
        return;
    out << "\nwhere the step goes (shares of the step time on the pipeline rank that ends last; "
           "memory: the fullest rank)\n";
    print_columns(out, table, table.front().size());
}

void print_trust(std::ostream& out, const sp::ExperimentSpec& base, const ScalePlan& plan,
                 const ScaleContext& c) {
    const auto& steps = base.provenance.uncertainty.steps;
    out << "\n";
    if (steps.present())
        fmt::print(out,
                   "{:<10}step time p10-p90 {:+.1f}% .. {:+.1f}% of the prediction ({} {} "
                   "steps of the hardware file's calibration)\n",
                   "error", 100 * steps.p10, 100 * steps.p90, steps.points,
                   base.provenance.uncertainty.basis.empty() ? "in-sample"
                                                             : base.provenance.uncertainty.basis);
    // The regimes the rows quote, each once.
    std::vector<const explore::ValidatedRegime*> quoted;
    bool outside = false;
    for (const ScalePoint& p : plan.points) {
        const auto near = explore::nearest_step_regime(base.cluster.node.gpu.name, p.gpus);
        if (near.regime == nullptr)
            continue;
        outside = outside || !(near.same_gpu && near.inside_range);
        if (std::find(quoted.begin(), quoted.end(), near.regime) == quoted.end())
            quoted.push_back(near.regime);
    }
    for (std::size_t i = 0; i < quoted.size(); ++i) {
        const auto& q = *quoted[i];
        fmt::print(out,
                   "{:<10}±{:.1f}%: mean |error| of the step time over {} measured runs of the "
                   "nearest validated regime, {} (worst {:.1f}%; docs/validation.md, \"{}\")\n",
                   i == 0 && !steps.present() ? "error" : "", 100 * q.mean_abs_error, q.rows,
                   q.name, 100 * q.max_abs_error, q.section);
    }
    if (outside)
        fmt::print(out, "{:<10}*: this GPU or GPU count lies outside every validated regime\n", "");
    const auto& m = explore::validated_memory_regime();
    fmt::print(out,
               "{:<10}peak memory ±{:.1f}% (mean |error| over {} runs, {}; worst {:.1f}%): a "
               "small headroom may not be one\n",
               "memory", 100 * m.mean_abs_error, m.rows, m.name, 100 * m.max_abs_error);
    (void)c;
}

void print_pick(std::ostream& out, const ScalePlan& plan, const ScaleContext& c) {
    const auto& r = *c.request;
    if (r.target_s <= 0 && r.budget <= 0)
        return;
    const std::string goal = r.target_s > 0 ? fmt::format("train {:.3g} tokens in {:g} days",
                                                          plan.tokens, r.target_s / 86400)
                                            : std::string("train the tokens");
    const std::string within = r.budget > 0 ? " for at most " + money(r.budget) : "";
    if (plan.pick) {
        const ScalePoint& p = plan.points[*plan.pick];
        fmt::print(out, "{:<10}{} GPUs, {}: {}{}; the {} of the counts that {}{}\n", "pick", p.gpus,
                   layout_code(p.layout, true), duration(p.train_s),
                   r.price_per_gpu_hour > 0 ? ", " + money(p.cost) : "",
                   r.price_per_gpu_hour > 0 ? "cheapest" : "cheapest (fewest GPU-hours)", goal,
                   within);
        return;
    }
    const ScalePoint* fastest = nullptr;
    for (const ScalePoint& p : plan.points) {
        if (p.verdict == ScaleVerdict::found &&
            (fastest == nullptr || p.train_s < fastest->train_s))
            fastest = &p;
    }
    fmt::print(out, "{:<10}none of the counts can {}{}{}\n", "pick", goal, within,
               fastest != nullptr ? fmt::format(": the quickest, {} GPUs, takes {}", fastest->gpus,
                                                duration(fastest->train_s))
                                  : std::string());
}

nlohmann::ordered_json point_json(const sp::ExperimentSpec& base, const ScalePlan& plan,
                                  const ScalePoint& p, bool picked) {
    nlohmann::ordered_json j;
    j["gpus"] = p.gpus;
    j["status"] = verdict_name(p.verdict);
    j["reason"] = p.verdict == ScaleVerdict::found ? nlohmann::ordered_json(nullptr)
                                                   : nlohmann::ordered_json(why_none(p));
    j["tried"] = p.tried;
    j["simulated"] = p.simulated;
    j["fit"] = p.fit;
    if (p.verdict != ScaleVerdict::found)
        return j;
    const auto& l = p.layout;
    const auto& r = p.outcome.result;
    j["layout"] = {{"code", layout_code(l, true)},
                   {"tp", l.tp},
                   {"pp", l.pp},
                   {"dp", l.dp},
                   {"cp", l.cp},
                   {"ep", l.ep},
                   {"zero", l.zero},
                   {"micro_batch", l.micro_batch},
                   {"global_batch", l.global_batch},
                   {"schedule", std::string(sp::to_string(l.schedule))},
                   {"virtual_stages", l.virtual_stages},
                   {"recompute", std::string(sp::to_string(l.recompute))}};
    j["step_time_s"] = r.step_time_s;
    j["tokens_per_s"] = r.tokens_per_s;
    j["tokens_per_s_per_gpu"] = r.tokens_per_s / p.gpus;
    j["mfu"] = r.mfu;
    j["bubble_fraction"] = r.bubble_fraction;
    j["efficiency"] = p.efficiency;
    j["time_to_train_s"] = p.train_s;
    j["cost"] = p.cost;
    j["meets_target"] = p.meets_target;
    j["picked"] = picked;
    const auto& b = r.breakdown;
    j["breakdown"] = {{"compute_s", b.compute_s},
                      {"recompute_s", b.recompute_s},
                      {"tp_comm_exposed_s", b.tp_comm_exposed_s},
                      {"ep_comm_exposed_s", b.ep_comm_exposed_s},
                      {"dp_comm_exposed_s", b.dp_comm_exposed_s},
                      {"pp_comm_exposed_s", b.pp_comm_exposed_s},
                      {"pp_bubble_s", b.pp_bubble_s},
                      {"optimizer_s", b.optimizer_s}};
    j["memory"] = {{"peak_bytes_max", r.peak_bytes_max},
                   {"device_bytes_max", r.device_bytes_max},
                   {"capacity_bytes", r.capacity_bytes},
                   {"headroom_bytes", r.capacity_bytes - r.device_bytes_max}};
    // The costs of scale folded into the step time (strategies/parallel/straggler.h); `scale`
    // does not re-simulate the band's step times.
    j["straggler"] = results::straggler_json(r.straggler);
    nlohmann::ordered_json band;
    const auto near = explore::nearest_step_regime(base.cluster.node.gpu.name, p.gpus);
    if (near.regime != nullptr)
        band["validated"] = {{"regime", near.regime->name},
                             {"runs", near.regime->rows},
                             {"mean_abs_error", near.regime->mean_abs_error},
                             {"max_abs_error", near.regime->max_abs_error},
                             {"same_gpu", near.same_gpu},
                             {"inside_range", near.inside_range},
                             {"source", "docs/validation.md, " + near.regime->section}};
    band["calibrated"] = results::band_json(base.provenance.uncertainty,
                                            results::PredictionKind::step, r.step_time_s);
    j["error_band"] = band;
    (void)plan;
    return j;
}

} // namespace

std::string layout_code(const explore::ScaleLayout& l, bool global_batch) {
    std::string s = fmt::format("tp{} pp{} dp{}", l.tp, l.pp, l.dp);
    if (l.cp > 1)
        s += fmt::format(" cp{}", l.cp);
    if (l.ep > 1)
        s += fmt::format(" ep{}", l.ep);
    if (l.pp > 1 && l.schedule != sp::PipelineSchedule::one_f_one_b &&
        l.schedule != sp::PipelineSchedule::interleaved_1f1b)
        s += " " + std::string(sp::to_string(l.schedule));
    if (l.virtual_stages > 1)
        s += fmt::format(" v{}", l.virtual_stages);
    s += fmt::format(" mb{}", l.micro_batch);
    if (global_batch)
        s += fmt::format(" gb{}", l.global_batch);
    if (l.zero > 0)
        s += fmt::format(" z{}", l.zero);
    if (l.recompute == sp::RecomputePolicy::selective)
        s += " sel";
    else if (l.recompute == sp::RecomputePolicy::full)
        s += " full";
    return s;
}

void print_scale_table(std::ostream& out, const sp::ExperimentSpec& base, const ScalePlan& plan,
                       const ScaleContext& context) {
    print_header(out, base, plan, context);
    std::vector<std::string> notes;
    print_main_table(out, base, plan, context, notes);
    for (std::size_t i = 0; i < notes.size(); ++i)
        fmt::print(out, "[{}] {}\n", i + 1, notes[i]);
    fmt::print(out,
               "\nlayout: tp/pp/dp/cp/ep sizes, v virtual stages, mb micro-batch, gb global batch, "
               "z ZeRO stage (3: FSDP), sel/full recompute\n");
    print_breakdown(out, plan);
    print_trust(out, base, plan, context);
    print_pick(out, plan, context);
}

std::string scale_csv(const sp::ExperimentSpec& base, const ScalePlan& plan,
                      const ScaleContext& context) {
    (void)context;
    std::string s = "gpus,status,reason,tried,simulated,fit,layout,tp,pp,dp,cp,ep,zero,"
                    "micro_batch,global_batch,schedule,virtual_stages,recompute,step_time_s,"
                    "tokens_per_s,tokens_per_s_per_gpu,mfu,bubble_fraction,efficiency,"
                    "time_to_train_s,cost,meets_target,picked,compute_s,recompute_s,"
                    "tp_comm_exposed_s,ep_comm_exposed_s,dp_comm_exposed_s,pp_comm_exposed_s,"
                    "pp_bubble_s,optimizer_s,peak_bytes_max,capacity_bytes,headroom_bytes,"
                    "error_mean_abs\n";
    for (std::size_t i = 0; i < plan.points.size(); ++i) {
        const ScalePoint& p = plan.points[i];
        s += fmt::format("{},{},{},{},{},{},", p.gpus, verdict_name(p.verdict),
                         p.verdict == ScaleVerdict::found ? "" : explore::csv_field(why_none(p)),
                         p.tried, p.simulated, p.fit);
        if (p.verdict != ScaleVerdict::found) {
            // No layout: empty cells (NaN to pandas), and the flags false.
            s += std::string(20, ',') + "false,false" + std::string(12, ',') + "\n";
            continue;
        }
        const auto& l = p.layout;
        const auto& r = p.outcome.result;
        const auto& b = r.breakdown;
        const auto near = explore::nearest_step_regime(base.cluster.node.gpu.name, p.gpus);
        s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},",
                         explore::csv_field(layout_code(l, true)), l.tp, l.pp, l.dp, l.cp, l.ep,
                         l.zero, l.micro_batch, l.global_batch, sp::to_string(l.schedule),
                         l.virtual_stages, sp::to_string(l.recompute));
        for (double v : {r.step_time_s, r.tokens_per_s, r.tokens_per_s / p.gpus, r.mfu,
                         r.bubble_fraction, p.efficiency, p.train_s, p.cost})
            s += explore::csv_number(v) + ",";
        s += fmt::format("{},{},", p.meets_target ? "true" : "false",
                         plan.pick && *plan.pick == i ? "true" : "false");
        for (double v : {b.compute_s, b.recompute_s, b.tp_comm_exposed_s, b.ep_comm_exposed_s,
                         b.dp_comm_exposed_s, b.pp_comm_exposed_s, b.pp_bubble_s, b.optimizer_s})
            s += explore::csv_number(v) + ",";
        s += fmt::format("{},{},{},{}\n", r.peak_bytes_max, r.capacity_bytes,
                         r.capacity_bytes - r.device_bytes_max,
                         near.regime != nullptr ? explore::csv_number(near.regime->mean_abs_error)
                                                : std::string());
    }
    return s;
}

nlohmann::ordered_json scale_json(const sp::ExperimentSpec& base, const ScalePlan& plan,
                                  const ScaleContext& c) {
    const auto& r = *c.request;
    nlohmann::ordered_json j;
    j["experiment"] = c.experiment;
    j["model"] = base.model.name;
    j["parameters"] = plan.parameters;
    j["hardware"] = base.cluster.name;
    j["gpu"] = base.cluster.node.gpu.name;
    j["fidelity"] = c.fidelity;
    j["tokens"] = plan.tokens;
    j["tokens_source"] = c.tokens_given ? "--tokens" : "20 per parameter (Chinchilla)";
    j["goodput"] = r.goodput;
    j["goodput_note"] = r.goodput < 1 ? "time to train = tokens / (tokens/s x goodput)"
                                      : "time to train assumes no failures and no restarts";
    j["price_per_gpu_hour"] = c.price_source.empty() ? nlohmann::ordered_json(nullptr)
                                                     : nlohmann::ordered_json(r.price_per_gpu_hour);
    j["price_source"] = c.price_source.empty()
                            ? "none: the hardware '" + base.cluster.name + "' states no list price"
                            : c.price_source;
    j["target_days"] = r.target_s > 0 ? nlohmann::ordered_json(r.target_s / 86400)
                                      : nlohmann::ordered_json(nullptr);
    j["budget"] = r.budget > 0 ? nlohmann::ordered_json(r.budget) : nlohmann::ordered_json(nullptr);
    const auto& s = r.search;
    j["search"] = {{"micro_batches", s.micro_batches},
                   {"zero_stages", s.zero_stages},
                   {"max_cp", s.max_cp},
                   {"min_cp_tokens", s.min_cp_tokens},
                   {"max_ep", s.max_ep},
                   {"global_batches", s.global_batches},
                   {"tokens_per_step", s.tokens_per_step},
                   {"fixed_keys", s.fixed_keys}};
    j["pick_gpus"] = plan.pick ? nlohmann::ordered_json(plan.points[*plan.pick].gpus)
                               : nlohmann::ordered_json(nullptr);
    const auto& m = explore::validated_memory_regime();
    j["memory_error"] = {{"regime", m.name},
                         {"runs", m.rows},
                         {"mean_abs_error", m.mean_abs_error},
                         {"max_abs_error", m.max_abs_error}};
    j["columns"] = "csv: one row per GPU count; status found, none_valid (reason: why no "
                   "configuration can run) or none_fits; empty cells where a count has no "
                   "layout; times in seconds, memory in bytes, cost in dollars";
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < plan.points.size(); ++i)
        points.push_back(point_json(base, plan, plan.points[i], plan.pick && *plan.pick == i));
    j["points"] = std::move(points);
    return j;
}

} // namespace clustersim::app
