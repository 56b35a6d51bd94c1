// The search behind `clustersim scale` (explore/scale_search.h).
#include "explore/scale_search.h"

#include "base/error.h"

#include <fmt/format.h>

namespace clustersim::explore {

namespace sp = strategies::parallel;

namespace {

std::vector<int> divisors(int n) {
    std::vector<int> d;
    for (int k = 1; k <= n; ++k) {
        if (n % k == 0)
            d.push_back(k);
    }
    return d;
}

} // namespace

std::vector<Settings> scale_grid(const ExperimentSpec& base, int gpus) {
    std::vector<Settings> out;
    const bool interleaved = base.parallel.schedule == sp::PipelineSchedule::interleaved_1f1b;
    const std::string schedule(sp::to_string(base.parallel.schedule));
    // What the stages divide: the layers, or with the embedding and the loss counted as layers
    // of the split (account_for_*_in_pipeline_split) those too.
    const int units = base.model.layers + (base.parallel.split.account_for_embedding ? 1 : 0) +
                      (base.parallel.split.account_for_loss ? 1 : 0);
    for (int tp : divisors(base.cluster.node.gpus)) {
        if (tp > gpus)
            continue;
        for (int pp : divisors(units)) {
            if (gpus % (tp * pp) != 0)
                continue;
            std::vector<std::pair<std::string, int>> schedules;
            if (!interleaved || pp == 1) {
                schedules.emplace_back(pp == 1 && interleaved ? "1f1b" : schedule, 1);
            } else {
                schedules.emplace_back("1f1b", 1);
                for (int v : {2, 3, 4, 6, 8}) {
                    if (units % (pp * v) == 0)
                        schedules.emplace_back("interleaved-1f1b", v);
                }
            }
            for (int mb : {1, 2, 4, 8}) {
                for (const char* rc : {"none", "selective", "full"}) {
                    for (const auto& [s, v] : schedules) {
                        out.push_back({{"parallel.tp", std::to_string(tp)},
                                       {"parallel.pp", std::to_string(pp)},
                                       {"training.micro_batch", std::to_string(mb)},
                                       {"parallel.recompute", rc},
                                       {"parallel.schedule", s},
                                       {"parallel.virtual_stages", std::to_string(v)}});
                    }
                }
            }
        }
    }
    return out;
}

std::vector<ScalePoint> search_scale(const ExperimentVariants& variants,
                                     const ScaleRequest& request) {
    const ExperimentSpec base = variants.read({});
    std::vector<ScalePoint> points;
    for (std::int64_t n64 : request.gpus) {
        if (n64 > (1 << 24))
            throw InputError("--gpus: " + std::to_string(n64) +
                             " GPUs is more than clustersim "
                             "builds");
        const int n = static_cast<int>(n64);
        EvalOptions eo;
        eo.gpus = n;
        eo.max_memory = request.max_memory;
        eo.derive_dp = true;
        eo.fidelity = request.fidelity;
        const Evaluator evaluator(variants, eo);
        const auto grid = scale_grid(base, n);
        // Invalid splits are dropped before simulating: validation is cheap.
        std::vector<Settings> valid;
        std::string first_reason;
        for (const auto& s : grid) {
            try {
                (void)evaluator.experiment(s);
                valid.push_back(s);
            } catch (const InputError& e) {
                if (first_reason.empty())
                    first_reason = strip_path(e.what(), variants.path());
            }
        }
        if (valid.empty())
            throw InputError(fmt::format(
                "--gpus {}: no configuration can use {} GPUs (tp dividing the node's {} GPUs, pp "
                "the model's {} layers, tp x pp dividing the GPUs, global batch {} divisible by "
                "micro-batch x dp); the first fails with: {}",
                n, n, base.cluster.node.gpus, base.model.layers, base.training.global_batch,
                first_reason.empty() ? "tp x pp does not divide the GPU count" : first_reason));
        const auto outcomes = evaluate_all(evaluator, valid, request.jobs);
        ScalePoint p;
        p.gpus = n;
        p.tried = grid.size();
        std::size_t best_i = 0;
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            const auto& r = outcomes[i];
            if (!r.valid)
                continue;
            ++p.valid;
            if (r.result.oom)
                continue;
            ++p.fit;
            if (!p.found || r.result.tokens_per_s > outcomes[best_i].result.tokens_per_s) {
                p.found = true;
                best_i = i;
            }
        }
        if (p.found) {
            p.best = outcomes[best_i];
            p.best_settings = valid[best_i];
            p.experiment = evaluator.experiment(valid[best_i]);
        }
        points.push_back(std::move(p));
    }
    const ScalePoint* first = nullptr;
    for (ScalePoint& p : points) {
        if (!p.found)
            continue;
        if (first == nullptr)
            first = &p;
        p.efficiency =
            (p.best.result.tokens_per_s / p.gpus) / (first->best.result.tokens_per_s / first->gpus);
    }
    return points;
}

} // namespace clustersim::explore
