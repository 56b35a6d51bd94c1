// Benchmarks of the simulation kernel: the event queue and the flow network's max-min pass.
// Targets (README, performance): >= 10 million events/s per core with 10^4 events pending;
// one max-min recomputation of 10^4 concurrent flows on a 1,024-GPU fat tree in < 10 ms.
#include "hardware/flow_binding.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "sim/engine.h"
#include "sim/flow_network.h"

#include <benchmark/benchmark.h>

#include <functional>
#include <random>

using namespace clustersim;

// The "hold" model: pending events stay at `pending`; each processed event schedules one more
// at a random later time, as a simulation in steady state does.
static void BM_EventQueueHold(benchmark::State& state) {
    const auto pending = static_cast<int>(state.range(0));
    sim::Engine engine;
    // A cheap xorshift generator, so that the benchmark measures the queue, not the RNG.
    std::uint64_t x = 88172645463325252ULL;
    auto next_delay = [&x] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return sim::Time::ps(static_cast<std::int64_t>(1 + (x & 0xFFFFF)));
    };
    std::uint64_t fired = 0;
    std::function<void()> tick; // one shared callable; events capture a pointer to it
    tick = [&] {
        ++fired;
        engine.after(next_delay(), [&tick] { tick(); });
    };
    for (int i = 0; i < pending; ++i)
        engine.at(next_delay(), [&tick] { tick(); });
    constexpr int kBatch = 10'000;
    for (auto _ : state) {
        for (int i = 0; i < kBatch; ++i)
            engine.step();
    }
    state.SetItemsProcessed(state.iterations() * kBatch);
    state.counters["pending"] = static_cast<double>(engine.pending());
    benchmark::DoNotOptimize(fired);
}
BENCHMARK(BM_EventQueueHold)->Arg(1'000)->Arg(10'000)->Arg(100'000);

// One max-min recomputation for `flows` concurrent flows between random GPU pairs of a
// 1,024-GPU cluster (128 DGX H100 nodes on a rail-optimised fat tree).
static void BM_MaxMinRecompute(benchmark::State& state) {
    const auto flows = static_cast<int>(state.range(0));
    const hardware::Topology topo(
        hardware::with_gpu_count(hardware::load_hardware("dgx-h100"), 1024));
    sim::Engine engine;
    sim::FlowNetwork net(engine);
    hardware::bind_topology(net, topo);
    std::mt19937 rng(7);
    for (int i = 0; i < flows; ++i) {
        const int a = static_cast<int>(rng() % 1024);
        int b = static_cast<int>(rng() % 1024);
        if (b == a)
            b = (a + 1) % 1024;
        const auto route = topo.gpu_route(a, b);
        net.start(sim::FlowSpec{1e12,
                                hardware::flow_path(route),
                                sim::Time::zero(),
                                std::numeric_limits<double>::infinity(),
                                {}});
    }
    engine.run_until(sim::Time::zero()); // the batched reshare of all the starts
    for (auto _ : state)
        net.reshare_now();
    state.counters["flows"] = static_cast<double>(net.active_flows());
    state.counters["resources"] = static_cast<double>(net.resource_count());
}
BENCHMARK(BM_MaxMinRecompute)->Arg(10'000)->Unit(benchmark::kMillisecond);
