// docs/validation.md, section "Training steps: published Megatron-LM runs": the step model
// (strategies/parallel) on the committed hardware presets against two published tables. Each
// row becomes a step measurement (calibrate's StepMeasurement, the settings a measurement file
// would hold) and is predicted through calibrate::step_experiment, as `clustersim validate`
// does. What a table does not state is set by one rule per table (below), never per row.
#include "app/report_published.h"

#include "base/error.h"
#include "calibrate/measurements.h"
#include "calibrate/predict.h"
#include "hardware/hardware_loader.h"
#include "strategies/models/layer_work.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace clustersim::app {

namespace {

// Both tables: gradients all-reduced in fp16, Megatron-LM's default for fp16 training in
// 2020-2021 (v1's --fp32-allreduce and v2's --accumulate-allreduce-grads-in-fp32 were off by
// default), over presets whose framework keeps today's fp32 reduction (FrameworkSpec).
const char* const kFp16GradReduce = "framework: {fp32_grad_reduce: false}\n";

// Narayanan et al. 2021, Table 1: stated by the paper (Section 5.1, the CSV's header).
constexpr int kNarayananSeq = 2048;
constexpr int kNarayananVocab = 51200;
// Rules for what the paper does not state, one for every row:
// - micro-batch 1: the smallest, which gives the pipelined rows the most micro-batches (the
//   smallest bubble) and every row the least activation memory; the table does not say, and
//   one value for all rows keeps the comparison free of per-row choices;
// - virtual stages of the interleaved schedule (pp > 1): the largest divisor of layers / pp
//   not above kMaxVirtualStages (the bubble (p-1)/(v m) falls as 1/v while the pipeline sends
//   grow with v; at v = 4 the bubble of every pipelined row is under 3.1% of the ideal time);
//   1F1B when no divisor above 1 exists;
// - gradients all-reduced after the last backward (dp_overlap false): Megatron-LM's own DDP of
//   2021 ("local") had no overlap with the backward pass (--overlap-grad-reduce came in 2023).
constexpr int kNarayananMicroBatch = 1;
constexpr int kMaxVirtualStages = 4;

// The 2020 README: GPT-2 models, sequence 1024, vocabulary 51200, mixed precision (the CSV's
// header). Rules:
// - micro-batch = the global batch of one model-parallel group (16 on DGX A100, 8 on DGX-2):
//   Megatron-LM v1 (2020) had no pipeline and no gradient accumulation; its --batch-size was
//   the batch of one model-parallel group per iteration;
// - full activation recompute (--checkpoint-activations, in every example script of that
//   release; the README's TFLOP/s equal Eq. 3 with recompute's 4 passes to 0.1%);
// - gradients all-reduced after the backward (Megatron's default "local" DDP, no overlap);
// - DGX A100 rows on the 40 GB A100 (HBM2 at 1555 GB/s, the A100 datasheet): the README's runs
//   date from 2020, before the 80 GB part (November 2020); dgx-a100 otherwise unchanged.
constexpr int kReadmeSeq = 1024;
constexpr int kReadmeVocab = 51200;
const char* const kA100Of2020 = "gpu:\n"
                                "  name: A100-SXM4-40GB\n"
                                "  hbm: {capacity: 40GB, bandwidth: 1555GB/s}\n";

/// `preset` with the software of 2020-2021 (and `extra` keys), named `name` in messages.
strategies::parallel::Platform megatron_of_2021(const std::string& preset, const std::string& extra,
                                                const std::string& name) {
    return strategies::parallel::parse_platform_yaml(
        "extends: " + preset + "\nname: " + name + "\n" + kFp16GradReduce + extra, name);
}

/// A CSV file with '#' comment lines and a header line, read by column name.
class Csv {
public:
    explicit Csv(std::string path)
        : path_(std::move(path)) {
        std::ifstream in(path_);
        if (!in)
            throw InputError(path_ + ": cannot open the file");
        std::string line;
        int number = 0;
        while (std::getline(in, line)) {
            ++number;
            if (!line.empty() && line.back() == '\r')
                line.pop_back();
            if (line.empty() || line[0] == '#')
                continue;
            std::vector<std::string> fields;
            std::stringstream ss(line);
            std::string cell;
            while (std::getline(ss, cell, ','))
                fields.push_back(cell);
            if (columns_.empty()) {
                columns_ = fields;
                continue;
            }
            if (fields.size() != columns_.size())
                throw InputError(fmt::format("{}:{}: expected {} columns, got {}", path_, number,
                                             columns_.size(), fields.size()));
            rows_.push_back({number, fields});
        }
        if (rows_.empty())
            throw InputError(path_ + ": no data rows");
    }

