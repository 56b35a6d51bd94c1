#pragma once
/// \file
/// The training-step model against recent published runs on H100 clusters
/// (data/reference/large-scale/h100-published-runs.yaml: NeMo 24.07, Megatron-Bridge and
/// torchtitan), the numbers of docs/validation.md's sections "Training steps across nodes" and
/// "Recent large runs" (app/report_recent.h words them).
///
/// Each row becomes an experiment built from the file's fields alone (model dimensions, layout,
/// batch, recompute, precision) on one preset per cluster: NeMo and Megatron-Bridge rows on
/// `dgx-superpod-h100` (DGX H100 nodes, 8x NDR), torchtitan rows on `grand-teton-h100` (H100 96 GB
/// at a 500 W cap). What a source does not state is set by one rule per framework, written in
/// recent_rules(). A row that needs what the step model does not have yet (context or expert
/// parallelism, FP8 as Transformer Engine runs it, a layer split it cannot express) is not
/// predicted:
/// the row says what it needs. Support is detected, not listed: the row's experiment is loaded
/// (an unknown key such as parallel.cp is a config error) and FP8 is probed for Transformer
/// Engine's rule that attention stays in bf16, so the rows run once those land.

#include "calibrate/error_stats.h"
#include "strategies/parallel/training_step.h"

#include <string>
#include <utility>
#include <vector>

namespace clustersim::validation {

using calibrate::ErrorStats;

struct RecentRun {
    std::string id;        ///< the file's row id
    std::string model;     ///< "Llama 3.1 8B"
    std::string framework; ///< as the file states it
    std::string preset;    ///< the hardware preset the row runs on
    std::string where;     ///< file:line of the row, for messages
    int gpus = 0, tp = 1, pp = 1, cp = 1, ep = 1, dp = 1, virtual_stages = 1;
    int global_batch = 0, micro_batch = 1;
    std::string recompute = "none"; ///< the experiment's parallel.recompute
    bool fp8 = false;               ///< FP8 GEMMs (NeMo FP8, torchao Float8)
    /// FP8 as Transformer Engine's per-tensor current scaling (the row's FP8-CS, or plain FP8
    /// from a Megatron-Bridge container whose scripts have no delayed scaling); else delayed.
    bool fp8_current = false;
    bool moe = false;
    bool dense_bf16 = false; ///< a dense model in bf16: the issue's dev set
    /// What the row uses beyond data/tensor/pipeline parallelism ("FSDP2", "async
    /// TP", "cp 2", "FP8"), for the table.
    std::vector<std::string> features;
    /// The experiment's settings (`--set` keys), as built from the row.
    std::vector<std::pair<std::string, std::string>> settings;
    /// Empty when the row was predicted; else "needs ...".
    std::string not_modelled;
    double measured_s = 0; ///< the file's derived iteration time
    /// The file's measured.peak_memory_gib where it gives one (torchtitan's logged peak:
    /// torch.cuda.max_memory_reserved, the caching allocator's, in GiB); 0: none.
    double measured_peak_gib = 0;
    double predicted_s = 0; ///< the simulated step
    strategies::parallel::StepResult step;

    bool ran() const { return not_modelled.empty(); }
    /// predicted / measured - 1 (a ran() row).
    double error() const { return predicted_s / measured_s - 1; }
};

/// Every row of large-scale/h100-published-runs.yaml under `data_dir`, each predicted or marked
/// not modelled. Throws InputError naming the file, line and key for a malformed row.
std::vector<RecentRun> recent_runs(const std::string& data_dir);

/// The errors of the rows that ran (of those where `pick` is true).
ErrorStats recent_errors(const std::vector<RecentRun>& runs, bool dense_bf16_only);

/// Whether the step model costs FP8 as Transformer Engine (and torchao's Float8) run it:
/// attention (the fused kernel) stays in bf16 while the linear layers' GEMMs run in FP8. The
/// model that runs every kernel of an fp8 step at the fp8 rate does not.
bool fp8_training_modelled();

/// The rules for what the sources do not state, one sentence each, for the report.
std::vector<std::string> recent_rules();

} // namespace clustersim::validation
