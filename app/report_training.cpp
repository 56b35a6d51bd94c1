// docs/validation.md, section "Training steps": issue 4's check (the dgx-a100 preset on every
// measured step) and issue 5's (its framework factors come from a fifth of the rows chosen by
// seed 1; the other four fifths validate them), with the errors by group so that the model's
// gaps are plain to see. No parameter is set per row or per group.
#include "app/report_training.h"

#include "calibrate/import.h"
#include "calibrate/split.h"
#include "calibrate/validation.h"
#include "hardware/hardware_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace clustersim::app {

namespace {

using calibrate::PointKind;
using calibrate::PredictedPoint;

/// The conditions the CSV's header and data/reference/README.md state.
const std::vector<std::string> kStepSettings = {"model.vocab=50257", "training.dtype=fp16",
                                                "parallel.recompute=full", "parallel.schedule=1f1b",
                                                "parallel.dp_overlap=false"};
constexpr double kFraction = 0.2;
constexpr std::uint64_t kSeed = 1;

/// The integer after `key` in a step label ("step 8 GPUs L24 h1024 tp2 pp2 dp2 gb32 mb4").
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

struct Stats {
    int n = 0;
    double sum = 0, sum_abs = 0, max_abs = 0;
    void add(double e) {
        ++n;
        sum += e;
        sum_abs += std::abs(e);
        max_abs = std::max(max_abs, std::abs(e));
    }
};

std::string pct(double x) {
    return fmt::format("{:.1f}%", 100 * x);
}
std::string signed_pct(double x) {
    return fmt::format("{:+.1f}%", 100 * x);
}

std::string summary_row(const std::string& what, const Stats& s, const std::string& target) {
    return fmt::format("| {} | {} | {} | {} | {} |\n", what, s.n,
                       fmt::format("{:.2f}%", 100 * s.sum_abs / s.n), pct(s.max_abs), target);
}

/// One table of errors grouped by `key` of each point's label.
std::string group_table(const std::vector<const PredictedPoint*>& points,
                        const std::vector<std::string>& keys, const std::string& heading) {
    std::map<std::vector<int>, Stats> groups;
    for (const auto* p : points) {
        std::vector<int> k;
        for (const auto& key : keys)
            k.push_back(label_value(p->label, key));
        groups[k].add(p->error());
    }
    std::string md =
        "| " + heading + " | rows | mean error | mean \\|error\\| | max \\|error\\| |\n";
    md += "|---|---:|---:|---:|---:|\n";
    for (const auto& [k, s] : groups) {
        std::string name;
        for (std::size_t i = 0; i < keys.size(); ++i)
            name += (i ? " " : "") + keys[i] + std::to_string(k[i]);
        md += fmt::format("| {} | {} | {} | {} | {} |\n", name, s.n, signed_pct(s.sum / s.n),
                          pct(s.sum_abs / s.n), pct(s.max_abs));
    }
    return md;
}

/// Errors by (tp, hidden, micro-batch) cell, one column per (pp, dp) split: whether a cell's
/// error follows the configuration (the same in every split, which are separate runs on 2-8
/// GPUs) or the individual run.
struct CellTable {
    std::string markdown;
    double worst_spread = 0; ///< largest spread of a cell's split means
    double cell_range = 0;   ///< largest minus smallest cell mean
    /// Mean |error| if each cell's predictions were scaled by their own median measured /
    /// predicted ratio: what a model could reach without telling the cells apart better.
    double free_scale = 0;
};

CellTable cell_split_table(const std::vector<const PredictedPoint*>& points) {
    CellTable out;
    using Cell = std::array<int, 3>;  // tp, h, mb
    using Split = std::array<int, 2>; // pp, dp
    std::map<Cell, std::map<Split, Stats>> cells;
    std::map<Cell, Stats> whole;
    std::map<Cell, std::vector<double>> ratios;
    std::set<Split> splits;
    for (const auto* p : points) {
        const Cell c{label_value(p->label, "tp"), label_value(p->label, "h"),
                     label_value(p->label, "mb")};
        const Split sp{label_value(p->label, "pp"), label_value(p->label, "dp")};
        cells[c][sp].add(p->error());
        whole[c].add(p->error());
        ratios[c].push_back(p->measured_s / p->predicted_s);
        splits.insert(sp);
    }
    std::string md = "| tp h mb |";
    std::string rule = "|---|";
    for (const auto& sp : splits) {
        md += fmt::format(" pp{} dp{} |", sp[0], sp[1]);
        rule += "---:|";
    }
    md += " spread |\n" + rule + "---:|\n";
    double cell_lo = 1e9, cell_hi = -1e9;
    for (const auto& [c, by_split] : cells) {
        const double cell_mean = whole[c].sum / whole[c].n;
        cell_lo = std::min(cell_lo, cell_mean);
        cell_hi = std::max(cell_hi, cell_mean);
        md += fmt::format("| tp{} h{} mb{} |", c[0], c[1], c[2]);
        double lo = 1e9, hi = -1e9;
        for (const auto& sp : splits) {
            const auto it = by_split.find(sp);
            if (it == by_split.end()) {
                md += " |";
                continue;
            }
            const double mean = it->second.sum / it->second.n;
            lo = std::min(lo, mean);
            hi = std::max(hi, mean);
            md += fmt::format(" {:+.0f}% |", 100 * mean);
        }
        out.worst_spread = std::max(out.worst_spread, hi - lo);
        md += fmt::format(" {:.0f} |\n", 100 * (hi - lo));
    }
    // Mean |error| after a free scale per cell.
    Stats scaled;
    for (auto& [c, r] : ratios) {
        std::vector<double> sorted = r;
        std::sort(sorted.begin(), sorted.end());
        const std::size_t n = sorted.size();
        const double k = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        for (double x : r)
            scaled.add(k / x - 1);
    }
    out.free_scale = scaled.sum_abs / scaled.n;
    out.cell_range = cell_hi - cell_lo;
    out.markdown = md;
    return out;
}

} // namespace