    std::size_t size() const { return rows_.size(); }
    std::string where(std::size_t row) const {
        return fmt::format("{}:{}", path_, rows_[row].first);
    }
    const std::string& text(std::size_t row, const std::string& column) const {
        const auto it = std::find(columns_.begin(), columns_.end(), column);
        if (it == columns_.end())
            throw InputError(path_ + ": no column '" + column + "'");
        return rows_[row].second[static_cast<std::size_t>(it - columns_.begin())];
    }
    double number(std::size_t row, const std::string& column) const {
        const std::string& t = text(row, column);
        std::size_t used = 0;
        double v = 0;
        try {
            v = std::stod(t, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != t.size() || !(v > 0))
            throw InputError(fmt::format("{}: column '{}': expected a positive number, got '{}'",
                                         where(row), column, t));
        return v;
    }
    int integer(std::size_t row, const std::string& column) const {
        const double v = number(row, column);
        if (v != std::floor(v) || v > 1e9)
            throw InputError(fmt::format("{}: column '{}': expected an integer, got '{}'",
                                         where(row), column, text(row, column)));
        return static_cast<int>(v);
    }

private:
    std::string path_;
    std::vector<std::string> columns_;
    std::vector<std::pair<int, std::vector<std::string>>> rows_;
};

/// The step a row describes, as a measurement file would hold it.
calibrate::StepMeasurement make_step(int gpus, const std::vector<std::string>& settings,
                                     const std::string& where) {
    calibrate::StepMeasurement s;
    s.gpus = gpus;
    s.source = where;
    for (const auto& a : settings)
        calibrate::apply_setting(s, a, where);
    return s;
}

strategies::parallel::StepResult simulate(const strategies::parallel::Platform& cluster,
                                          const calibrate::StepMeasurement& step) {
    strategies::parallel::StepOptions o;
    o.oom_advice = false;
    return strategies::parallel::simulate_step(calibrate::step_experiment(cluster, step), o);
}

int virtual_stages_for(int layers, int pp) {
    if (pp == 1 || layers % pp != 0)
        return 1;
    for (int v = kMaxVirtualStages; v > 1; --v) {
        if ((layers / pp) % v == 0)
            return v;
    }
    return 1;
}

std::string signed_pct(double x) {
    return fmt::format("{:+.1f}%", 100 * x);
}

struct Summary {
    double mean_abs = 0, max_abs = 0, mean = 0;
    int within = 0, n = 0;
};

Summary summarize(const std::vector<PublishedRun>& runs, double target) {
    Summary s;
    for (const auto& r : runs) {
        const double e = std::abs(r.error());
        s.mean_abs += e;
        s.mean += r.error();
        s.max_abs = std::max(s.max_abs, e);
        s.within += e <= target ? 1 : 0;
        ++s.n;
    }
    s.mean_abs /= s.n;
    s.mean /= s.n;
    return s;
}

std::string summary_line(const Summary& s, double target, const std::string& what) {
    return fmt::format("Mean |error| {:.1f}%, max |error| {:.1f}%, mean error {}; {} of {} rows "
                       "within {:.0f}%. Target ({} within {:.0f}% on every row): {}.\n",
                       100 * s.mean_abs, 100 * s.max_abs, signed_pct(s.mean), s.within, s.n,
                       100 * target, what, 100 * target, s.within == s.n ? "met" : "not met");
}

/// "12.3%" of the step.
std::string share(double part, double step) {
    return fmt::format("{:.1f}%", 100 * part / step);
}

/// Where each row's predicted step goes, as shares of the step.
std::string breakdown_table(const std::vector<PublishedRun>& runs) {
    std::string md = "| model | GPUs | step (s) | compute | recompute | host | TP comm | "
                     "PP bubble | PP comm | DP comm | optimizer | peak memory (GB) |\n";
    md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& r : runs) {
        const auto& b = r.step.breakdown;
        const double t = r.step.step_time_s;
        md += fmt::format(
            "| {} | {} | {:.2f} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f}{} |\n", r.model,
            r.gpus, t, share(b.compute_s, t), share(b.recompute_s, t), share(b.host_s, t),
            share(b.tp_comm_exposed_s, t), share(b.pp_bubble_s, t), share(b.pp_comm_exposed_s, t),
            share(b.dp_comm_exposed_s, t), share(b.optimizer_s, t),
            static_cast<double>(r.step.peak_bytes_max) / 1e9, r.step.oom ? " (OOM)" : "");
    }
    return md;
}

/// The experiment overrides of a published GPT run (fp16, full recompute, gradients
/// all-reduced after the backward; 1F1B, or interleaved 1F1B with virtual stages).
std::vector<std::string> gpt_settings(const PublishedRun& r, int seq, int vocab) {
    std::vector<std::string> settings = {
        "model.kind=transformer",
        fmt::format("model.layers={}", r.layers),
        fmt::format("model.hidden={}", r.hidden),
        fmt::format("model.heads={}", r.heads),
        fmt::format("model.ffn={}", 4 * r.hidden),
        fmt::format("model.seq={}", seq),
        fmt::format("model.vocab={}", vocab),
        fmt::format("training.global_batch={}", r.global_batch),
        fmt::format("training.micro_batch={}", r.micro_batch),
        "training.dtype=fp16",
        fmt::format("parallel.tp={}", r.tp),
        fmt::format("parallel.pp={}", r.pp),
        fmt::format("parallel.dp={}", r.dp),
        "parallel.recompute=full",
        "parallel.dp_overlap=false",
    };
    if (r.virtual_stages > 1) {
        settings.push_back("parallel.schedule=interleaved-1f1b");
        settings.push_back(fmt::format("parallel.virtual_stages={}", r.virtual_stages));
    } else {
        settings.push_back("parallel.schedule=1f1b");
    }
    return settings;
}

} // namespace

