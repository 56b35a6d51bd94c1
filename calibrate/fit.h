#pragma once
/// \file
/// Fitting a hardware description to measurements (`clustersim calibrate fit`). Each kind of
/// measurement tunes the parameters it determines, in this order (later parts use the earlier
/// results):
///
/// | data | parameters | method |
/// |---|---|---|
/// | launches (`gpu_back_to_back`) | compute.launch_overhead | median |
/// | device-to-device copies | compute.memory.efficiency, half_efficiency_bytes | Huber |
/// | GEMMs | compute.gemm.efficiency.<dtype> (each dtype measured), half_efficiency_flops | Huber |
/// | collectives | collectives.launch_latency, memory_passes; per link level measured (nvlink,
/// pcie, network) the Simple efficiency and step latency, LL and LL128 keeping BASE's ratios to
/// Simple (their line formats); NVLS latency and efficiency from points measured with algorithm
/// nvls | Huber | | training steps | the framework fields of `framework_fields()` | MAPE |
///
/// "Huber": robust least squares of the residual measured/predicted - 1 (for collectives the
/// nccl-tests busbw residual: predicted busbw / measured busbw - 1 is the same number), Huber
/// loss with delta `FitOptions::huber_delta` (quadratic within, linear beyond, so the few points
/// at a protocol switch do not pull the whole curve); each collective curve (file, op, GPUs,
/// dtype, in-place, algorithm) weighs the same however many sizes it has. "MAPE": the mean
/// absolute percentage error of the step times. Both are minimised over the parameters' bounds
/// by Nelder-Mead (calibrate/minimize.h), deterministic.
///
/// What the data determine: before minimising, each part computes how every parameter moves
/// the predictions (finite differences at BASE) and keeps, in the order listed, those whose
/// effect is not (nearly) a combination of the ones already kept: with one GPU count, a link's
/// step latency is indistinguishable from the launch latency and is not fitted; with no
/// pipeline-parallel steps, p2p_overhead moves nothing and is not fitted. A part with fewer
/// points than its parameters plus two, or with one size only where sizes matter, fits
/// nothing. Every such decision is a note in the result (and a comment in the file).

#include "calibrate/measurements.h"
#include "calibrate/minimize.h"
#include "calibrate/validation.h"
#include "hardware/specs.h"
#include "strategies/collectives/collective.h"
#include "strategies/parallel/platform.h"

#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate {

/// A measurement file and the name (path) it is reported under.
struct NamedMeasurements {
    std::string name;
    MeasurementFile file;
};

/// One field of strategies::parallel::FrameworkSpec the step fit may tune. Adding a field to
/// FrameworkSpec that steps should calibrate means adding one row to this table.
struct FrameworkField {
    std::string_view key;   ///< under `framework:`, e.g. "host_overhead"
    bool is_time = false;   ///< a duration (seconds here, written as "12.3us"), else a number
    ParameterBounds bounds; ///< in seconds for durations
    double (*get)(const strategies::parallel::FrameworkSpec&) = nullptr;
    void (*set)(strategies::parallel::FrameworkSpec&, double) = nullptr;
};
/// The fittable framework fields, in priority order.
const std::vector<FrameworkField>& framework_fields();

struct FitOptions {
    double huber_delta = 0.05; ///< of the relative residual
    MinimizeOptions minimize{};
    /// Framework fields the step fit may tune (keys of framework_fields()); empty: all.
    std::vector<std::string> step_fields;
    strategies::collectives::Fidelity step_fidelity = strategies::collectives::Fidelity::analytic;
    /// Flow fidelity: identical flows left to one representative; false: every flow.
    bool step_flow_symmetry = true;
    /// Measurements to compute the uncertainty bands on (held out from the fit). Empty: the
    /// fit's own points (in-sample).
    std::vector<NamedMeasurements> holdout;
};

/// What one part of the fit did.
struct FitPart {
    std::string name;               ///< "launches", "copies", "gemms", "collectives", "steps"
    std::vector<std::string> files; ///< files its points came from
    int points = 0;
    bool fitted = false;            ///< at least one value written
    ErrorStats before;              ///< |predicted/measured - 1| with BASE's values
    ErrorStats after;               ///< ... with the fitted values
    std::string method;             ///< "median", "huber-nelder-mead", "mape-nelder-mead"
    std::vector<std::string> notes; ///< what was not fitted and why
};

struct FitResult {
    strategies::parallel::Platform fitted; ///< BASE with every fitted value (as written, rounded)
    /// One record per written key, in the order written.
    std::vector<strategies::parallel::CalibrationRecord> records;
    std::vector<FitPart> parts;
    std::vector<std::string> warnings; ///< unknown devices, skipped points
    strategies::parallel::Uncertainty uncertainty;
    std::vector<std::string> uncertainty_files; ///< what the bands were computed on
};

/// Fits `base` to `inputs`. Throws InputError (naming the file) for measurements of another
/// GPU, duplicate points across files, no points at all, or when nothing can be determined.
FitResult fit_hardware(const strategies::parallel::Platform& base,
                       const std::vector<NamedMeasurements>& inputs,
                       const FitOptions& options = {});

/// The fitted hardware file: `extends: <extends>`, `name: <name>`, the fitted keys with a
/// comment each, `calibration:` and `uncertainty:`. Deterministic (no dates, no paths beyond
/// the names given).
std::string format_fitted_hardware(const FitResult& result, const std::string& extends,
                                   const std::string& name);

} // namespace clustersim::calibrate
