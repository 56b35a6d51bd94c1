#include "app/report_summary.h"

#include "base/text.h"
#include "validation/targets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace clustersim::app {

namespace tg = validation::targets;

namespace {

constexpr double kMiB = 1 << 20;

/// "1.5-1.7%" (or "1.6%" when they round alike): the range of `values`.
std::string range(std::vector<double> values) {
    if (values.empty())
        return "-";
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    const std::string a = base::percent(*lo), b = base::percent(*hi);
    return a == b ? a : a.substr(0, a.size() - 1) + "-" + b;
}

std::string met(bool ok) {
    return ok ? "met" : "**not met**";
}

std::string row(const std::string& what, const std::string& data, const std::string& result,
                const std::string& target, bool ok) {
    return fmt::format("| {} | {} | {} | {} | {} |\n", what, data, result, target, met(ok));
}

std::string target(double t) {
    return base::percent(t, 0);
}

std::string collective_rows(ReportData& data) {
    const validation::CollectiveAccuracy& a = data.collectives();
    std::string md;
    std::vector<double> all, large;
    for (const auto& c : a.a100_all_reduce) {
        all.push_back(c.errors().mean_abs);
        large.push_back(c.errors(64 * kMiB).mean_abs);
    }
    const bool one_node =
        std::all_of(all.begin(), all.end(), [](double e) { return e <= tg::kAllReduceMean; }) &&
        std::all_of(large.begin(), large.end(),
                    [](double e) { return e <= tg::kAllReduceMeanLarge; });
    md += row("all_reduce time, dgx-a100, 2/4/8 GPUs, 1 MiB - 1 GiB",
              "a100-node/nccl-all-reduce-*.csv",
              "mean " + range(all) + "; " + range(large) + " from 64 MiB",
              target(tg::kAllReduceMean) + "; " + target(tg::kAllReduceMeanLarge) + " from 64 MiB",
              one_node);
    const double floor = a.a100_floor.error(), plateau = a.a100_plateau.error();
    md += row("nccl-tests log, 8x A100: latency floor, bus bandwidth plateau",
              "nccl/a100-8gpu-all_reduce.nccl-tests.txt",
              base::signed_percent(floor) + ", " + base::signed_percent(plateau),
              target(tg::kLogPoint),
              std::abs(floor) <= tg::kLogPoint && std::abs(plateau) <= tg::kLogPoint);
    std::vector<std::string> worst;
    bool busbw = true;
    for (const auto& c : a.busbw_8gpu) {
        const std::string preset = c.title.substr(0, c.title.find(','));
        if (preset == "dgx-a100")
            continue; // shown for reference, not a target
        const double w = c.errors(16 * kMiB).max_abs;
        worst.push_back(preset + " " + base::percent(w));
        busbw = busbw && w <= tg::kBusbwFrom16MiB;
    }
    md += row("all_reduce bus bandwidth from 16 MiB, 8 GPUs", "nccl/busbw-8gpu-*.csv",
              "worst " + base::join(worst, ", "), target(tg::kBusbwFrom16MiB), busbw);
    double h200 = 0;
    for (const auto& r : a.h200_16gib)
        h200 = std::max(h200, std::abs(r.error()));
    md += row("16 GiB ring, NVLS, all_gather, reduce_scatter, 8x H200",
              "nccl/h200-8gpu-large-messages.yaml", "worst " + base::percent(h200),
              target(tg::kH200LargeMessage), h200 <= tg::kH200LargeMessage);
    const double nvlink5 = a.nvlink5_ring.errors(64 * kMiB).max_abs;
    md += row("NVLink 5 ring all_reduce from 64 MiB, 4x GB200 on dgx-b200",
              "nccl/gb200-4gpu-ring-all_reduce.csv", "worst " + base::percent(nvlink5),
              target(tg::kNewHardwareFrom64MiB), nvlink5 <= tg::kNewHardwareFrom64MiB);
    int rccl_rows = 0, rccl_within = 0;
    for (const auto& c : a.rccl_all_reduce) {
        for (std::size_t i = 0; i < c.rows.size(); ++i) {
            if (c.sizes[i] < 64 * kMiB)
                continue;
            ++rccl_rows;
            rccl_within += std::abs(c.rows[i].error()) <= tg::kNewHardwareFrom64MiB ? 1 : 0;
        }
    }
    md += row("AMD Instinct all_reduce from 64 MiB: mi300x, mi325x, mi355x, 8-64 GPUs",
              "rccl/all_reduce-busbw.csv",
              fmt::format("{} of {} sizes within", rccl_within, rccl_rows),
              target(tg::kNewHardwareFrom64MiB), rccl_within == rccl_rows);
    std::vector<std::string> lecture;
    bool lecture_ok = true;
    for (const auto& r : a.lecture) {
        lecture.push_back(base::signed_percent(r.error()));
        lecture_ok = lecture_ok && std::abs(r.error()) <= tg::kLecture;
    }
    md +=
        row("the lecture's 4x H100 all_reduce, reduce_scatter", "lecture/cs336-parallelism-2.yaml",
            base::join(lecture, ", "), target(tg::kLecture), lecture_ok);
    int files = 0, within = 0;
    double worst_file = 0;
    for (const auto& f : data.multi_node()) {
        if (f.lower_confidence)
            continue;
        const double e = f.curve.errors(64 * kMiB).mean_abs;
        ++files;
        within += e <= tg::kMultiNodeFileMean ? 1 : 0;
        worst_file = std::max(worst_file, e);
    }
    md += row("all_reduce time across 2-8 nodes (A100, H100), from 64 MiB", "nccl/multi-node/",
              fmt::format("{} of {} files within; worst file's mean {}", within, files,
                          base::percent(worst_file)),
              target(tg::kMultiNodeFileMean) + " mean per file", within == files);
    return md;
}

std::string step_rows(ReportData& data) {
    std::string md;
    const validation::GemmAccuracy& g = data.gemm();
    md += row("cuBLAS GEMM throughput, A100/H100/H200", "gemm/matmul-throughput.csv",
              fmt::format("mean {}, worst {} ({} shapes)", base::percent(g.errors.mean_abs),
                          base::percent(g.errors.max_abs), g.errors.points),
              target(tg::kGemmMean) + " mean, " + target(tg::kGemmRow) + " per row",
              g.errors.mean_abs <= tg::kGemmMean && g.errors.max_abs <= tg::kGemmRow);
    const validation::StepAccuracy& s = data.steps();
    md += row("Megatron training steps on one A100 node, every row, the preset",
              fmt::format("a100-node/megatron-steps-single-node.csv ({})", s.every.points),
              fmt::format("mean {}, worst {}", base::percent(s.every.mean_abs, 2),
                          base::percent(s.every.max_abs)),
              target(tg::kStepsMean) + " mean, " + target(tg::kStepsWorst) + " worst",
              s.every.mean_abs <= tg::kStepsMean && s.every.max_abs <= tg::kStepsWorst);
    md += row("the same, fitted on a seeded fifth, validated on the rest",
              fmt::format("the same, {} held out", s.held_out.points),
              "mean " + base::percent(s.held_out.mean_abs, 2), target(tg::kStepsHeldOutMean),
              s.held_out.mean_abs <= tg::kStepsHeldOutMean);
    auto published = [&](const std::string& what, const std::string& file,
                         const std::vector<validation::PublishedRun>& runs) {
        const calibrate::ErrorStats e = validation::run_errors(runs);
        const int within = validation::runs_within(runs, tg::kPublishedRow);
        return row(what, file,
                   fmt::format("mean {}, worst {} ({} of {} rows within)",
                               base::percent(e.mean_abs), base::percent(e.max_abs), within,
                               e.points),
                   target(tg::kPublishedRow) + " every row", within == e.points);
    };
    md += published("per-GPU TFLOP/s, GPT 1.7B-1T on 32-3072 A100s",
                    "megatron/narayanan2021-table1.csv", data.narayanan2021());
    md += published("iteration time, GPT-2 1.2B-8.3B, DGX A100 and DGX-2",
                    "megatron/megatron2020-tensor-parallel-scaling.csv", data.megatron2020());
    const auto& recent = data.recent();
    const calibrate::ErrorStats r = validation::recent_errors(recent, false);
    const auto fast = std::count_if(recent.begin(), recent.end(),
                                    [](const auto& x) { return x.ran() && x.error() < 0; });
    md += row("iteration time, recent NeMo, Megatron-Bridge and torchtitan runs on 64-1024 H100s",
              fmt::format("large-scale/h100-published-runs.yaml ({})", recent.size()),
              fmt::format("{} predicted: mean {}, signed {}, worst {} ({} too fast)", r.points,
                          base::percent(r.mean_abs), base::signed_percent(r.mean),
                          base::percent(r.max_abs), fast),
              target(tg::kRecentMean) + " mean, " + target(tg::kRecentWorst) + " worst",
              r.mean_abs <= tg::kRecentMean && r.max_abs <= tg::kRecentWorst);
    const auto& fresh = data.new_hardware();
    const auto gpu_rows = std::count_if(fresh.begin(), fresh.end(), [](const auto& x) {
        return x.accelerator.rfind("TPU", 0) != 0;
    });
    std::vector<validation::NewHardwareRun> gpu, tpu;
    for (const auto& x : fresh)
        (x.accelerator.rfind("TPU", 0) == 0 ? tpu : gpu).push_back(x);
    const calibrate::ErrorStats n = validation::new_hardware_errors(gpu, "");
    const bool all_ran = n.points == gpu_rows;
    md += row("step time, Blackwell, H100 and AMD Instinct runs (Megatron-Bridge, Primus)",
              fmt::format("new-hardware/published-runs.yaml ({} GPU rows)", gpu_rows),
              fmt::format("{} predicted: mean {}, signed {}, worst {}", n.points,
                          base::percent(n.mean_abs), base::signed_percent(n.mean),
                          base::percent(n.max_abs)),
              target(tg::kNewHardwareStepMean) + " mean, " + target(tg::kNewHardwareStepWorst) +
                  " worst, every GPU row",
              all_ran && n.mean_abs <= tg::kNewHardwareStepMean &&
                  n.max_abs <= tg::kNewHardwareStepWorst &&
                  std::abs(n.mean) <= tg::kNewHardwareStepBias);
    const calibrate::ErrorStats t = validation::new_hardware_errors(tpu, "");
    md += row("step time, MaxText's TPU v4, v5e and v5p runs, through the mesh keys",
              fmt::format("new-hardware/published-runs.yaml ({} TPU rows)", tpu.size()),
              fmt::format("{} predicted: mean {}, signed {}, worst {}", t.points,
                          base::percent(t.mean_abs), base::signed_percent(t.mean),
                          base::percent(t.max_abs)),
              target(tg::kNewHardwareStepMean) + " mean, " + target(tg::kNewHardwareStepWorst) +
                  " worst, " + target(tg::kNewHardwareStepBias) + " signed",
              t.mean_abs <= tg::kNewHardwareStepMean && t.max_abs <= tg::kNewHardwareStepWorst &&
                  std::abs(t.mean) <= tg::kNewHardwareStepBias);
    const auto& memory = data.memory();
    const calibrate::ErrorStats m = validation::memory_errors(memory);
    md += row("peak memory per GPU, torchtitan, torchtune and Hugging Face runs (the statistic "
              "each printed)",
              fmt::format("memory/measured-peak-memory.yaml ({})", memory.size()),
              fmt::format("{} predicted: mean {}, signed {}, worst {}", m.points,
                          base::percent(m.mean_abs), base::signed_percent(m.mean),
                          base::percent(m.max_abs)),
              target(tg::kMemoryMean) + " mean", m.points > 0 && m.mean_abs <= tg::kMemoryMean);
    return md;
}

} // namespace

std::string summary_markdown(ReportData& data) {
    std::string md = "Every study below in one line: its result against its target (the "
                     "sections give each point). Error = predicted / measured - 1.\n\n"
                     "| what | data | result | target | |\n|---|---|---|---|---|\n";
    md += collective_rows(data);
    md += step_rows(data);
    return md;
}

} // namespace clustersim::app
