// docs/validation.md, sections "Training steps across nodes" and "Recent large runs": the numbers
// of validation/accuracy_recent.h (and the Narayanan rows of validation/accuracy_published.h)
// worded as Markdown.
#include "app/report_recent.h"

#include "base/text.h"
#include "validation/accuracy_published.h"
#include "validation/accuracy_recent.h"
#include "validation/targets.h"

#include <fmt/format.h>

#include <algorithm>

namespace clustersim::app {

using validation::RecentRun;

namespace {

std::string share(double part, double step) {
    return base::percent(part / step);
}

std::string layout(const RecentRun& r) {
    std::string s = fmt::format("tp {} pp {}", r.tp, r.pp);
    if (r.virtual_stages > 1)
        s += fmt::format(" v {}", r.virtual_stages);
    if (r.cp > 1)
        s += fmt::format(" cp {}", r.cp);
    if (r.ep > 1)
        s += fmt::format(" ep {}", r.ep);
    return s + fmt::format(" dp {}", r.dp);
}

std::string features(const RecentRun& r) {
    std::string s;
    for (const auto& f : r.features)
        s += (s.empty() ? "" : ", ") + f;
    return s.empty() ? "-" : s;
}

std::string stats_row(const std::string& set, const calibrate::ErrorStats& s, double target,
                      const std::string& target_text) {
    if (s.points == 0)
        return fmt::format("| {} | 0 | - | - | - | {} | - |\n", set, target_text);
    const bool met = s.mean_abs <= target;
    return fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", set, s.points,
                       base::percent(s.mean_abs), base::signed_percent(s.mean),
                       base::percent(s.max_abs), target_text, met ? "met" : "not met");
}

std::string breakdown_table(const std::vector<const RecentRun*>& runs) {
    std::string md =
        "| run | step (s) | compute | recompute | host | TP comm | PP bubble | PP comm "
        "| DP comm | optimizer | peak memory (GB) |\n";
    md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto* r : runs) {
        const auto& b = r->step.breakdown;
        const double t = r->step.step_time_s;
        md += fmt::format(
            "| {} | {:.2f} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f}{} |\n", r->id, t,
            share(b.compute_s, t), share(b.recompute_s, t), share(b.host_s, t),
            share(b.tp_comm_exposed_s, t), share(b.pp_bubble_s, t), share(b.pp_comm_exposed_s, t),
            share(b.dp_comm_exposed_s, t), share(b.optimizer_s, t),
            static_cast<double>(r->step.peak_bytes_max) / 1e9, r->step.oom ? " (OOM)" : "");
    }
    return md;
}

/// The rows with a measured peak memory against the predicted reserved peak (what the caching
/// allocator holds; the preset's runtime_memory, the CUDA context and NCCL's buffers, is not
/// in it).
std::string memory_table(const std::vector<RecentRun>& runs) {
    std::vector<const RecentRun*> rows;
    for (const auto& r : runs)
        if (r.ran() && r.measured_peak_gib > 0)
            rows.push_back(&r);
    if (rows.empty())
        return "";
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    std::string md =
        "\nPeak memory per GPU, where a row gives one (torchtitan logs the caching allocator's "
        "peak, torch.cuda.max_memory_reserved, in GiB): predicted = the step's reserved peak "
        "(of its pipeline ranks: allocated plus the allocator's slack, without the preset's "
        "`runtime_memory`, which the allocator does not hold).\n\n";
    md += "| run | layout | recompute | features | measured (GiB) | predicted (GiB) | error |\n";
    md += "|---|---|---|---|---:|---:|---:|\n";
    std::vector<double> errors;
    for (const auto* r : rows) {
        const double predicted = static_cast<double>(r->step.peak_reserved_bytes_max) / kGiB;
        const double error = predicted / r->measured_peak_gib - 1;
        errors.push_back(error);
        md += fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} | {} |\n", r->id, layout(*r),
                          r->recompute, features(*r), r->measured_peak_gib, predicted,
                          base::signed_percent(error));
    }
    const auto s = calibrate::error_stats(errors);
    md += fmt::format("\n{} rows: mean |error| {}, signed mean {}, worst {} (no target).\n",
                      s.points, base::percent(s.mean_abs), base::signed_percent(s.mean),
                      base::percent(s.max_abs));
    return md;
}

} // namespace

