// calibrate fit: each part (launches, copies, GEMMs, collectives, steps) turns its points into a
// least-squares problem over the parameters the points determine, minimises it within bounds,
// and writes what it found into the fitted Platform with a record of where it came from.
#include "calibrate/fit.h"

#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "calibrate/gemm_variants.h"
#include "calibrate/predict.h"
#include "hardware/compute_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace clustersim::calibrate {

using hardware::ClusterSpec;
using hardware::LinkLevel;
using hardware::Protocol;
using strategies::parallel::Platform;

const std::vector<FrameworkField>& framework_fields() {
    using F = strategies::parallel::FrameworkSpec;
    static const std::vector<FrameworkField> fields{
        {"host_overhead",
         true,
         {0, 500e-6, false},
         [](const F& f) { return f.host_overhead.seconds(); },
         [](F& f, double v) { f.host_overhead = sim::Time::from_seconds(v); }},
        {"gemm_efficiency",
         false,
         {0.3, 1.0, false},
         [](const F& f) { return f.gemm_efficiency; },
         [](F& f, double v) { f.gemm_efficiency = v; }},
        {"memory_efficiency",
         false,
         {0.2, 1.0, false},
         [](const F& f) { return f.memory_efficiency; },
         [](F& f, double v) { f.memory_efficiency = v; }},
        {"p2p_overhead",
         true,
         {0, 5e-3, false},
         [](const F& f) { return f.p2p_overhead.seconds(); },
         [](F& f, double v) { f.p2p_overhead = sim::Time::from_seconds(v); }},
        {"microbatch_overhead",
         true,
         {0, 20e-3, false},
         [](const F& f) { return f.microbatch_overhead.seconds(); },
         [](F& f, double v) { f.microbatch_overhead = sim::Time::from_seconds(v); }},
        {"collective_overhead",
         true,
         {0, 500e-6, false},
         [](const F& f) { return f.collective_overhead.seconds(); },
         [](F& f, double v) { f.collective_overhead = sim::Time::from_seconds(v); }},
    };
    return fields;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Values as written: rounding and text
// ---------------------------------------------------------------------------------------------

/// A duration rounded to whole nanoseconds (what the file holds).
double round_time(double seconds) {
    return std::round(seconds * 1e9) / 1e9;
}
std::string time_text(double seconds) {
    return fmt::format("{:.3f}us", std::round(seconds * 1e9) / 1e3);
}
double round_fraction(double x) {
    return std::round(x * 1e4) / 1e4;
}
std::string fraction_text(double x) {
    return fmt::format("{:.4f}", x);
}
double round_number(double x) {
    return std::round(x * 1e3) / 1e3;
}
std::string number_text(double x) {
    return fmt::format("{:.3f}", x);
}

std::string level_key(LinkLevel l) {
    return std::string(hardware::to_string(l));
}
std::string protocol_key(Protocol p) {
    std::string k(hardware::to_string(p));
    for (char& c : k)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return k;
}

// ---------------------------------------------------------------------------------------------
// The fitting core
// ---------------------------------------------------------------------------------------------

using Written = std::vector<std::pair<std::string, std::string>>;

struct Param {
    std::string name;
    ParameterBounds bounds;
    std::function<double(const Platform&)> get;
    /// Sets the value, rounded as the file writes it.
    std::function<void(Platform&, double)> set;
    /// The keys and texts the value writes.
    std::function<Written(const Platform&)> written;
};

enum class Loss { huber, mape };

struct Problem {
    std::vector<double> measured; ///< seconds
    std::vector<double> weights;  ///< per point; any positive scale
    std::function<std::vector<double>(const Platform&)> predict;
    Loss loss = Loss::huber;
    /// Points needed per parameter kept, beyond the parameter count itself.
    int spare_points = 2;
};

struct Outcome {
    Platform spec;
    std::vector<std::size_t> fitted; ///< indices into the params
    std::vector<std::string> notes;
    std::vector<double> before, after; ///< predicted / measured - 1
};

std::vector<double> errors_of(const std::vector<double>& predicted,
                              const std::vector<double>& measured) {
    std::vector<double> e(measured.size());
    for (std::size_t i = 0; i < measured.size(); ++i)
        e[i] = predicted[i] / measured[i] - 1;
    return e;
}

double loss_value(const Problem& p, const std::vector<double>& predicted, double delta) {
    double sum = 0, wsum = 0;
    for (std::size_t i = 0; i < predicted.size(); ++i) {
        const double w = p.weights[i];
        wsum += w;
        if (!(predicted[i] > 0) || !std::isfinite(predicted[i]))
            return 1e300;
        if (p.loss == Loss::mape) {
            sum += w * std::abs(predicted[i] / p.measured[i] - 1);
        } else {
            const double r = p.measured[i] / predicted[i] - 1;
            const double a = std::abs(r);
            sum += w * (a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta));
        }
    }
    return wsum > 0 ? sum / wsum : 0;
}

