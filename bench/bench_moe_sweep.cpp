// Benchmark of a sweep over expert-parallel layouts (issue "How large models are trained
// now"): DeepSeek-V3 on 2,048 H100s, EP x TP x PP, target 5,000 configurations per second per
// core in analytic fidelity. BM_Sweep_DeepSeekV3_2048/jobs:N: items_per_second is
// configurations per second on N threads over a grid of ep 1..256 x tp 1, 2, 4, 8 x pp 1, 2, 4,
// 8, 16 (dp derived; the layouts the rules refuse, e.g. ep not dividing tp x dp, are rows with
// their reason), evaluated by a warm evaluator (the cluster and its communicators built once).
#include "explore/evaluator.h"
#include "explore/grid.h"

#include <benchmark/benchmark.h>

using namespace clustersim;
namespace sw = clustersim::explore;
namespace sp = clustersim::strategies::parallel;

namespace {
std::string experiment_path(const char* name) {
    return std::string(CLUSTERSIM_DEFAULT_CONFIG_DIR) + "/experiments/" + name + ".yaml";
}

/// 9 ep x 4 tp x 5 pp = 180 configurations; sequence parallelism on (Megatron-Core's MoE layer
/// needs it with tp > 1).
std::vector<sp::Settings> deepseek_grid() {
    const sw::Grid grid({{"parallel.ep", {"1", "2", "4", "8", "16", "32", "64", "128", "256"}},
                         {"parallel.tp", {"1", "2", "4", "8"}},
                         {"parallel.pp", {"1", "2", "4", "8", "16"}},
                         {"parallel.sequence_parallel", {"true"}}});
    std::vector<sp::Settings> out;
    for (std::int64_t i = 0; i < grid.size(); ++i)
        out.push_back(grid.settings(i));
    return out;
}
} // namespace

static void BM_Sweep_DeepSeekV3_2048(benchmark::State& state) {
    const int jobs = static_cast<int>(state.range(0));
    const sp::ExperimentVariants variants(experiment_path("deepseek-v3-2048xH100"));
    sw::EvalOptions eo;
    eo.derive_dp = true;
    const sw::Evaluator evaluator(variants, eo);
    const auto configs = deepseek_grid();
    (void)sw::evaluate_all(evaluator, configs, jobs); // warm: cluster and communicators
    std::size_t valid = 0;
    for (auto _ : state) {
        const auto outcomes = sw::evaluate_all(evaluator, configs, jobs);
        valid = 0;
        for (const auto& o : outcomes)
            valid += o.valid ? 1 : 0;
        benchmark::DoNotOptimize(valid);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(configs.size()));
    state.counters["configs"] = static_cast<double>(configs.size());
    state.counters["valid"] = static_cast<double>(valid);
    state.counters["per_core"] = benchmark::Counter(static_cast<double>(configs.size()) / jobs,
                                                    benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Sweep_DeepSeekV3_2048)
    ->Arg(1)
    ->ArgNames({"jobs"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
