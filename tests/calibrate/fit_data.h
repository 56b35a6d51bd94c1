#pragma once
// The reference measurements the fit tests use, imported as `clustersim calibrate import`
// imports them (docs/measurements.md), once per test run.
#include "calibrate/fit.h"
#include "calibrate/import.h"

#include <map>
#include <string>
#include <vector>

namespace clustersim::calibrate::testing {

inline const std::string kData = CLUSTERSIM_SOURCE_DIR "/data/reference";
inline const std::string kA100 = "NVIDIA A100-SXM4-80GB";

/// One of data/reference/a100-node/nccl-all-reduce-{2,4,8}gpu.csv.
inline const MeasurementFile& a100_all_reduce(int gpus) {
    static std::map<int, MeasurementFile> cache;
    auto it = cache.find(gpus);
    if (it == cache.end()) {
        ImportOptions o;
        o.device = kA100;
        const auto r = import_files(
            {kData + "/a100-node/nccl-all-reduce-" + std::to_string(gpus) + "gpu.csv"}, o);
        it = cache.emplace(gpus, r.measurements).first;
    }
    return it->second;
}

/// data/reference/a100-node/megatron-steps-single-node.csv with the conditions its header
/// states, on the stack that ran it (Megatron-DeepSpeed: framework_profile.h).
inline const MeasurementFile& megatron_steps() {
    static const MeasurementFile steps = [] {
        ImportOptions o;
        o.device = kA100;
        o.step_settings = {"training.framework=megatron-deepspeed",
                           "model.vocab=50257",
                           "training.dtype=fp16",
                           "parallel.recompute=full",
                           "parallel.schedule=1f1b",
                           "parallel.dp_overlap=false"};
        return import_files({kData + "/a100-node/megatron-steps-single-node.csv"}, o).measurements;
    }();
    return steps;
}

} // namespace clustersim::calibrate::testing
