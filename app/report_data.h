#pragma once
/// \file
/// The studies of validation/ over one folder of reference measurements, each run once, when
/// a section of docs/validation.md first asks for it: the sections and the summary at the top
/// read the same numbers, and no study runs twice (two sections read the published runs).

#include "validation/accuracy_collectives.h"
#include "validation/accuracy_gemm.h"
#include "validation/accuracy_memory.h"
#include "validation/accuracy_new_hardware.h"
#include "validation/accuracy_published.h"
#include "validation/accuracy_recent.h"
#include "validation/accuracy_steps.h"

#include <optional>
#include <string>
#include <vector>

namespace clustersim::app {

class ReportData {
public:
    explicit ReportData(std::string data_dir)
        : dir_(std::move(data_dir)) {}

    const std::string& dir() const { return dir_; }
    const validation::CollectiveAccuracy& collectives();
    const std::vector<validation::MultiNodeAccuracy>& multi_node();
    const validation::GemmAccuracy& gemm();
    const validation::StepAccuracy& steps();
    const std::vector<validation::PublishedRun>& narayanan2021();
    const std::vector<validation::PublishedRun>& megatron2020();
    const std::vector<validation::RecentRun>& recent();
    const std::vector<validation::NewHardwareRun>& new_hardware();
    const std::vector<validation::MemoryRun>& memory();

private:
    std::string dir_;
    std::optional<validation::CollectiveAccuracy> collectives_;
    std::optional<std::vector<validation::MultiNodeAccuracy>> multi_node_;
    std::optional<validation::GemmAccuracy> gemm_;
    std::optional<validation::StepAccuracy> steps_;
    std::optional<std::vector<validation::PublishedRun>> narayanan2021_;
    std::optional<std::vector<validation::PublishedRun>> megatron2020_;
    std::optional<std::vector<validation::RecentRun>> recent_;
    std::optional<std::vector<validation::NewHardwareRun>> new_hardware_;
    std::optional<std::vector<validation::MemoryRun>> memory_;
};

} // namespace clustersim::app
