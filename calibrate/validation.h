#pragma once
/// \file
/// Validation: what a hardware description predicts for every measured point, and how far that
/// is from what was measured. `clustersim validate` prints it; `calibrate fit` uses the same
/// predictions for its residuals and the `uncertainty:` section of a fitted file.
///
/// What each kind is predicted with:
/// - collectives: Communicator::choose over the first `gpus` GPUs of the hardware sized to
///   the point's GPU count (the measured algorithm when the point names one the model has);
/// - GEMMs: the kernel cost model (hardware/compute_model.h);
/// - copies: device-to-device copies as a memory-bound kernel moving 2 x bytes (read and
///   write); peer copies as a transfer on the hardware graph; host copies are not modelled;
/// - point-to-point: an NCCL send/recv between the two GPUs;
/// - launches: `gpu_back_to_back` against compute.launch_overhead (the other methods measure
///   host-side costs the kernel model does not have);
/// - steps: predict_step (calibrate/predict.h).
/// A point that cannot be predicted is skipped with a note saying what and why; nothing is
/// dropped silently.

#include "calibrate/error_stats.h"
#include "calibrate/measurements.h"
#include "calibrate/predict.h"
#include "hardware/specs.h"
#include "strategies/collectives/collective.h"
#include "strategies/parallel/platform.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate {

/// The kinds of measured points, in the order reports list them.
enum class PointKind : std::uint8_t { collective, gemm, copy, p2p, launch, step };
inline constexpr int kPointKindCount = 6;
inline constexpr PointKind kAllPointKinds[] = {PointKind::collective, PointKind::gemm,
                                               PointKind::copy,       PointKind::p2p,
                                               PointKind::launch,     PointKind::step};
/// "collectives", "gemms", "copies", "p2p", "launches", "steps" (the measurement file's keys).
std::string_view to_string(PointKind kind);

/// One measured point and its prediction.
struct PredictedPoint {
    PointKind kind = PointKind::collective;
    std::size_t index = 0; ///< position in its list of the measurement file
    std::string label;     ///< "all_reduce 4 GPUs 1 MiB fp32", "gemm 4096x4096x4096 fp16 TN"
    std::string source;    ///< "file:line" the point was imported from, else "M.json:kind[i]"
    std::string detail;    ///< what the prediction ran ("ring/Simple"); may be empty
    double measured_s = 0;
    double predicted_s = 0;
    int gpus = 0; ///< collectives: the GPU count
    /// collectives: latency- or bandwidth-bound (strategies/parallel/collective_regime.h)
    std::optional<strategies::parallel::MessageRegime> regime;
    /// predicted / measured - 1: the error a validation table reports.
    double error() const { return predicted_s / measured_s - 1; }
    /// measured / predicted - 1: the residual an uncertainty band is made of.
    double residual() const { return measured_s / predicted_s - 1; }
};

/// p-quantile (0 <= p <= 1) by linear interpolation between order statistics (Hyndman and
/// Fan's type 7, numpy's default). `values` need not be sorted; empty gives 0.
double quantile(std::vector<double> values, double p);
/// p10, p50, p90 and the count of measured / predicted - 1.
strategies::parallel::ResidualBand residual_band(const std::vector<double>& residuals);

struct ValidationOptions {
    /// Collectives smaller than this are skipped (counted in the notes).
    std::int64_t min_collective_bytes = 0;
    strategies::collectives::Fidelity fidelity = strategies::collectives::Fidelity::analytic;
    /// Flow fidelity: identical flows left to one representative; false: every flow.
    bool flow_symmetry = true;
    /// Kinds to predict; empty: all.
    std::vector<PointKind> kinds;
};

struct Validation {
    std::vector<PredictedPoint> points; ///< in file order, kind by kind
    std::vector<std::string> skipped;   ///< one line per skipped group: what and why

    /// The points of one kind.
    std::vector<const PredictedPoint*> of(PointKind kind) const;
    /// Error statistics of one kind (points = 0 when there are none).
    ErrorStats error_stats(PointKind kind) const;
};

/// Empty when a file measured on `device` (as the driver names it, "NVIDIA A100-SXM4-80GB")
/// can calibrate the GPU of `gpu_name` (a hardware file's gpu.name, "A100-SXM4-80GB"); else
/// why not. Compared: the model (A100, H100, ...), and the memory size and form factor (SXM,
/// PCIe, NVL) where both names give them.
std::string device_mismatch(std::string_view device, std::string_view gpu_name);

/// Throws InputError naming `name` when the file's device is another GPU than the cluster's;
/// returns a warning when the device is unknown (the points are assumed to be of it).
std::optional<std::string> check_device(const hardware::ClusterSpec& cluster,
                                        const MeasurementFile& file, const std::string& name);

/// Predicts every point of `file` on `platform`. `name` (the file's path) names points without
/// a source. Throws InputError only for a hardware description that cannot predict at all.
Validation validate_measurements(const strategies::parallel::Platform& platform,
                                 const MeasurementFile& file, const std::string& name,
                                 const ValidationOptions& options = {});

/// The label validation gives a point.
std::string point_label(const CollectiveMeasurement& c);
std::string point_label(const GemmMeasurement& g);
std::string point_label(const StepMeasurement& s);

} // namespace clustersim::calibrate
