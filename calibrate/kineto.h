#pragma once
/// \file
/// PyTorch profiler traces: the Chrome trace-event JSON that `torch.profiler.profile(...)`
/// writes with `export_chrome_trace` (Kineto's ChromeTraceLogger), plain or gzip-compressed,
/// read into kernels classified by what they do and into the measurement format
/// (`calibrate import`; docs/measurements.md, "Profiler traces").
///
/// The format, as Kineto writes it (pytorch/kineto, libkineto/src/output_json.cpp; the
/// PyTorch profiler documentation, https://pytorch.org/docs/stable/profiler.html):
/// - a top-level object with "schemaVersion", "deviceProperties" (one object per GPU: "id",
///   "name", "totalGlobalMem", "computeMajor", ...), optional "distributedInfo" ("rank",
///   "world_size"), and "traceEvents";
/// - events `ph: "X"` with "cat", "name", "pid", "tid", "ts" and "dur" in microseconds (three
///   decimals: nanoseconds), and "args";
/// - "cpu_op" events: the ATen ops, with args "External id" (their correlation id) and, when
///   recorded with `record_shapes=True`, "Input Dims", "Input type", "Input Strides" and
///   "Concrete Inputs" (one entry per input); ops that autograd records carry "Sequence
///   number", matched by the backward node of the same number ("MmBackward0");
/// - "user_annotation": `record_function` ranges, among them "ProfilerStep#N" per
///   `prof.step()`; "python_function": Python frames ("nn.Module: Block_3") with `with_stack`;
/// - "cuda_runtime" / "cuda_driver": the launch calls (cudaLaunchKernel, cuLaunchKernel), args
///   "correlation" and "External id" (the op they ran in);
/// - "kernel", "gpu_memcpy", "gpu_memset": GPU activity on pid = device, tid = stream, args
///   "device", "stream", "correlation" (the launch call's), "External id", "grid", "block";
///   memcpy and memset add "bytes"; NCCL kernels launched by "record_param_comms" get its
///   "Collective name", "In msg nelems", "Out msg nelems", "Group size" and "dtype";
/// - flow events `ph: "s"` / `"f"`, category "ac2g", id = the correlation, link a launch to
///   its kernel (the importer reads the correlation from the args instead).
///
/// What the importer makes of it: each kernel gets the chain of CPU ranges around its launch
/// call (nesting on the launching thread), which gives its op (the innermost ATen op with
/// shapes), its class (KernelClass), its phase (inside a "...Backward" node: backward; an
/// "Optimizer.step": optimizer; else forward), its layer (the nearest range whose name ends in
/// a layer number, "layer3", "layers.3", "h.3", "block_3"; in backward, the layer of the
/// forward op with the same sequence number), and its profiler step (the ProfilerStep# range
/// around its launch).
///
/// Untrusted input: the parser streams (nlohmann-json SAX) and keeps only what it uses;
/// nesting deeper than 64 or a decompressed size over 8 GiB is refused; no input crashes it.
/// Every error names the file and says what is missing and how to record it.

#include "calibrate/import.h"
#include "calibrate/measurements.h"
#include "config/bounded_read.h"
#include "sim/time.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate {

/// True when `text` (the file's first bytes suffice) looks like a Chrome trace-event JSON
/// object ("traceEvents" or "schemaVersion" near the start), or is gzip-compressed.
bool looks_like_trace(std::string_view text);
/// True when `data` starts with the gzip magic bytes.
bool is_gzip(std::string_view data);
/// The decompressed bytes of a gzip file. Throws InputError (naming `name`) when the data is
/// truncated or corrupt, or inflates to more than `max_bytes` (by default what an input file
/// may hold, config::kMaxTraceFileBytes: a 1 MB file can inflate to 1 GB).
/// Data after the first gzip member is ignored, with a warning in `warnings` when given.
std::string gunzip(std::string_view data, const std::string& name,
                   std::uint64_t max_bytes = config::kMaxTraceFileBytes,
                   std::vector<std::string>* warnings = nullptr);

/// One GPU kernel (or copy) of a trace.
struct TracedKernel {
    sim::Time start; ///< from the trace's time origin
    sim::Time duration;
    int device = 0;
    int stream = 0;
    KernelClass kernel_class = KernelClass::other;
    int name = 0; ///< index into KinetoTrace::names: the kernel's short name
    int op = -1;  ///< index into KinetoTrace::names: the op; -1 none
    int layer = -1;
    int phase = 0; ///< 0 unknown, 1 forward, 2 backward, 3 optimizer
    int step = -1; ///< index into KinetoTrace::steps; -1: outside every profiler step
};

/// A profiler step: the ProfilerStep#N range on the CPU.
struct TracedStep {
    std::string name;
    sim::Time start;
    sim::Time end;
};

/// A PyTorch profiler trace, read.
struct KinetoTrace {
    ImportResult imported;             ///< the measurements and warnings
    std::vector<TracedKernel> kernels; ///< in start-time order
    std::vector<std::string> names;
    std::vector<TracedStep> steps;
};

/// "forward", "backward", "optimizer" or "" for TracedKernel::phase.
std::string_view phase_name(int phase);

/// Reads a trace's JSON text (decompressed). `name` (the path) names errors and sources.
/// `options.device` names the GPU when the trace does not; `options.step_settings` describe
/// the model, which turns the traced step into a StepMeasurement. Throws InputError.
KinetoTrace read_kineto_trace(std::string_view text, const std::string& name,
                              const ImportOptions& options);

/// The importer: read_kineto_trace's measurements.
ImportResult import_kineto(std::string_view text, const std::string& name,
                           const ImportOptions& options);

} // namespace clustersim::calibrate