std::string steps_across_nodes_markdown(ReportData& data) {
    const auto& narayanan = data.narayanan2021();
    const auto& recent = data.recent();
    std::string md;
    md += "The training-step model on many nodes against the two dev sets of the multi-node "
          "issue, with the committed presets and one rule per source for what it does not state "
          "(no parameter per row). Error = predicted / measured - 1 of the iteration time (of "
          "the per-GPU TFLOP/s for Narayanan's table, where a positive error is a prediction "
          "too fast); the signed mean says whether a set is predicted systematically optimistic "
          "(the held-out bar: within +-3%).\n\n";
    md += "| set | rows | mean \\|error\\| | signed mean | max \\|error\\| | target (mean) | |\n";
    md += "|---|---:|---:|---:|---:|---|---|\n";
    md += stats_row("Narayanan et al. 2021, Table 1 (32-3072 A100s; TFLOP/s)",
                    validation::run_errors(narayanan), validation::targets::kNarayananMean, "7%");
    md +=
        stats_row("h100-published-runs.yaml, dense bf16 rows (iteration time)",
                  validation::recent_errors(recent, true), validation::targets::kRecentMean, "10%");
    md += "\nNarayanan's rows are in the section \"Training steps: published Megatron-LM runs\" "
          "(their TFLOP/s error has the opposite sign of an iteration-time error). The dense "
          "bf16 rows of `large-scale/h100-published-runs.yaml` (all four are torchtitan's, on "
          "Grand Teton H100s at 500 W), mapped as in \"Recent large runs\":\n\n";
    md += "| run | GPUs | layout | batch (micro) | recompute | features | measured (s) | "
          "predicted (s) | error |\n";
    md += "|---|---:|---|---:|---|---|---:|---:|---:|\n";
    std::vector<const RecentRun*> ran;
    for (const auto& r : recent) {
        if (!r.dense_bf16)
            continue;
        md += fmt::format("| {} | {} | {} | {} ({}) | {} | {} | {:.3f} | {} | {} |\n", r.id, r.gpus,
                          layout(r), r.global_batch, r.micro_batch, r.recompute, features(r),
                          r.measured_s, r.ran() ? fmt::format("{:.3f}", r.predicted_s) : "-",
                          r.ran() ? base::signed_percent(r.error()) : "not modelled");
        if (r.ran())
            ran.push_back(&r);
    }
    if (!ran.empty()) {
        md += "\nWhere the predicted steps go:\n\n";
        md += breakdown_table(ran);
    }
    md += "\nConcurrent collectives of one step sharing a node's NICs (the data-parallel "
          "all-reduce or reduce-scatter, pipeline sends, cross-node tensor parallelism): the "
          "analytic fidelity used here times each collective and transfer alone from its closed "
          "form; the flow fidelity (`--fidelity flow`) plays the data-parallel collectives and "
          "pipeline transfers of the step on the flow network, where they share NICs and links "
          "max-min fairly (tests/strategies/test_collectives_flow.cpp holds two collectives on "
          "the same NICs of two nodes to the processor-sharing closed form within 3%). Sharing "
          "is left to the flow fidelity because which transfers overlap, and for how long, "
          "follows from the schedule the executor builds, which the analytic executor's "
          "per-collective closed forms do not see; tensor-parallel collectives stay analytic in "
          "both (inside the passes).\n";
    return md;
}

std::string recent_runs_markdown(ReportData& data) {
    const auto& recent = data.recent();
    std::string md;
    md += "Every row of `large-scale/h100-published-runs.yaml` (NeMo 24.07, Megatron-Bridge "
          "25.09-26.02 and torchtitan runs on 64-1024 H100s; the file cites each page), each "
          "mapped to an experiment from the row's own fields. Rules for what the sources do not "
          "state, the same for every row:\n\n";
    for (const auto& rule : validation::recent_rules())
        md += "- " + rule + ".\n";
    md += "\nA row that needs what the step model does not have yet says so instead of a "
          "number; support is detected by loading the row's experiment (an unknown key such as "
          "`parallel.cp` is a config error) and, for FP8, by whether the model keeps attention "
          "in bf16 under FP8 as Transformer Engine and torchao do, so such rows run once those "
          "land. Error = predicted / measured - 1 of the iteration time "
          "(`derived.iteration_time_s`).\n\n";
    md += "| run | model | GPUs | preset | layout | features | measured (s) | predicted (s) | "
          "error |\n";
    md += "|---|---|---:|---|---|---|---:|---:|---|\n";
    int not_modelled = 0;
    for (const auto& r : recent) {
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {:.3f} | {} | {} |\n", r.id, r.model,
                          r.gpus, r.preset, layout(r), features(r), r.measured_s,
                          r.ran() ? fmt::format("{:.3f}", r.predicted_s) : "-",
                          r.ran() ? base::signed_percent(r.error())
                                  : "not modelled: " + r.not_modelled);
        not_modelled += r.ran() ? 0 : 1;
    }
    const auto s = validation::recent_errors(recent, false);
    md += fmt::format("\n{} of {} rows predicted ({} not modelled)", s.points, recent.size(),
                      not_modelled);
    if (s.points > 0)
        md += fmt::format(": mean |error| {}, signed mean {}, worst {}. Target (issue 14: mean "
                          "within 10%, no row worse than 20%): {}",
                          base::percent(s.mean_abs), base::signed_percent(s.mean),
                          base::percent(s.max_abs),
                          s.mean_abs <= validation::targets::kRecentMean &&
                                  s.max_abs <= validation::targets::kRecentWorst
                              ? "met"
                              : "not met");
    md += ".\n";
    md += memory_table(recent);
    return md;
}

} // namespace clustersim::app
