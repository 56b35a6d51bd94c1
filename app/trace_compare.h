#pragma once
/// \file
/// A measured step beside the simulated one (`clustersim compare TRACE EXPERIMENT` and
/// `clustersim run EXPERIMENT --compare TRACE`): a PyTorch profiler trace
/// (calibrate/kineto.h) against the experiment that describes the same model on the same GPU.
///
/// Measured, per profiled step (means over the trace's ProfilerStep# ranges): each kernel
/// class's GPU time, the GPU's idle time (the step less the time some kernel ran: host and
/// launch overhead), the step; per layer, the forward and backward kernels' time.
/// Predicted: the same from the model of kernels (strategies/models/layer_work.h) the step
/// simulation runs, each op's time divided by the framework's gemm or memory efficiency as
/// the step model does, times the micro-batches; the layers' GEMMs are "gemm", attention
/// products and fused attention "attention", memory-bound kernels "elementwise", the
/// optimizer step "elementwise"; the idle time is the simulated step less those; the step is
/// simulate_step's. One GPU, one pipeline stage (tp = pp = 1); otherwise the per-class rows
/// are those of one rank and say so.
///
/// The Perfetto file: process 1 "measured" (the first profiled step's kernels, one thread per
/// CUDA stream, from the step's start), process 2 "predicted kernels" (the modelled kernels of
/// the step back to back on one stream), then the simulated step as `run --trace` draws it.

#include "calibrate/kineto.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace clustersim::app {

/// One row: a class, a layer or the step; seconds per step.
struct CompareRow {
    std::string name;
    double measured_s = 0;
    double predicted_s = 0;
};

struct StepComparison {
    std::string trace_name;
    std::string device;
    int steps = 0;
    std::vector<CompareRow> classes; ///< kernel classes, then "GPU idle", then "step"
    std::vector<CompareRow> layers;  ///< "layer N" (forward + backward), then "outside layers"
    std::vector<std::string> notes;
};

/// Compares; throws InputError when the trace's GPU is not the experiment's.
StepComparison compare_step(const calibrate::KinetoTrace& trace,
                            const strategies::parallel::ExperimentSpec& e,
                            const strategies::parallel::StepResult& r);

/// The table.
void print_comparison(std::ostream& out, const StepComparison& c);

/// The Perfetto/Chrome trace with both timelines.
std::string comparison_trace(const calibrate::KinetoTrace& trace,
                             const strategies::parallel::ExperimentSpec& e,
                             const strategies::parallel::StepResult& r);

/// Reads a trace file (.json or .json.gz) for comparing. Throws InputError.
calibrate::KinetoTrace read_trace_file(const std::string& path);

} // namespace clustersim::app
