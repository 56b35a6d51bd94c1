#include "app/report_data.h"

namespace clustersim::app {

namespace {

template <class T, class Study>
const T& once(std::optional<T>& slot, Study&& study) {
    if (!slot)
        slot.emplace(study());
    return *slot;
}

} // namespace

const validation::CollectiveAccuracy& ReportData::collectives() {
    return once(collectives_, [&] { return validation::collective_accuracy(dir_); });
}

const std::vector<validation::MultiNodeAccuracy>& ReportData::multi_node() {
    return once(multi_node_, [&] { return validation::multi_node_accuracy(dir_); });
}

const validation::GemmAccuracy& ReportData::gemm() {
    return once(gemm_, [&] { return validation::gemm_accuracy(dir_); });
}

const validation::StepAccuracy& ReportData::steps() {
    return once(steps_, [&] { return validation::step_accuracy(dir_); });
}

const std::vector<validation::PublishedRun>& ReportData::narayanan2021() {
    return once(narayanan2021_, [&] { return validation::narayanan2021_runs(dir_); });
}

const std::vector<validation::PublishedRun>& ReportData::megatron2020() {
    return once(megatron2020_, [&] { return validation::megatron2020_runs(dir_); });
}

const std::vector<validation::MemoryRun>& ReportData::memory() {
    return once(memory_, [&] { return validation::memory_runs(dir_); });
}

const std::vector<validation::RecentRun>& ReportData::recent() {
    return once(recent_, [&] { return validation::recent_runs(dir_); });
}

const std::vector<validation::NewHardwareRun>& ReportData::new_hardware() {
    return once(new_hardware_, [&] { return validation::new_hardware_runs(dir_); });
}

} // namespace clustersim::app
