#pragma once
/// \file
/// Measurements of real hardware: the value types of a measurement file and its JSON form
/// (documented in docs/measurements.md). `calibrate run` writes them from the CUDA runners,
/// `calibrate import` from nccl-tests logs and CSV tables; fitting and validation read them.
///
/// A file holds one environment (the GPU model, driver and library versions, date, host) and
/// lists of points by kind: collectives, GEMMs, memory copies, point-to-point transfers, kernel
/// launch overhead and end-to-end training steps. Times are `sim::Time`; rates (algbw, busbw,
/// TFLOP/s, GB/s) are derived from bytes or FLOPs and time, never stored independently: the
/// reader checks that a rate written in a file agrees with its time.
///
/// Reading is strict: unknown keys, wrong types, non-positive times or sizes, unknown kinds,
/// an unsupported version and duplicate points are InputErrors that name the file and the JSON
/// path (`M.json: collectives[3].time_us: expected a positive number, got -1`). Writing is
/// deterministic: fixed key order, one point per line, fixed rounding.

#include "hardware/dtype.h"
#include "sim/time.h"
#include "strategies/collectives/collective.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace clustersim::calibrate {

/// The value of the top-level "format" key of every measurement file.
inline constexpr std::string_view kMeasurementFormat = "clustersim-measurements";
/// The version this build writes and the newest it reads.
inline constexpr int kMeasurementVersion = 1;
/// The most GPUs a measurement may name (the reader's bound, which the importers apply too).
inline constexpr int kMaxMeasurementGpus = 1 << 20;

/// Collectives: the one op vocabulary (strategies/collectives/collective.h), whose names
/// (to_string, parse_op) are those of the measurement file; busbw uses its bus_factor.
using CollectiveOp = strategies::collectives::CollectiveOp;

/// Where and with what the measurements were taken. Empty strings are unknown.
struct Environment {
    std::string device = "unknown"; ///< GPU model as the driver names it
    int device_count = 0;           ///< GPUs used; 0 when unknown
    std::string driver_version;     ///< NVIDIA kernel driver, e.g. "550.54.15"
    std::string cuda_version;       ///< e.g. "runtime 13.0, driver API 13.0"
    std::string nccl_version;       ///< e.g. "2.28.9"
    std::string cublas_version;     ///< e.g. "13.0.0"
    std::string date;               ///< ISO 8601 UTC, e.g. "2025-01-31T12:00:00Z"
    std::string host;
    std::string tool; ///< what produced the file, e.g. "clustersim calibrate run --quick"

    friend bool operator==(const Environment&, const Environment&) = default;
};

/// One point of a collective size sweep, as one row half of an nccl-tests table.
struct CollectiveMeasurement {
    CollectiveOp op = CollectiveOp::all_reduce;
    std::string algorithm; ///< "ring", "tree", "nvls", ... ; "" when not known
    int gpus = 0;
    std::int64_t bytes = 0; ///< nccl-tests' "size": the whole buffer for gathers and scatters
    hardware::Dtype dtype = hardware::Dtype::fp32;
    bool in_place = false;
    sim::Time time;
    std::optional<std::int64_t>
        wrong;          ///< elements found wrong (nccl-tests #wrong); none: not checked
    std::string source; ///< "file:line" it came from; "" when measured here

    /// Algorithm bandwidth, bytes / time, in bytes per second.
    double algbw() const;
    /// Bus bandwidth, algbw times nccl-tests' factor, in bytes per second.
    double busbw() const;
    friend bool operator==(const CollectiveMeasurement&, const CollectiveMeasurement&) = default;
};

/// How a GEMM was run beside its shape and types, where training runs it otherwise than a
/// plain multiply (Transformer Engine's cuBLASLt calls: transformer_engine/common/gemm/
/// cublaslt_gemm.cu, and the use_split_accumulator flags of its Linear modules):
/// - plain: D = op(A) op(B), beta 0; fp8 with cuBLASLt's default, fp32 promotion of the tensor
///   cores' partial sums (CUBLASLT_MATMUL_DESC_FAST_ACCUM 0: what Transformer Engine asks for
///   its backward GEMMs, _2X_ACC_DGRAD and _2X_ACC_WGRAD);
/// - fast_accum: fp8 with the tensor cores' own accumulation (FAST_ACCUM 1: Transformer
///   Engine's forward GEMMs, _2X_ACC_FPROP false);
/// - accumulate_fp32: D = C + op(A) op(B) with C = D in fp32 (beta 1): a weight gradient added
///   into Megatron's fp32 main_grad (gradient_accumulation_fusion), which reads and writes 8
///   bytes per output element where a plain bf16 GEMM writes 2.
enum class GemmVariant : std::uint8_t { plain, fast_accum, accumulate_fp32 };
std::string_view to_string(GemmVariant v);
std::optional<GemmVariant> parse_gemm_variant(std::string_view text);

