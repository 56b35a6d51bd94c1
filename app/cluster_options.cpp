#include "app/cluster_options.h"

#include "base/error.h"
#include "base/text.h"
#include "explore/thread_pool.h"
#include "hardware/hardware_loader.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <limits>
#include <utility>

namespace clustersim::app {

void ClusterOptions::add_to(CLI::App& cmd, bool positional) {
    if (positional)
        cmd.add_option("hardware", hardware,
                       "Hardware preset (dgx-a100, dgx-h100, ...) or YAML file")
            ->required();
    else
        cmd.add_option("--hardware,-H", hardware,
                       "Hardware preset (dgx-a100, dgx-h100, hgx-h200, pcie-4gpu) or YAML file")
            ->required();
    cmd.add_option("--gpus,-g", gpus,
                   "GPUs in the cluster; enough nodes of the preset are joined by its network")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                // CLI::PositiveNumber would print its range up to 1.8e308 in 309 digits.
                long long v = 0;
                const char* end = text.data() + text.size();
                const auto [ptr, ec] = std::from_chars(text.data(), end, v);
                if (ec != std::errc() || ptr != end || v < 1 || v > std::numeric_limits<int>::max())
                    return "expected a GPU count of at least 1, got '" + base::excerpt(text) + "'";
                return {};
            },
            "GPUS >= 1"));
    cmd.add_option("--slice", slice,
                   "TPU slice shape, like 4x4x8 (a torus preset: tpu-v5p, ...); with --gpus, "
                   "that many devices in slices of this shape joined over the DCN");
}

namespace {
/// --slice and --gpus on a spec: slices of the shape, or the cluster sized to the count.
hardware::ClusterSpec sized(hardware::ClusterSpec spec, const std::string& slice, int gpus) {
    if (!slice.empty()) {
        const hardware::TorusShape shape = hardware::parse_slice(spec.torus, slice, "--slice");
        return hardware::with_slice(std::move(spec), shape, gpus);
    }
    return gpus > 0 ? hardware::with_gpu_count(std::move(spec), gpus) : spec;
}
} // namespace

hardware::ClusterSpec ClusterOptions::load() const {
    return sized(hardware::load_hardware(hardware), slice, gpus);
}

strategies::parallel::Platform ClusterOptions::load_platform() const {
    strategies::parallel::Platform p = strategies::parallel::load_platform(hardware);
    p.cluster = sized(std::move(p.cluster), slice, gpus);
    return p;
}

void ExperimentOptions::add_to(CLI::App& cmd, const std::string& set_help, bool with_jobs) {
    cmd.add_option("--set", sets, set_help);
    add_fidelity_option(cmd, fidelity);
    if (with_jobs)
        cmd.add_option("--jobs", jobs, "Threads (default: every core)");
}

strategies::parallel::Settings ExperimentOptions::overrides() const {
    strategies::parallel::Settings out;
    for (const auto& s : sets)
        out.push_back(strategies::parallel::parse_override(s));
    return out;
}

strategies::parallel::StepOptions ExperimentOptions::step_options() const {
    return step_options_of(fidelity);
}

strategies::parallel::StepOptions step_options_of(const std::string& fidelity) {
    const auto choice = strategies::collectives::parse_fidelity(fidelity);
    if (!choice) // CLI::IsMember refused it already; a caller that skipped it is told the same
        throw InputError("--fidelity: expected analytic, flow or flow-full, got '" + fidelity +
                         "'");
    strategies::parallel::StepOptions o;
    o.fidelity = choice->fidelity;
    o.flow_symmetry = choice->symmetry;
    return o;
}

explore::EvalOptions ExperimentOptions::eval_options() const {
    const strategies::parallel::StepOptions so = step_options();
    explore::EvalOptions eo;
    eo.fidelity = so.fidelity;
    eo.flow_symmetry = so.flow_symmetry;
    return eo;
}

int ExperimentOptions::threads() const {
    if (jobs < 0)
        throw InputError("--jobs: expected a positive number of threads, got " +
                         std::to_string(jobs));
    return jobs > 0 ? jobs : explore::default_jobs();
}

CLI::Option* add_fidelity_option(CLI::App& cmd, std::string& fidelity, const std::string& what) {
    return cmd
        .add_option("--fidelity", fidelity,
                    what + "analytic (closed forms), flow (network contention; identical flows "
                           "by symmetry, exact) or flow-full (every flow simulated)")
        ->check(
            CLI::IsMember(std::vector<std::string>(strategies::collectives::kFidelityNames.begin(),
                                                   strategies::collectives::kFidelityNames.end())))
        ->capture_default_str();
}

} // namespace clustersim::app
