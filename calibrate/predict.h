#pragma once
/// \file
/// Predictions of measured points: what the simulator says a measurement should have been on a
/// given hardware description. `validate` compares these with the measurements, `fit` tunes
/// the hardware file to bring them closer, and the validation reports (validation/accuracy_*.h)
/// predict through the same functions: one predictor of collectives and one of steps.

#include "calibrate/measurements.h"
#include "strategies/collectives/collective.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace clustersim::calibrate {

/// The experiment a measured training step describes, on `platform` (sized to its GPUs).
/// Throws InputError when the step's settings do not make a valid experiment.
strategies::parallel::ExperimentSpec step_experiment(const strategies::parallel::Platform& platform,
                                                     const StepMeasurement& step);

/// Predicted seconds of a measured training step.
double predict_step(
    const strategies::parallel::Platform& platform, const StepMeasurement& step,
    strategies::collectives::Fidelity fidelity = strategies::collectives::Fidelity::analytic,
    bool flow_symmetry = true);

/// Predicts collectives on one hardware description, caching a topology per GPU count.
class CollectivePredictor {
public:
    explicit CollectivePredictor(const hardware::ClusterSpec& cluster);
    ~CollectivePredictor();
    CollectivePredictor(const CollectivePredictor&) = delete;
    CollectivePredictor& operator=(const CollectivePredictor&) = delete;

    struct Result {
        double seconds = 0;
        std::string detail; ///< "ring/Simple"
        /// Latency- or bandwidth-bound (strategies/parallel/collective_regime.h).
        std::optional<strategies::parallel::MessageRegime> regime;
    };
    /// Throws InputError when the point cannot run on the model (dtype, size, algorithm).
    Result predict(const CollectiveMeasurement& c);
    /// The link level a collective of `gpus` GPUs is limited by on this hardware.
    hardware::LinkLevel level(int gpus) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace clustersim::calibrate
