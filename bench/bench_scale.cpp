// Benchmarks of the cost of large clusters (issue 16). Targets, one core, Release:
// - GPT-3 175B step (tp 8, pp 16, 64 micro-batches per replica, dp raised) on 16,384 GPUs:
//   analytic < 50 ms, flow < 2 s; on 100,096 GPUs (dp 782, the nearest multiple of tp * pp to
//   100,000): analytic < 0.5 s, flow < 30 s and < 2 GiB;
// - a 1 GiB all-reduce on 100,000 GPUs in flow fidelity < 5 s;
// - cost growth from 4,096 to 65,536 GPUs with an exponent of at most 1.2 in both fidelities;
// - the bisection of `hardware show` on 65,536 GPUs well under 1 s (BM_Bisection).
// BM_Topology times the cluster's graph alone, the part of each whole job that grows with the
// GPUs whatever the work.
// Flow fidelity runs with symmetry (one representative of each class of identical flows, exact;
// `flow_full` = 1 simulates every flow, as `--fidelity flow-full`). Registered here: the
// analytic steps on 16,384 and 100,096 GPUs, the flow step on 16,384 (and flow-full on 4,096 for
// comparison), the growth exponents, and the flow all-reduce on 1,024 to 100,000 GPUs (NCCL's
// NVLSTree: its NVLS transfers are left to representatives, its trees of nodes, whose parents'
// links two children share, are simulated in full). Each iteration is the whole job: the
// cluster's graph, the communicators, the step.
// Peak RSS is the process's so far: run one benchmark alone to read its own (--benchmark_filter).
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <cmath>
#include <ctime>

using namespace clustersim;
namespace sp = strategies::parallel;
namespace cl = strategies::collectives;

namespace {

double peak_rss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0; // Linux: kilobytes
}

double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// GPT-3 175B on `dp` replicas of tp 8 x pp 16 (the 1,024-GPU experiment with dp raised),
/// 64 micro-batches per replica.
sp::ExperimentSpec gpt3(int dp) {
    const std::string path =
        std::string(CLUSTERSIM_DEFAULT_CONFIG_DIR) + "/experiments/gpt3-175B-1024xA100.yaml";
    return sp::load_experiment(path, {{"gpus", std::to_string(8 * 16 * dp)},
                                      {"parallel.dp", std::to_string(dp)},
                                      {"training.global_batch", std::to_string(64 * dp)}});
}

double step_seconds(int dp, sp::Fidelity fidelity) {
    const auto e = gpt3(dp);
    sp::StepOptions o;
    o.fidelity = fidelity;
    o.flow_symmetry = true;
    // CPU time of this (single-threaded) process: the ratio stays honest on a shared machine.
    const double start = cpu_seconds();
    const auto r = sp::simulate_step(e, o);
    benchmark::DoNotOptimize(r.step_time_s);
    return cpu_seconds() - start;
}

} // namespace