double megatron_eq3_flops(double global_batch, double seq, double layers, double hidden,
                          double vocab) {
    return 96 * global_batch * seq * layers * hidden * hidden *
           (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden));
}

std::vector<PublishedRun> narayanan2021_runs(const std::string& data_dir) {
    const Csv csv(data_dir + "/megatron/narayanan2021-table1.csv");
    const auto cluster = megatron_of_2021("dgx-a100", "", "dgx-a100");
    std::vector<PublishedRun> runs;
    for (std::size_t i = 0; i < csv.size(); ++i) {
        PublishedRun r;
        r.model = csv.text(i, "params_b") + "B";
        r.system = "dgx-a100";
        const int layers = r.layers = csv.integer(i, "layers");
        const int hidden = r.hidden = csv.integer(i, "hidden");
        r.gpus = csv.integer(i, "gpus");
        r.tp = csv.integer(i, "tp");
        r.pp = csv.integer(i, "pp");
        if (r.gpus % (r.tp * r.pp) != 0)
            throw InputError(fmt::format("{}: tp {} x pp {} does not divide {} GPUs", csv.where(i),
                                         r.tp, r.pp, r.gpus));
        r.dp = r.gpus / (r.tp * r.pp);
        r.global_batch = csv.integer(i, "global_batch");
        r.micro_batch = kNarayananMicroBatch;
        r.virtual_stages = virtual_stages_for(layers, r.pp);
        r.heads = csv.integer(i, "heads");
        const auto settings = gpt_settings(r, kNarayananSeq, kNarayananVocab);
        r.step = simulate(cluster, make_step(r.gpus, settings, csv.where(i)));
        const double flops =
            megatron_eq3_flops(r.global_batch, kNarayananSeq, layers, hidden, kNarayananVocab);
        r.measured = csv.number(i, "tflops_per_gpu");
        r.published_tflops = r.measured;
        r.predicted = flops / (r.step.step_time_s * r.gpus) / 1e12;
        runs.push_back(std::move(r));
    }
    return runs;
}

