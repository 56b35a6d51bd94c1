#pragma once
/// \file
/// The options several commands share: the `--hardware H [--gpus N]` pair (ClusterOptions), and
/// `--set`, `--fidelity` and `--jobs` of the commands that simulate an experiment
/// (ExperimentOptions).

#include "explore/evaluator.h"
#include "hardware/specs.h"
#include "strategies/parallel/experiment_variants.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/training_step.h"

#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace clustersim::app {

struct ClusterOptions {
    std::string hardware;
    int gpus = 0;      ///< 0: one node of the preset (or the file's `nodes`)
    std::string slice; ///< a TPU slice's shape ("4x4x8"); empty: the preset's, or --gpus's

    /// Adds --hardware (required unless `positional`), --gpus and --slice to `cmd`.
    void add_to(CLI::App& cmd, bool positional = false);
    /// Loads the hardware alone (hardware::load_hardware) and sizes it to `gpus` when given, in
    /// slices of `slice` when given (a TPU: hardware::with_slice).
    hardware::ClusterSpec load() const;
    /// The same with the framework and the provenance of the file (for the uncertainty band).
    strategies::parallel::Platform load_platform() const;
};

/// The options of the commands that simulate an experiment (run, sweep, scale, bubble), declared
/// and read in one place: --set KEY=VALUE (repeatable), --fidelity (analytic, flow or flow-full:
/// one parser, one value set) and --jobs. A command's options derive from it.
struct ExperimentOptions {
    std::vector<std::string> sets;
    std::string fidelity = "analytic"; ///< as given: analytic, flow or flow-full
    int jobs = 0;                      ///< threads; 0: every core

    /// Adds --set (described by `set_help`) and --fidelity to `cmd`, and --jobs with
    /// `with_jobs` (the commands that simulate many configurations).
    void add_to(CLI::App& cmd, const std::string& set_help, bool with_jobs = true);
    /// The --set overrides, parsed (KEY=VALUE).
    strategies::parallel::Settings overrides() const;
    /// The fidelity of each step, and whether flow fidelity leaves identical flows to one
    /// representative (off for flow-full).
    strategies::parallel::StepOptions step_options() const;
    /// The sweep engine's options with that fidelity (the rest at their defaults).
    explore::EvalOptions eval_options() const;
    /// Threads: --jobs, or every core; refuses a negative count.
    int threads() const;
};

/// The fidelity and flow symmetry --fidelity names (analytic, flow or flow-full).
strategies::parallel::StepOptions step_options_of(const std::string& fidelity);

/// Adds --fidelity (analytic, flow or flow-full) to `cmd`, stored in `fidelity`; `what` says
/// what it applies to ("" for the step itself).
CLI::Option* add_fidelity_option(CLI::App& cmd, std::string& fidelity,
                                 const std::string& what = "");

} // namespace clustersim::app
