// Benchmarks of the training-step simulation. Targets (README, performance):
// GPT-3 175B on 64 A100s (TP 8, PP 8, interleaved with 3 virtual stages, 64 micro-batches)
// in under 50 ms; GPT-3 175B on 1,024 GPUs (TP 8, PP 16, DP 8, 192 micro-batches) in flow
// fidelity in under 2 s and under 1 GiB.
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <benchmark/benchmark.h>

#include <sys/resource.h>

using namespace clustersim;

namespace {
std::string experiment_path(const char* name) {
    return std::string(CLUSTERSIM_DEFAULT_CONFIG_DIR) + "/experiments/" + name + ".yaml";
}
double peak_rss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0; // Linux: kilobytes
}
} // namespace

static void BM_Gpt3_64_Analytic(benchmark::State& state) {
    const auto e = strategies::parallel::load_experiment(experiment_path("gpt3-175B-64xA100"));
    strategies::parallel::StepOptions o;
    o.timeline = state.range(0) != 0;
    for (auto _ : state) {
        auto r = strategies::parallel::simulate_step(e, o);
        benchmark::DoNotOptimize(r.step_time_s);
    }
    state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Gpt3_64_Analytic)
    ->Arg(0)
    ->Arg(1)
    ->ArgNames({"timeline"})
    ->Unit(benchmark::kMillisecond);

static void BM_Gpt3_1024_Flow(benchmark::State& state) {
    const auto e = strategies::parallel::load_experiment(experiment_path("gpt3-175B-1024xA100"));
    strategies::parallel::StepOptions o;
    o.fidelity = strategies::parallel::Fidelity::flow;
    std::uint64_t events = 0;
    for (auto _ : state) {
        auto r = strategies::parallel::simulate_step(e, o);
        events = r.events;
        benchmark::DoNotOptimize(r.step_time_s);
    }
    state.counters["events"] = static_cast<double>(events);
    state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Gpt3_1024_Flow)->Unit(benchmark::kMillisecond)->Iterations(3);