std::vector<PublishedRun> megatron2020_runs(const std::string& data_dir) {
    const Csv csv(data_dir + "/megatron/megatron2020-tensor-parallel-scaling.csv");
    const std::map<std::string, strategies::parallel::Platform> systems = {
        {"dgx-a100", megatron_of_2021("dgx-a100", kA100Of2020, "dgx-a100-40gb")},
        {"dgx2-v100", megatron_of_2021("dgx2-v100", "", "dgx2-v100")}};
    std::vector<PublishedRun> runs;
    for (std::size_t i = 0; i < csv.size(); ++i) {
        PublishedRun r;
        r.system = csv.text(i, "system");
        const auto sys = systems.find(r.system);
        if (sys == systems.end())
            throw InputError(fmt::format("{}: column 'system': expected dgx-a100 or dgx2-v100, "
                                         "got '{}'",
                                         csv.where(i), r.system));
        r.model = csv.text(i, "params_b") + "B";
        r.layers = csv.integer(i, "layers");
        r.hidden = csv.integer(i, "hidden");
        r.gpus = csv.integer(i, "gpus");
        r.tp = csv.integer(i, "tp");
        r.dp = csv.integer(i, "dp");
        r.global_batch = csv.integer(i, "global_batch");
        if (r.gpus != r.tp * r.dp || r.global_batch % r.dp != 0)
            throw InputError(fmt::format("{}: gpus {} is not tp {} x dp {}, or dp does not "
                                         "divide the global batch {}",
                                         csv.where(i), r.gpus, r.tp, r.dp, r.global_batch));
        r.micro_batch = r.global_batch / r.dp;
        r.heads = csv.integer(i, "heads");
        const auto settings = gpt_settings(r, kReadmeSeq, kReadmeVocab);
        r.step = simulate(sys->second, make_step(r.gpus, settings, csv.where(i)));
        r.measured = csv.number(i, "iteration_ms");
        r.published_tflops = csv.number(i, "tflops_per_gpu");
        r.predicted = 1e3 * r.step.step_time_s;
        runs.push_back(std::move(r));
    }
    return runs;
}