std::string training_steps_markdown(const std::string& data_dir) {
    const std::string csv = data_dir + "/a100-node/megatron-steps-single-node.csv";
    calibrate::ImportOptions io;
    io.device = "NVIDIA A100-SXM4-80GB";
    io.step_settings = kStepSettings;
    const auto steps = calibrate::import_files({csv}, io).measurements;
    const auto split = calibrate::split_measurements(steps, kFraction, kSeed);
    const auto cluster = strategies::parallel::load_platform("dgx-a100");
    calibrate::ValidationOptions vo;
    vo.kinds = {PointKind::step};
    const auto all = calibrate::validate_measurements(cluster, steps, csv, vo);
    const auto points = all.of(PointKind::step);

    // Which rows were the fit's: the split keeps the file's order, so match by source line.
    std::map<std::string, bool> fitted;
    for (const auto& s : split.chosen.steps)
        fitted[s.source] = true;
    Stats every, held, in_fit;
    for (const auto* p : points) {
        every.add(p->error());
        (fitted.count(p->source) ? in_fit : held).add(p->error());
    }

    std::string md;
    md += "The training-step model (strategies/parallel) with the `dgx-a100` preset against the "
          "1,440 measured Megatron iterations of `a100-node/megatron-steps-single-node.csv` "
          "(one node of 8x A100; GPT models of hidden 1024 and 2048, 12-24 layers, sequence "
          "1024; every TP/DP/PP split of 2-8 GPUs; fp16, full recompute, 1F1B, gradients "
          "all-reduced after the backward, vocabulary 50257). The same preset serves every row. "
          "Its `framework:` factors are the fit of a fifth of the rows chosen by seed 1 "
          "(`clustersim calibrate split --fraction 0.2 --seed 1`, then `calibrate fit`; the "
          "commands are in configs/hardware/dgx-a100.yaml); the other four fifths never took "
          "part in it. Error = predicted / measured - 1.\n\n";
    md += "| rows | count | mean \\|error\\| | max \\|error\\| | target |\n";
    md += "|---|---:|---:|---:|---|\n";
    md += summary_row("every row (issue 4)", every, "mean <= 8%, max <= 25%");
    md += summary_row("held-out four fifths (issue 5)", held, "mean <= 6%");
    md += summary_row("the fitted fifth", in_fit, "");
    md += fmt::format("\nIssue 4's mean is {} and issue 5's {}; issue 4's worst-row limit is {}.\n",
                      every.sum_abs / every.n <= 0.08 ? "met" : "not met",
                      held.sum_abs / held.n <= 0.06 ? "met" : "not met",
                      every.max_abs <= 0.25 ? "met" : "not met");
    md += "\n### By tensor-parallel size and hidden size\n\n";
    md += group_table(points, {"tp", "h"}, "group");
    md += "\n### By pipeline-parallel size\n\n";
    md += group_table(points, {"pp"}, "group");
    md += "\n### By data-parallel size\n\n";
    md += group_table(points, {"dp"}, "group");
    md += "\n### By micro-batch size\n\n";
    md += group_table(points, {"mb"}, "group");

    const CellTable cells = cell_split_table(points);
    md += "\n### By tensor-parallel size, hidden size and micro-batch size, in every split\n\n";
    md += "Mean error of each (TP, hidden, micro-batch) cell in each pipeline/data-parallel "
          "split (separate runs on 2-8 GPUs, 4-16 of them per entry: 12-24 layers, one to four "
          "global batches); spread = largest minus smallest entry of the row, in points.\n\n";
    md += cells.markdown;

    std::vector<const PredictedPoint*> worst(points.begin(), points.end());
    std::stable_sort(worst.begin(), worst.end(), [](const auto* a, const auto* b) {
        return std::abs(a->error()) > std::abs(b->error());
    });
    worst.resize(std::min<std::size_t>(worst.size(), 10));
    md += "\n### The ten worst rows\n\n";
    md += "| step | source | measured (ms) | predicted (ms) | error |\n";
    md += "|---|---|---:|---:|---:|\n";
    for (const auto* p : worst) {
        std::string src = p->source;
        if (const auto slash = src.find_last_of('/'); slash != std::string::npos)
            src = src.substr(slash + 1);
        md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {} |\n", p->label, src,
                          1e3 * p->measured_s, 1e3 * p->predicted_s, signed_pct(p->error()));
    }
    md += fmt::format(
        "\nWhat the groups show: tensor-parallel-8 steps are under-predicted by about 15% "
        "(measured, their host-bound layers take 4-5 ms per layer and micro-batch against "
        "~3.3 ms at TP 1-4, a cost the model has no mechanism for yet). At micro-batch 1 "
        "part of it is Megatron's own: with 2 heads per rank the fused scale-mask-softmax "
        "kernel does not take 1 x 2 rows of scores (it needs a multiple of 4), so PyTorch's "
        "softmax runs in fp32 with five kernels each way; the model follows that rule, which "
        "took those rows from -30% to -15%. The error is not monotonic in the micro-batch "
        "size within a TP/hidden group (e.g. TP 4, hidden 2048: micro-batch 2 is measured "
        "faster per sample than 1 and 4), which no smooth kernel model follows, yet it is "
        "the same in every pipeline/data-parallel split of a cell (spread at most {:.0f} "
        "points, where the cells differ by up to {:.0f}): it belongs to the (TP, hidden, "
        "micro-batch) configuration, not to individual runs. A free scale per cell (its "
        "median measured / predicted) would leave {:.1f}% mean |error|. The fitted "
        "`microbatch_overhead` (3.1 ms) is larger than the whole per-micro-batch intercept "
        "measured at TP 8 (2.0 ms): it also stands in for the under-predicted LM head and "
        "loss at TP 1.\n",
        100 * cells.worst_spread, 100 * cells.cell_range, 100 * cells.free_scale);
    return md;
}

} // namespace clustersim::app