static void BM_Gpt3Step(benchmark::State& state) {
    const int dp = static_cast<int>(state.range(0));
    const auto fidelity = state.range(1) == 0 ? sp::Fidelity::analytic : sp::Fidelity::flow;
    const auto e = gpt3(dp);
    sp::StepOptions o;
    o.fidelity = fidelity;
    o.flow_symmetry = state.range(1) != 2;
    double step = 0;
    for (auto _ : state) {
        const auto r = sp::simulate_step(e, o);
        step = r.step_time_s; // used below: the simulation cannot be optimised away
    }
    state.counters["gpus"] = 128.0 * dp;
    state.counters["step_s"] = step;
    state.counters["peak_rss_MiB"] = peak_rss_mib();
    state.SetLabel(fidelity == sp::Fidelity::analytic ? "analytic"
                   : o.flow_symmetry                  ? "flow"
                                                      : "flow-full");
}
// flow: 0 analytic, 1 flow (symmetry), 2 flow-full.
BENCHMARK(BM_Gpt3Step)
    ->Args({128, 0})
    ->Args({782, 0})
    ->Args({32, 2})
    ->Args({32, 1})
    ->Args({128, 1})
    ->Args({782, 1})
    ->ArgNames({"dp", "flow"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The bisection bandwidth of `hardware show` (a maximum flow over the cluster's graph: Dinic's
// on arrays from the CSR graph) on 65,536 GPUs of DGX A100 nodes (issue 16: well under 1 s; it
// took 17.7 s when it built a Boost.Graph adjacency list). The graph is built once, outside the
// timing.
static void BM_Bisection(benchmark::State& state) {
    const int gpus = static_cast<int>(state.range(0));
    const hardware::Topology topo(
        hardware::with_gpu_count(hardware::load_hardware("dgx-a100"), gpus));
    double bandwidth = 0;
    for (auto _ : state) {
        bandwidth = topo.bisection_bandwidth();
        benchmark::DoNotOptimize(bandwidth);
    }
    state.counters["bisection_TBps"] = bandwidth / 1e12;
    state.counters["vertices"] = static_cast<double>(topo.vertex_count());
    state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Bisection)->Arg(65536)->ArgNames({"gpus"})->Unit(benchmark::kMillisecond);

// Building the cluster's graph alone (Topology: its vertices, edges, compressed rows and the
// fabric's index) of 16,384 and 100,096 GPUs of DGX A100 nodes: the part of every whole-job
// benchmark above that grows with the cluster whatever the work.
static void BM_Topology(benchmark::State& state) {
    const int gpus = static_cast<int>(state.range(0));
    const auto spec = hardware::with_gpu_count(hardware::load_hardware("dgx-a100"), gpus);
    std::size_t edges = 0;
    for (auto _ : state) {
        const hardware::Topology topo(spec);
        edges = topo.edge_count();
        benchmark::DoNotOptimize(edges);
    }
    state.counters["edges"] = static_cast<double>(edges);
    state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_Topology)
    ->Arg(16384)
    ->Arg(100096)
    ->ArgNames({"gpus"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// A 1 GiB all-reduce (NCCL's choice of algorithm) over DGX H100s, flow fidelity: the cluster,
// the communicator and the simulation.
static void BM_FlowAllReduce(benchmark::State& state) {
    const int gpus = static_cast<int>(state.range(0));
    const auto spec = hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), gpus);
    cl::Outcome out;
    for (auto _ : state) {
        const hardware::Topology topo(spec);
        const auto comm = cl::Communicator::first(topo, gpus);
        cl::Collective c;
        c.bytes = std::int64_t(1) << 30;
        cl::FlowOptions options;
        options.symmetry = true;
        out = cl::simulate(comm, c, cl::Fidelity::flow, options);
        benchmark::DoNotOptimize(out.time);
    }
    state.counters["simulated_ms"] = out.time.milliseconds();
    state.counters["flows"] = static_cast<double>(out.stats.flows);
    state.counters["represented"] = static_cast<double>(out.stats.represented);
    state.counters["peak_rss_MiB"] = peak_rss_mib();
}
BENCHMARK(BM_FlowAllReduce)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->Arg(100000)
    ->ArgNames({"gpus"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// Growth of the cost from `small` to `large` data-parallel replicas of 128 GPUs: the exponent k
// in t ~ GPUs^k.
static void BM_GrowthExponent(benchmark::State& state) {
    const auto fidelity = state.range(0) == 0 ? sp::Fidelity::analytic : sp::Fidelity::flow;
    const int small_dp = static_cast<int>(state.range(1));
    const int large_dp = static_cast<int>(state.range(2));
    double small = 0;
    double large = 0;
    for (auto _ : state) {
        small = step_seconds(small_dp, fidelity);
        large = step_seconds(large_dp, fidelity);
    }
    state.counters["gpus_small"] = 128.0 * small_dp;
    state.counters["gpus_large"] = 128.0 * large_dp;
    state.counters["t_small_s"] = small;
    state.counters["t_large_s"] = large;
    state.counters["exponent"] =
        std::log(large / small) / std::log(static_cast<double>(large_dp) / small_dp);
    state.counters["peak_rss_MiB"] = peak_rss_mib();
    state.SetLabel(fidelity == sp::Fidelity::analytic ? "analytic" : "flow");
}
BENCHMARK(BM_GrowthExponent)
    ->Args({0, 32, 512})
    ->Args({1, 32, 128})
    ->ArgNames({"flow", "dp", "to_dp"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
