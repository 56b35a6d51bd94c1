// The field tables of a measurement file's records (measurement_fields.h): what the writer
// writes, the reader reads and checks, and docs/measurements.md lists.
#include "calibrate/measurement_fields.h"

#include "calibrate/measurements_detail.h"
#include "calibrate/measurements_reader.h"

#include <limits>

namespace clustersim::calibrate {

using namespace measurements_detail;

std::string_view to_string(FieldType t) {
    switch (t) {
    case FieldType::integer:
        return "integer";
    case FieldType::number:
        return "number";
    case FieldType::boolean:
        return "boolean";
    case FieldType::text:
        return "string";
    case FieldType::choice:
        return "choice";
    case FieldType::time:
        return "time";
    case FieldType::rate:
        return "rate";
    case FieldType::dims:
        return "list of lists";
    case FieldType::settings:
        return "object";
    case FieldType::model:
        return "string or object";
    }
    return "";
}

namespace measurements_detail {

TimeUnit time_unit(std::string_view unit) {
    // Times are exact picoseconds: as microseconds they have at most six decimals.
    if (unit == "ms")
        return {1e-3, 1e9};
    return {1e-6, 1e6};
}

double rate_scale(std::string_view unit) {
    return unit == "TFLOP/s" ? 1e12 : 1e9; // GB/s: GB = 10^9 B, as nccl-tests
}

} // namespace measurements_detail

namespace {

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50; // 1 PiB: far beyond any buffer
constexpr std::int64_t kMaxGpus = kMaxMeasurementGpus;
constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

template <std::size_t N>
std::vector<std::string> names(const std::array<std::string_view, N>& list) {
    return {list.begin(), list.end()};
}

/// The collective ops' names, in the order of the enum (which kAllOps lists).
std::vector<std::string> op_names() {
    namespace coll = strategies::collectives;
    static_assert([] {
        for (std::size_t i = 0; i < coll::kAllOps.size(); ++i) {
            if (coll::kAllOps[i] != static_cast<CollectiveOp>(i))
                return false;
        }
        return true;
    }());
    std::vector<std::string> out;
    for (CollectiveOp op : coll::kAllOps)
        out.emplace_back(coll::to_string(op));
    return out;
}

/// The dtypes' names, in the order of the enum.
std::vector<std::string> dtype_names() {
    static_assert([] {
        for (std::size_t i = 0; i < hardware::kAllDtypes.size(); ++i) {
            if (hardware::kAllDtypes[i] != static_cast<hardware::Dtype>(i))
                return false;
        }
        return true;
    }());
    std::vector<std::string> out;
    for (hardware::Dtype d : hardware::kAllDtypes)
        out.emplace_back(hardware::to_string(d));
    return out;
}

/// A time in `unit` (the unit its key names).
template <class S>
Field<S> time_field(std::string_view name, std::string_view unit, std::string_view meaning,
                    std::string_view lands, sim::Time S::*member,
                    Presence presence = Presence::required) {
    return {.info = {.name = name,
                     .type = FieldType::time,
                     .presence = presence,
                     .unit = unit,
                     .meaning = meaning,
                     .lands = lands},
            .member = member};
}

/// A size in bytes, at least one.
template <class S>
Field<S> bytes_field(std::string_view meaning, std::string_view lands, std::int64_t S::*member,
                     Presence presence = Presence::required, std::string_view mirrors = {}) {
    return {.info = {.name = "bytes",
                     .presence = presence,
                     .unit = "B",
                     .min = 1,
                     .max = kMaxBytes,
                     .mirrors = mirrors,
                     .meaning = meaning,
                     .lands = lands},
            .member = member};
}

/// A GPU count (`min` 1) or a GPU's index (`min` 0).
template <class S>
Field<S> gpu_field(std::string_view name, std::int64_t min, std::string_view meaning,
                   std::string_view lands, int S::*member) {
    return {.info = {.name = name, .min = min, .max = kMaxGpus, .meaning = meaning, .lands = lands},
            .member = member};
}

/// A bandwidth in GB/s (GB = 10^9 B), derived by the record's `rate` in B/s.
template <class S>
Field<S> bandwidth_field(std::string_view name, std::string_view formula, std::string_view mirrors,
                         std::string_view meaning, std::string_view lands,
                         double (S::*rate)() const) {
    return {.info = {.name = name,
                     .type = FieldType::rate,
                     .presence = Presence::defaulted,
                     .unit = "GB/s",
                     .formula = formula,
                     .mirrors = mirrors,
                     .meaning = meaning,
                     .lands = lands},
            .rate = rate};
}

/// Every record's last field: the place it was imported from.
template <class S>
Field<S> source_field(std::string_view lands) {
    return {.info = {.name = "source",
                     .type = FieldType::text,
                     .presence = Presence::optional,
                     .meaning = "the `file:line` it was imported from; absent when measured here",
                     .lands = lands},
            .member = &S::source};
}

// A step's model is a preset's name, or the experiment file's model keys with the preset
// among them as "preset": one key, two members.
void read_model(ObjectReader& r, std::string_view key, StepMeasurement& s) {
    const nlohmann::json& model = r.get(key);
    if (model.is_string()) {
        s.model_preset = model.get<std::string>();
        if (s.model_preset.empty())
            r.fail(key, "expected a model preset name or an object, got \"\"");
    } else {
        s.model = read_settings(model, key, r.file(), r.sub(key), &s.model_preset);
    }
}

void write_model(const StepMeasurement& s, std::string_view key, nlohmann::ordered_json& j) {
    if (!s.model_preset.empty() && s.model.empty()) {
        j[std::string(key)] = s.model_preset;
        return;
    }
    nlohmann::ordered_json m = settings_json(s.model);
    if (!s.model_preset.empty())
        m["preset"] = s.model_preset;
    j[std::string(key)] = m;
}

} // namespace

namespace measurements_detail {

template <>
// check-function-size: a table
const Record<Environment>& record<Environment>() {
    using E = Environment;
    auto text = [](std::string_view name, std::string_view meaning, std::string_view mirrors,
                   std::string_view lands, std::string E::*member, bool warn_on_merge) {
        return Field<E>{.info = {.name = name,
                                 .type = FieldType::text,
                                 .presence = Presence::optional,
                                 .warn_on_merge = warn_on_merge,
                                 .mirrors = mirrors,
                                 .meaning = meaning,
                                 .lands = lands},
                        .member = member};
    };
    static const Record<E> r{
        .list = "",
        .meaning = "Where the measurements were taken. One file describes one GPU model: "
                   "importing files whose devices differ is an error.",
        .fields = {
            {.info = {.name = "device",
                      .type = FieldType::text,
                      .if_empty = "expected the GPU's name (or \"unknown\"), got \"\"",
                      .mirrors = "cudaGetDeviceProperties",
                      .meaning = "the GPU model as the driver names it, or `unknown`",
                      .lands = "Environment::device"},
             .member = &E::device},
            gpu_field<E>("device_count", 0, "GPUs used (0: unknown)", "Environment::device_count",
                         &E::device_count),
            text("driver_version", "NVIDIA kernel driver", "/proc/driver/nvidia/version",
                 "Environment::driver_version", &E::driver_version, true),
            text("cuda_version", "CUDA runtime and driver API versions",
                 "cudaRuntimeGetVersion, cudaDriverGetVersion", "Environment::cuda_version",
                 &E::cuda_version, true),
            text("nccl_version", "NCCL's version", "ncclGetVersion", "Environment::nccl_version",
                 &E::nccl_version, true),
            text("cublas_version", "cuBLAS's version", "cublasLtGetVersion",
                 "Environment::cublas_version", &E::cublas_version, true),
            text("date", "ISO 8601 UTC time the run started", "", "Environment::date", &E::date,
                 false),
            text("host", "host name (several, comma-separated, for a multi-node nccl-tests run)",
                 "", "Environment::host", &E::host, false),
            text("tool", "what wrote the file", "", "Environment::tool", &E::tool, false),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<CollectiveMeasurement>& record<CollectiveMeasurement>() {
    using C = CollectiveMeasurement;
    static const Record<C> r{
        .list = "collectives",
        .meaning = "One half-row of an nccl-tests table: a collective of one size on one "
                   "communicator, out of place or in place.",
        .fields = {
            {.info = {.name = "op",
                      .type = FieldType::choice,
                      .choices = op_names(),
                      .what = "collective",
                      .mirrors = "the test (all_reduce_perf)",
                      .meaning = "the collective",
                      .lands = "CollectiveMeasurement::op"},
             .member = enum_member<&C::op>},
            {.info = {.name = "algorithm",
                      .type = FieldType::choice,
                      .presence = Presence::optional,
                      .choices = names(kAlgorithms),
                      .what = "algorithm",
                      .mirrors = "NCCL_ALGO",
                      .meaning = "NCCL's algorithm, known only when NCCL_ALGO forced one",
                      .lands = "CollectiveMeasurement::algorithm"},
             .member = &C::algorithm},
            gpu_field<C>("gpus", 1, "ranks in the communicator", "CollectiveMeasurement::gpus",
                         &C::gpus),
            bytes_field<C>("the whole buffer for all-gather, reduce-scatter, all-to-all, "
                           "gather and scatter",
                           "CollectiveMeasurement::bytes", &C::bytes, Presence::required, "size"),
            {.info = {.name = "dtype",
                      .type = FieldType::choice,
                      .choices = dtype_names(),
                      .mirrors = "type",
                      .meaning = "the element type",
                      .lands = "CollectiveMeasurement::dtype"},
             .member = enum_member<&C::dtype>},
            {.info = {.name = "in_place",
                      .type = FieldType::boolean,
                      .mirrors = "the in-place column set",
                      .meaning = "whether the output buffer is the input",
                      .lands = "CollectiveMeasurement::in_place"},
             .member = &C::in_place},
            {.info = {.name = "time_us",
                      .type = FieldType::time,
                      .unit = "us",
                      .mirrors = "time",
                      .meaning = "median time of one collective",
                      .lands = "CollectiveMeasurement::time"},
             .member = &C::time},
            bandwidth_field<C>("algbw_gbps", "bytes / time_us", "algbw", "algorithm bandwidth",
                               "CollectiveMeasurement::algbw()", &C::algbw),
            bandwidth_field<C>("busbw_gbps", "algbw x the bus factor", "busbw",
                               "bus bandwidth; the factor is 2(n-1)/n for all-reduce, (n-1)/n "
                               "for all-gather, reduce-scatter, all-to-all, gather and "
                               "scatter, 1 for broadcast, reduce and send/recv",
                               "CollectiveMeasurement::busbw()", &C::busbw),
            {.info = {.name = "wrong",
                      .presence = Presence::optional,
                      .min = 0,
                      .max = kMaxBytes,
                      .mirrors = "#wrong",
                      .meaning = "elements found wrong by the check; absent when not checked. "
                                 "Importers and `calibrate run` drop points with `wrong > 0` "
                                 "(with a warning)",
                      .lands = "CollectiveMeasurement::wrong"},
             .member = &C::wrong},
            source_field<C>("CollectiveMeasurement::source"),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<GemmMeasurement>& record<GemmMeasurement>() {
    using G = GemmMeasurement;
    auto dim = [](std::string_view name, std::string_view meaning, std::string_view lands,
                  std::int64_t G::*member) {
        return Field<G>{
            .info = {.name = name, .min = 1, .max = kMaxBytes, .meaning = meaning, .lands = lands},
            .member = member};
    };
    static const Record<G> r{
        .list = "gemms",
        .meaning = "One matrix multiply `D (m x n) = op(A) op(B)`, column-major as cuBLAS. "
                   "All accumulate in fp32.",
        .fields = {
            dim("m", "rows of op(A) and D", "GemmMeasurement::m", &G::m),
            dim("n", "columns of op(B) and D", "GemmMeasurement::n", &G::n),
            dim("k", "the inner dimension", "GemmMeasurement::k", &G::k),
            {.info = {.name = "dtype",
                      .type = FieldType::choice,
                      .choices = dtype_names(),
                      .meaning = "the input type: `fp8` is e4m3 inputs with a bf16 output, "
                                 "`tf32` fp32 data on TF32 tensor cores",
                      .lands = "GemmMeasurement::dtype"},
             .member = enum_member<&G::dtype>},
            {.info = {.name = "layout",
                      .type = FieldType::choice,
                      .choices = names(kLayouts),
                      .what = "layout",
                      .mirrors = "cublasOperation_t of A and B",
                      .meaning = "op(A) op(B): N or T each",
                      .lands = "GemmMeasurement::layout"},
             .member = &G::layout},
            {.info = {.name = "library",
                      .type = FieldType::text,
                      .if_empty = "expected a library name like 'cublaslt', got ''",
                      .meaning = "what ran it (`cublaslt`; `torch` from a profiler trace)",
                      .lands = "GemmMeasurement::library"},
             .member = &G::library},
            {.info = {.name = "variant",
                      .type = FieldType::choice,
                      .presence = Presence::optional,
                      .choices = names(kGemmVariantNames),
                      .meaning = "how it ran beside shape and types (GemmVariant): `plain` "
                                 "(absent), `fast_accum` (fp8 without fp32 promotion of partial "
                                 "sums: Transformer Engine's forward GEMMs), `accumulate_fp32` "
                                 "(D = C + AB into fp32, beta 1: a weight gradient added into "
                                 "Megatron's main_grad). Fits and validation use plain ones",
                      .lands = "GemmMeasurement::variant"},
             .member = enum_member<&G::variant>},
            time_field<G>("time_us", "us", "median time of one multiply", "GemmMeasurement::time",
                          &G::time),
            {.info = {.name = "tflops",
                      .type = FieldType::rate,
                      .presence = Presence::defaulted,
                      .unit = "TFLOP/s",
                      .formula = "2 m n k / time_us",
                      .meaning = "the FLOP rate",
                      .lands = "GemmMeasurement::flop_rate()"},
             .rate = &G::flop_rate},
            source_field<G>("GemmMeasurement::source"),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<CopyMeasurement>& record<CopyMeasurement>() {
    using C = CopyMeasurement;
    static const Record<C> r{
        .list = "copies",
        .meaning =
            "One memory copy. A device-to-device copy reads and writes every byte, so HBM moves "
            "`2 x gbps` (what CUDA's bandwidthTest prints). Host memory is pinned. "
            "Device-to-device copies whose source and destination fit together in the GPU's L2 "
            "(`2 x bytes <= gpu.l2` of the hardware file) run from the cache when repeated; "
            "`calibrate fit` leaves them out and `validate` skips them with a note (the model "
            "has HBM only); the runner keeps them, so the file shows where the cache ends.",
        .fields = {
            {.info = {.name = "kind",
                      .type = FieldType::choice,
                      .choices = names(kCopyKindNames),
                      .what = "copy kind",
                      .meaning = "from where to where",
                      .lands = "CopyMeasurement::kind"},
             .member = enum_member<&C::kind>},
            {.info = {.name = "method",
                      .type = FieldType::choice,
                      .choices = names(kCopyMethodNames),
                      .what = "copy method",
                      .meaning = "`kernel`: a copy kernel (the SMs' view of HBM); `memcpy`: "
                                 "cudaMemcpy (copy engines)",
                      .lands = "CopyMeasurement::method"},
             .member = enum_member<&C::method>},
            bytes_field<C>("bytes copied", "CopyMeasurement::bytes", &C::bytes),
            gpu_field<C>("src_gpu", 0, "the GPU read from (the GPU involved, for host copies)",
                         "CopyMeasurement::src_gpu", &C::src_gpu),
            gpu_field<C>("dst_gpu", 0,
                         "the GPU written to; equal to src_gpu except for peer copies",
                         "CopyMeasurement::dst_gpu", &C::dst_gpu),
            time_field<C>("time_us", "us", "median time of one copy", "CopyMeasurement::time",
                          &C::time),
            bandwidth_field<C>("gbps", "bytes / time_us", {}, "bytes copied per second",
                               "CopyMeasurement::bandwidth()", &C::bandwidth),
            source_field<C>("CopyMeasurement::source"),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<P2pMeasurement>& record<P2pMeasurement>() {
    using P = P2pMeasurement;
    static const Record<P> r{
        .list = "p2p",
        .meaning = "One NCCL send/recv from one GPU to another: what `clustersim transfer` "
                   "predicts.",
        .fields = {
            gpu_field<P>("src_gpu", 0, "the sender", "P2pMeasurement::src_gpu", &P::src_gpu),
            gpu_field<P>("dst_gpu", 0, "the receiver", "P2pMeasurement::dst_gpu", &P::dst_gpu),
            bytes_field<P>("bytes sent", "P2pMeasurement::bytes", &P::bytes),
            time_field<P>("time_us", "us", "median time of one transfer", "P2pMeasurement::time",
                          &P::time),
            bandwidth_field<P>("gbps", "bytes / time_us", {}, "bytes sent per second",
                               "P2pMeasurement::bandwidth()", &P::bandwidth),
            source_field<P>("P2pMeasurement::source"),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<LaunchMeasurement>& record<LaunchMeasurement>() {
    using L = LaunchMeasurement;
    static const Record<L> r{
        .list = "launches",
        .meaning = "The launch overhead of an empty kernel.",
        .fields = {
            {.info = {.name = "method",
                      .type = FieldType::choice,
                      .choices = names(kLaunchMethodNames),
                      .what = "launch method",
                      .meaning = "`host_submit`: CPU time of one asynchronous launch call; "
                                 "`gpu_back_to_back`: GPU time per kernel when kernels are "
                                 "queued back to back; `launch_and_sync`: a launch and a stream "
                                 "synchronize",
                      .lands = "LaunchMeasurement::method"},
             .member = enum_member<&L::method>},
            time_field<L>("time_us", "us", "per launch", "LaunchMeasurement::time", &L::time),
            {.info = {.name = "launches",
                      .min = 1,
                      .max = kMaxBytes,
                      .meaning = "launches per sample the median was taken over",
                      .lands = "LaunchMeasurement::launches"},
             .member = &L::launches},
            source_field<L>("LaunchMeasurement::source"),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<StepMeasurement>& record<StepMeasurement>() {
    using S = StepMeasurement;
    auto section = [](std::string_view name, std::string_view lands, Settings S::*member) {
        return Field<S>{.info = {.name = name,
                                 .type = FieldType::settings,
                                 .presence = Presence::defaulted,
                                 .meaning = "the experiment file's keys of this section",
                                 .lands = lands},
                        .member = member};
    };
    static const Record<S> r{
        .list = "steps",
        .meaning =
            "One training iteration (forward, backward, optimizer) of a model. Every key of "
            "[experiments.md](experiments.md)'s `model:`, `training:` and `parallel:` tables is "
            "taken, with its type and range (a list such as `recompute_modules` as one string, "
            "`core_attn,mlp`). When `tp`, `pp` and `dp` are all given their product must equal "
            "`gpus`. `StepMeasurement::overrides()` turns a step into experiment overrides "
            "(`parallel.tp=2`).",
        .fields = {
            gpu_field<S>("gpus", 1, "GPUs that ran the step", "StepMeasurement::gpus", &S::gpus),
            {.info = {.name = "model",
                      .type = FieldType::model,
                      .meaning = "a preset's name, or an object of the experiment file's model "
                                 "keys (`kind` required) and optionally `preset` with overrides",
                      .lands = "StepMeasurement::model_preset, StepMeasurement::model"},
             .read = read_model,
             .write = write_model},
            section("training", "StepMeasurement::training", &S::training),
            section("parallel", "StepMeasurement::parallel", &S::parallel),
            time_field<S>("time_ms", "ms", "one iteration", "StepMeasurement::time", &S::time),
            source_field<S>("StepMeasurement::source"),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<KernelMeasurement>& record<KernelMeasurement>() {
    using K = KernelMeasurement;
    static const Record<K> r{
        .list = "kernels",
        .optional_list = true,
        .meaning =
            "The kernels one CPU op launched with one set of input shapes, in one layer and "
            "phase, summed over a PyTorch profiler trace's profiled steps (`calibrate import` of "
            "a trace).",
        .fields = {
            {.info = {.name = "class",
                      .type = FieldType::choice,
                      .choices = names(kKernelClassNames),
                      .what = "kernel class",
                      .meaning = "`gemm`; `attention` (fused attention and the batched products "
                                 "of unfused attention); `elementwise` (elementwise, "
                                 "normalisation, softmax, dropout, embedding, loss, optimizer); "
                                 "`collective` (NCCL); `copy` (memcpy, memset); `other` (no op "
                                 "launched it)",
                      .lands = "KernelMeasurement::kernel_class"},
             .member = enum_member<&K::kernel_class>},
            {.info = {.name = "op",
                      .type = FieldType::text,
                      .mirrors = "the CPU op's name",
                      .meaning = "the ATen op (`aten::addmm`; SDPA's own op for attention); "
                                 "\"\" when none",
                      .lands = "KernelMeasurement::op"},
             .member = &K::op},
            {.info = {.name = "kernel",
                      .type = FieldType::text,
                      .meaning = "its name without parameters and template arguments",
                      .lands = "KernelMeasurement::kernel"},
             .member = &K::kernel},
            {.info = {.name = "phase",
                      .type = FieldType::choice,
                      .presence = Presence::optional,
                      .choices = names(kPhases),
                      .what = "phase",
                      .if_empty = "expected forward, backward or optimizer (leave the key out "
                                  "when not known)",
                      .meaning = "`forward`, `backward` or `optimizer`; absent: not known",
                      .lands = "KernelMeasurement::phase"},
             .member = &K::phase},
            {.info = {.name = "layer",
                      .presence = Presence::optional,
                      .min = 0,
                      .max = kMaxGpus,
                      .mirrors = "a record_function(\"layerN\") range",
                      .meaning = "the layer; absent: none",
                      .lands = "KernelMeasurement::layer"},
             .member = &K::layer},
            {.info = {.name = "dtype",
                      .type = FieldType::choice,
                      .presence = Presence::optional,
                      .choices = dtype_names(),
                      .meaning = "of the op's first floating input",
                      .lands = "KernelMeasurement::dtype"},
             .member = enum_member<&K::dtype>},
            {.info = {.name = "shapes",
                      .type = FieldType::dims,
                      .mirrors = "Input Dims",
                      .meaning = "the op's input dims as the profiler recorded them",
                      .lands = "KernelMeasurement::shapes"},
             .member = &K::shapes},
            {.info = {.name = "flops",
                      .type = FieldType::number,
                      .presence = Presence::optional,
                      .unit = "FLOP",
                      .meaning = "per call: 2mnk for GEMMs; for attention the products, causal "
                                 "halved, 2.5x backward",
                      .lands = "KernelMeasurement::flops"},
             .member = &K::flops},
            bytes_field<K>("per call: the tensor inputs read (elementwise: the profiler "
                           "records no outputs); NCCL: nccl-tests' size; copies: bytes "
                           "copied",
                           "KernelMeasurement::bytes", &K::bytes, Presence::optional, {}),
            {.info = {.name = "collective",
                      .type = FieldType::choice,
                      .presence = Presence::optional,
                      .choices = op_names(),
                      .what = "collective",
                      .meaning = "NCCL kernels: the collective",
                      .lands = "KernelMeasurement::collective"},
             .member = &K::collective},
            {.info = {.name = "gpus",
                      .min = 1,
                      .max = kMaxGpus,
                      .with = "collective",
                      .meaning = "NCCL kernels: ranks in the communicator",
                      .lands = "KernelMeasurement::gpus"},
             .member = &K::gpus},
            {.info = {.name = "stream",
                      .min = 0,
                      .max = kMaxInt,
                      .meaning = "the CUDA stream it ran on",
                      .lands = "KernelMeasurement::stream"},
             .member = &K::stream},
            {.info = {.name = "calls",
                      .min = 1,
                      .max = kMaxBytes,
                      .meaning = "kernels summed",
                      .lands = "KernelMeasurement::calls"},
             .member = &K::calls},
            time_field<K>("time_us", "us", "the calls' total GPU time", "KernelMeasurement::time",
                          &K::time),
            source_field<K>("KernelMeasurement::source"),
        }};
    return r;
}

template <>
// check-function-size: a table
const Record<TraceStepMeasurement>& record<TraceStepMeasurement>() {
    using T = TraceStepMeasurement;
    static const Record<T> r{
        .list = "trace_steps",
        .optional_list = true,
        .meaning = "A traced training step as a whole: means over the profiled steps of a "
                   "PyTorch profiler trace.",
        .fields = {
            {.info = {.name = "steps",
                      .min = 1,
                      .max = kMaxInt,
                      .mirrors = "ProfilerStep#N",
                      .meaning = "profiled steps the means are over",
                      .lands = "TraceStepMeasurement::steps"},
             .member = &T::steps},
            time_field<T>("time_ms", "ms", "wall time of one step (the ProfilerStep# range)",
                          "TraceStepMeasurement::time", &T::time),
            time_field<T>("busy_ms", "ms",
                          "time some kernel or copy ran on the GPU: the rest is host and "
                          "launch overhead",
                          "TraceStepMeasurement::busy", &T::busy),
            time_field<T>("launch_us", "us", "median CPU time of one kernel launch call",
                          "TraceStepMeasurement::launch", &T::launch, Presence::optional),
            {.info = {.name = "kernels",
                      .min = 0,
                      .max = kMaxBytes,
                      .meaning = "kernels per step",
                      .lands = "TraceStepMeasurement::kernels"},
             .member = &T::kernels},
            source_field<T>("TraceStepMeasurement::source"),
        }};
    return r;
}

} // namespace measurements_detail

namespace {
template <class S>
RecordInfo info_of(const Record<S>& r) {
    RecordInfo out{r.list, r.optional_list, r.meaning, {}};
    for (const auto& f : r.fields)
        out.fields.push_back(&f.info);
    return out;
}
} // namespace

const std::vector<RecordInfo>& measurement_records() {
    static const std::vector<RecordInfo> records = [] {
        std::vector<RecordInfo> out{info_of(record<Environment>())};
        for_each_list([&](const auto& r) { out.push_back(info_of(r)); });
        return out;
    }();
    return records;
}

} // namespace clustersim::calibrate