/// One matrix multiply D = op(A) op(B), A m x k, B k x n (column-major, cuBLAS convention).
struct GemmMeasurement {
    std::int64_t m = 0, n = 0, k = 0;
    hardware::Dtype dtype = hardware::Dtype::fp16; ///< input type; fp8 is e4m3 with bf16 output
    std::string layout = "TN";                     ///< op(A) op(B): N or T each, as cuBLAS
    std::string library = "cublaslt";
    GemmVariant variant = GemmVariant::plain;
    sim::Time time;
    std::string source;

    double flops() const; ///< 2 m n k
    /// FLOP per second.
    double flop_rate() const;
    friend bool operator==(const GemmMeasurement&, const GemmMeasurement&) = default;
};

enum class CopyKind : std::uint8_t { device_to_device, host_to_device, device_to_host, peer };
std::string_view to_string(CopyKind kind);
std::optional<CopyKind> parse_copy_kind(std::string_view text);

/// How a copy was made: a copy kernel (SMs load and store) or cudaMemcpy (copy engines).
enum class CopyMethod : std::uint8_t { kernel, memcpy };
std::string_view to_string(CopyMethod method);
std::optional<CopyMethod> parse_copy_method(std::string_view text);

/// One memory copy of `bytes`. A device-to-device copy reads and writes `bytes` each, so the
/// memory moves 2 x bytes (the convention of CUDA's bandwidthTest). Host memory is pinned.
struct CopyMeasurement {
    CopyKind kind = CopyKind::device_to_device;
    CopyMethod method = CopyMethod::memcpy;
    std::int64_t bytes = 0;
    int src_gpu = 0; ///< the GPU read from (the GPU involved, for host copies)
    int dst_gpu = 0; ///< the GPU written to
    sim::Time time;
    std::string source;

    /// Bytes copied per second (bytes / time).
    double bandwidth() const;
    /// True for a device-to-device copy whose source and destination (2 x bytes) fit together
    /// in an L2 cache of `l2_bytes`: repeated, such a copy runs from the cache (seen on an H200:
    /// 16 MiB copied at 2.6 TB/s, above the HBM's 4.8 TB/s read + write), so it says nothing of
    /// HBM bandwidth, which is all the model has.
    bool cache_resident(std::int64_t l2_bytes) const {
        return kind == CopyKind::device_to_device && 2 * bytes <= l2_bytes;
    }
    friend bool operator==(const CopyMeasurement&, const CopyMeasurement&) = default;
};

/// One transfer from one GPU to another through NCCL send/recv (what `clustersim transfer`
/// predicts).
struct P2pMeasurement {
    int src_gpu = 0;
    int dst_gpu = 1;
    std::int64_t bytes = 0;
    sim::Time time;
    std::string source;

    double bandwidth() const;
    friend bool operator==(const P2pMeasurement&, const P2pMeasurement&) = default;
};

/// What a launch overhead point measures, for an empty kernel.
enum class LaunchMethod : std::uint8_t {
    host_submit,      ///< CPU time of one asynchronous launch call
    gpu_back_to_back, ///< GPU time per kernel when empty kernels are queued back to back
    launch_and_sync,  ///< one launch and a stream synchronize: the round trip
};
std::string_view to_string(LaunchMethod method);
std::optional<LaunchMethod> parse_launch_method(std::string_view text);

struct LaunchMeasurement {
    LaunchMethod method = LaunchMethod::gpu_back_to_back;
    sim::Time time;            ///< per launch
    std::int64_t launches = 0; ///< launches per sample the median was taken over
    std::string source;

    friend bool operator==(const LaunchMeasurement&, const LaunchMeasurement&) = default;
};

/// What a kernel of a framework's training step does, as `calibrate import` classifies the
/// kernels of a PyTorch profiler trace (calibrate/kineto.h).
enum class KernelClass : std::uint8_t {
    gemm,        ///< a matrix product (aten::mm, addmm, ...): flops = 2 m n k
    attention,   ///< fused attention (SDPA flash / memory-efficient) and the batched products
                 ///< of unfused attention (aten::bmm, baddbmm)
    elementwise, ///< elementwise, normalisation, softmax, dropout, embedding, loss: bytes
    collective,  ///< an NCCL kernel: collective, gpus and bytes (nccl-tests' size)
    copy,        ///< a memory copy or memset (gpu_memcpy, gpu_memset)
    other,       ///< a kernel no CPU op with shapes launched
};
inline constexpr int kKernelClassCount = 6;
std::string_view to_string(KernelClass c);
std::optional<KernelClass> parse_kernel_class(std::string_view text);