std::string published_megatron_markdown(const std::string& data_dir) {
    constexpr double kTarget = 0.10; // issue 4: every row within 10%
    std::string md;
    md += "The training-step model with the committed presets against two published tables of "
          "Megatron-LM runs. Each row is predicted as a step measurement "
          "(`calibrate::step_experiment`, as `clustersim validate` does); what a table does not "
          "state is set by one rule for all its rows, written below. The presets are used as "
          "committed but for two stated facts of those runs: the software reduced gradients in "
          "fp16, and the 2020 DGX A100 had the 40 GB A100. Error = predicted / measured - 1.\n";

    const auto big = narayanan2021_runs(data_dir);
    const Summary nb = summarize(big, kTarget);
    md += "\n### Narayanan et al. 2021, Table 1 (GPT 1.7B-1T, 32-3072 A100s)\n\n";
    md += "`megatron/narayanan2021-table1.csv`: Selene, DGX A100 80GB (`dgx-a100` sized to the "
          "row's GPUs), sequence 2048, vocabulary 51200, ffn 4h, fp16, full activation "
          "recompute, tensor and pipeline sizes from the table, dp = GPUs / (tp x pp). Both "
          "sides count FLOPs with the paper's Eq. 3, F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)); "
          "predicted TFLOP/s = F / (predicted step time x GPUs). Rules for what the paper does "
          "not state: micro-batch 1 on every row; the interleaved 1F1B schedule where pp > 1, "
          "with v = the largest divisor of layers / pp not above 4; gradients all-reduced after "
          "the last backward (Megatron's 2021 DDP did not overlap them), in fp16 (its default "
          "then; `framework.fp32_grad_reduce: false` over the preset).\n\n";
    md += "| model | GPUs | tp | pp | dp | v | micro-batches | measured TFLOP/s | predicted "
          "TFLOP/s | error |\n";
    md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& r : big)
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.0f} | {:.1f} | {} |\n", r.model,
                          r.gpus, r.tp, r.pp, r.dp, r.virtual_stages, r.step.micro_batches,
                          r.measured, r.predicted, signed_pct(r.error()));
    md += "\n" + summary_line(nb, kTarget, "issue 4: per-GPU TFLOP/s");
    for (const auto& r : big) {
        const std::int64_t rows = std::int64_t{r.micro_batch} * r.heads / r.tp;
        if (!strategies::models::megatron_fused_softmax(rows, kNarayananSeq, kNarayananSeq,
                                                        hardware::Dtype::fp16))
            md += fmt::format(
                "\n{}: {} heads per rank at micro-batch {} are {} rows of scores, which "
                "Megatron's fused softmax kernel does not take (it needs a multiple of 4), so the "
                "model runs PyTorch's fp32 softmax there ({:+.1f}%); the paper's throughput says "
                "it ran a micro-batch where the fused kernel applies.\n",
                r.model, r.heads / r.tp, r.micro_batch, rows, 100 * r.error());
    }
    md += "\nWhere the predicted steps go (shares of the step; the pipeline rank whose step ends "
          "last):\n\n";
    md += breakdown_table(big);
    {
        // How large the gap of the largest model is against the terms that could hold it.
        const PublishedRun& r = big.back();
        const auto& b = r.step.breakdown;
        const double t = r.step.step_time_s;
        const double gap = t * (r.predicted / r.measured - 1);
        const double pipeline =
            b.pp_bubble_s + b.pp_comm_exposed_s + b.dp_comm_exposed_s + b.optimizer_s;
        const double compute = b.compute_s + b.recompute_s;
        md += fmt::format(
            "\nThe largest model ({}): the measured TFLOP/s mean a step {:.1f} s {} than "
            "predicted. The pipeline bubble, pipeline and data-parallel communication and the "
            "optimizer take {:.1f} s ({}) of the predicted step, compute and recompute {:.1f} s "
            "({}): to account for the difference alone, the former would have to be {:.1f}x "
            "what the model says, the latter {:.2f}x.\n",
            r.model, std::abs(gap), gap >= 0 ? "longer" : "shorter", pipeline, share(pipeline, t),
            compute, share(compute, t), (pipeline + gap) / pipeline, (compute + gap) / compute);
    }

    const auto small = megatron2020_runs(data_dir);
    const Summary sb = summarize(small, kTarget);
    md += "\n### Megatron-LM README (2020): tensor-parallel scaling on DGX A100 and DGX-2\n\n";
    md += "`megatron/megatron2020-tensor-parallel-scaling.csv`: GPT-2 models of 1.2B-8.3B, "
          "sequence 1024, vocabulary 51200, ffn 4h, fp16, tensor parallel 1-8 (no pipeline), "
          "one model-parallel group or 128 data-parallel ones. DGX A100 rows on `dgx-a100` with "
          "the 40 GB A100's HBM (40 GB, 1555 GB/s, datasheet: the README's runs predate the 80 "
          "GB part); DGX-2 rows on `dgx2-v100` (uncalibrated: its fitted values are dgx-a100's, "
          "see configs/hardware/dgx2-v100.yaml). Rules: micro-batch = the batch of one "
          "model-parallel group (16 on DGX A100, 8 on DGX-2: Megatron-LM of 2020 had neither "
          "pipelines nor gradient accumulation, its --batch-size was that batch); full "
          "activation recompute (--checkpoint-activations; the README's TFLOP/s are Eq. 3 with "
          "recompute); gradients all-reduced after the backward, in fp16 (Megatron's defaults "
          "then; `framework.fp32_grad_reduce: false` over the presets).\n\n";
    md += "| system | model | hidden | tp | dp | GPUs | global batch | micro-batch | measured "
          "(ms) | predicted (ms) | error |\n";
    md += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& r : small)
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {:.0f} | {:.0f} | {} |\n",
                          r.system, r.model, r.hidden, r.tp, r.dp, r.gpus, r.global_batch,
                          r.micro_batch, r.measured, r.predicted, signed_pct(r.error()));
    md += "\n" + summary_line(sb, kTarget, "issue 4: iteration time");
    md += "\nWhere the predicted steps go:\n\n";
    md += breakdown_table(small);
    return md;
}

} // namespace clustersim::app
