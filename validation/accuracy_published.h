#pragma once
/// \file
/// The training-step model against published Megatron-LM runs: the numbers of docs/validation.md's
/// section "Training steps: published Megatron-LM runs" (app/report_published.h words them):
/// - Narayanan et al. SC21, Table 1 (data/reference/megatron/narayanan2021-table1.csv): GPT
///   1.7B-1T on 32-3072 A100s of Selene, per-GPU TFLOP/s, both sides counted with the paper's
///   Eq. 3;
/// - the Megatron-LM README of 2020 (megatron2020-tensor-parallel-scaling.csv): GPT-2 1.2B-8.3B,
///   tensor parallel 1-8, on DGX A100 and DGX-2 (V100), iteration times.
/// What the tables do not state (micro-batch, virtual stages, gradient all-reduce overlap) is
/// set by one rule per table, the same for every row; the rules are in the generated text.

#include "calibrate/error_stats.h"
#include "strategies/parallel/training_step.h"

#include <string>
#include <vector>

namespace clustersim::validation {

using calibrate::ErrorStats;

/// One published run and the model's prediction of it.
struct PublishedRun {
    std::string model;  ///< "1.7B", "1.2B"
    std::string system; ///< the hardware the row ran on ("dgx-a100", "dgx2-v100")
    int layers = 0, hidden = 0, heads = 0;
    int gpus = 0, tp = 1, pp = 1, dp = 1;
    int global_batch = 0, micro_batch = 1, virtual_stages = 1;
    double measured = 0;         ///< TFLOP/s per GPU (Narayanan) or iteration ms (2020 README)
    double predicted = 0;        ///< the same quantity, predicted
    double published_tflops = 0; ///< TFLOP/s per GPU as the table prints it (Eq. 3)
    strategies::parallel::StepResult step; ///< the simulated step (breakdown, memory)
    /// Whether Megatron's fused softmax kernel takes the row's scores (micro-batch x heads per
    /// rank rows, a multiple of 4); else the model runs PyTorch's fp32 softmax.
    bool fused_softmax = true;

    /// predicted / measured - 1.
    double error() const { return predicted / measured - 1; }
};

/// The paper's Eq. 3: FLOPs of one iteration with full recompute (4 passes, 96 = 4 x 24),
/// F = 96 B s l h^2 (1 + s / (6h) + V / (16 l h)).
double megatron_eq3_flops(double global_batch, double seq, double layers, double hidden,
                          double vocab);

/// Every row of narayanan2021-table1.csv under `data_dir`, predicted. Throws InputError when
/// the file is missing or malformed.
std::vector<PublishedRun> narayanan2021_runs(const std::string& data_dir);

/// Every row of megatron2020-tensor-parallel-scaling.csv under `data_dir`, predicted.
std::vector<PublishedRun> megatron2020_runs(const std::string& data_dir);

/// The errors of `runs`.
ErrorStats run_errors(const std::vector<PublishedRun>& runs);
/// How many of `runs` are within `limit` (|error| <= limit).
int runs_within(const std::vector<PublishedRun>& runs, double limit);

} // namespace clustersim::validation
