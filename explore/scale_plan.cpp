#include "explore/scale_plan.h"

#include "base/error.h"
#include "explore/ordered_sink.h"
#include "explore/thread_pool.h"
#include "strategies/models/model_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace clustersim::explore {
namespace {

namespace sp = strategies::parallel;

std::vector<int> divisors(int n) {
    std::vector<int> d;
    for (int k = 1; k <= n; ++k) {
        if (n % k == 0)
            d.push_back(k);
    }
    return d;
}

/// One knob: the values tried and whether the search sets it (false: the experiment's).
struct Knob {
    std::vector<int> values;
    bool set = true;
};

Knob knob(const ScaleSearch& search, const char* key, std::vector<int> values, int fixed) {
    if (std::find(search.fixed_keys.begin(), search.fixed_keys.end(), key) !=
        search.fixed_keys.end())
        return {{fixed}, false};
    return {std::move(values), true};
}

bool is_fixed(const ScaleSearch& search, const char* key) {
    return std::find(search.fixed_keys.begin(), search.fixed_keys.end(), key) !=
           search.fixed_keys.end();
}

/// The pipeline schedules tried with `pp` stages: the experiment's; an interleaved experiment
/// also tries plain 1F1B and 2, 3, 4, 6, 8 virtual stages where they divide the split units.
std::vector<std::pair<std::string, int>> schedules(const ExperimentSpec& base,
                                                   const ScaleSearch& search, int pp, int units) {
    const bool interleaved = base.parallel.schedule == sp::PipelineSchedule::interleaved_1f1b;
    const std::string schedule(sp::to_string(base.parallel.schedule));
    if (is_fixed(search, "parallel.schedule") || is_fixed(search, "parallel.virtual_stages"))
        return {{"", 0}}; // as the experiment says
    if (!interleaved || pp == 1)
        return {{pp == 1 && interleaved ? "1f1b" : schedule, 1}};
    std::vector<std::pair<std::string, int>> out{{"1f1b", 1}};
    for (int v : {2, 3, 4, 6, 8}) {
        if (units % (pp * v) == 0)
            out.emplace_back("interleaved-1f1b", v);
    }
    return out;
}

/// The global batches tried for a layout of `dp` data-parallel replicas at micro-batch `mb`:
/// 0 means "the experiment's".
std::vector<std::int64_t> global_batches(const ExperimentSpec& base, const ScaleSearch& search,
                                         int dp, int mb) {
    if (is_fixed(search, "training.global_batch"))
        return {0};
    if (search.tokens_per_step > 0) {
        const double per_step = static_cast<double>(dp) * mb;
        const double sequences = search.tokens_per_step / base.model.seq;
        return {
            static_cast<std::int64_t>(std::max(1.0, std::round(sequences / per_step)) * per_step)};
    }
    if (search.global_batches.empty())
        return {0};
    return search.global_batches;
}

const char* recompute_name(int i) {
    static const char* const names[] = {"none", "selective", "full"};
    return names[i];
}

} // namespace

