#include "app/trace_compare.h"

#include "app/chrome_trace.h"
#include "app/run_report.h"
#include "app/version.h"
#include "base/error.h"
#include "calibrate/validation.h"
#include "config/bounded_read.h"
#include "hardware/compute_model.h"
#include "hardware/dtype.h"
#include "strategies/models/layer_work.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace clustersim::app {

using calibrate::KernelClass;
using strategies::models::OpKind;

namespace {

KernelClass class_of(OpKind k) {
    switch (k) {
    case OpKind::gemm:
        return KernelClass::gemm;
    case OpKind::batched_gemm:
    case OpKind::fused_attention:
        return KernelClass::attention;
    case OpKind::memory_bound:
        return KernelClass::elementwise;
    }
    return KernelClass::other;
}

/// An op's time in the step model: the kernel model's, over the framework's efficiency. The
/// median GPU's, as a traced GPU is one: the step's wait for its slowest GPU
/// (strategies/parallel/straggler.h) shows in the comparison as time this GPU is idle.
double op_seconds(const strategies::models::Op& op, const strategies::parallel::FrameworkSpec& fw) {
    const double eff = op.kind == OpKind::memory_bound ? fw.memory_efficiency : fw.gemm_efficiency;
    return op.time.seconds() / eff;
}

struct Model {
    strategies::models::LayerWork layer, embedding, head;
    strategies::models::Op optimizer;
    int micro_batches = 1;
};

Model model_of(const strategies::parallel::ExperimentSpec& e) {
    const hardware::ComputeModel cm(e.cluster);
    strategies::models::LayerConfig cfg;
    cfg.tp = e.parallel.tp;
    cfg.sequence_parallel = e.parallel.sequence_parallel && e.parallel.tp > 1;
    cfg.micro_batch = e.training.micro_batch;
    cfg.dtype = e.training.dtype;
    Model m;
    m.layer = strategies::models::layer_work(e.model, cfg, cm);
    m.embedding = strategies::models::embedding_work(e.model, cfg, cm);
    m.head = strategies::models::head_work(e.model, cfg, cm);
    const std::int64_t params = m.layer.parameters * e.model.layers / e.parallel.pp +
                                m.embedding.parameters +
                                (m.head.shares_embedding_weights ? 0 : m.head.parameters);
    // The step updates the weights in their own dtype: bf16 under FP8 and FP4 training, as
    // the step model's ranks do (rank_plan.cpp).
    m.optimizer =
        strategies::models::optimizer_step(params, hardware::weight_dtype(e.training.dtype),
                                           e.training.optimizer, 0, cm, e.training.master_weights);
    m.micro_batches = e.micro_batches();
    return m;
}

std::string ms(double s) {
    return fmt::format("{:.3f} ms", s * 1e3);
}

} // namespace

calibrate::KinetoTrace read_trace_file(const std::string& path) {
    std::string data = config::read_bounded(path, config::kMaxTraceFileBytes, "a profiler trace");
    std::vector<std::string> warnings;
    if (calibrate::is_gzip(data))
        data = calibrate::gunzip(data, path, config::kMaxTraceFileBytes, &warnings);
    calibrate::ImportOptions options;
    calibrate::KinetoTrace trace = calibrate::read_kineto_trace(data, path, options);
    auto& w = trace.imported.warnings;
    w.insert(w.begin(), warnings.begin(), warnings.end());
    return trace;
}

