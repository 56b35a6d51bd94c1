// The numbers of docs/validation.md's section "Training steps: published Megatron-LM runs": the
// step model
// (strategies/parallel) on the committed hardware presets against two published tables. Each
// row becomes a step measurement (calibrate's StepMeasurement, the settings a measurement file
// would hold) and is predicted through step_experiment, as `clustersim validate`
// does. What a table does not state is set by one rule per table (below), never per row.
#include "validation/accuracy_published.h"
#include "strategies/parallel/platform.h"

#include "base/error.h"
#include "calibrate/measurements.h"
#include "calibrate/predict.h"
#include "config/csv.h"
#include "hardware/hardware_loader.h"
#include "strategies/models/layer_work.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace clustersim::validation {

using namespace calibrate; // the formats, predictions and statistics this study uses

namespace {

// Both tables: Megatron-LM of 2020-21, the `megatron-lm` profile (framework_profile.h):
// gradients all-reduced in fp16, its default for fp16 training then (v1's --fp32-allreduce and
// v2's --accumulate-allreduce-grads-in-fp32 were off by default), over presets whose framework
// keeps today's fp32 reduction; accumulated over micro-batches by autograd into param.grad, an
// add kernel per parameter tensor (none with one micro-batch, as the 2020 README's runs have);
// pipeline tensors scattered over the tensor-parallel ranks and gathered again on receipt
// (FrameworkSpec::pipeline_tp_gather; the 2020 README's runs have no pipeline, so it changes
// nothing there).
const char* const kMegatron2021Framework = "framework: {profile: megatron-lm}\n";

// Narayanan et al. 2021, Table 1: stated by the paper (Section 5.1, the CSV's header).
constexpr int kNarayananSeq = 2048;
constexpr int kNarayananVocab = 51200;
// Rules for what the paper does not state, one for every row:
// - micro-batch: the smallest at which Megatron's fused causal scale-mask-softmax kernel runs
//   (micro_batch_for). The paper's Sec. 4.2 states its runs used that kernel ("two custom
//   kernels to enable the fusion of scale, mask, and softmax ... one to support implicit causal
//   masking (used in auto-regressive models such as GPT)"), and Megatron-LM of the paper's
//   release (NVIDIA/Megatron-LM@8cfef1bfe7, 2021-04-08, megatron/model/fused_softmax.py,
//   FusedScaleMaskSoftmax.forward; the condition since 4916bae616, 2021-02-04) runs it only
//   when micro-batch x heads per rank is a multiple of 4: at micro-batch 1 the 18.4B (6 heads
//   per rank) and 76.1B (10) rows would run PyTorch's fp32 softmax instead. Among the sizes
//   that allow the kernel, the smallest gives the pipelined rows the most micro-batches (the
//   smallest bubble) and every row the least activation memory;
// - virtual stages of the interleaved schedule (pp > 1): the largest divisor of layers / pp
//   not above kMaxVirtualStages (the bubble (p-1)/(v m) falls as 1/v while the pipeline sends
//   grow with v; at v = 4 the bubble of every pipelined row is under 3.1% of the ideal time);
//   1F1B when no divisor above 1 exists;
// - gradients all-reduced after the last backward (dp_overlap false): Megatron-LM's own DDP of
//   2021 ("local") had no overlap with the backward pass (--overlap-grad-reduce came in 2023).
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
        "extends: " + preset + "\nname: " + name + "\n" + kMegatron2021Framework + extra, name);
}

/// A positive number of a table's column.
double positive(const config::CsvTable& csv, std::size_t row, const std::string& column) {
    const double v = csv.number(row, column);
    if (!(v > 0))
        csv.fail(row, fmt::format("column '{}': expected a positive number, got '{}'", column,
                                  csv.text(row, column)));
    return v;
}

/// A positive integer of a table's column.
int integer(const config::CsvTable& csv, std::size_t row, const std::string& column) {
    const double v = positive(csv, row, column);
    if (v != std::floor(v) || v > 1e9)
        csv.fail(row, fmt::format("column '{}': expected an integer, got '{}'", column,
                                  csv.text(row, column)));
    return static_cast<int>(v);
}

/// The step a row describes, as a measurement file would hold it.
StepMeasurement make_step(int gpus, const std::vector<std::string>& settings,
                          const std::string& where) {
    StepMeasurement s;
    s.gpus = gpus;
    s.source = where;
    for (const auto& a : settings)
        apply_setting(s, a, where);
    return s;
}

