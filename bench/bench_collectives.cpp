// Benchmarks of the collectives. Targets (issue 3): a 1 GiB ring all-reduce over 1,024 GPUs
// (128 DGX H100 nodes) in flow fidelity in under 1 s of wall time and 200 MiB of memory, the
// whole run counted (topology, routes, simulation); an analytic 8 B to 8 GiB sweep in under
// 10 ms. Peak RSS is reported as a counter (getrusage; run the flow benchmark alone, first, to
// read it for that run: --benchmark_filter=BM_FlowRing).
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"
#include "strategies/collectives/flow_runner.h"

#include <benchmark/benchmark.h>

#include <sys/resource.h>

using namespace clustersim;
using namespace clustersim::strategies::collectives;

namespace {

double peak_rss_mib() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0; // ru_maxrss is in KiB on Linux
}

Collective ring_all_reduce(std::int64_t bytes, Protocol p) {
    Collective c;
    c.bytes = bytes;
    c.algorithm = Algorithm::ring;
    c.protocol = p;
    return c;
}

} // namespace

// The whole job: build the 128-node cluster, the communicator, then play the ring out.
static void BM_FlowRingAllReduce1024Gpus(benchmark::State& state) {
    const auto spec = hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), 1024);
    const Protocol p = state.range(0) == 0 ? Protocol::simple : Protocol::ll128;
    Outcome out;
    for (auto _ : state) {
        const hardware::Topology topo(spec);
        const auto comm = Communicator::first(topo, 1024);
        out = simulate(comm, ring_all_reduce(std::int64_t(1) << 30, p), Fidelity::flow);
        benchmark::DoNotOptimize(out.time);
    }
    state.counters["peak_rss_MiB"] = peak_rss_mib();
    state.counters["simulated_ms"] = out.time.milliseconds();
    state.counters["flows"] = static_cast<double>(out.stats.flows);
    state.counters["events"] = static_cast<double>(out.events);
    state.SetLabel(std::string("protocol ") + std::string(hardware::to_string(p)));
}
BENCHMARK(BM_FlowRingAllReduce1024Gpus)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// A 1 GiB all-to-all on DGX A100s in flow fidelity with symmetry, the whole job (issue 37:
// 4,096 GPUs under 10 s; scripts/gen-perf-table.py times the same as a command, whole process).
// n^2 transfers, run as groups of identical ones (Phase::round_groups) and proved in one
// filling; `flows` are those simulated, `represented` those they stood for.
static void BM_FlowAllToAll(benchmark::State& state) {
    const auto gpus = static_cast<int>(state.range(0));
    const auto spec = hardware::with_gpu_count(hardware::load_hardware("dgx-a100"), gpus);
    Collective c;
    c.op = Op::all_to_all;
    c.bytes = std::int64_t(1) << 30;
    FlowOptions options;
    options.symmetry = true;
    Outcome out;
    for (auto _ : state) {
        const hardware::Topology topo(spec);
        const auto comm = Communicator::first(topo, gpus);
        out = simulate(comm, c, Fidelity::flow, options);
        benchmark::DoNotOptimize(out.time);
    }
    state.counters["peak_rss_MiB"] = peak_rss_mib();
    state.counters["simulated_ms"] = out.time.milliseconds();
    state.counters["flows"] = static_cast<double>(out.stats.flows);
    state.counters["represented"] = static_cast<double>(out.stats.represented);
}
BENCHMARK(BM_FlowAllToAll)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->Iterations(1);

// The simulation alone, topology and communicator built once.
static void BM_FlowRingAllReduce1024GpusSimulationOnly(benchmark::State& state) {
    const hardware::Topology topo(
        hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), 1024));
    const auto comm = Communicator::first(topo, 1024);
    for (auto _ : state) {
        const Outcome out = simulate(comm, ring_all_reduce(std::int64_t(1) << 30, Protocol::simple),
                                     Fidelity::flow);
        benchmark::DoNotOptimize(out.time);
    }
}
BENCHMARK(BM_FlowRingAllReduce1024GpusSimulationOnly)->Unit(benchmark::kMillisecond)->Iterations(3);

// Building the 128-node topology and the communicator (routes, rings) only.
static void BM_Build1024GpuCommunicator(benchmark::State& state) {
    const auto spec = hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), 1024);
    for (auto _ : state) {
        const hardware::Topology topo(spec);
        const auto comm = Communicator::first(topo, 1024);
        benchmark::DoNotOptimize(comm.size());
    }
}
BENCHMARK(BM_Build1024GpuCommunicator)->Unit(benchmark::kMillisecond)->Iterations(3);

// An nccl-tests sweep, 8 B to 8 GiB by 2 (31 sizes), --algo auto: every algorithm and
// protocol's closed form per size.
static void BM_AnalyticSweep(benchmark::State& state) {
    const int gpus = static_cast<int>(state.range(0));
    const hardware::Topology topo(
        hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), gpus));
    const auto comm = Communicator::first(topo, gpus);
    Collective c;
    c.bytes = 8;
    (void)comm.predict(c); // lazy precomputation (trees) outside the timing
    for (auto _ : state) {
        for (std::int64_t bytes = 8; bytes <= (std::int64_t(8) << 30); bytes *= 2) {
            c.bytes = bytes;
            benchmark::DoNotOptimize(comm.predict(c));
        }
    }
    state.SetItemsProcessed(state.iterations() * 31);
}
BENCHMARK(BM_AnalyticSweep)->Arg(8)->Arg(1024)->Unit(benchmark::kMicrosecond);

// One closed form: what a training-step sweep pays per collective.
static void BM_PredictOne(benchmark::State& state) {
    const hardware::Topology topo(hardware::load_hardware("dgx-h100"));
    const auto comm = Communicator::first(topo, 8);
    Collective c = ring_all_reduce(64 << 20, Protocol::simple);
    for (auto _ : state) {
        benchmark::DoNotOptimize(comm.predict(c, Algorithm::ring, Protocol::simple));
        c.bytes ^= 4096;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PredictOne);
