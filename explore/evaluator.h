#pragma once
/// \file
/// Builds and simulates one configuration of an experiment file. A sweep evaluates thousands
/// of configurations that share a handful of clusters, so the Evaluator keeps one
/// StepSimulator (the cluster's graph and its communicators) per cluster, built once on first
/// use and shared by every thread; the key is the settings that re-read the hardware
/// (strategies::parallel::is_heavy_key). An invalid configuration is an Outcome, not an error:
/// a sweep reports it as a row.

#include "strategies/parallel/experiment_variants.h"
#include "strategies/parallel/step_simulator.h"
#include "strategies/parallel/training_step.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace clustersim::explore {

using strategies::parallel::ExperimentSpec;
using strategies::parallel::ExperimentVariants;
using strategies::parallel::Settings;
using strategies::parallel::StepResult;

/// How every configuration is built and simulated.
struct EvalOptions {
    int gpus = 0;                ///< 0: the experiment's (or the configuration's `gpus`)
    std::int64_t max_memory = 0; ///< bytes per GPU; 0: the GPU's HBM
    bool derive_dp = false;      ///< dp = gpus / (tp x pp) in every configuration
    strategies::parallel::Fidelity fidelity = strategies::parallel::Fidelity::analytic;
    /// Flow fidelity: identical flows left to one representative (StepOptions::flow_symmetry);
    /// false: every flow simulated (`--fidelity flow-full`).
    bool flow_symmetry = true;
};

/// What one configuration gave: a step, or the reason it cannot run.
struct Outcome {
    bool valid = false;
    std::string reason; ///< when invalid: validation's message, without the file name
    int gpus = 0, tp = 0, pp = 0, dp = 0, cp = 0, micro_batch = 0, micro_batches = 0,
        virtual_stages = 0, zero = 0;
    strategies::parallel::PipelineSchedule schedule{};
    strategies::parallel::RecomputePolicy recompute{};
    StepResult result;
};

/// The scratch simulating `e` holds while it runs, estimated from its passes: the step keeps
/// every pass of every pipeline stage in its order and its timing (and the critical rank's in
/// its execution), about 48 bytes a pass (scripts/measure-sweep-memory.sh: 33.5 MB of heap for
/// the 705,600 passes of Turing-530B on pp 105 with 3,360 micro-batches; 150 bytes when a
/// pass's time and record were larger).
std::int64_t step_scratch_bytes(const ExperimentSpec& e);

/// Tunes the C library's allocator, once per process, to keep freed memory rather than give it
/// back to the system after every configuration (see evaluator.cpp: the page faults cost more
/// than the simulations). Evaluator's constructor calls it.
void keep_freed_memory();

/// Builds and simulates configurations of one experiment file. Thread-safe.
class Evaluator {
public:
    Evaluator(const ExperimentVariants& variants, EvalOptions options);
    ~Evaluator();
    const EvalOptions& options() const { return options_; }

    /// The experiment of `overrides` (with --gpus, derived dp and --max-memory applied),
    /// validated. Throws InputError with the reason it cannot run.
    ExperimentSpec experiment(const Settings& overrides) const;
    /// Reads, validates and simulates; never throws InputError (an invalid configuration is an
    /// outcome).
    Outcome evaluate(const Settings& overrides) const;
    /// step_scratch_bytes of the configuration; 0 when it cannot run (its row is a reason).
    std::int64_t scratch(const Settings& overrides) const;

private:
    Settings with_gpus(const Settings& overrides) const;
    /// experiment() before validate_experiment.
    ExperimentSpec unvalidated(const Settings& overrides) const;
    const strategies::parallel::StepSimulator& simulator(const Settings& overrides,
                                                         const ExperimentSpec& e) const;

    const ExperimentVariants& variants_;
    EvalOptions options_;
    struct Slot;
    mutable std::shared_mutex mutex_; ///< guards the map; a cluster builds under its own once
    mutable std::map<Settings, std::shared_ptr<Slot>> simulators_;
};

/// Evaluates every configuration of `configs` on `jobs` threads; the outcomes in the same order.
std::vector<Outcome> evaluate_all(const Evaluator& evaluator, const std::vector<Settings>& configs,
                                  int jobs);

} // namespace clustersim::explore