/// Keeps the parameters whose effect on the predictions is not (nearly) a combination of the
/// effects of those kept before them: Gram-Schmidt over weighted finite-difference columns of
/// log(prediction) in normalised parameter units.
std::vector<std::size_t> determined(const Platform& base, const std::vector<Param>& params,
                                    const Problem& p, const std::vector<double>& pred0,
                                    std::vector<std::string>& notes) {
    constexpr double kStep = 0.05;          // normalised units
    constexpr double kNoEffect = 1e-7;      // column norm: nothing depends on the parameter
    constexpr double kCollinear = 0.03;     // residual / norm: (nearly) a combination of the kept
    std::vector<std::vector<double>> basis; // orthonormal columns kept
    std::vector<std::size_t> kept;
    std::vector<std::string> kept_names;
    for (std::size_t j = 0; j < params.size(); ++j) {
        const Param& prm = params[j];
        const double u0 = std::clamp(
            to_unit(std::clamp(prm.get(base), prm.bounds.lo, prm.bounds.hi), prm.bounds), 0.0, 1.0);
        const double u1 = u0 + kStep <= 1.0 ? u0 + kStep : u0 - kStep;
        Platform moved = base;
        prm.set(moved, from_unit(u1, prm.bounds));
        const std::vector<double> pred = p.predict(moved);
        std::vector<double> col(pred.size());
        double norm = 0;
        for (std::size_t i = 0; i < pred.size(); ++i) {
            col[i] = std::sqrt(p.weights[i]) * (std::log(pred[i]) - std::log(pred0[i])) / (u1 - u0);
            norm += col[i] * col[i];
        }
        norm = std::sqrt(norm);
        if (!(norm > kNoEffect)) {
            notes.push_back(prm.name + ": not fitted: no measured point depends on it");
            continue;
        }
        for (const auto& b : basis) {
            double dot = 0;
            for (std::size_t i = 0; i < col.size(); ++i)
                dot += col[i] * b[i];
            for (std::size_t i = 0; i < col.size(); ++i)
                col[i] -= dot * b[i];
        }
        double rest = 0;
        for (double c : col)
            rest += c * c;
        rest = std::sqrt(rest);
        if (rest < kCollinear * norm) {
            notes.push_back(prm.name + ": not fitted: on these points its effect is that of " +
                            base::join(kept_names, ", ") +
                            " (more GPU counts or sizes would separate them)");
            continue;
        }
        for (double& c : col)
            c /= rest;
        basis.push_back(std::move(col));
        kept.push_back(j);
        kept_names.push_back(prm.name);
    }
    return kept;
}

