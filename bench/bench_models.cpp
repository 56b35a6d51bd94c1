// Benchmarks of the kernel cost model and the per-layer work of the models: what a sweep pays
// per configuration. Targets: one GEMM time well under a microsecond; one transformer layer
// (forward, backward, recompute, collectives) in a few microseconds, so thousands of
// configurations per second per core leave room for the schedule simulation.
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"

#include <benchmark/benchmark.h>

using namespace clustersim;
using namespace clustersim::strategies::models;

static void BM_GemmTime(benchmark::State& state) {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-a100"));
    std::int64_t m = 2048;
    for (auto _ : state) {
        benchmark::DoNotOptimize(cm.gemm_seconds(m, 4608, 12288, hardware::Dtype::fp16));
        m = m == 2048 ? 4096 : 2048; // defeat caching of the arguments
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GemmTime);

static void BM_MemoryBoundTime(benchmark::State& state) {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-a100"));
    std::int64_t bytes = 1 << 20;
    for (auto _ : state) {
        benchmark::DoNotOptimize(cm.memory_bound_seconds(bytes));
        bytes ^= 1;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MemoryBoundTime);

static void BM_TransformerLayer(benchmark::State& state) {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-a100"));
    const ModelSpec m = load_model("gpt3-175B");
    LayerConfig cfg;
    cfg.tp = 8;
    cfg.sequence_parallel = state.range(0) != 0;
    cfg.dtype = hardware::Dtype::fp16;
    cfg.recompute = Recompute::selective;
    int b = 1;
    for (auto _ : state) {
        cfg.micro_batch = b;
        benchmark::DoNotOptimize(layer_work(m, cfg, cm));
        b = b % 4 + 1;
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TransformerLayer)->Arg(0)->Arg(1);

static void BM_StageWork(benchmark::State& state) {
    // What a pipeline configuration needs from the models: a layer, the embedding and the head.
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-a100"));
    const ModelSpec m = load_model("gpt3-175B");
    LayerConfig cfg;
    cfg.tp = 8;
    cfg.sequence_parallel = true;
    cfg.dtype = hardware::Dtype::fp16;
    cfg.recompute = Recompute::full;
    for (auto _ : state) {
        benchmark::DoNotOptimize(layer_work(m, cfg, cm));
        benchmark::DoNotOptimize(embedding_work(m, cfg, cm));
        benchmark::DoNotOptimize(head_work(m, cfg, cm));
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_StageWork);
