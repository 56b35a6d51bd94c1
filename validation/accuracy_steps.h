#pragma once
/// \file
/// The training-step model with the dgx-a100 preset against the 1,440 measured Megatron steps
/// of one A100 node (a100-node/megatron-steps-single-node.csv): the numbers of
/// docs/validation.md's "Training steps" section (app/report_training.h words them). Issue 4's
/// check (every row) and issue 5's (the preset's framework factors come from a fifth of the
/// rows chosen by seed 1; the other four fifths validate them), and the errors by group. No
/// parameter is set per row or per group.

#include "calibrate/error_stats.h"
#include "calibrate/validation.h"

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace clustersim::validation {

using calibrate::ErrorStats;
using calibrate::PredictedPoint;

/// The errors of the points whose labels have the same values of some keys.
struct ErrorGroup {
    std::vector<int> key; ///< one value per key asked for, in that order
    ErrorStats stats;
};

/// Whether a (TP, hidden, micro-batch) cell's error follows the configuration (the same in
/// every pipeline/data-parallel split, separate runs on 2-8 GPUs) or the individual run.
struct CellSplits {
    using Cell = std::array<int, 3>;  ///< tp, hidden, micro-batch
    using Split = std::array<int, 2>; ///< pp, dp
    std::set<Split> splits;           ///< every split seen, in order
    std::map<Cell, std::map<Split, ErrorStats>> cells;
    std::map<Cell, double> spread; ///< largest minus smallest split mean of each cell
    double worst_spread = 0;       ///< largest spread of a cell's split means
    double cell_range = 0;         ///< largest minus smallest cell mean
    /// Mean |error| if each cell's predictions were scaled by their own median measured /
    /// predicted ratio: what a model could reach without telling the cells apart better.
    double free_scale = 0;
};

struct StepAccuracy {
    std::vector<PredictedPoint> points; ///< every step, predicted, in file order
    ErrorStats every;                   ///< issue 4: every row
    ErrorStats held_out;                ///< issue 5: the four fifths not fitted on
    ErrorStats fitted;                  ///< the fifth the preset's factors come from
};

/// Reads the steps under `data_dir`, predicts them on dgx-a100 and splits the errors. Throws
/// InputError when the CSV is missing or malformed.
StepAccuracy step_accuracy(const std::string& data_dir);

/// The integer after `key` in a step label ("step 8 GPUs L24 h1024 tp2 pp2 dp2 gb32 mb4");
/// 0 when the label has none.
int label_value(const std::string& label, const std::string& key);

/// The errors grouped by the values of `keys` in each point's label, in key order.
std::vector<ErrorGroup> group_errors(const std::vector<PredictedPoint>& points,
                                     const std::vector<std::string>& keys);

/// The errors of every (TP, hidden, micro-batch) cell in every (PP, DP) split.
CellSplits cell_splits(const std::vector<PredictedPoint>& points);

} // namespace clustersim::validation
