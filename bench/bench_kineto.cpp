// Reading PyTorch profiler traces (`calibrate import` of a Kineto trace, calibrate/kineto.h).
// Target (issue 15): a 200 MB trace imported in under 5 s. BM_ImportKinetoTrace/200 reads a
// synthetic trace of about 200 MB generated here in Kineto's own layout (output_json.cpp:
// one key group per line, args with record_shapes' Input Dims / Input type / Input Strides /
// Concrete Inputs, launch calls, kernels with their CUPTI args, ac2g flows), steps of
// GPT-style layers: per layer 12 ops each with a launch call and a kernel, forward and
// backward, plus NCCL and optimizer kernels. The time is the whole import (parse, nesting,
// classification, aggregation) from the text in memory; bytes_per_second is its rate.
#include "calibrate/kineto.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

using namespace clustersim;

namespace {

struct Gen {
    std::string cpu, gpu;
    long long t = 1000; // ns
    long long id = 1;
    long long seq = 1;

    static std::string us(long long ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

    void range(const char* cat, const std::string& name, long long ts, long long dur, int tid,
               const std::string& args) {
        cpu += fmt::format(R"(
  {{
    "ph": "X", "cat": "{}", "name": "{}", "pid": 4242, "tid": {},
    "ts": {}, "dur": {},
    "args": {{
      {}
    }}
  }},)",
                           cat, name, tid, us(ts), us(dur), args);
    }

    /// An op with shapes, its launch call and its kernel.
    void op(const std::string& name, const std::string& dims, const std::string& types,
            const std::string& kernel, int tid, long long kernel_ns, bool backward) {
        const long long ext = id++;
        const long long corr = id++;
        const long long start = t;
        std::string args = fmt::format(
            R"("External id": {},"Record function id": 0, "Concrete Inputs": ["", ""], "Input type": {}, "Input Strides": {}, "Input Dims": {}, "Ev Idx": {})",
            ext, types, dims, dims, ext);
        if (!backward)
            args = fmt::format(R"("Sequence number": {}, "Fwd thread id": 0, )", seq++) + args;
        range("cpu_op", name, start, 20000, tid, args);
        range("cuda_runtime", "cudaLaunchKernel", start + 5000, 4000, tid,
              fmt::format(R"("External id": {}, "cbid": 211, "correlation": {})", ext, corr));
        cpu += fmt::format(R"(
  {{
    "ph": "s", "id": {}, "pid": 4242, "tid": {}, "ts": {},
    "cat": "ac2g", "name": "ac2g"
  }},)",
                           corr, tid, us(start + 5000));
        gpu += fmt::format(R"(
  {{
    "ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7,
    "ts": {}, "dur": {},
    "args": {{
      "External id": {},
      "queued": 0, "device": 0, "context": 1,
      "stream": 7, "correlation": {},
      "registers per thread": 168,
      "shared memory": 213248,
      "blocks per SM": 3.878788,
      "warps per SM": 46.545456,
      "grid": [512, 1, 1],
      "block": [384, 1, 1],
      "est. achieved occupancy %": 0
    }}
  }},
  {{
    "ph": "f", "id": {}, "pid": 0, "tid": 7, "ts": {},
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }},)",
                           kernel, us(start + 30000), us(kernel_ns), ext, corr, corr,
                           us(start + 30000));
        t += 25000;
    }
};

std::string synthetic_trace(std::size_t target_bytes) {
    Gen g;
    const std::string bf16x2 = R"(["c10::BFloat16", "c10::BFloat16"])";
    const std::string bf16x3 = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])";
    const std::string gemm =
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
        "execute_segment_k_off_kernel__5x_cublas";
    const std::string ew = "void at::native::vectorized_elementwise_kernel<4, "
                           "at::native::CUDAFunctor_add<c10::BFloat16>, "
                           "at::detail::Array<char*, 3> >(int, "
                           "at::native::CUDAFunctor_add<c10::BFloat16>, "
                           "at::detail::Array<char*, 3>)";
    int step = 0;
    while (g.cpu.size() + g.gpu.size() < target_bytes) {
        const long long step_start = g.t;
        const std::size_t mark = g.cpu.size();
        (void)mark;
        for (int layer = 0; layer < 24; ++layer) {
            const long long layer_start = g.t;
            for (int i = 0; i < 6; ++i) {
                g.op("aten::addmm", "[[4096], [8192, 1024], [1024, 4096], [], []]",
                     R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])",
                     gemm, 1, 90000, false);
                g.op("aten::add", "[[4, 2048, 1024], [4, 2048, 1024], []]", bf16x3, ew, 1, 20000,
                     false);
            }
            g.range("user_annotation", fmt::format("layer{}", layer), layer_start,
                    g.t - layer_start, 1, R"("External id": 0, "Record function id": 0)");
        }
        for (int layer = 0; layer < 24; ++layer)
            for (int i = 0; i < 12; ++i)
                g.op("aten::mm", "[[8192, 4096], [4096, 1024]]", bf16x2, gemm, 2, 90000, true);
        g.op("aten::_foreach_add_", "[[], []]", R"(["TensorList", "Scalar"])", ew, 1, 300000,
             false);
        g.range("user_annotation", fmt::format("ProfilerStep#{}", step++), step_start,
                g.t - step_start, 1, R"("External id": 0, "Record function id": 0)");
    }
    std::string out = R"({
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109749248,
      "computeMajor": 9, "computeMinor": 0,
      "numSms": 132
    }
  ],
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1733000000000000000,
  "traceEvents": [)";
    out += g.cpu;
    out += g.gpu;
    out += R"(
  {
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": 1.000
  }
  ],
  "traceName": "synthetic.json"
})";
    return out;
}

void BM_ImportKinetoTrace(benchmark::State& state) {
    const std::string text = synthetic_trace(static_cast<std::size_t>(state.range(0)) << 20);
    std::size_t kernels = 0;
    for (auto _ : state) {
        const auto t = calibrate::read_kineto_trace(text, "synthetic.json", {});
        kernels = t.kernels.size();
        benchmark::DoNotOptimize(kernels);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(text.size()));
    state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
    state.counters["kernels"] = static_cast<double>(kernels);
}
BENCHMARK(BM_ImportKinetoTrace)->Arg(20)->Arg(200)->Unit(benchmark::kSecond)->Iterations(1);

} // namespace
