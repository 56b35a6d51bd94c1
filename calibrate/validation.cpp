#include "calibrate/validation.h"

#include "base/error.h"
#include "base/units.h"
#include "calibrate/predict.h"
#include "hardware/compute_model.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"
#include "strategies/transfer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace clustersim::calibrate {

namespace cl = strategies::collectives;

std::string_view to_string(PointKind kind) {
    switch (kind) {
    case PointKind::collective:
        return "collectives";
    case PointKind::gemm:
        return "gemms";
    case PointKind::copy:
        return "copies";
    case PointKind::p2p:
        return "p2p";
    case PointKind::launch:
        return "launches";
    case PointKind::step:
        return "steps";
    }
    return "?";
}

double quantile(std::vector<double> values, double p) {
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const double h = std::clamp(p, 0.0, 1.0) * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

strategies::parallel::ResidualBand residual_band(const std::vector<double>& residuals) {
    strategies::parallel::ResidualBand b;
    b.points = static_cast<int>(residuals.size());
    if (residuals.empty())
        return b;
    b.p10 = quantile(residuals, 0.10);
    b.p50 = quantile(residuals, 0.50);
    b.p90 = quantile(residuals, 0.90);
    return b;
}

std::vector<const PredictedPoint*> Validation::of(PointKind kind) const {
    std::vector<const PredictedPoint*> out;
    for (const auto& p : points)
        if (p.kind == kind)
            out.push_back(&p);
    return out;
}

ErrorStats Validation::error_stats(PointKind kind) const {
    std::vector<double> errors;
    for (const auto* p : of(kind))
        errors.push_back(p->error());
    return calibrate::error_stats(errors);
}

// ---------------------------------------------------------------------------------------------
// Which GPU
// ---------------------------------------------------------------------------------------------

namespace {

struct GpuIdentity {
    std::string model;  ///< "A100", "H100", "L40S"; "" when none found
    std::string memory; ///< "80GB"; "" when not said
    std::string form;   ///< "sxm", "pcie", "nvl"; "" when not said
};

GpuIdentity identify(std::string_view name) {
    std::string up;
    for (char c : name)
        up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    GpuIdentity id;
    // Tokens split at anything but letters and digits.
    std::vector<std::string> tokens;
    std::string t;
    for (char c : up + " ") {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            t += c;
        } else if (!t.empty()) {
            tokens.push_back(t);
            t.clear();
        }
    }
    for (const auto& tok : tokens) {
        // The model: one or two letters, then two or three digits, maybe a suffix letter
        // (A100, H100, GH200, L40S, V100).
        std::size_t letters = 0;
        while (letters < tok.size() && std::isalpha(static_cast<unsigned char>(tok[letters])))
            ++letters;
        std::size_t digits = letters;
        while (digits < tok.size() && std::isdigit(static_cast<unsigned char>(tok[digits])))
            ++digits;
        if (id.model.empty() && tok != "NVIDIA" && letters >= 1 && letters <= 2 &&
            digits - letters >= 2 && digits - letters <= 3 && tok.size() - digits <= 1)
            id.model = tok;
        if (tok.size() > 2 && tok.ends_with("GB") &&
            std::all_of(tok.begin(), tok.end() - 2,
                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            id.memory = tok;
        if (tok.starts_with("SXM"))
            id.form = "sxm";
        else if (tok == "PCIE")
            id.form = "pcie";
        else if (tok == "NVL")
            id.form = "nvl";
    }
    return id;
}

} // namespace

std::string device_mismatch(std::string_view device, std::string_view gpu_name) {
    const GpuIdentity a = identify(device), b = identify(gpu_name);
    if (a.model.empty() || b.model.empty()) {
        std::string x(device), y(gpu_name);
        auto lower = [](std::string s) {
            for (char& c : s)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            return s;
        };
        return lower(x).find(lower(y)) != std::string::npos ? ""
                                                            : "the GPU models cannot be compared";
    }
    if (a.model != b.model)
        return "a " + a.model + " is not a " + b.model;
    if (!a.memory.empty() && !b.memory.empty() && a.memory != b.memory)
        return "the memory differs (" + a.memory + " against " + b.memory + ")";
    if (!a.form.empty() && !b.form.empty() && a.form != b.form)
        return "the form factor differs (" + a.form + " against " + b.form + ")";
    return "";
}

std::optional<std::string> check_device(const hardware::ClusterSpec& cluster,
                                        const MeasurementFile& file, const std::string& name) {
    const std::string& device = file.environment.device;
    const std::string& gpu = cluster.node.gpu.name;
    if (device.empty() || device == "unknown")
        return name + ": the device is unknown; its points are taken as measured on " + gpu +
               " (hardware '" + cluster.name + "')";
    if (const std::string why = device_mismatch(device, gpu); !why.empty())
        throw InputError(name + ": measured on '" + device + "', but hardware '" + cluster.name +
                         "' has " + gpu + " GPUs (" + why +
                         "): calibrate a hardware file of that GPU instead");
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------------------

std::string point_label(const CollectiveMeasurement& c) {
    return fmt::format("{} {} GPUs {} {}{}{}", to_string(c.op), c.gpus, base::format_bytes(c.bytes),
                       hardware::to_string(c.dtype), c.in_place ? " in-place" : "",
                       c.algorithm.empty() ? "" : " " + c.algorithm);
}

std::string point_label(const GemmMeasurement& g) {
    return fmt::format("gemm {}x{}x{} {} {}", g.m, g.n, g.k, hardware::to_string(g.dtype),
                       g.layout);
}

namespace {

std::string setting_text(const SettingValue& v) {
    if (const auto* b = std::get_if<bool>(&v))
        return *b ? "true" : "false";
    if (const auto* i = std::get_if<std::int64_t>(&v))
        return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&v))
        return fmt::format("{:g}", *d);
    return std::get<std::string>(v);
}

std::string setting(const Settings& s, const std::string& key, const std::string& fallback) {
    const auto it = s.find(key);
    return it == s.end() ? fallback : setting_text(it->second);
}

} // namespace

std::string point_label(const StepMeasurement& s) {
    std::string model = s.model_preset;
    if (model.empty() && s.model.count("dim") != 0) // the MLP: layers of dim x dim
        model = fmt::format("mlp L{} d{}", setting(s.model, "layers", "?"),
                            setting(s.model, "dim", "?"));
    else if (model.empty())
        model = fmt::format("L{} h{}", setting(s.model, "layers", "?"),
                            setting(s.model, "hidden", "?"));
    return fmt::format("step {} GPUs {} tp{} pp{} dp{} gb{} mb{}", s.gpus, model,
                       setting(s.parallel, "tp", "1"), setting(s.parallel, "pp", "1"),
                       setting(s.parallel, "dp", "-"), setting(s.training, "global_batch", "?"),
                       setting(s.training, "micro_batch", "?"));
}

// ---------------------------------------------------------------------------------------------
// Every point
// ---------------------------------------------------------------------------------------------

namespace {

/// Collects skipped points by reason, so a thousand skipped rows make one line.
class SkipLog {
public:
    void add(PointKind kind, const std::string& why, const std::string& example) {
        auto& e = entries_[{static_cast<int>(kind), why}];
        if (e.count++ == 0)
            e.example = example;
    }
    std::vector<std::string> lines() const {
        std::vector<std::string> out;
        for (const auto& [key, e] : entries_)
            out.push_back(fmt::format("{} {} skipped: {} (e.g. {})", e.count,
                                      to_string(static_cast<PointKind>(key.first)), key.second,
                                      e.example));
        return out;
    }

private:
    struct Entry {
        int count = 0;
        std::string example;
    };
    std::map<std::pair<int, std::string>, Entry> entries_;
};

std::string where(const std::string& source, const std::string& name, PointKind kind,
                  std::size_t i) {
    return source.empty() ? fmt::format("{}:{}[{}]", name, to_string(kind), i) : source;
}

bool wanted(const ValidationOptions& o, PointKind k) {
    return o.kinds.empty() || std::find(o.kinds.begin(), o.kinds.end(), k) != o.kinds.end();
}

/// Where the points of one validation go: each predicted point with its measurement, and the
/// skipped ones by reason.
struct PointSink {
    const std::string& name;
    Validation& v;
    SkipLog& skips;

    void add(PointKind kind, std::size_t i, std::string label, const std::string& source,
             std::string detail, sim::Time measured, double predicted) {
        PredictedPoint p;
        p.kind = kind;
        p.index = i;
        p.label = std::move(label);
        p.source = where(source, name, kind, i);
        p.detail = std::move(detail);
        p.measured_s = measured.seconds();
        p.predicted_s = predicted;
        v.points.push_back(std::move(p));
    }
};

void validate_collectives(PointSink& out, const hardware::ClusterSpec& cluster,
                          const MeasurementFile& file, const ValidationOptions& options) {
    CollectivePredictor predictor(cluster);
    for (std::size_t i = 0; i < file.collectives.size(); ++i) {
        const auto& c = file.collectives[i];
        const std::string src = where(c.source, out.name, PointKind::collective, i);
        if (c.bytes < options.min_collective_bytes) {
            out.skips.add(PointKind::collective,
                          "smaller than --min-bytes " +
                              base::format_bytes(options.min_collective_bytes),
                          src);
            continue;
        }
        try {
            const auto r = predictor.predict(c);
            out.add(PointKind::collective, i, point_label(c), c.source, r.detail, c.time,
                    r.seconds);
            out.v.points.back().gpus = c.gpus;
            out.v.points.back().regime = r.regime;
        } catch (const InputError& e) {
            out.skips.add(PointKind::collective, e.what(), src);
        }
    }
}

void validate_gemms(PointSink& out, const hardware::ClusterSpec& cluster,
                    const MeasurementFile& file) {
    const hardware::ComputeModel model(cluster);
    for (std::size_t i = 0; i < file.gemms.size(); ++i) {
        const auto& g = file.gemms[i];
        const std::string src = where(g.source, out.name, PointKind::gemm, i);
        if (g.variant != GemmVariant::plain) {
            out.skips.add(PointKind::gemm,
                          fmt::format("the compute model predicts plain GEMMs, not {} ones",
                                      to_string(g.variant)),
                          src);
            continue;
        }
        if (!model.supports(g.dtype)) {
            out.skips.add(PointKind::gemm,
                          fmt::format("{} has no {} peak in hardware '{}'", cluster.node.gpu.name,
                                      hardware::to_string(g.dtype), cluster.name),
                          src);
            continue;
        }
        out.add(PointKind::gemm, i, point_label(g), g.source, "", g.time,
                model.gemm_seconds(g.m, g.n, g.k, g.dtype));
    }
}

/// Device-to-device copies as memory-bound kernels, peer copies as transfers; host copies
/// are not modelled.
void validate_copies(PointSink& out, const hardware::ClusterSpec& cluster,
                     const MeasurementFile& file) {
    const hardware::ComputeModel model(cluster);
    std::map<int, std::unique_ptr<hardware::Topology>> topologies;
    for (std::size_t i = 0; i < file.copies.size(); ++i) {
        const auto& c = file.copies[i];
        const std::string src = where(c.source, out.name, PointKind::copy, i);
        const std::string label = fmt::format("copy {} {} {}", to_string(c.kind),
                                              to_string(c.method), base::format_bytes(c.bytes));
        switch (c.kind) {
        case CopyKind::device_to_device:
            if (c.cache_resident(cluster.node.gpu.l2_bytes)) {
                out.skips.add(PointKind::copy,
                              fmt::format("source and destination fit in the {} L2 cache (the "
                                          "model has HBM only)",
                                          base::format_bytes(cluster.node.gpu.l2_bytes)),
                              src);
                break;
            }
            out.add(PointKind::copy, i, label, c.source, "memory-bound kernel", c.time,
                    model.memory_bound_seconds(2 * c.bytes));
            break;
        case CopyKind::peer: {
            const int gpus = std::max(c.src_gpu, c.dst_gpu) + 1;
            try {
                const auto spec = hardware::with_gpu_count(cluster, gpus);
                auto& topo = topologies[spec.nodes];
                if (!topo)
                    topo = std::make_unique<hardware::Topology>(spec);
                const auto t = strategies::simulate_transfer(*topo, c.src_gpu, c.dst_gpu, c.bytes);
                out.add(PointKind::copy, i,
                        label + fmt::format(" gpu{}->gpu{}", c.src_gpu, c.dst_gpu), c.source,
                        "transfer", c.time, t.time.seconds());
            } catch (const InputError& e) {
                out.skips.add(PointKind::copy, e.what(), src);
            }
            break;
        }
        default:
            out.skips.add(PointKind::copy, "host copies are not modelled", src);
        }
    }
}

/// Point-to-point transfers as the send/recv the communicator would choose.
void validate_p2p(PointSink& out, const hardware::ClusterSpec& cluster,
                  const MeasurementFile& file) {
    std::map<int, std::unique_ptr<hardware::Topology>> topologies;
    for (std::size_t i = 0; i < file.p2p.size(); ++i) {
        const auto& p = file.p2p[i];
        const std::string src = where(p.source, out.name, PointKind::p2p, i);
        try {
            const auto spec = hardware::with_gpu_count(cluster, std::max(p.src_gpu, p.dst_gpu) + 1);
            auto& topo = topologies[spec.nodes];
            if (!topo)
                topo = std::make_unique<hardware::Topology>(spec);
            const cl::Communicator comm(*topo, {p.src_gpu, p.dst_gpu});
            cl::Collective c;
            c.op = cl::Op::send_recv;
            c.bytes = p.bytes;
            c.dtype = hardware::Dtype::fp32;
            if (c.bytes % 4 != 0)
                c.dtype = hardware::Dtype::fp16;
            comm.validate(c);
            const cl::Choice choice = comm.choose(c);
            out.add(PointKind::p2p, i,
                    fmt::format("p2p gpu{}->gpu{} {}", p.src_gpu, p.dst_gpu,
                                base::format_bytes(p.bytes)),
                    p.source,
                    fmt::format("{}/{}", cl::to_string(choice.algorithm),
                                hardware::to_string(choice.protocol)),
                    p.time, choice.time.seconds());
        } catch (const InputError& e) {
            out.skips.add(PointKind::p2p, e.what(), src);
        }
    }
}

void validate_launches(PointSink& out, const hardware::ClusterSpec& cluster,
                       const MeasurementFile& file) {
    for (std::size_t i = 0; i < file.launches.size(); ++i) {
        const auto& l = file.launches[i];
        const std::string src = where(l.source, out.name, PointKind::launch, i);
        if (l.method != LaunchMethod::gpu_back_to_back) {
            out.skips.add(PointKind::launch,
                          "only gpu_back_to_back launches are compute.launch_overhead", src);
            continue;
        }
        out.add(PointKind::launch, i, "launch gpu_back_to_back", l.source, "", l.time,
                cluster.compute.launch_overhead.seconds());
    }
}

void validate_steps(PointSink& out, const strategies::parallel::Platform& platform,
                    const MeasurementFile& file, const ValidationOptions& options) {
    for (std::size_t i = 0; i < file.steps.size(); ++i) {
        const auto& s = file.steps[i];
        const std::string src = where(s.source, out.name, PointKind::step, i);
        try {
            out.add(PointKind::step, i, point_label(s), s.source, "", s.time,
                    predict_step(platform, s, options.fidelity, options.flow_symmetry));
        } catch (const InputError& e) {
            out.skips.add(PointKind::step, e.message_for(s.source), src);
        }
    }
}

} // namespace

Validation validate_measurements(const strategies::parallel::Platform& platform,
                                 const MeasurementFile& file, const std::string& name,
                                 const ValidationOptions& options) {
    const hardware::ClusterSpec& cluster = platform.cluster;
    Validation v;
    SkipLog skips;
    PointSink out{name, v, skips};
    if (wanted(options, PointKind::collective) && !file.collectives.empty())
        validate_collectives(out, cluster, file, options);
    if (wanted(options, PointKind::gemm) && !file.gemms.empty())
        validate_gemms(out, cluster, file);
    if (wanted(options, PointKind::copy) && !file.copies.empty())
        validate_copies(out, cluster, file);
    if (wanted(options, PointKind::p2p) && !file.p2p.empty())
        validate_p2p(out, cluster, file);
    if (wanted(options, PointKind::launch) && !file.launches.empty())
        validate_launches(out, cluster, file);
    if (wanted(options, PointKind::step) && !file.steps.empty())
        validate_steps(out, platform, file, options);
    v.skipped = skips.lines();
    if (!file.kernels.empty() || !file.trace_steps.empty())
        v.skipped.push_back(fmt::format(
            "{} kernel groups and {} traced steps of profiler traces are not validated here: "
            "calibrate fit-kernels fits and validates them by shape",
            file.kernels.size(), file.trace_steps.size()));
    return v;
}

} // namespace clustersim::calibrate