strategies::parallel::StepResult simulate(const strategies::parallel::Platform& cluster,
                                          const StepMeasurement& step) {
    strategies::parallel::StepOptions o;
    o.oom_advice = false;
    return strategies::parallel::simulate_step(step_experiment(cluster, step), o);
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

/// The micro-batch of a Narayanan row: the smallest that divides the batch of one
/// data-parallel replica (into a multiple of pp micro-batches where the schedule is
/// interleaved, as Megatron requires) and lets the fused softmax kernel run; an error naming
/// the row if none does (`where`).
int micro_batch_for(const PublishedRun& r, const std::string& where) {
    const int per_replica = r.global_batch / r.dp;
    for (int b = 1; b <= per_replica; ++b) {
        if (per_replica % b != 0 || (r.virtual_stages > 1 && (per_replica / b) % r.pp != 0))
            continue;
        if (strategies::models::megatron_fused_softmax(std::int64_t{b} * r.heads / r.tp,
                                                       kNarayananSeq, kNarayananSeq,
                                                       hardware::Dtype::fp16))
            return b;
    }
    throw InputError(fmt::format("{}: no micro-batch divides the {} sequences of a replica into "
                                 "a multiple of pp {} and lets Megatron's fused softmax run",
                                 where, per_replica, r.pp));
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
    const auto csv = config::CsvTable::read(data_dir + "/megatron/narayanan2021-table1.csv");
    const auto cluster = megatron_of_2021("dgx-a100", "", "dgx-a100");
    std::vector<PublishedRun> runs;
    for (std::size_t i = 0; i < csv.size(); ++i) {
        PublishedRun r;
        r.model = csv.text(i, "params_b") + "B";
        r.system = "dgx-a100";
        const int layers = r.layers = integer(csv, i, "layers");
        const int hidden = r.hidden = integer(csv, i, "hidden");
        r.gpus = integer(csv, i, "gpus");
        r.tp = integer(csv, i, "tp");
        r.pp = integer(csv, i, "pp");
        if (r.gpus % (r.tp * r.pp) != 0)
            throw InputError(fmt::format("{}: tp {} x pp {} does not divide {} GPUs", csv.where(i),
                                         r.tp, r.pp, r.gpus));
        r.dp = r.gpus / (r.tp * r.pp);
        r.global_batch = integer(csv, i, "global_batch");
        if (r.global_batch % r.dp != 0)
            throw InputError(fmt::format("{}: dp {} does not divide the global batch {}",
                                         csv.where(i), r.dp, r.global_batch));
        r.virtual_stages = virtual_stages_for(layers, r.pp);
        r.heads = integer(csv, i, "heads");
        r.micro_batch = micro_batch_for(r, csv.where(i));
        const auto settings = gpt_settings(r, kNarayananSeq, kNarayananVocab);
        r.step = simulate(cluster, make_step(r.gpus, settings, csv.where(i)));
        const double flops =
            megatron_eq3_flops(r.global_batch, kNarayananSeq, layers, hidden, kNarayananVocab);
        r.measured = positive(csv, i, "tflops_per_gpu");
        r.published_tflops = r.measured;
        r.predicted = flops / (r.step.step_time_s * r.gpus) / 1e12;
        r.fused_softmax = strategies::models::megatron_fused_softmax(
            std::int64_t{r.micro_batch} * r.heads / r.tp, kNarayananSeq, kNarayananSeq,
            hardware::Dtype::fp16);
        runs.push_back(std::move(r));
    }
    return runs;
}

std::vector<PublishedRun> megatron2020_runs(const std::string& data_dir) {
    const auto csv =
        config::CsvTable::read(data_dir + "/megatron/megatron2020-tensor-parallel-scaling.csv");
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
        r.layers = integer(csv, i, "layers");
        r.hidden = integer(csv, i, "hidden");
        r.gpus = integer(csv, i, "gpus");
        r.tp = integer(csv, i, "tp");
        r.dp = integer(csv, i, "dp");
        r.global_batch = integer(csv, i, "global_batch");
        if (r.gpus != r.tp * r.dp || r.global_batch % r.dp != 0)
            throw InputError(fmt::format("{}: gpus {} is not tp {} x dp {}, or dp does not "
                                         "divide the global batch {}",
                                         csv.where(i), r.gpus, r.tp, r.dp, r.global_batch));
        r.micro_batch = r.global_batch / r.dp;
        r.heads = integer(csv, i, "heads");
        const auto settings = gpt_settings(r, kReadmeSeq, kReadmeVocab);
        r.step = simulate(sys->second, make_step(r.gpus, settings, csv.where(i)));
        r.measured = positive(csv, i, "iteration_ms");
        r.published_tflops = positive(csv, i, "tflops_per_gpu");
        r.predicted = 1e3 * r.step.step_time_s;
        runs.push_back(std::move(r));
    }
    return runs;
}

ErrorStats run_errors(const std::vector<PublishedRun>& runs) {
    std::vector<double> errors;
    for (const auto& r : runs)
        errors.push_back(r.error());
    return error_stats(errors);
}

int runs_within(const std::vector<PublishedRun>& runs, double limit) {
    return static_cast<int>(std::count_if(
        runs.begin(), runs.end(), [limit](const auto& r) { return std::abs(r.error()) <= limit; }));
}

} // namespace clustersim::validation
