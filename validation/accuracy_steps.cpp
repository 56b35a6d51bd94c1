// The numbers of docs/validation.md's "Training steps" section: the steps imported and
// predicted as `clustersim validate` does, the fit's fifth chosen as `calibrate split` does.
#include "validation/accuracy_steps.h"
#include "strategies/parallel/platform.h"

#include "calibrate/import.h"
#include "calibrate/split.h"
#include "hardware/hardware_loader.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace clustersim::validation {

using namespace calibrate; // the formats, predictions and statistics this study uses

namespace {

/// The conditions the CSV's header and data/reference/README.md state; the stack is
/// Megatron-DeepSpeed's (framework_profile.h: DeepSpeed's PipelineEngine, its gradient
/// accumulation and fp16 reduction).
const std::vector<std::string> kStepSettings = {"training.framework=megatron-deepspeed",
                                                "model.vocab=50257",
                                                "training.dtype=fp16",
                                                "parallel.recompute=full",
                                                "parallel.schedule=1f1b",
                                                "parallel.dp_overlap=false"};
constexpr double kFraction = 0.2;
constexpr std::uint64_t kSeed = 1;

} // namespace

StepAccuracy step_accuracy(const std::string& data_dir) {
    const std::string csv = data_dir + "/a100-node/megatron-steps-single-node.csv";
    ImportOptions io;
    io.device = "NVIDIA A100-SXM4-80GB";
    io.step_settings = kStepSettings;
    const auto steps = import_files({csv}, io).measurements;
    const auto split = split_measurements(steps, kFraction, kSeed);
    const auto cluster = strategies::parallel::load_platform("dgx-a100");
    ValidationOptions vo;
    vo.kinds = {PointKind::step};
    const auto all = validate_measurements(cluster, steps, csv, vo);

    StepAccuracy out;
    // Which rows were the fit's: the split keeps the file's order, so match by source line.
    std::set<std::string> fitted;
    for (const auto& s : split.chosen.steps)
        fitted.insert(s.source);
    std::vector<double> every, held, in_fit;
    for (const auto* p : all.of(PointKind::step)) {
        out.points.push_back(*p);
        every.push_back(p->error());
        (fitted.count(p->source) ? in_fit : held).push_back(p->error());
    }
    out.every = error_stats(every);
    out.held_out = error_stats(held);
    out.fitted = error_stats(in_fit);
    return out;
}

int label_value(const std::string& label, const std::string& key) {
    const std::string needle = " " + key;
    std::size_t at = 0;
    while ((at = label.find(needle, at)) != std::string::npos) {
        at += needle.size();
        if (at < label.size() && std::isdigit(static_cast<unsigned char>(label[at])))
            return std::stoi(label.substr(at));
    }
    return 0;
}

std::vector<ErrorGroup> group_errors(const std::vector<PredictedPoint>& points,
                                     const std::vector<std::string>& keys) {
    std::map<std::vector<int>, std::vector<double>> groups;
    for (const auto& p : points) {
        std::vector<int> k;
        for (const auto& key : keys)
            k.push_back(label_value(p.label, key));
        groups[k].push_back(p.error());
    }
    std::vector<ErrorGroup> out;
    for (const auto& [k, errors] : groups)
        out.push_back({k, error_stats(errors)});
    return out;
}

CellSplits cell_splits(const std::vector<PredictedPoint>& points) {
    using Cell = CellSplits::Cell;
    using Split = CellSplits::Split;
    CellSplits out;
    std::map<Cell, std::map<Split, std::vector<double>>> cells;
    std::map<Cell, std::vector<double>> whole;
    std::map<Cell, std::vector<double>> ratios;
    for (const auto& p : points) {
        const Cell c{label_value(p.label, "tp"), label_value(p.label, "h"),
                     label_value(p.label, "mb")};
        const Split sp{label_value(p.label, "pp"), label_value(p.label, "dp")};
        cells[c][sp].push_back(p.error());
        whole[c].push_back(p.error());
        ratios[c].push_back(p.measured_s / p.predicted_s);
        out.splits.insert(sp);
    }
    double cell_lo = 1e9, cell_hi = -1e9;
    for (const auto& [c, by_split] : cells) {
        const double cell_mean = error_stats(whole[c]).mean;
        cell_lo = std::min(cell_lo, cell_mean);
        cell_hi = std::max(cell_hi, cell_mean);
        double lo = 1e9, hi = -1e9;
        for (const auto& [sp, errors] : by_split) {
            const ErrorStats s = error_stats(errors);
            out.cells[c][sp] = s;
            lo = std::min(lo, s.mean);
            hi = std::max(hi, s.mean);
        }
        out.spread[c] = hi - lo;
        out.worst_spread = std::max(out.worst_spread, hi - lo);
    }
    // Mean |error| after a free scale per cell.
    std::vector<double> scaled;
    for (auto& [c, r] : ratios) {
        std::vector<double> sorted = r;
        std::sort(sorted.begin(), sorted.end());
        const std::size_t n = sorted.size();
        const double k = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        for (double x : r)
            scaled.push_back(k / x - 1);
    }
    out.free_scale = error_stats(scaled).mean_abs;
    out.cell_range = cell_hi - cell_lo;
    return out;
}

} // namespace clustersim::validation
