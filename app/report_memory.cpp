// docs/validation.md, section "Memory": the numbers of validation/accuracy_memory.h worded as
// Markdown.
#include "app/report_memory.h"

#include "base/text.h"
#include "validation/accuracy_memory.h"
#include "validation/targets.h"

#include <fmt/format.h>

namespace clustersim::app {

std::string memory_markdown(ReportData& data) {
    const auto& runs = data.memory();
    std::string md =
        "Measured peak memory per GPU (`memory/measured-peak-memory.yaml`: torchtitan's Llama "
        "3.1 benchmark on 8-512 H100s and a Trainy run on H200s, torchtune's single-GPU table, "
        "Hugging Face's BERT-large guide; the file cites each page), each row as an experiment "
        "built from its own fields and compared on the statistic its source printed. `run` "
        "reports all three: allocated (`memory.peak_bytes_max`), reserved "
        "(`memory.peak_reserved_bytes_max`) and the device's (`memory.device_bytes_max`, what "
        "must fit in the capacity the device reports). Error = predicted / measured - 1. What "
        "the sources do not state:\n\n";
    for (const auto& rule : validation::memory_rules())
        md += "- " + rule + "\n";
    md += "\n| run | model | GPUs | preset | layout | recompute | features | statistic | "
          "measured (GiB) | predicted (GiB) | error |\n"
          "|---|---|---:|---|---|---|---|---|---:|---:|---:|\n";
    for (const auto& r : runs) {
        if (!r.ran())
            continue;
        md += fmt::format("| {} | {} | {} | {} | tp {} pp {} cp {} dp {} | {} | {} | {} | {:.1f} "
                          "| {:.1f} | {} |\n",
                          r.id, r.model, r.gpus, r.preset, r.tp, r.pp, r.cp, r.dp, r.recompute,
                          base::join(r.features, ", "), validation::to_string(r.statistic),
                          r.measured_gib, r.predicted_gib, base::signed_percent(r.error()));
    }
    const auto s = validation::memory_errors(runs);
    const bool met = s.points > 0 && s.mean_abs <= validation::targets::kMemoryMean;
    md += fmt::format("\n{} of {} rows predicted: mean |error| {}, signed mean {}, worst {}. "
                      "Target (issue 35: mean within {} on the statistic the source printed): "
                      "{}.\n",
                      s.points, runs.size(), base::percent(s.mean_abs),
                      base::signed_percent(s.mean), base::percent(s.max_abs),
                      base::percent(validation::targets::kMemoryMean), met ? "met" : "not met");
    md += "\nThe rows not predicted, with what each needs:\n\n"
          "| run | model | statistic | measured (GiB) | needs |\n|---|---|---|---:|---|\n";
    for (const auto& r : runs) {
        if (!r.ran())
            md += fmt::format("| {} | {} | {} | {:.1f} | {} |\n", r.id, r.model,
                              validation::to_string(r.statistic), r.measured_gib,
                              r.not_modelled.substr(r.not_modelled.find(' ') + 1));
    }
    return md;
}

} // namespace clustersim::app