/// The kernels of one kind launched by one CPU op with one set of input shapes, in one layer
/// and phase of a traced training step, summed over the trace's profiled steps.
struct KernelMeasurement {
    KernelClass kernel_class = KernelClass::other;
    std::string op;     ///< the CPU op that launched it ("aten::mm"); "" when none
    std::string kernel; ///< the kernel's name, shortened (no parameters, no template arguments)
    std::string phase;  ///< "forward", "backward", "optimizer" or "" (not known)
    int layer = -1;     ///< the layer an annotation names ("layer3" -> 3); -1: none
    std::optional<hardware::Dtype> dtype;          ///< of the op's first floating input
    std::vector<std::vector<std::int64_t>> shapes; ///< the op's input dims as recorded
    double flops = 0;       ///< per call: 2 m n k for a GEMM, the attention products'
    std::int64_t bytes = 0; ///< per call: inputs read (elementwise), nccl-tests size (NCCL)
    std::string collective; ///< NCCL: the op ("all_reduce"); else ""
    int gpus = 0;           ///< NCCL: ranks in the communicator; else 0
    int stream = 0;         ///< the CUDA stream it ran on
    std::int64_t calls = 0; ///< kernels summed
    sim::Time time;         ///< their total GPU time
    std::string source;     ///< "trace.json: event N" of the first one

    /// Mean time of one call.
    sim::Time per_call() const;
    friend bool operator==(const KernelMeasurement&, const KernelMeasurement&) = default;
};

/// A traced training step as a whole: what `calibrate import` reads from the profiler's
/// step annotations (ProfilerStep#N) and the GPU kernels within them, per step (means).
struct TraceStepMeasurement {
    int steps = 0;            ///< profiled steps the means are over
    sim::Time time;           ///< wall time of one step
    sim::Time busy;           ///< time some kernel or copy ran on the GPU
    sim::Time launch;         ///< median CPU time of one kernel launch call
    std::int64_t kernels = 0; ///< kernels per step
    std::string source;

    friend bool operator==(const TraceStepMeasurement&, const TraceStepMeasurement&) = default;
};

/// A value of a training-step setting: the experiment file's scalars.
using SettingValue = std::variant<bool, std::int64_t, double, std::string>;
/// Settings by key, in the experiment file's vocabulary ("layers", "tp", "recompute").
using Settings = std::map<std::string, SettingValue>;

/// One measured training iteration (forward, backward, optimizer) of a model.
struct StepMeasurement {
    int gpus = 0;
    std::string model_preset; ///< "gpt3-175B" when the model is a preset, else ""
    Settings model;           ///< kind, layers, hidden, heads, ffn, seq, vocab, attention
    Settings training;        ///< global_batch, micro_batch, dtype, optimizer
    Settings parallel;        ///< tp, pp, dp, schedule, virtual_stages, recompute, zero, ...
    sim::Time time;           ///< one iteration
    std::string source;

    /// The settings as experiment overrides ("model.layers=24", "parallel.tp=2"), sorted;
    /// the model preset, when there is one, first as "model=NAME".
    std::vector<std::string> overrides() const;
    friend bool operator==(const StepMeasurement&, const StepMeasurement&) = default;
};

/// The keys a step measurement accepts in each section, for error messages and `--set`.
/// `section` is "model", "training" or "parallel". Throws InputError (naming `where`) when
/// the key is unknown or the value has the wrong type or range.
void check_setting(std::string_view section, const std::string& key, const SettingValue& value,
                   const std::string& where);
/// Parses "KEY=VALUE" with KEY "model.x", "training.x" or "parallel.x" into a step setting
/// (the value's type from the key's schema). Throws InputError naming `where`.
void apply_setting(StepMeasurement& step, std::string_view assignment, const std::string& where);

/// A whole measurement file.
struct MeasurementFile {
    int version = kMeasurementVersion;
    Environment environment;
    std::vector<CollectiveMeasurement> collectives;
    std::vector<GemmMeasurement> gemms;
    std::vector<CopyMeasurement> copies;
    std::vector<P2pMeasurement> p2p;
    std::vector<LaunchMeasurement> launches;
    std::vector<StepMeasurement> steps;
    std::vector<KernelMeasurement> kernels;        ///< written only when not empty
    std::vector<TraceStepMeasurement> trace_steps; ///< written only when not empty

    /// Records of every kind.
    std::size_t size() const;
    friend bool operator==(const MeasurementFile&, const MeasurementFile&) = default;
};

/// Parses the JSON text of a measurement file; `name` (the path) prefixes every error.
MeasurementFile parse_measurements(std::string_view json_text, const std::string& name);
/// Reads and parses a measurement file. Throws InputError.
MeasurementFile read_measurements(const std::string& path);
/// The JSON text of a measurement file (ends with a newline); byte-identical for equal input.
/// Throws InputError (naming `name`) when the content breaks a rule the reader enforces: the
/// text is read back before it is returned.
std::string format_measurements(const MeasurementFile& file, const std::string& name = "output");

/// Checks every rule the reader enforces on values already in memory: positive times, sizes
/// and GPU counts, consistent step parallelism, no duplicate points. Throws InputError whose
/// message starts with `name` and names the point (its path, and its source when it has one).
void check_measurements(const MeasurementFile& file, const std::string& name);

/// Appends `from` to `into`. The devices must agree when both are known (else InputError
/// naming `from_name`); other environment fields fill those `into` does not know, and a
/// disagreement is returned as a warning. Duplicates are found by check_measurements.
std::vector<std::string> merge_measurements(MeasurementFile& into, const MeasurementFile& from,
                                            const std::string& from_name);

} // namespace clustersim::calibrate