StepComparison compare_step(const calibrate::KinetoTrace& trace,
                            const strategies::parallel::ExperimentSpec& e,
                            const strategies::parallel::StepResult& r) {
    StepComparison c;
    c.device = trace.imported.measurements.environment.device;
    const std::string why = calibrate::device_mismatch(c.device, e.cluster.node.gpu.name);
    if (!why.empty())
        throw InputError(fmt::format("the trace ran on '{}' but the experiment's hardware is '{}' "
                                     "({}): compare on the hardware the trace was recorded on",
                                     c.device, e.cluster.node.gpu.name, why));
    c.steps = std::max<int>(1, static_cast<int>(trace.steps.size()));
    const double per_step = 1.0 / c.steps;

    // Measured.
    std::array<double, calibrate::kKernelClassCount> measured{};
    std::map<int, double> measured_layer;
    for (const auto& k : trace.kernels) {
        if (!trace.steps.empty() && k.step < 0)
            continue;
        measured[static_cast<std::size_t>(k.kernel_class)] += k.duration.seconds() * per_step;
        if (k.phase == 1 || k.phase == 2)
            measured_layer[k.layer] += k.duration.seconds() * per_step;
    }
    double measured_step = 0, measured_busy = 0;
    for (const auto& t : trace.imported.measurements.trace_steps) {
        measured_step = t.time.seconds();
        measured_busy = t.busy.seconds();
    }

    // Predicted.
    const Model m = model_of(e);
    std::array<double, calibrate::kKernelClassCount> predicted{};
    const auto& fw = e.framework;
    auto add_pass = [&](const strategies::models::PassWork& pass, double times) {
        double total = 0;
        for (const auto& op : pass.ops) {
            const double s = op_seconds(op, fw) * times;
            predicted[static_cast<std::size_t>(class_of(op.kind))] += s;
            total += s;
        }
        return total;
    };
    const double mb = m.micro_batches;
    const int layers_here = e.model.layers / e.parallel.pp;
    double layer_s = 0;
    for (int l = 0; l < layers_here; ++l)
        layer_s = add_pass(m.layer.forward, mb) + add_pass(m.layer.recompute, mb) +
                  add_pass(m.layer.backward, mb);
    double outside_s = 0;
    for (const auto* w : {&m.embedding, &m.head})
        outside_s +=
            add_pass(w->forward, mb) + add_pass(w->recompute, mb) + add_pass(w->backward, mb);
    const double optimizer_s = m.optimizer.time.seconds() / fw.memory_efficiency;
    predicted[static_cast<std::size_t>(KernelClass::elementwise)] += optimizer_s;
    double predicted_busy = 0;
    for (double s : predicted)
        predicted_busy += s;

    for (int k = 0; k < calibrate::kKernelClassCount; ++k) {
        const auto kc = static_cast<KernelClass>(k);
        if (measured[static_cast<std::size_t>(k)] == 0 &&
            predicted[static_cast<std::size_t>(k)] == 0)
            continue;
        c.classes.push_back(CompareRow{std::string(calibrate::to_string(kc)),
                                       measured[static_cast<std::size_t>(k)],
                                       predicted[static_cast<std::size_t>(k)]});
    }
    c.classes.push_back(CompareRow{"GPU idle", std::max(0.0, measured_step - measured_busy),
                                   std::max(0.0, r.step_time_s - predicted_busy)});
    c.classes.push_back(CompareRow{"step", measured_step, r.step_time_s});

    for (int l = 0; l < layers_here; ++l) {
        auto it = measured_layer.find(l);
        c.layers.push_back(CompareRow{fmt::format("layer {}", l),
                                      it == measured_layer.end() ? 0.0 : it->second, layer_s});
    }
    double measured_outside = 0;
    for (const auto& [l, s] : measured_layer)
        if (l < 0 || l >= layers_here)
            measured_outside += s;
    c.layers.push_back(CompareRow{"outside layers", measured_outside, outside_s});

    if (e.parallel.tp > 1 || e.parallel.pp > 1)
        c.notes.push_back("the experiment has tp or pp > 1: predicted rows are one rank's");
    if (measured_layer.empty() || (measured_layer.size() == 1 && measured_layer.count(-1)))
        c.notes.push_back("no kernel has a layer: wrap each layer's forward in "
                          "torch.profiler.record_function(\"layerN\")");
    if (static_cast<int>(measured_layer.size()) - (measured_layer.count(-1) ? 1 : 0) !=
            layers_here &&
        !measured_layer.empty())
        c.notes.push_back(fmt::format("the trace has {} layers with kernels, the experiment {}",
                                      measured_layer.size() - (measured_layer.count(-1) ? 1 : 0),
                                      layers_here));
    c.trace_name = trace.imported.measurements.trace_steps.empty()
                       ? ""
                       : trace.imported.measurements.trace_steps.front().source;
    return c;
}

void print_comparison(std::ostream& out, const StepComparison& c) {
    fmt::print(out, "measured: {} on {}, mean of {} profiled step{}\n", c.trace_name, c.device,
               c.steps, c.steps == 1 ? "" : "s");
    auto table = [&](const std::vector<CompareRow>& rows, std::string_view title) {
        fmt::print(out, "\n{:<16}{:>14}{:>14}{:>9}\n", title, "measured", "predicted", "error");
        for (const auto& row : rows) {
            const std::string err =
                row.measured_s > 0
                    ? fmt::format("{:+.1f}%", (row.predicted_s / row.measured_s - 1) * 100)
                    : "-";
            fmt::print(out, "{:<16}{:>14}{:>14}{:>9}\n", row.name, ms(row.measured_s),
                       ms(row.predicted_s), err);
        }
    };
    table(c.classes, "per step");
    table(c.layers, "by layer");
    for (const auto& n : c.notes)
        fmt::print(out, "note: {}\n", n);
}

