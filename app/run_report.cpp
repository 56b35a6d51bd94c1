// A training step reported: the table, the JSON, the trace and the charts, and the sentences
// that word the step result's numbers (the result itself carries none).
#include "app/run_report.h"

#include "app/chrome_trace.h"
#include "app/svg_plot.h"
#include "app/version.h"
#include "base/text.h"
#include "base/units.h"
#include "results/step_json.h"
#include "results/uncertainty.h"
#include "strategies/parallel/nvlink_domains.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <vector>

namespace clustersim::app {

using results::fidelity_name;
using results::oom_fix_text;
using results::recompute_plan_text;
using results::simulated_note;
using results::symmetry_note;
using strategies::parallel::ExperimentSpec;
using strategies::parallel::StepResult;
using strategies::parallel::TimelineStream;

namespace {

std::string pct(double x) {
    return base::percent(x);
}
std::string seconds(double s) {
    return base::format_time(sim::Time::from_seconds(s));
}

/// The costs of scale (strategies/parallel/straggler.h): the slowest inter-node flow, the
/// synchronisations' waits, the slowest GPU, and the band over allocations.
void print_scale_costs(std::ostream& out, const strategies::parallel::StepResult& r) {
    const auto& s = r.straggler;
    if (s.network_slowdown != 0)
        fmt::print(out,
                   "{:<12}slowest of {} inter-node flows {} slower than the median flow "
                   "(spread {}): the collectives across nodes\n",
                   "congestion", s.network_flows, base::percent(s.network_slowdown),
                   base::percent(s.network_spread));
    if (s.sync_wait_s > 0)
        fmt::print(out,
                   "{:<12}{} synchronisation{} a step, each waiting for the latest rank (jitter {} "
                   "a rank): {} in all\n",
                   "sync jitter", s.synchronisations, s.synchronisations == 1 ? "" : "s",
                   seconds(s.sync_jitter_s), seconds(s.sync_wait_s));
    if (s.step_time_p95_s <= 0)
        return;
    const std::string band =
        fmt::format("over allocations of {} GPUs the step is {} to {} (5th-95th percentile)",
                    r.gpus, seconds(s.step_time_p05_s), seconds(s.step_time_p95_s));
    if (s.slowdown != 0)
        fmt::print(out, "{:<12}slowest of {} GPUs {} slower than the median (spread {}); {}\n",
                   "straggler", r.gpus, base::percent(s.slowdown), base::percent(s.spread), band);
    else
        fmt::print(out, "{:<12}{}\n", "scale band", band);
}

std::string gb(std::int64_t bytes) {
    return fmt::format("{:.2f}", static_cast<double>(bytes) / 1e9);
}

} // namespace

std::string describe_parallel(const ExperimentSpec& e) {
    const auto& p = e.parallel;
    std::string s = p.cp > 1 ? fmt::format("tp {} x cp {} x pp {} x dp {}", p.tp, p.cp, p.pp, p.dp)
                             : fmt::format("tp {} x pp {} x dp {}", p.tp, p.pp, p.dp);
    if (p.pp > 1) {
        s += ", " + std::string(to_string(p.schedule));
        if (p.virtual_stages > 1)
            s += fmt::format(" (v={})", p.virtual_stages);
    }
    s += fmt::format(", {} micro-batch{} of {}", e.micro_batches(),
                     e.micro_batches() == 1 ? "" : "es", e.training.micro_batch);
    if (!e.training.forward_only)
        s += ", recompute " + std::string(to_string(p.recompute));
    if (p.sequence_parallel && p.tp > 1)
        s += ", sequence parallel";
    // framework.tensor_parallel (the hardware preset's framework, or the experiment's).
    if (e.framework.dtensor_tp && p.tp > 1)
        s += ", tensor parallel as DTensor";
    if (p.expert_layout() && e.model.is_moe())
        s += fmt::format(", experts: ep {} x etp {} x expert dp {}", p.ep, p.expert_tp(),
                         p.expert_dp());
    if (p.zero > 0)
        s += p.fsdp2 ? std::string(", FSDP2 (ZeRO-3)") : fmt::format(", ZeRO-{}", p.zero);
    if (p.dp_replicate > 1)
        s += fmt::format(" hybrid (shard {} x replicate {})", p.dp_shard_size(), p.dp_replicate);
    if (p.cp > 1)
        s += fmt::format(", context parallel ({})", to_string(p.cp_comm_type));
    if (p.dp_cp() > 1 && !e.training.forward_only)
        s += p.dp_overlap ? ", DP overlapped in " + base::format_bytes(p.dp_bucket) + " buckets"
                          : ", DP all-reduce after backward";
    if (p.overlap_param_gather && p.dp > 1 && !e.training.forward_only)
        s += ", param all-gather overlapped with the forward";
    if (p.tp_comm_overlap && p.tp > 1 && p.sequence_parallel)
        s += p.async_tp ? ", TP communication overlapped with GEMMs (async TP)"
                        : ", TP communication overlapped with GEMMs";
    if (e.training.forward_only)
        s += ", forward only";
    return s;
}

namespace {
/// Where rack-scale NVLink domains (a node of several trays, as a GB200 NVL72) put each parallel
/// group (strategies/parallel/nvlink_domains.h). Empty for other hardware.
std::string describe_domains(const ExperimentSpec& e) {
    const auto& node = e.cluster.node;
    if (node.gpus_per_tray <= 0 || node.gpus_per_tray >= node.gpus)
        return "";
    std::vector<std::string> inside, across, some;
    for (const auto& g : strategies::parallel::nvlink_placement(e)) {
        const std::string item =
            fmt::format("{} {}", strategies::parallel::to_string(g.group), g.size);
        (g.fit == strategies::parallel::DomainFit::inside   ? inside
         : g.fit == strategies::parallel::DomainFit::across ? across
                                                            : some)
            .push_back(item);
    }
    std::string s = fmt::format("{} GPUs each", node.gpus);
    if (!inside.empty())
        s += "; inside one: " + base::join(inside, ", ");
    if (!across.empty())
        s += "; across domains: " + base::join(across, ", ");
    if (!some.empty())
        s += "; some groups across: " + base::join(some, ", ");
    return s;
}
} // namespace

/// An uneven split's layers per model stage in layer order, runs written "stages 1-62: 2";
/// empty for an even split.
std::string describe_split(const ExperimentSpec& e) {
    const auto& n = e.stage_layers;
    if (strategies::parallel::uniform_split(n))
        return "";
    std::string s;
    for (std::size_t i = 0; i < n.size();) {
        std::size_t j = i;
        while (j < n.size() && n[j] == n[i])
            ++j;
        s += (s.empty() ? "" : ", ") + (j - i > 1 ? fmt::format("stages {}-{}: {}", i, j - 1, n[i])
                                                  : fmt::format("stage {}: {}", i, n[i]));
        i = j;
    }
    return s + " (transformer layers per model stage, in layer order)";
}

void print_step_table(std::ostream& out, const ExperimentSpec& e, const StepResult& r) {
    fmt::print(out, "{:<12}{} ({} on {} x {}, {})\n", "experiment", e.name, e.model.name, e.gpus,
               e.cluster.node.gpu.name, e.cluster.name);
    fmt::print(out, "{:<12}{}\n", "parallel", describe_parallel(e));
    if (const std::string d = describe_domains(e); !d.empty())
        fmt::print(out, "{:<12}{}\n", "NVLink", d);
    if (const std::string split = describe_split(e); !split.empty())
        fmt::print(out, "{:<12}{}\n", "layers", split);
    fmt::print(out, "{:<12}{} of {} GPUs ({}), {} fidelity\n", "simulated", r.simulated_gpus.size(),
               r.gpus, "one per pipeline rank", fidelity_name(r));
    if (r.fidelity == strategies::parallel::Fidelity::flow)
        fmt::print(out, "{:<12}{}\n", "symmetry", symmetry_note(r));
    fmt::print(out, "\n");
    fmt::print(out, "{:<12}{}\n", "step time", seconds(r.step_time_s));
    fmt::print(out, "{:<12}{}\n", "uncertainty",
               results::band_text(e.provenance.uncertainty, e.cluster.name,
                                  results::PredictionKind::step, r.step_time_s));
    print_scale_costs(out, r);
    if (const std::string parts = results::calibrated_text(e.provenance); !parts.empty())
        fmt::print(out, "{:<12}{}\n", "calibrated", parts);
    // An MLP's samples are rows, not token sequences.
    fmt::print(out, "{:<12}{:.0f}\n", e.model.is_transformer() ? "tokens/s" : "samples/s",
               r.tokens_per_s);
    // Causal attention's scores at half as well: MaxText's count (calculate_tflops_training_
    // per_device), so the number compares with what MaxText prints.
    if (e.model.is_transformer())
        fmt::print(out, "{:<12}{} (causal attention at half, MaxText's count: {})\n", "MFU",
                   pct(r.mfu), pct(r.mfu_causal));
    else
        fmt::print(out, "{:<12}{}\n", "MFU", pct(r.mfu));
    if (r.pp > 1)
        fmt::print(out, "{:<12}{} (closed form for equal stages: {})\n", "bubble",
                   pct(r.bubble_fraction), pct(r.ideal_bubble_fraction));
    const auto& b = r.breakdown;
    fmt::print(out, "\nwhere the step goes (stage {}, whose step ends last)\n", r.critical_rank);
    const std::pair<const char*, double> parts[] = {
        {"compute", b.compute_s},
        {"recompute", b.recompute_s},
        {"host (kernel issue)", b.host_s},
        {"tensor-parallel comm", b.tp_comm_exposed_s},
        {"expert-parallel comm", b.ep_comm_exposed_s},
        {"pipeline bubble", b.pp_bubble_s},
        {"pipeline comm", b.pp_comm_exposed_s},
        {"data-parallel comm", b.dp_comm_exposed_s},
        {"optimizer", b.optimizer_s},
    };
    // The expert-parallel line only where the experts are laid out apart (all-to-alls).
    const bool experts_apart = e.parallel.expert_layout() && e.model.is_moe();
    for (const auto& [name, s] : parts)
        if (experts_apart || std::string_view(name) != "expert-parallel comm")
            fmt::print(out, "  {:<24}{:>10}  {:>6}\n", name, seconds(s),
                       pct(r.step_time_s > 0 ? s / r.step_time_s : 0));
    fmt::print(out, "  (communication is counted where the GPU waits for it: 'exposed')\n");
    if (b.overlap_slowdown_s > 0)
        fmt::print(out,
                   "  (of compute and recompute, {}: the communication beside the kernels "
                   "slowed them)\n",
                   seconds(b.overlap_slowdown_s));

    // ZeRO-3's gathered parameters and unsharded gradients: a column where a stage has them.
    const bool gathers = std::any_of(r.memory.begin(), r.memory.end(),
                                     [](const auto& m) { return m.gathered_bytes > 0; });
    fmt::print(out,
               "\nmemory per GPU (GB)   weights    grads  optimizer  activations{}  allocated  "
               "reserved  runtime   device\n",
               gathers ? "  gathered" : "");
    for (const auto& m : r.memory) {
        fmt::print(out, "  stage {:<14}{:>8} {:>8} {:>10} {:>12}{} {:>10} {:>9} {:>8} {:>8}{}\n",
                   m.stage, gb(m.weights_bytes), gb(m.grads_bytes), gb(m.optimizer_bytes),
                   gb(m.activations_bytes),
                   gathers ? fmt::format(" {:>9}", gb(m.gathered_bytes)) : std::string(),
                   gb(m.peak_bytes), gb(m.reserved_bytes), gb(m.runtime_bytes), gb(m.device_bytes),
                   m.device_bytes > r.capacity_bytes ? "  OOM" : "");
    }
    if (gathers)
        fmt::print(out, "  (gathered: ZeRO-3's gathered parameters and unsharded gradients at "
                        "their peak)\n");
    fmt::print(out, "  (allocated and reserved: PyTorch's max_memory_allocated and "
                    "max_memory_reserved; device: nvidia-smi's used, with the runtime outside the "
                    "allocator)\n");
    fmt::print(out, "  capacity {} GB per GPU, as the device reports it\n", gb(r.capacity_bytes));
    if (r.tight_headroom) {
        const auto& m = r.memory[static_cast<std::size_t>(*r.tight_headroom)];
        fmt::print(out,
                   "  warning: stage {} leaves {} GB free, less than the {} GB its backward "
                   "allocates at once: a fragmented cache may fail there\n",
                   m.stage, gb(r.capacity_bytes - m.device_bytes), gb(m.transient_bytes));
    }
    if (!e.training.forward_only)
        fmt::print(out, "{:<12}{}\n", "recompute", recompute_plan_text(r));
    if (r.oom)
        fmt::print(out,
                   "{:<12}yes: stage {} needs {} GB more ({}); the step time assumes it fits\n",
                   "oom", r.oom->stage, gb(r.oom->excess_bytes), oom_fix_text(r.oom_fix));
    else
        fmt::print(out, "{:<12}no\n", "oom");
}

nlohmann::json bar_args(const strategies::parallel::TimelineBar& bar) {
    nlohmann::json args = nullptr;
    if (bar.flops > 0)
        args["flops"] = bar.flops;
    if (bar.bytes > 0)
        args["bytes"] = bar.bytes;
    return args;
}

std::string step_trace(const ExperimentSpec& e, const StepResult& r) {
    ChromeTrace trace;
    trace.set_metadata("experiment", e.name);
    trace.set_metadata("clustersim", std::string(kVersion));
    trace.set_metadata("parallel", describe_parallel(e));
    trace.set_metadata("simulated", simulated_note(r));
    for (std::size_t p = 0; p < r.simulated_gpus.size(); ++p) {
        const int pid = trace_pid(static_cast<int>(p));
        trace.set_process(pid, fmt::format("GPU {} (stage {})", r.simulated_gpus[p], p),
                          static_cast<int>(p));
        for (auto s : {TraceStream::compute, TraceStream::pp_comm, TraceStream::dp_comm})
            trace.set_thread(pid, trace_tid(s), trace_stream_name(s), static_cast<int>(s));
        if (e.parallel.tp > 1)
            trace.set_thread(pid, trace_tid(TraceStream::tp_comm),
                             trace_stream_name(TraceStream::tp_comm),
                             static_cast<int>(TraceStream::tp_comm));
        if (e.parallel.expert_layout() && e.model.is_moe())
            trace.set_thread(pid, trace_tid(TraceStream::ep_comm),
                             trace_stream_name(TraceStream::ep_comm),
                             static_cast<int>(TraceStream::ep_comm));
    }
    for (const auto& bar : r.bars) {
        const TraceStream s = bar.stream == TimelineStream::compute ? TraceStream::compute
                              : bar.stream == TimelineStream::pp    ? TraceStream::pp_comm
                              : bar.stream == TimelineStream::dp    ? TraceStream::dp_comm
                              : bar.stream == TimelineStream::ep    ? TraceStream::ep_comm
                                                                    : TraceStream::tp_comm;
        trace.complete(trace_pid(bar.rank), trace_tid(s), bar.label, bar.kind, bar.start, bar.end,
                       bar_args(bar));
    }
    // Pipeline sends: an arrow from the sender's PP stream to the pass that waited for it.
    for (const auto& t : r.transfers)
        trace.flow(t.label, "pp-send", trace_pid(t.from_rank), trace_tid(TraceStream::pp_comm),
                   t.start, trace_pid(t.to_rank), trace_tid(TraceStream::compute), t.needed);
    for (const auto& pt : r.memory_points) {
        const auto& m = r.memory[static_cast<std::size_t>(pt.rank)];
        trace.counter(trace_pid(pt.rank), "memory", pt.time,
                      {{"activations", pt.activations_bytes},
                       {"model state",
                        m.weights_bytes + m.grads_bytes + m.optimizer_bytes + m.gathered_bytes},
                       {"runtime", m.runtime_bytes}});
    }
    return trace.dump();
}

std::string step_timeline_svg(const ExperimentSpec& e, const StepResult& r) {
    GanttChart chart;
    chart.title = fmt::format("{}: one training step", e.name);
    chart.subtitle = fmt::format("{}; step {}, bubble {}", describe_parallel(e),
                                 seconds(r.step_time_s), pct(r.bubble_fraction));
    for (std::size_t p = 0; p < r.simulated_gpus.size(); ++p) {
        GanttLane lane;
        lane.name = fmt::format("stage {} / GPU {}", p, r.simulated_gpus[p]);
        lane.streams = {GanttStream{"compute", true}, GanttStream{"PP comm", false},
                        GanttStream{"DP comm", false}};
        if (e.parallel.expert_layout() && e.model.is_moe())
            lane.streams.push_back(GanttStream{"EP comm", false});
        chart.lanes.push_back(lane);
    }
    for (const auto& bar : r.bars) {
        // The chart shows passes: the layers inside them and their TP collectives are the
        // trace's (too fine for a chart of a whole step).
        if (bar.kind == "layer" || bar.stream == TimelineStream::tp)
            continue;
        GanttBar g;
        g.lane = static_cast<std::size_t>(bar.rank);
        g.stream = bar.stream == TimelineStream::compute ? 0
                   : bar.stream == TimelineStream::pp    ? 1
                   : bar.stream == TimelineStream::ep    ? 3
                                                         : 2;
        g.start_s = bar.start.seconds();
        g.end_s = bar.end.seconds();
        g.kind = bar.kind;
        g.label = bar.label;
        chart.bars.push_back(g);
    }
    chart.start_s = 0.0;
    chart.end_s = r.step_time_s;
    return render_svg(chart);
}

std::string step_memory_svg(const ExperimentSpec& e, const StepResult& r) {
    LineChart chart;
    chart.title = fmt::format("{}: memory per GPU during one step", e.name);
    chart.subtitle = fmt::format("{}; step {}", describe_parallel(e), seconds(r.step_time_s));
    chart.x.label = "time (s)";
    chart.y.label = "memory per GPU (GB)";
    constexpr double kGB = 1e9;
    double last = r.step_time_s;
    for (const auto& pt : r.memory_points)
        last = std::max(last, pt.time.seconds());
    for (std::size_t p = 0; p < r.memory.size(); ++p) {
        const auto& m = r.memory[p];
        // ZeRO-3's gathered parameters drawn at their peak throughout (a bound).
        const double held =
            static_cast<double>(m.weights_bytes + m.grads_bytes + m.optimizer_bytes +
                                m.gathered_bytes + m.runtime_bytes);
        Series s;
        s.name = fmt::format("stage {} / GPU {}", p, r.simulated_gpus[p]);
        s.markers = false;
        // A step function: each point holds until the next.
        double level = held;
        s.x.push_back(0.0);
        s.y.push_back(level / kGB);
        for (const auto& pt : r.memory_points) {
            if (static_cast<std::size_t>(pt.rank) != p)
                continue;
            s.x.push_back(pt.time.seconds());
            s.y.push_back(level / kGB);
            level = held + static_cast<double>(pt.activations_bytes);
            s.x.push_back(pt.time.seconds());
            s.y.push_back(level / kGB);
        }
        s.x.push_back(last);
        s.y.push_back(level / kGB);
        chart.series.push_back(std::move(s));
    }
    Series cap;
    cap.name = "capacity";
    cap.markers = false;
    cap.line = LineStyle::dashed;
    const double capacity = static_cast<double>(e.cluster.node.gpu.usable_hbm_bytes()) / kGB;
    cap.x = {0.0, last};
    cap.y = {capacity, capacity};
    chart.series.push_back(std::move(cap));
    chart.x.max = last;
    chart.footnote = "weights, gradients, optimizer state and runtime are held throughout; "
                     "activations from their forward until their backward";
    return render_svg(chart);
}

} // namespace clustersim::app
