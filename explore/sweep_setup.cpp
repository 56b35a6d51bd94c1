// A sweep checked before it runs (explore/sweep_setup.h); the messages are the command's.
#include "explore/sweep_setup.h"

#include "base/error.h"
#include "base/text.h"
#include "explore/sweep_row.h"

#include <fmt/format.h>

#include <algorithm>

namespace clustersim::explore {

namespace sp = strategies::parallel;

SweepSetup::SweepSetup(const SweepRequest& request)
    : request_(request) {
    const auto& axes = request_.axes;
    const auto& fixed = request_.fixed;
    const int gpus = request_.gpus;
    if (axes.empty())
        throw InputError(
            "--vary: give at least one KEY=V1,V2,... (e.g. --vary parallel.tp=1,2,4,8)");
    for (std::size_t i = 0; i < axes.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (axes[j].key == axes[i].key)
                throw InputError("--vary " + axes[i].key +
                                 ": given twice; put all its values in one list");
        }
    }
    {
        // Counted before anything is read or simulated: 10^12 configurations would run
        // silently for ever (and their index list alone is terabytes).
        const Grid counted(axes);
        std::vector<std::string> sizes;
        for (const Axis& a : axes)
            sizes.push_back(fmt::format("{} {}", a.values.size(), a.key));
        check_configuration_count(counted.size(), request_.max_configurations,
                                  base::join(sizes, " x "), "--max-configurations");
    }
    if (gpus < 0)
        throw InputError(fmt::format("--gpus: expected a GPU count of at least 1, got {}", gpus));
    variants_ = std::make_unique<ExperimentVariants>(request_.experiment, fixed);
    auto varied = [&](const char* key) {
        return std::any_of(axes.begin(), axes.end(), [&](const Axis& a) { return a.key == key; });
    };
    for (const Axis& a : axes) {
        // A key of the hardware file (hardware.framework.align_param_gather, say) is not listed:
        // that schema is the hardware loader's, nested; each value is read below, and a key
        // the loader does not know is refused there with the keys it takes.
        if (!variants_->is_key(a.key) && !a.key.starts_with("hardware."))
            throw InputError("--vary " + a.key +
                             ": unknown key; valid keys: " + base::join(variants_->keys(), ", ") +
                             ", and hardware.<key of the hardware file>");
        if (gpus > 0 && (a.key == "gpus" || a.key == "nodes"))
            throw InputError("--vary " + a.key + ": the GPU count is fixed by --gpus " +
                             std::to_string(gpus) + "; give one or the other");
    }
    const bool dp_given = varied("parallel.dp") ||
                          std::any_of(fixed.begin(), fixed.end(),
                                      [](const auto& kv) { return kv.first == "parallel.dp"; });
    EvalOptions eo;
    eo.gpus = gpus;
    eo.max_memory = request_.max_memory;
    eo.fidelity = request_.fidelity;
    eo.flow_symmetry = request_.flow_symmetry;
    // dp follows the GPUs whenever the split or the GPU count changes and dp itself does not.
    eo.derive_dp =
        !dp_given && (varied("parallel.tp") || varied("parallel.pp") || varied("parallel.cp") ||
                      varied("gpus") || varied("nodes") || gpus > 0);
    evaluator_ = std::make_unique<Evaluator>(*variants_, eo);

    // Values of the wrong type are errors of the command line, not invalid configurations.
    for (const Axis& a : axes) {
        for (const auto& v : a.values) {
            Settings s;
            if (gpus > 0)
                s.emplace_back("gpus", std::to_string(gpus));
            s.emplace_back(a.key, v);
            try {
                (void)variants_->read(s);
            } catch (const InputError& e) {
                throw InputError("--vary " + a.key + "=" + v + ": " +
                                 e.message_for(request_.experiment));
            }
        }
    }

    grid_ = std::make_unique<Grid>(axes);
    const std::int64_t configs = grid_->size();
    // A sweep in which nothing can run (a GPU count no split uses, say) is a mistake.
    std::string first_reason;
    for (std::int64_t i = 0; i < configs; ++i) {
        try {
            (void)evaluator_->experiment(grid_->settings(i));
            return;
        } catch (const InputError& e) {
            if (first_reason.empty())
                first_reason = e.message_for(request_.experiment);
        }
    }
    throw InputError(fmt::format("none of the {} configurations can run{}: the first "
                                 "fails with: {}",
                                 configs, gpus > 0 ? fmt::format(" on {} GPUs", gpus) : "",
                                 first_reason));
}

SweepSetup::~SweepSetup() = default;

std::vector<std::string> SweepSetup::columns() const {
    return csv_columns(grid_->axes());
}

std::string SweepSetup::row(std::int64_t index) const {
    return csv_row(index, grid_->values(index), evaluator_->evaluate(grid_->settings(index)));
}

} // namespace clustersim::explore
