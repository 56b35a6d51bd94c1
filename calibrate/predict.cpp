#include "calibrate/predict.h"

#include "strategies/parallel/training_step.h"

namespace clustersim::calibrate {

strategies::parallel::ExperimentSpec step_experiment(const strategies::parallel::Platform& platform,
                                                     const StepMeasurement& step) {
    std::vector<std::pair<std::string, std::string>> settings;
    for (const auto& o : step.overrides())
        settings.push_back(strategies::parallel::parse_override(o));
    return strategies::parallel::make_experiment(platform, step.gpus, settings,
                                                 step.source.empty() ? "step" : step.source);
}

double predict_step(const strategies::parallel::Platform& platform, const StepMeasurement& step,
                    strategies::collectives::Fidelity fidelity) {
    const auto e = step_experiment(platform, step);
    strategies::parallel::StepOptions o;
    o.fidelity = fidelity;
    o.oom_advice = false;
    return strategies::parallel::simulate_step(e, o).step_time_s;
}

std::string skip_reason(std::string_view what, std::string_view source) {
    if (!source.empty() && what.size() > source.size() + 2 &&
        what.substr(0, source.size()) == source && what.substr(source.size(), 2) == ": ")
        what.remove_prefix(source.size() + 2);
    return std::string(what);
}

} // namespace clustersim::calibrate
