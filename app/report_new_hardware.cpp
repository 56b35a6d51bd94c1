// docs/validation.md, section "New hardware": the numbers of validation/accuracy_new_hardware.h
// worded as Markdown.
#include "app/report_new_hardware.h"

#include "base/text.h"
#include "validation/accuracy_new_hardware.h"
#include "validation/targets.h"

#include <fmt/format.h>

#include <set>

namespace clustersim::app {

namespace tg = validation::targets;

std::string new_hardware_markdown(ReportData& data) {
    const auto& runs = data.new_hardware();
    std::string md =
        "Published runs on the accelerators of late 2026 (`new-hardware/published-runs.yaml`: "
        "Megatron-Bridge's performance summaries, AMD Primus tables, MaxText's TPU tables), each "
        "as an experiment built from the row's own fields. Error = predicted / measured - 1 of "
        "the step time (the row's tokens per second per GPU over its batch). What the sources do "
        "not state:\n\n";
    for (const auto& rule : validation::new_hardware_rules())
        md += "- " + rule + "\n";
    md += fmt::format("\nPer accelerator (target: mean |error| <= {}, none above {}, signed mean "
                      "within {}):\n\n",
                      base::percent(tg::kNewHardwareStepMean),
                      base::percent(tg::kNewHardwareStepWorst),
                      base::percent(tg::kNewHardwareStepBias));
    md += "| accelerator | rows | predicted | mean abs error | signed mean | max abs error |\n"
          "|---|---:|---:|---:|---:|---:|\n";
    std::set<std::string> accelerators;
    for (const auto& r : runs)
        accelerators.insert(r.accelerator);
    for (const auto& a : accelerators) {
        int rows = 0;
        for (const auto& r : runs)
            rows += r.accelerator == a ? 1 : 0;
        const auto s = validation::new_hardware_errors(runs, a);
        if (s.points == 0)
            md += fmt::format("| {} | {} | 0 | - | - | - |\n", a, rows);
        else
            md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", a, rows, s.points,
                              base::percent(s.mean_abs), base::signed_percent(s.mean),
                              base::percent(s.max_abs));
    }
    md += "\nThe rows predicted:\n\n"
          "| run | accelerator | model | precision | GPUs | layout | measured (s) | predicted "
          "(s) | error |\n|---|---|---|---|---:|---|---:|---:|---:|\n";
    for (const auto& r : runs) {
        if (r.ran())
            md += fmt::format("| {} | {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {} |\n", r.id,
                              r.accelerator, r.model, r.precision, r.gpus, r.layout, r.measured_s,
                              r.predicted_s, base::signed_percent(r.error()));
    }
    md += "\nThe rows not predicted yet, with what each needs:\n\n"
          "| run | accelerator | model | precision | needs |\n|---|---|---|---|---|\n";
    for (const auto& r : runs) {
        if (!r.ran())
            md += fmt::format("| {} | {} | {} | {} | {} |\n", r.id, r.accelerator, r.model,
                              r.precision, r.not_modelled.substr(r.not_modelled.find(' ') + 1));
    }
    return md;
}

} // namespace clustersim::app
