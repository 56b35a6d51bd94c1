// libFuzzer target: an experiment file either loads into a valid ExperimentSpec (and, when
// small enough, simulates one step in closed form) or fails with an InputError; nothing else
// may escape. Presets (`hardware: dgx-a100`, `model: gpt3-175B`) resolve as in the CLI.
#include "base/error.h"
#include "config/yaml_map.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/experiment_reader.h"
#include "strategies/parallel/training_step.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    using namespace clustersim;
    namespace sp = strategies::parallel;
    try {
        YAML::Node doc = config::parse_yaml(text, "fuzz.yaml");
        if (!doc.IsMap())
            return 0;
        sp::ExperimentSpec e = sp::detail::read_experiment_document(doc, "fuzz.yaml");
        sp::validate_experiment(e);
        // Small enough to simulate quickly: the step must come out without an internal error.
        if (e.gpus <= 64 && e.model.layers <= 64 && e.micro_batches() <= 64)
            (void)sp::simulate_step(e, {});
    } catch (const InputError&) {
    }
    return 0;
}
