#pragma once
/// \file
/// The memory model against measured peaks (data/reference/memory/measured-peak-memory.yaml:
/// torchtitan's Llama 3.1 runs on 8-512 H100s and a Trainy H200 run, torchtune's single-GPU
/// table, Hugging Face's BERT-large guide), the numbers of docs/validation.md's section
/// "Memory" (app/report_memory.h words them).
///
/// Each row becomes an experiment built from its own fields, with one rule per framework for
/// what a source does not state (memory_rules()), and is compared on the statistic the source
/// printed: the caching allocator's reserved peak (StageMemory::reserved_bytes), its active
/// peak (active_bytes.all.peak: blocks handed out, the allocated peak, peak_bytes) or the
/// device's used memory (nvidia-smi: device_bytes). A row needing what the model does not have
/// is listed with what it needs.

#include "calibrate/error_stats.h"
#include "strategies/parallel/training_step.h"

#include <string>
#include <utility>
#include <vector>

namespace clustersim::validation {

/// Which statistic a source printed.
enum class MemoryStatistic : std::uint8_t {
    reserved,   ///< torch.cuda.max_memory_reserved (torchtitan's "Memory(GiB)")
    active,     ///< memory_stats()["active_bytes.all.peak"] (torchtune's "Peak Memory Active")
    device_used ///< NVML / nvidia-smi "used" (Hugging Face's guide)
};

struct MemoryRun {
    std::string id;        ///< the file's row id
    std::string model;     ///< "Llama 3.1 8B"
    std::string framework; ///< as the file names it
    std::string preset;    ///< the hardware preset it runs on
    std::string where;     ///< file:line of the row
    MemoryStatistic statistic = MemoryStatistic::reserved;
    int gpus = 0, tp = 1, pp = 1, cp = 1, dp = 1;
    std::string recompute = "none";
    std::vector<std::string> features; ///< "FSDP2", "Float8", "cp 2", ...
    std::vector<std::pair<std::string, std::string>> settings;
    std::string not_modelled; ///< empty when predicted; else "needs ..."
    double measured_gib = 0;
    double predicted_gib = 0;
    strategies::parallel::StepResult step;

    bool ran() const { return not_modelled.empty(); }
    double error() const { return predicted_gib / measured_gib - 1; }
};

/// Every row of memory/measured-peak-memory.yaml under `data_dir`, each predicted or marked not
/// modelled. Throws InputError naming the file, line and key for a malformed row.
std::vector<MemoryRun> memory_runs(const std::string& data_dir);

/// The errors of the rows that ran.
calibrate::ErrorStats memory_errors(const std::vector<MemoryRun>& runs);

/// "peak reserved", "peak active", "nvidia-smi used".
const char* to_string(MemoryStatistic s);

/// The rules for what the sources do not state, one sentence each, for the report.
std::vector<std::string> memory_rules();

} // namespace clustersim::validation
