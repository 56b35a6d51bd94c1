// docs/validation.md, section "Training steps": the numbers of validation/accuracy_steps.h
// (issue 4's check on every measured step, issue 5's on the four fifths the preset's framework
// factors were not fitted on, the errors by group) worded as Markdown.
#include "app/report_training.h"

#include "base/text.h"
#include "validation/accuracy_steps.h"
#include "validation/targets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace clustersim::app {

namespace {

using calibrate::ErrorStats;
using calibrate::PredictedPoint;

std::string summary_row(const std::string& what, const ErrorStats& s, const std::string& target) {
    return fmt::format("| {} | {} | {} | {} | {} |\n", what, s.points, base::percent(s.mean_abs, 2),
                       base::percent(s.max_abs), target);
}

/// One table of errors grouped by `keys` of each point's label.
std::string group_table(const std::vector<PredictedPoint>& points,
                        const std::vector<std::string>& keys, const std::string& heading) {
    std::string md =
        "| " + heading + " | rows | mean error | mean \\|error\\| | max \\|error\\| |\n";
    md += "|---|---:|---:|---:|---:|\n";
    for (const auto& g : validation::group_errors(points, keys)) {
        std::vector<std::string> name;
        for (std::size_t i = 0; i < keys.size(); ++i)
            name.push_back(keys[i] + std::to_string(g.key[i]));
        md += fmt::format("| {} | {} | {} | {} | {} |\n", base::join(name, " "), g.stats.points,
                          base::signed_percent(g.stats.mean), base::percent(g.stats.mean_abs),
                          base::percent(g.stats.max_abs));
    }
    return md;
}

/// Mean error of each (TP, hidden, micro-batch) cell, one column per (PP, DP) split.
std::string cell_split_table(const validation::CellSplits& cells) {
    std::string md = "| tp h mb |";
    std::string rule = "|---|";
    for (const auto& sp : cells.splits) {
        md += fmt::format(" pp{} dp{} |", sp[0], sp[1]);
        rule += "---:|";
    }
    md += " spread |\n" + rule + "---:|\n";
    for (const auto& [c, by_split] : cells.cells) {
        md += fmt::format("| tp{} h{} mb{} |", c[0], c[1], c[2]);
        for (const auto& sp : cells.splits) {
            const auto it = by_split.find(sp);
            if (it == by_split.end()) {
                md += " |";
                continue;
            }
            md += fmt::format(" {} |", base::signed_percent(it->second.mean, 0));
        }
        md += fmt::format(" {} |\n", base::percent_number(cells.spread.at(c), 0));
    }
    return md;
}

} // namespace

std::string training_steps_markdown(ReportData& data) {
    const validation::StepAccuracy& acc = data.steps();
    const auto& points = acc.points;
    const ErrorStats& every = acc.every;
    const ErrorStats& held = acc.held_out;

    std::string md;
    md += "The training-step model (strategies/parallel) with the `dgx-a100` preset against the "
          "1,440 measured Megatron iterations of `a100-node/megatron-steps-single-node.csv` "
          "(one node of 8x A100; GPT models of hidden 1024 and 2048, 12-24 layers, sequence "
          "1024; every TP/DP/PP split of 2-8 GPUs; fp16, full recompute, 1F1B, gradients "
          "all-reduced after the backward, vocabulary 50257), on the stack that ran them, "
          "Megatron-DeepSpeed (`training.framework: megatron-deepspeed`: DeepSpeed's "
          "PipelineEngine, fp16 gradients reduced in fp16 and added by autograd per parameter "
          "tensor and micro-batch; docs/hardware-files.md, Profiles). The same preset serves "
          "every row. "
          "Its `framework:` factors are the fit of a fifth of the rows chosen by seed 1 "
          "(`clustersim calibrate split --fraction 0.2 --seed 1`, then `calibrate fit`; the "
          "commands are in configs/hardware/dgx-a100.yaml); the other four fifths never took "
          "part in it. Error = predicted / measured - 1.\n\n";
    md += "| rows | count | mean \\|error\\| | max \\|error\\| | target |\n";
    md += "|---|---:|---:|---:|---|\n";
    md += summary_row("every row (issue 4)", every, "mean <= 8%, max <= 25%");
    md += summary_row("held-out four fifths (issue 5)", held, "mean <= 6%");
    md += summary_row("the fitted fifth", acc.fitted, "");
    md += fmt::format("\nIssue 4's mean is {} and issue 5's {}; issue 4's worst-row limit is {}.\n",
                      every.mean_abs <= validation::targets::kStepsMean ? "met" : "not met",
                      held.mean_abs <= validation::targets::kStepsHeldOutMean ? "met" : "not met",
                      every.max_abs <= validation::targets::kStepsWorst ? "met" : "not met");
    md += "\n### By tensor-parallel size and hidden size\n\n";
    md += group_table(points, {"tp", "h"}, "group");
    md += "\n### By pipeline-parallel size\n\n";
    md += group_table(points, {"pp"}, "group");
    md += "\n### By data-parallel size\n\n";
    md += group_table(points, {"dp"}, "group");
    md += "\n### By micro-batch size\n\n";
    md += group_table(points, {"mb"}, "group");

    const validation::CellSplits cells = validation::cell_splits(points);
    md += "\n### By tensor-parallel size, hidden size and micro-batch size, in every split\n\n";
    md += "Mean error of each (TP, hidden, micro-batch) cell in each pipeline/data-parallel "
          "split (separate runs on 2-8 GPUs, 4-16 of them per entry: 12-24 layers, one to four "
          "global batches); spread = largest minus smallest entry of the row, in points.\n\n";
    md += cell_split_table(cells);

    std::vector<const PredictedPoint*> worst;
    for (const auto& p : points)
        worst.push_back(&p);
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
        md +=
            fmt::format("| {} | {} | {:.1f} | {:.1f} | {} |\n", p->label, src, 1e3 * p->measured_s,
                        1e3 * p->predicted_s, base::signed_percent(p->error()));
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
        "the same in every pipeline/data-parallel split of a cell (spread at most {} "
        "points, where the cells differ by up to {}): it belongs to the (TP, hidden, "
        "micro-batch) configuration, not to individual runs. A free scale per cell (its "
        "median measured / predicted) would leave {} mean |error|. The fitted "
        "`microbatch_overhead` (3.1 ms) is larger than the whole per-micro-batch intercept "
        "measured at TP 8 (2.0 ms): it also stands in for the under-predicted LM head and "
        "loss at TP 1.\n",
        base::percent_number(cells.worst_spread, 0), base::percent_number(cells.cell_range, 0),
        base::percent(cells.free_scale));
    return md;
}

} // namespace clustersim::app
