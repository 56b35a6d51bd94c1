#pragma once
/// \file
/// A sweep checked before anything runs, as `clustersim sweep` and the Python module's sweep()
/// both need it: the axes against the experiment's keys, every value read once (a value of the
/// wrong type is the user's mistake, not an invalid configuration), dp derived where the split
/// or the GPU count varies and dp does not, and at least one configuration that can run. Throws
/// InputError with the command's flag names (`--vary`, `--gpus`).

#include "explore/evaluator.h"
#include "explore/grid.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace clustersim::explore {

/// What to sweep.
struct SweepRequest {
    std::string experiment;      ///< the experiment file
    std::vector<Axis> axes;      ///< the varied keys, each once
    Settings fixed;              ///< keys fixed in every configuration (`--set`)
    int gpus = 0;                ///< 0: the experiment's (or a varied `gpus`)
    std::int64_t max_memory = 0; ///< bytes per GPU; 0: the GPU's HBM
    strategies::parallel::Fidelity fidelity = strategies::parallel::Fidelity::analytic;
    bool flow_symmetry = true; ///< flow fidelity: identical flows by one representative
    /// More configurations than this are refused before anything is read or simulated
    /// (`--max-configurations`).
    std::int64_t max_configurations = kDefaultMaxConfigurations;
};

/// The request checked, with the evaluator and the grid of its configurations.
class SweepSetup {
public:
    explicit SweepSetup(const SweepRequest& request);
    ~SweepSetup();
    SweepSetup(const SweepSetup&) = delete;
    SweepSetup& operator=(const SweepSetup&) = delete;

    const SweepRequest& request() const { return request_; }
    const ExperimentVariants& variants() const { return *variants_; }
    const Evaluator& evaluator() const { return *evaluator_; }
    const Grid& grid() const { return *grid_; }
    /// dp follows the GPUs (gpus / (tp x pp x cp)) in every configuration.
    bool derives_dp() const { return evaluator_->options().derive_dp; }
    /// The CSV's columns: "config", the varied keys, result_columns().
    std::vector<std::string> columns() const;
    /// Configuration `index` as its CSV row (explore/sweep_row.h).
    std::string row(std::int64_t index) const;

private:
    SweepRequest request_;
    std::unique_ptr<ExperimentVariants> variants_;
    std::unique_ptr<Evaluator> evaluator_;
    std::unique_ptr<Grid> grid_;
};

} // namespace clustersim::explore