Outcome fit_core(const Platform& base, const std::vector<Param>& params, const Problem& p,
                 const FitOptions& options, const std::string& part) {
    Outcome out;
    out.spec = base;
    const std::vector<double> pred0 = p.predict(base);
    out.before = errors_of(pred0, p.measured);
    out.after = out.before;
    for (double v : pred0)
        if (!(v > 0) || !std::isfinite(v))
            throw std::logic_error(part + ": a prediction is not a positive time");
    std::vector<std::size_t> kept = determined(base, params, p, pred0, out.notes);
    const int n_points = static_cast<int>(p.measured.size());
    if (!kept.empty() && n_points < static_cast<int>(kept.size()) + p.spare_points) {
        out.notes.push_back(fmt::format("not fitted: {} point{} cannot determine {} parameter{} "
                                        "(at least {} needed)",
                                        n_points, n_points == 1 ? "" : "s", kept.size(),
                                        kept.size() == 1 ? "" : "s",
                                        kept.size() + static_cast<std::size_t>(p.spare_points)));
        return out;
    }
    if (kept.empty())
        return out;
    std::vector<ParameterBounds> bounds;
    std::vector<double> x0;
    for (std::size_t j : kept) {
        bounds.push_back(params[j].bounds);
        x0.push_back(params[j].get(base));
    }
    auto apply = [&](const std::vector<double>& x) {
        Platform s = base;
        for (std::size_t k = 0; k < kept.size(); ++k)
            params[kept[k]].set(s, x[k]);
        return s;
    };
    const MinimizeResult r = minimize_bounded(
        [&](const std::vector<double>& x) {
            return loss_value(p, p.predict(apply(x)), options.huber_delta);
        },
        x0, bounds, options.minimize);
    out.spec = apply(r.x);
    out.fitted = kept;
    out.after = errors_of(p.predict(out.spec), p.measured);
    for (std::size_t k = 0; k < kept.size(); ++k) {
        const auto& b = params[kept[k]].bounds;
        const double u = to_unit(r.x[k], b);
        if (u <= 1e-6 || u >= 1 - 1e-6)
            out.notes.push_back(fmt::format("{}: at its bound [{:g}, {:g}]: the data would go "
                                            "further (a model gap, or a bound to revisit)",
                                            params[kept[k]].name, b.lo, b.hi));
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Bookkeeping shared by the parts
// ---------------------------------------------------------------------------------------------

struct PointRef {
    std::size_t file = 0; ///< index into the inputs
    std::size_t index = 0;
};

std::vector<std::string> files_of(const std::vector<NamedMeasurements>& inputs,
                                  const std::vector<PointRef>& refs) {
    std::set<std::size_t> used;
    for (const auto& r : refs)
        used.insert(r.file);
    std::vector<std::string> names;
    for (std::size_t f : used)
        names.push_back(inputs[f].name);
    return names;
}

void record(FitResult& result, FitPart& part, const Outcome& o, const std::vector<Param>& params) {
    part.before = error_stats(o.before);
    part.after = error_stats(o.after);
    for (auto& n : o.notes)
        part.notes.push_back(n);
    for (std::size_t j : o.fitted) {
        for (const auto& [key, text] : params[j].written(o.spec)) {
            strategies::parallel::CalibrationRecord r;
            r.key = key;
            r.value = text;
            r.method = part.method;
            r.files = part.files;
            r.points = part.points;
            r.mean_abs_error = part.after.mean_abs;
            r.max_abs_error = part.after.max_abs;
            result.records.push_back(std::move(r));
        }
    }
    part.fitted = !o.fitted.empty();
    if (part.fitted)
        result.fitted = o.spec;
}

// ---------------------------------------------------------------------------------------------
// Launch overhead
// ---------------------------------------------------------------------------------------------

void fit_launches(const std::vector<NamedMeasurements>& inputs, FitResult& result) {
    std::vector<PointRef> refs;
    std::vector<double> times;
    for (std::size_t f = 0; f < inputs.size(); ++f)
        for (std::size_t i = 0; i < inputs[f].file.launches.size(); ++i)
            if (inputs[f].file.launches[i].method == LaunchMethod::gpu_back_to_back) {
                refs.push_back({f, i});
                times.push_back(inputs[f].file.launches[i].time.seconds());
            }
    bool any = false;
    for (const auto& in : inputs)
        any = any || !in.file.launches.empty();
    if (!any)
        return;
    FitPart part;
    part.name = "launches";
    part.method = "median";
    part.files = files_of(inputs, refs);
    part.points = static_cast<int>(times.size());
    if (times.empty()) {
        part.notes.push_back("compute.launch_overhead: not fitted: no gpu_back_to_back launch "
                             "points (host_submit and launch_and_sync time the host, not the "
                             "gap between kernels)");
        result.parts.push_back(std::move(part));
        return;
    }
    const double before = result.fitted.cluster.compute.launch_overhead.seconds();
    const double t = round_time(quantile(times, 0.5));
    std::vector<double> eb, ea;
    for (double m : times) {
        eb.push_back(before / m - 1);
        ea.push_back(t / m - 1);
    }
    Outcome o;
    o.spec = result.fitted;
    o.spec.cluster.compute.launch_overhead = sim::Time::from_seconds(t);
    o.before = eb;
    o.after = ea;
    o.fitted = {0};
    const std::vector<Param> params{
        {"compute.launch_overhead", {}, nullptr, nullptr, [](const Platform& s) {
             return Written{{"compute.launch_overhead",
                             time_text(s.cluster.compute.launch_overhead.seconds())}};
         }}};
    record(result, part, o, params);
    result.parts.push_back(std::move(part));
}

// ---------------------------------------------------------------------------------------------
// Copies: HBM efficiency by size
// ---------------------------------------------------------------------------------------------

void fit_copies(const std::vector<NamedMeasurements>& inputs, const FitOptions& options,
                FitResult& result) {
    std::vector<PointRef> refs;
    const std::int64_t l2 = result.fitted.cluster.node.gpu.l2_bytes;
    int cached = 0;
    for (std::size_t f = 0; f < inputs.size(); ++f)
        for (std::size_t i = 0; i < inputs[f].file.copies.size(); ++i) {
            const auto& c = inputs[f].file.copies[i];
            if (c.cache_resident(l2))
                ++cached;
            else if (c.kind == CopyKind::device_to_device)
                refs.push_back({f, i});
        }
    bool any = false;
    for (const auto& in : inputs)
        any = any || !in.file.copies.empty();
    if (!any)
        return;
    FitPart part;
    part.name = "copies";
    part.method = "huber-nelder-mead";
    part.files = files_of(inputs, refs);
    part.points = static_cast<int>(refs.size());
    if (cached > 0)
        part.notes.push_back(fmt::format("{} device-to-device cop{} left out: source and "
                                         "destination fit in the {} L2 cache",
                                         cached, cached == 1 ? "y" : "ies",
                                         base::format_bytes(l2)));
    if (refs.empty()) {
        part.notes.push_back("compute.memory: not fitted: no device-to-device copies larger than "
                             "the L2 cache (host and peer copies do not measure HBM)");
        result.parts.push_back(std::move(part));
        return;
    }
    Problem p;
    std::vector<std::int64_t> bytes;
    for (const auto& r : refs) {
        const auto& c = inputs[r.file].file.copies[r.index];
        bytes.push_back(2 * c.bytes); // read and write
        p.measured.push_back(c.time.seconds());
        p.weights.push_back(1.0);
    }
    p.predict = [&bytes](const Platform& s) {
        const hardware::ComputeModel m(s.cluster);
        std::vector<double> out;
        for (auto b : bytes)
            out.push_back(m.memory_bound_seconds(b));
        return out;
    };
    std::vector<Param> params{
        {"compute.memory.efficiency",
         {0.05, 1.0, false},
         [](const Platform& s) { return s.cluster.compute.memory_efficiency; },
         [](Platform& s, double v) { s.cluster.compute.memory_efficiency = round_fraction(v); },
         [](const Platform& s) {
             return Written{
                 {"compute.memory.efficiency", fraction_text(s.cluster.compute.memory_efficiency)}};
         }},
        {"compute.memory.half_efficiency_bytes",
         {1e3, 1e10, true},
         [](const Platform& s) {
             return std::max(1e3,
                             static_cast<double>(s.cluster.compute.memory_half_efficiency_bytes));
         },
         [](Platform& s, double v) {
             s.cluster.compute.memory_half_efficiency_bytes =
                 static_cast<std::int64_t>(std::llround(v));
         },
         [](const Platform& s) {
             return Written{{"compute.memory.half_efficiency_bytes",
                             std::to_string(s.cluster.compute.memory_half_efficiency_bytes)}};
         }},
    };
    const std::set<std::int64_t> sizes(bytes.begin(), bytes.end());
    if (sizes.size() < 2) {
        params.pop_back();
        part.notes.push_back("compute.memory.half_efficiency_bytes: not fitted: every copy has "
                             "the same size");
    }
    record(result, part, fit_core(result.fitted, params, p, options, "copies"), params);
    result.parts.push_back(std::move(part));
}

// ---------------------------------------------------------------------------------------------
// GEMMs: efficiency per dtype and the fill/drain work
// ---------------------------------------------------------------------------------------------

void fit_gemms(const std::vector<NamedMeasurements>& inputs, const FitOptions& options,
               FitResult& result) {
    std::vector<PointRef> refs;
    std::set<hardware::Dtype> dtypes;
    for (std::size_t f = 0; f < inputs.size(); ++f)
        for (std::size_t i = 0; i < inputs[f].file.gemms.size(); ++i) {
            const auto& g = inputs[f].file.gemms[i];
            // The compute model's GEMM is the plain multiply; the variants are measured beside
            // it (gemm_variant_ratios), not fitted.
            if (g.variant != GemmVariant::plain)
                continue;
            if (!result.fitted.cluster.node.gpu.supports(g.dtype)) {
                result.warnings.push_back(
                    fmt::format("{}: gemms[{}] ({}) skipped: the GPU has no {} peak",
                                inputs[f].name, i, point_label(g), hardware::to_string(g.dtype)));
                continue;
            }
            refs.push_back({f, i});
            dtypes.insert(g.dtype);
        }
    if (refs.empty())
        return;
    FitPart part;
    part.name = "gemms";
    part.method = "huber-nelder-mead";
    part.files = files_of(inputs, refs);
    part.points = static_cast<int>(refs.size());
    Problem p;
    std::vector<const GemmMeasurement*> points;
    for (const auto& r : refs) {
        points.push_back(&inputs[r.file].file.gemms[r.index]);
        p.measured.push_back(points.back()->time.seconds());
        p.weights.push_back(1.0);
    }
    p.predict = [&points](const Platform& s) {
        const hardware::ComputeModel m(s.cluster);
        std::vector<double> out;
        for (const auto* g : points)
            out.push_back(m.gemm_seconds(g->m, g->n, g->k, g->dtype));
        return out;
    };
    std::vector<Param> params;
    for (hardware::Dtype d : dtypes) {
        const auto i = static_cast<std::size_t>(d);
        const std::string key = "compute.gemm.efficiency." + std::string(hardware::to_string(d));
        params.push_back(
            {key,
             {0.05, 1.0, false},
             [i](const Platform& s) { return s.cluster.compute.gemm_efficiency[i]; },
             [i](Platform& s, double v) {
                 s.cluster.compute.gemm_efficiency[i] = round_fraction(v);
             },
             [i, key](const Platform& s) {
                 return Written{{key, fraction_text(s.cluster.compute.gemm_efficiency[i])}};
             }});
    }
    params.push_back({"compute.gemm.half_efficiency_flops",
                      {1e5, 1e13, true},
                      [](const Platform& s) {
                          return std::max(1e5, s.cluster.compute.gemm_half_efficiency_flops);
                      },
                      [](Platform& s, double v) {
                          s.cluster.compute.gemm_half_efficiency_flops =
                              base::round_significant(v, 3); // written as 1.23e+08
                      },
                      [](const Platform& s) {
                          return Written{
                              {"compute.gemm.half_efficiency_flops",
                               base::scientific(s.cluster.compute.gemm_half_efficiency_flops, 3)}};
                      }});
    std::set<double> work;
    for (const auto* g : points)
        work.insert(g->flops());
    if (work.size() < 2) {
        params.pop_back();
        part.notes.push_back("compute.gemm.half_efficiency_flops: not fitted: every GEMM does "
                             "the same work");
    }
    record(result, part, fit_core(result.fitted, params, p, options, "gemms"), params);
    // The variants beside the fit, as numbers: each one's time over its plain twin's.
    std::vector<GemmMeasurement> all;
    for (const auto& in : inputs)
        all.insert(all.end(), in.file.gemms.begin(), in.file.gemms.end());
    for (const auto& v : gemm_variant_ratios(all))
        part.notes.push_back(fmt::format("{} {} (not fitted): {:.3f}x the plain GEMM's time, "
                                         "median of {} shape{} ({:.3f}-{:.3f})",
                                         hardware::to_string(v.dtype), to_string(v.variant),
                                         v.median, v.shapes, v.shapes == 1 ? "" : "s", v.lowest,
                                         v.highest));
    result.parts.push_back(std::move(part));
}

// ---------------------------------------------------------------------------------------------
// Collectives
// ---------------------------------------------------------------------------------------------

/// LL's and LL128's share of Simple's value at a level in BASE; NCCL's line formats (half of an
/// LL line is flags, 120 of 128 bytes of an LL128 line are data) when BASE has none.
double protocol_ratio(const ClusterSpec& base, Protocol p, LinkLevel l, bool latency) {
    const auto& simple = base.collectives.protocol(Protocol::simple).level(l);
    const auto& mine = base.collectives.protocol(p).level(l);
    if (latency) {
        if (simple.step_latency > sim::Time::zero())
            return mine.step_latency.seconds() / simple.step_latency.seconds();
        // NCCL tuning.cc, NVLink ring: LL 0.6 us, LL128 1.9 us, Simple 3.4 us.
        return p == Protocol::ll ? 0.6 / 3.4 : p == Protocol::ll128 ? 1.9 / 3.4 : 1.0;
    }
    if (simple.efficiency > 0 && mine.efficiency > 0)
        return mine.efficiency / simple.efficiency;
    return p == Protocol::ll ? 0.5 : p == Protocol::ll128 ? 120.0 / 128.0 : 1.0;
}

/// The collective points the model can run (the others skipped, one warning per reason),
/// each with its curve for weighting, and the link levels and algorithms they reach.
struct CollectivePoints {
    std::vector<PointRef> refs;
    std::vector<const CollectiveMeasurement*> points;
    std::map<std::string, int> curve_size;
    std::vector<std::string> curve_of;
    std::set<LinkLevel> levels;
    bool nvls = false;
};

CollectivePoints collective_points(const std::vector<NamedMeasurements>& inputs,
                                   const Platform& base, FitResult& result) {
    CollectivePoints cp;
    std::vector<PointRef>& refs = cp.refs;
    std::vector<const CollectiveMeasurement*>& points = cp.points;
    std::map<std::string, int>& curve_size = cp.curve_size;
    std::vector<std::string>& curve_of = cp.curve_of;
    std::set<LinkLevel>& levels = cp.levels;
    bool& nvls_points = cp.nvls;
    CollectivePredictor check(base.cluster);
    std::map<std::string, std::pair<int, std::string>> skipped;
    for (std::size_t f = 0; f < inputs.size(); ++f)
        for (std::size_t i = 0; i < inputs[f].file.collectives.size(); ++i) {
            const auto& c = inputs[f].file.collectives[i];
            try {
                check.predict(c);
            } catch (const InputError& e) {
                auto& s = skipped[inputs[f].name + ": " + e.what()];
                if (s.first++ == 0)
                    s.second = c.source.empty()
                                   ? fmt::format("{}:collectives[{}]", inputs[f].name, i)
                                   : c.source;
                continue;
            }
            refs.push_back({f, i});
            points.push_back(&c);
            const std::string curve =
                fmt::format("{}|{}|{}|{}|{}|{}", f, to_string(c.op), c.gpus,
                            hardware::to_string(c.dtype), c.in_place, c.algorithm);
            curve_of.push_back(curve);
            ++curve_size[curve];
            levels.insert(check.level(c.gpus));
            nvls_points = nvls_points || c.algorithm == "nvls";
        }
    for (const auto& [why, s] : skipped)
        result.warnings.push_back(fmt::format("{} collective point{} skipped: {} (e.g. {})",
                                              s.first, s.first == 1 ? "" : "s", why, s.second));
    return cp;
}

/// Simple's efficiency at level `l`, fitted; the other protocols' follow at their ratio to
/// Simple's in BASE.
Param simple_efficiency_param(const ClusterSpec& base, LinkLevel l) {
    const auto li = static_cast<std::size_t>(l);
    std::array<double, hardware::kProtocolCount> ratio{};
    for (Protocol pr : hardware::kAllProtocols)
        ratio[static_cast<std::size_t>(pr)] = protocol_ratio(base, pr, l, false);
    const std::string name = "collectives.simple." + level_key(l) + ".efficiency";
    return Param{
        name,
        {0.05, 1.0, false},
        [li](const Platform& s) {
            return s.cluster.collectives.protocols[static_cast<std::size_t>(Protocol::simple)]
                .levels[li]
                .efficiency;
        },
        [li, ratio](Platform& s, double v) {
            for (Protocol pr : hardware::kAllProtocols) {
                const auto pi = static_cast<std::size_t>(pr);
                s.cluster.collectives.protocols[pi].levels[li].efficiency =
                    std::clamp(round_fraction(v * ratio[pi]), 1e-4, 1.0);
            }
        },
        [li, l](const Platform& s) {
            Written w;
            for (Protocol pr : hardware::kAllProtocols)
                w.push_back(
                    {"collectives." + protocol_key(pr) + "." + level_key(l) + ".efficiency",
                     fraction_text(s.cluster.collectives.protocols[static_cast<std::size_t>(pr)]
                                       .levels[li]
                                       .efficiency)});
            return w;
        }};
}

/// Simple's step latency at level `l`, fitted; the other protocols' follow at their ratio to
/// Simple's in BASE.
Param simple_step_latency_param(const ClusterSpec& base, LinkLevel l) {
    const auto li = static_cast<std::size_t>(l);
    std::array<double, hardware::kProtocolCount> ratio{};
    for (Protocol pr : hardware::kAllProtocols)
        ratio[static_cast<std::size_t>(pr)] = protocol_ratio(base, pr, l, true);
    return Param{
        "collectives.simple." + level_key(l) + ".step_latency",
        {0, 50e-6, false},
        [li](const Platform& s) {
            return s.cluster.collectives.protocols[static_cast<std::size_t>(Protocol::simple)]
                .levels[li]
                .step_latency.seconds();
        },
        [li, ratio](Platform& s, double v) {
            for (Protocol pr : hardware::kAllProtocols) {
                const auto pi = static_cast<std::size_t>(pr);
                s.cluster.collectives.protocols[pi].levels[li].step_latency =
                    sim::Time::from_seconds(round_time(v * ratio[pi]));
            }
        },
        [li, l](const Platform& s) {
            Written w;
            for (Protocol pr : hardware::kAllProtocols)
                w.push_back(
                    {"collectives." + protocol_key(pr) + "." + level_key(l) + ".step_latency",
                     time_text(s.cluster.collectives.protocols[static_cast<std::size_t>(pr)]
                                   .levels[li]
                                   .step_latency.seconds())});
            return w;
        }};
}

/// The parameters a collective fit moves, in the order the minimiser takes them: the launch
/// latency, Simple's efficiency per level, the memory passes, Simple's step latency per level,
/// and NVLS's efficiency and latency when NVLS points were measured.
std::vector<Param> collective_params(const ClusterSpec& base, const std::set<LinkLevel>& levels,
                                     bool nvls_points) {
    std::vector<Param> params;
    params.push_back(
        {"collectives.launch_latency",
         {0, 500e-6, false},
         [](const Platform& s) { return s.cluster.collectives.launch_latency.seconds(); },
         [](Platform& s, double v) {
             s.cluster.collectives.launch_latency = sim::Time::from_seconds(round_time(v));
         },
         [](const Platform& s) {
             return Written{{"collectives.launch_latency",
                             time_text(s.cluster.collectives.launch_latency.seconds())}};
         }});
    for (LinkLevel l : levels)
        params.push_back(simple_efficiency_param(base, l));
    params.push_back(
        {"collectives.memory_passes",
         {0, 20, false},
         [](const Platform& s) { return s.cluster.collectives.memory_passes; },
         [](Platform& s, double v) { s.cluster.collectives.memory_passes = round_number(v); },
         [](const Platform& s) {
             return Written{
                 {"collectives.memory_passes", number_text(s.cluster.collectives.memory_passes)}};
         }});
    for (LinkLevel l : levels)
        params.push_back(simple_step_latency_param(base, l));
    if (nvls_points) {
        params.push_back({"collectives.nvls.efficiency",
                          {0.05, 1.0, false},
                          [](const Platform& s) { return s.cluster.collectives.nvls.efficiency; },
                          [](Platform& s, double v) {
                              s.cluster.collectives.nvls.efficiency = round_fraction(v);
                          },
                          [](const Platform& s) {
                              return Written{
                                  {"collectives.nvls.efficiency",
                                   fraction_text(s.cluster.collectives.nvls.efficiency)}};
                          }});
        params.push_back(
            {"collectives.nvls.latency",
             {0, 500e-6, false},
             [](const Platform& s) { return s.cluster.collectives.nvls.latency.seconds(); },
             [](Platform& s, double v) {
                 s.cluster.collectives.nvls.latency = sim::Time::from_seconds(round_time(v));
             },
             [](const Platform& s) {
                 return Written{{"collectives.nvls.latency",
                                 time_text(s.cluster.collectives.nvls.latency.seconds())}};
             }});
    }
    return params;
}

void fit_collectives(const std::vector<NamedMeasurements>& inputs, const FitOptions& options,
                     FitResult& result) {
    const Platform& base = result.fitted;
    if (!base.cluster.collectives.present()) {
        bool any = false;
        for (const auto& in : inputs)
            any = any || !in.file.collectives.empty();
        if (any)
            throw InputError("hardware '" + base.cluster.name +
                             "' has no collectives: section to calibrate");
        return;
    }
    // Points the model can run, with their curve for weighting.
    const CollectivePoints cp = collective_points(inputs, base, result);
    const std::vector<const CollectiveMeasurement*>& points = cp.points;
    if (points.empty())
        return;
    FitPart part;
    part.name = "collectives";
    part.method = "huber-nelder-mead";
    part.files = files_of(inputs, cp.refs);
    part.points = static_cast<int>(points.size());
    Problem p;
    for (std::size_t i = 0; i < points.size(); ++i) {
        p.measured.push_back(points[i]->time.seconds());
        p.weights.push_back(1.0 / cp.curve_size.at(cp.curve_of[i]));
    }
    p.predict = [&points](const Platform& s) {
        CollectivePredictor predictor(s.cluster);
        std::vector<double> out;
        out.reserve(points.size());
        for (const auto* c : points)
            out.push_back(predictor.predict(*c).seconds);
        return out;
    };

    std::vector<Param> params = collective_params(base.cluster, cp.levels, cp.nvls);
    std::set<std::int64_t> sizes;
    for (const auto* c : points)
        sizes.insert(c->bytes);
    if (sizes.size() < 2) {
        part.notes.push_back("not fitted: every collective point has the same size, so latency "
                             "and bandwidth cannot be told apart");
        Outcome o;
        o.spec = base;
        o.before = o.after = errors_of(p.predict(base), p.measured);
        record(result, part, o, params);
    } else {
        record(result, part, fit_core(base, params, p, options, "collectives"), params);
    }
    result.parts.push_back(std::move(part));
}

// ---------------------------------------------------------------------------------------------
// Training steps: the framework factors
// ---------------------------------------------------------------------------------------------

void fit_steps(const std::vector<NamedMeasurements>& inputs, const FitOptions& options,
               FitResult& result) {
    std::vector<PointRef> refs;
    std::vector<const StepMeasurement*> points;
    std::map<std::string, std::pair<int, std::string>> skipped;
    for (std::size_t f = 0; f < inputs.size(); ++f)
        for (std::size_t i = 0; i < inputs[f].file.steps.size(); ++i) {
            const auto& s = inputs[f].file.steps[i];
            try {
                step_experiment(strategies::parallel::with_gpu_count(result.fitted, s.gpus), s);
            } catch (const InputError& e) {
                auto& k = skipped[inputs[f].name + ": " + e.message_for(s.source)];
                if (k.first++ == 0)
                    k.second = s.source.empty() ? fmt::format("{}:steps[{}]", inputs[f].name, i)
                                                : s.source;
                continue;
            }
            refs.push_back({f, i});
            points.push_back(&s);
        }
    for (const auto& [why, s] : skipped)
        result.warnings.push_back(fmt::format("{} step{} skipped: {} (e.g. {})", s.first,
                                              s.first == 1 ? "" : "s", why, s.second));
    if (points.empty())
        return;
    FitPart part;
    part.name = "steps";
    part.method = "mape-nelder-mead";
    part.files = files_of(inputs, refs);
    part.points = static_cast<int>(points.size());
    Problem p;
    p.loss = Loss::mape;
    for (const auto* s : points) {
        p.measured.push_back(s->time.seconds());
        p.weights.push_back(1.0);
    }
    const auto fidelity = options.step_fidelity;
    const bool symmetry = options.step_flow_symmetry;
    p.predict = [&points, fidelity, symmetry](const Platform& s) {
        std::vector<double> out;
        out.reserve(points.size());
        for (const auto* st : points)
            out.push_back(predict_step(s, *st, fidelity, symmetry));
        return out;
    };
    std::vector<Param> params;
    for (const auto& field : framework_fields()) {
        const std::string key(field.key);
        if (!options.step_fields.empty() &&
            std::find(options.step_fields.begin(), options.step_fields.end(), key) ==
                options.step_fields.end())
            continue;
        const FrameworkField* fp = &field;
        params.push_back({"framework." + key, field.bounds,
                          [fp](const Platform& s) { return fp->get(s.framework); },
                          [fp](Platform& s, double v) {
                              fp->set(s.framework, fp->is_time ? round_time(v) : round_fraction(v));
                          },
                          [fp, key](const Platform& s) {
                              const double v = fp->get(s.framework);
                              return Written{{"framework." + key,
                                              fp->is_time ? time_text(v) : fraction_text(v)}};
                          }});
    }
    for (const auto& want : options.step_fields) {
        const bool known = std::any_of(framework_fields().begin(), framework_fields().end(),
                                       [&](const FrameworkField& f) { return f.key == want; });
        if (!known) {
            std::vector<std::string> keys;
            for (const auto& f : framework_fields())
                keys.emplace_back(f.key);
            const std::string names = base::join(keys, ", ");
            throw InputError("--step-fields: unknown framework field '" + want +
                             "' (fittable: " + names + ")");
        }
    }
    record(result, part, fit_core(result.fitted, params, p, options, "steps"), params);
    result.parts.push_back(std::move(part));
}

} // namespace

// ---------------------------------------------------------------------------------------------
// The whole fit
// ---------------------------------------------------------------------------------------------

FitResult fit_hardware(const Platform& base, const std::vector<NamedMeasurements>& inputs,
                       const FitOptions& options) {
    if (inputs.empty())
        throw InputError("calibrate fit: no measurement files");
    FitResult result;
    result.fitted = base;
    // Another GPU's points would fit nonsense: refuse them. Duplicates across files too.
    MeasurementFile all;
    std::vector<std::string> file_names;
    std::size_t total = 0;
    for (const auto& in : inputs) {
        if (auto w = check_device(base.cluster, in.file, in.name))
            result.warnings.push_back(*w);
        total += in.file.size();
        MeasurementFile copy = in.file;
        copy.environment.device = "unknown"; // checked above, one by one
        merge_measurements(all, copy, in.name);
        file_names.push_back(in.name);
    }
    const std::string names = base::join(file_names, ", ");
    check_measurements(all, names);
    for (const auto& h : options.holdout)
        if (auto w = check_device(base.cluster, h.file, h.name))
            result.warnings.push_back(*w);
    if (total == 0)
        throw InputError(names + ": no measured points to fit");

    fit_launches(inputs, result);
    fit_copies(inputs, options, result);
    fit_gemms(inputs, options, result);
    fit_collectives(inputs, options, result);
    fit_steps(inputs, options, result);
    for (const auto& in : inputs)
        if (!in.file.p2p.empty())
            result.warnings.push_back(fmt::format(
                "{}: {} point-to-point transfers not used by the fit (they validate the "
                "collectives' send/recv)",
                in.name, in.file.p2p.size()));

    if (result.records.empty()) {
        std::string why;
        for (const auto& part : result.parts)
            for (const auto& n : part.notes)
                why += "; " + part.name + ": " + n;
        throw InputError(names + ": nothing could be fitted" +
                         (why.empty() ? std::string(": no point of a kind the fit uses") : why));
    }

    // Uncertainty: the fitted model's residuals on the held-out files, else on its own points.
    const auto& on = options.holdout.empty() ? inputs : options.holdout;
    result.uncertainty.basis = options.holdout.empty() ? "in-sample" : "held-out";
    std::vector<double> coll, gemm, step;
    // Collectives also by (regime, GPU count): ordered as the file lists them.
    std::map<std::pair<strategies::parallel::MessageRegime, int>, std::vector<double>> by_regime;
    ValidationOptions vo;
    vo.fidelity = options.step_fidelity;
    vo.flow_symmetry = options.step_flow_symmetry;
    vo.kinds = {PointKind::collective, PointKind::gemm, PointKind::step};
    for (const auto& in : on) {
        const Validation v = validate_measurements(result.fitted, in.file, in.name, vo);
        for (const auto& pt : v.points) {
            auto& into = pt.kind == PointKind::collective ? coll
                         : pt.kind == PointKind::gemm     ? gemm
                                                          : step;
            into.push_back(pt.residual());
            if (pt.kind == PointKind::collective && pt.regime)
                by_regime[{*pt.regime, pt.gpus}].push_back(pt.residual());
        }
        result.uncertainty_files.push_back(in.name);
    }
    result.uncertainty.collectives = residual_band(coll);
    result.uncertainty.gemms = residual_band(gemm);
    result.uncertainty.steps = residual_band(step);
    for (const auto& [key, residuals] : by_regime)
        result.uncertainty.collective_bands.push_back(
            {key.first, key.second, residual_band(residuals)});
    // As the loader reads the file: its records replace BASE's of the same key, its bands
    // BASE's of the same kind.
    for (const auto& r : result.records) {
        auto& cal = result.fitted.provenance.calibration;
        auto same = std::find_if(
            cal.begin(), cal.end(),
            [&](const strategies::parallel::CalibrationRecord& c) { return c.key == r.key; });
        if (same != cal.end())
            *same = r;
        else
            cal.push_back(r);
    }
    auto& u = result.fitted.provenance.uncertainty;
    u.basis = result.uncertainty.basis;
    for (auto [from, to] : {std::pair{&result.uncertainty.collectives, &u.collectives},
                            std::pair{&result.uncertainty.gemms, &u.gemms},
                            std::pair{&result.uncertainty.steps, &u.steps}})
        if (from->present())
            *to = *from;
    if (result.uncertainty.collectives.present())
        u.collective_bands = result.uncertainty.collective_bands;
    return result;
}

} // namespace clustersim::calibrate