std::vector<std::vector<Settings>> scale_grid(const ExperimentSpec& base, const ScaleSearch& search,
                                              int gpus) {
    const auto& p = base.parallel;
    // What the stages divide: the layers, or with the embedding and the loss counted as layers
    // of the split (account_for_*_in_pipeline_split) those too.
    const int units = base.model.layers + (p.split.account_for_embedding ? 1 : 0) +
                      (p.split.account_for_loss ? 1 : 0);
    std::vector<int> cps;
    for (int cp = 1; cp <= search.max_cp; cp *= 2) {
        // Megatron-Core splits each sequence into 2 cp chunks (load balance of causal masks).
        if (cp == 1 ||
            (base.model.seq % (2 * cp) == 0 && base.model.seq / cp >= search.min_cp_tokens))
            cps.push_back(cp);
    }
    std::vector<int> eps{1};
    if (base.model.is_moe()) {
        eps.clear();
        for (int e : divisors(base.model.num_experts)) {
            if (e <= search.max_ep)
                eps.push_back(e);
        }
    }
    const Knob tps = knob(search, "parallel.tp", divisors(base.cluster.node.gpus), p.tp);
    const Knob pps = knob(search, "parallel.pp", divisors(units), p.pp);
    const Knob cpk = knob(search, "parallel.cp", cps, p.cp);
    const Knob epk = knob(search, "parallel.ep", eps, p.ep);
    // FSDP (torchtitan's keys) is ZeRO-3 in the experiment: the stage is then its choice.
    const Knob zeros =
        p.fsdp2 ? Knob{{3}, false} : knob(search, "parallel.zero", search.zero_stages, p.zero);
    const Knob mbs =
        knob(search, "training.micro_batch", search.micro_batches, base.training.micro_batch);
    const bool search_recompute = !is_fixed(search, "parallel.recompute");

    std::vector<std::vector<Settings>> out;
    for (int tp : tps.values) {
        if (tp > gpus)
            continue;
        for (int cp : cpk.values) {
            for (int pp : pps.values) {
                if (gpus % (tp * cp * pp) != 0)
                    continue;
                const int dp = gpus / (tp * cp * pp);
                for (int ep : epk.values) {
                    for (int zero : zeros.values) {
                        // Sharding over one replica is no sharding: the same as ZeRO 0.
                        if (zeros.set && zero > 0 && dp * cp == 1)
                            continue;
                        for (const auto& [schedule, v] : schedules(base, search, pp, units)) {
                            for (int mb : mbs.values) {
                                for (std::int64_t gb : global_batches(base, search, dp, mb)) {
                                    Settings s;
                                    const auto put = [&](const Knob& k, const char* key, int x) {
                                        if (k.set)
                                            s.emplace_back(key, std::to_string(x));
                                    };
                                    put(tps, "parallel.tp", tp);
                                    put(pps, "parallel.pp", pp);
                                    put(cpk, "parallel.cp", cp);
                                    put(epk, "parallel.ep", ep);
                                    put(zeros, "parallel.zero", zero);
                                    put(mbs, "training.micro_batch", mb);
                                    if (!schedule.empty()) {
                                        s.emplace_back("parallel.schedule", schedule);
                                        s.emplace_back("parallel.virtual_stages",
                                                       std::to_string(v));
                                    }
                                    if (gb > 0)
                                        s.emplace_back("training.global_batch", std::to_string(gb));
                                    std::vector<Settings> group;
                                    for (int r = 0; r < (search_recompute ? 3 : 1); ++r) {
                                        group.push_back(s);
                                        if (search_recompute)
                                            group.back().emplace_back("parallel.recompute",
                                                                      recompute_name(r));
                                    }
                                    out.push_back(std::move(group));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    return out;
}

namespace {

/// What one group of the grid gave: its fastest configuration that fits, if any.
struct GroupResult {
    std::size_t valid = 0, simulated = 0, fit = 0;
    std::string first_reason;
    std::optional<std::size_t> best; ///< index in the group
    Outcome outcome;
};

GroupResult evaluate_group(const Evaluator& evaluator, const std::vector<Settings>& group) {
    GroupResult g;
    for (std::size_t i = 0; i < group.size(); ++i) {
        Outcome o = evaluator.evaluate(group[i]);
        if (!o.valid) {
            if (g.first_reason.empty())
                g.first_reason = o.reason;
            continue;
        }
        ++g.valid;
        ++g.simulated;
        if (o.result.oom)
            continue;
        ++g.fit;
        // Recompute policies come lightest first: the first that fits is the fastest.
        g.best = i;
        g.outcome = std::move(o);
        break;
    }
    return g;
}

ScaleLayout layout_of(const Outcome& o) {
    ScaleLayout l;
    l.tp = o.tp;
    l.pp = o.pp;
    l.dp = o.dp;
    l.cp = o.cp;
    l.ep = o.result.ep;
    l.zero = o.zero;
    l.micro_batch = o.micro_batch;
    l.virtual_stages = o.virtual_stages;
    l.global_batch = std::int64_t{o.micro_batches} * o.micro_batch * o.dp;
    l.schedule = o.schedule;
    l.recompute = o.recompute;
    return l;
}

ScalePoint plan_count(const ExperimentVariants& variants, const ExperimentSpec& base,
                      const ScaleRequest& request, int n) {
    EvalOptions eo = request.evaluation;
    eo.gpus = n;
    eo.derive_dp = true;
    const Evaluator evaluator(variants, eo);
    const auto grid = scale_grid(base, request.search, n);
    std::vector<GroupResult> results(grid.size());
    std::vector<std::int64_t> indices(grid.size());
    for (std::size_t i = 0; i < grid.size(); ++i)
        indices[i] = static_cast<std::int64_t>(i);
    OrderedSink sink(indices, [](std::int64_t, const std::string&) {});
    run_pool(
        indices, request.jobs,
        [&](std::int64_t i) {
            const auto k = static_cast<std::size_t>(i);
            results[k] = evaluate_group(evaluator, grid[k]);
            return std::string();
        },
        sink);

    ScalePoint p;
    p.gpus = n;
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < grid.size(); ++i) {
        const GroupResult& g = results[i];
        p.tried += grid[i].size();
        p.valid += g.valid;
        p.simulated += g.simulated;
        p.fit += g.fit;
        if (p.reason.empty())
            p.reason = g.first_reason;
        // The first of equal throughputs wins: the grid's order (smaller tp, cp, pp first).
        if (g.best &&
            (!best || g.outcome.result.tokens_per_s > results[*best].outcome.result.tokens_per_s))
            best = i;
    }
    if (grid.empty())
        p.reason = "no tp x cp x pp of the search divides the GPU count";
    if (best) {
        const GroupResult& g = results[*best];
        p.verdict = ScaleVerdict::found;
        p.reason.clear();
        p.settings = grid[*best][*g.best];
        p.layout = layout_of(g.outcome);
        p.outcome = g.outcome;
    } else {
        p.verdict = p.valid > 0 ? ScaleVerdict::none_fits : ScaleVerdict::none_valid;
        if (p.verdict == ScaleVerdict::none_fits)
            p.reason.clear();
    }
    return p;
}

} // namespace

ScalePlan plan_scale(const ExperimentVariants& variants, const ScaleRequest& request) {
    if (request.gpus.empty())
        throw InputError("scale: no GPU counts to plan");
    if (!(request.goodput > 0 && request.goodput <= 1))
        throw InputError("--goodput: expected a share of the wall-clock time in (0, 1], got " +
                         std::to_string(request.goodput));
    if (request.budget > 0 && !(request.price_per_gpu_hour > 0))
        throw InputError("--budget needs a price per GPU-hour (--price-per-gpu-hour, or a "
                         "hardware preset with a list price)");
    if (!(request.tokens > 0))
        throw InputError("scale: the tokens to train must be positive");
    const ExperimentSpec base = variants.read({});
    ScalePlan plan;
    plan.parameters = static_cast<double>(strategies::models::parameter_counts(base.model).total);
    plan.tokens = request.tokens;
    for (int n : request.gpus) {
        if (n <= 0 || n > (1 << 24))
            throw InputError("--gpus: " + std::to_string(n) +
                             " GPUs is outside what clustersim builds (1 to 16,777,216)");
        plan.points.push_back(plan_count(variants, base, request, n));
    }
    const ScalePoint* first = nullptr;
    for (ScalePoint& p : plan.points) {
        if (p.verdict != ScaleVerdict::found)
            continue;
        if (first == nullptr)
            first = &p;
        p.efficiency = (p.outcome.result.tokens_per_s / p.gpus) /
                       (first->outcome.result.tokens_per_s / first->gpus);
        p.train_s = request.tokens / (p.outcome.result.tokens_per_s * request.goodput);
        p.cost = p.train_s / 3600 * p.gpus * request.price_per_gpu_hour;
        p.meets_target = (request.target_s <= 0 || p.train_s <= request.target_s) &&
                         (request.budget <= 0 || p.cost <= request.budget);
    }
    if (request.target_s > 0 || request.budget > 0) {
        for (std::size_t i = 0; i < plan.points.size(); ++i) {
            const ScalePoint& p = plan.points[i];
            if (p.verdict != ScaleVerdict::found || !p.meets_target)
                continue;
            if (!plan.pick) {
                plan.pick = i;
                continue;
            }
            // The cost is GPU-hours x price: without a price, the fewest GPU-hours.
            const ScalePoint& q = plan.points[*plan.pick];
            const double a = p.train_s * p.gpus;
            const double b = q.train_s * q.gpus;
            if (a < b || (a == b && p.gpus < q.gpus))
                plan.pick = i;
        }
    }
    return plan;
}

} // namespace clustersim::explore