std::string comparison_trace(const calibrate::KinetoTrace& trace,
                             const strategies::parallel::ExperimentSpec& e,
                             const strategies::parallel::StepResult& r) {
    ChromeTrace t;
    t.set_metadata("experiment", e.name);
    t.set_metadata("clustersim", std::string(kVersion));
    t.set_metadata("measured", trace.imported.measurements.environment.device);
    // Measured: the first profiled step.
    const int measured_pid = 1, predicted_pid = 2;
    t.set_process(measured_pid, "measured: " + trace.imported.measurements.environment.device, 0);
    sim::Time origin = sim::Time::max();
    for (const auto& k : trace.kernels)
        if (trace.steps.empty() || k.step == 0)
            origin = std::min(origin, k.start);
    if (!trace.steps.empty())
        origin = std::min(origin, trace.steps.front().start);
    std::map<int, int> tids;
    for (const auto& k : trace.kernels) {
        if (!trace.steps.empty() && k.step != 0)
            continue;
        auto [it, inserted] = tids.emplace(k.stream, static_cast<int>(tids.size()) + 1);
        if (inserted)
            t.set_thread(measured_pid, it->second, fmt::format("stream {}", k.stream), it->second);
        nlohmann::json args = {{"class", calibrate::to_string(k.kernel_class)},
                               {"phase", calibrate::phase_name(k.phase)}};
        if (k.layer >= 0)
            args["layer"] = k.layer;
        if (k.op >= 0)
            args["op"] = trace.names[static_cast<std::size_t>(k.op)];
        t.complete(measured_pid, it->second, trace.names[static_cast<std::size_t>(k.name)],
                   std::string(calibrate::to_string(k.kernel_class)), k.start - origin,
                   k.start - origin + k.duration, args);
    }
    // Predicted kernels, back to back: per micro-batch the forward (embedding, layers, head),
    // the backward in reverse, then the optimizer.
    t.set_process(predicted_pid, "predicted kernels (back to back)", 1);
    t.set_thread(predicted_pid, 1, "compute", 0);
    const Model m = model_of(e);
    sim::Time at = sim::Time::zero();
    auto put = [&](const strategies::models::PassWork& pass, const std::string& where,
                   const std::string& phase) {
        for (const auto& op : pass.ops) {
            const sim::Time d = sim::Time::from_seconds(op_seconds(op, e.framework));
            t.complete(predicted_pid, 1, std::string(op.name),
                       std::string(calibrate::to_string(class_of(op.kind))), at, at + d,
                       {{"where", where}, {"phase", phase}});
            at += d;
        }
    };
    const int layers_here = e.model.layers / e.parallel.pp;
    for (int b = 0; b < m.micro_batches; ++b) {
        put(m.embedding.forward, "embedding", "forward");
        for (int l = 0; l < layers_here; ++l)
            put(m.layer.forward, fmt::format("layer {}", l), "forward");
        put(m.head.forward, "head", "forward");
        put(m.head.backward, "head", "backward");
        for (int l = layers_here - 1; l >= 0; --l) {
            put(m.layer.recompute, fmt::format("layer {}", l), "recompute");
            put(m.layer.backward, fmt::format("layer {}", l), "backward");
        }
        put(m.embedding.backward, "embedding", "backward");
    }
    const sim::Time opt =
        sim::Time::from_seconds(m.optimizer.time.seconds() / e.framework.memory_efficiency);
    t.complete(predicted_pid, 1, "optimizer", "elementwise", at, at + opt,
               {{"phase", "optimizer"}});
    // The simulated step, as run --trace draws it.
    for (std::size_t p = 0; p < r.simulated_gpus.size(); ++p) {
        const int pid = 3 + static_cast<int>(p);
        t.set_process(pid, fmt::format("simulated GPU {} (stage {})", r.simulated_gpus[p], p),
                      2 + static_cast<int>(p));
        for (auto s : {TraceStream::compute, TraceStream::pp_comm, TraceStream::dp_comm})
            t.set_thread(pid, trace_tid(s), trace_stream_name(s), static_cast<int>(s));
        if (e.parallel.tp > 1)
            t.set_thread(pid, trace_tid(TraceStream::tp_comm),
                         trace_stream_name(TraceStream::tp_comm),
                         static_cast<int>(TraceStream::tp_comm));
    }
    for (const auto& bar : r.bars) {
        const TraceStream s =
            bar.stream == strategies::parallel::TimelineStream::compute ? TraceStream::compute
            : bar.stream == strategies::parallel::TimelineStream::pp    ? TraceStream::pp_comm
            : bar.stream == strategies::parallel::TimelineStream::dp    ? TraceStream::dp_comm
            : bar.stream == strategies::parallel::TimelineStream::ep    ? TraceStream::ep_comm
                                                                        : TraceStream::tp_comm;
        t.complete(3 + bar.rank, trace_tid(s), bar.label, bar.kind, bar.start, bar.end,
                   bar_args(bar));
    }
    return t.dump();
}

} // namespace clustersim::app
