// clustersim validate --hardware H --measurements M.json: every measured point predicted, the
// error table, and per kind the mean and largest |predicted / measured - 1|; exit code 1 when a
// kind's mean is above --max-error, so a person can keep it in their CI; exit code 2 when no
// point could be predicted at all.
#include "app/cli.h"
#include "app/cluster_options.h"
#include "app/cmd_calibrate.h"
#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "calibrate/validation.h"
#include "strategies/parallel/platform.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <optional>

namespace clustersim::app {
namespace {

namespace cal = calibrate;

struct ValidateOptions {
    std::string hardware;
    std::vector<std::string> measurements;
    std::optional<double> max_error; ///< percent
    std::string format = "table";
    std::string min_bytes;
    std::vector<std::string> kinds;
    std::string fidelity = "analytic";
    bool summary = false;
};

std::string time_text(double s) {
    return base::format_time(sim::Time::from_seconds(s));
}

cal::PointKind parse_kind(const std::string& text) {
    for (cal::PointKind k : cal::kAllPointKinds)
        if (cal::to_string(k) == text)
            return k;
    throw InputError("--kind: expected collectives, gemms, copies, p2p, launches or steps, got '" +
                     text + "'");
}

/// Everything validated: points of every file, in order.
struct Outcome {
    std::vector<cal::PredictedPoint> points;
    std::vector<std::string> warnings;
    std::vector<std::string> descriptions; ///< "M.json: 1024 collectives on ..."
};

struct KindLine {
    cal::PointKind kind;
    cal::ErrorStats s;
    bool over = false;
};

std::vector<KindLine> summaries(const Outcome& out, const std::optional<double>& max_error) {
    std::vector<KindLine> lines;
    for (cal::PointKind k : cal::kAllPointKinds) {
        std::vector<double> errors;
        for (const auto& p : out.points)
            if (p.kind == k)
                errors.push_back(p.error());
        if (errors.empty())
            continue;
        KindLine l{k, cal::error_stats(errors)};
        l.over = max_error && 100.0 * l.s.mean_abs > *max_error;
        lines.push_back(l);
    }
    return lines;
}

void print_table(const ValidateOptions& o, const hardware::ClusterSpec& hw, const Outcome& out,
                 const std::vector<KindLine>& kinds, Io io) {
    fmt::print(io.out, "# clustersim validate: hardware {} ({})\n", hw.name, hw.node.gpu.name);
    for (const auto& d : out.descriptions)
        fmt::print(io.out, "# measurements {}\n", d);
    fmt::print(io.out, "# error = predicted / measured - 1\n");
    if (!o.summary) {
        std::size_t w = 5;
        for (const auto& p : out.points)
            w = std::max(w, p.label.size());
        fmt::print(io.out, "\n{:<12} {:<{}} {:>10} {:>10} {:>9}  {:<13} {}\n", "kind", "point", w,
                   "measured", "predicted", "error", "model", "source");
        for (const auto& p : out.points)
            fmt::print(io.out, "{:<12} {:<{}} {:>10} {:>10} {:>9}  {:<13} {}\n",
                       cal::to_string(p.kind), p.label, w, time_text(p.measured_s),
                       time_text(p.predicted_s), base::signed_percent(p.error(), 2),
                       p.detail.empty() ? "-" : p.detail, p.source);
    }
    fmt::print(io.out, "\n{:<12} {:>7} {:>13} {:>12}\n", "kind", "points", "mean |error|",
               "max |error|");
    for (const auto& k : kinds)
        fmt::print(io.out, "{:<12} {:>7} {:>13} {:>12}{}\n", cal::to_string(k.kind), k.s.points,
                   base::percent(k.s.mean_abs, 2), base::percent(k.s.max_abs, 2),
                   k.over ? "  above --max-error" : "");
    if (kinds.empty())
        fmt::print(io.out, "(no point could be predicted)\n");
    if (o.max_error) {
        const bool fail = std::any_of(kinds.begin(), kinds.end(), [](auto& k) { return k.over; });
        fmt::print(io.out, "\ncheck: mean |error| of each kind <= --max-error {:g}%: {}\n",
                   *o.max_error, fail ? "FAILED" : "passed");
    }
}

void print_csv(const ValidateOptions& o, const Outcome& out, const std::vector<KindLine>& kinds,
               Io io) {
    if (o.summary) {
        fmt::print(io.out, "kind,points,mean_abs_error,max_abs_error,above_max_error\n");
        for (const auto& k : kinds)
            fmt::print(io.out, "{},{},{:.6f},{:.6f},{}\n", cal::to_string(k.kind), k.s.points,
                       k.s.mean_abs, k.s.max_abs, k.over ? "true" : "false");
        return;
    }
    auto field = [](const std::string& s) {
        if (s.find_first_of(",\"\n") == std::string::npos)
            return s;
        std::string q = "\"";
        for (char c : s)
            q += c == '"' ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
    };
    fmt::print(io.out, "kind,point,source,model,measured_s,predicted_s,error\n");
    for (const auto& p : out.points)
        fmt::print(io.out, "{},{},{},{},{:.9g},{:.9g},{:.6f}\n", cal::to_string(p.kind),
                   field(p.label), field(p.source), field(p.detail), p.measured_s, p.predicted_s,
                   p.error());
}

void print_json(const ValidateOptions& o, const hardware::ClusterSpec& hw, const Outcome& out,
                const std::vector<KindLine>& kinds, Io io) {
    nlohmann::ordered_json j;
    j["hardware"] = hw.name;
    j["gpu"] = hw.node.gpu.name;
    j["measurements"] = o.measurements;
    if (!o.summary) {
        nlohmann::ordered_json pts = nlohmann::ordered_json::array();
        for (const auto& p : out.points)
            pts.push_back({{"kind", cal::to_string(p.kind)},
                           {"point", p.label},
                           {"source", p.source},
                           {"model", p.detail},
                           {"measured_s", p.measured_s},
                           {"predicted_s", p.predicted_s},
                           {"error", p.error()}});
        j["points"] = pts;
    }
    nlohmann::ordered_json sum = nlohmann::ordered_json::array();
    for (const auto& k : kinds)
        sum.push_back({{"kind", cal::to_string(k.kind)},
                       {"points", k.s.points},
                       {"mean_abs_error", k.s.mean_abs},
                       {"max_abs_error", k.s.max_abs},
                       {"above_max_error", k.over}});
    j["summary"] = sum;
    j["skipped"] = out.warnings;
    if (o.max_error) {
        j["max_error_pct"] = *o.max_error;
        j["passed"] = std::none_of(kinds.begin(), kinds.end(), [](auto& k) { return k.over; });
    }
    io.out << j.dump(2) << "\n";
}

void run(const ValidateOptions& o, Io io, int& exit_code) {
    if (o.max_error && !(*o.max_error >= 0))
        throw InputError(
            fmt::format("--max-error: expected a percentage >= 0, got {}", *o.max_error));
    cal::ValidationOptions vo;
    if (!o.min_bytes.empty()) {
        try {
            vo.min_collective_bytes = base::parse_bytes(o.min_bytes);
        } catch (const InputError& e) {
            throw InputError(std::string("--min-bytes: ") + e.what());
        }
    }
    for (const auto& k : o.kinds)
        vo.kinds.push_back(parse_kind(k));
    const strategies::parallel::StepOptions so = step_options_of(o.fidelity);
    vo.fidelity = so.fidelity;
    vo.flow_symmetry = so.flow_symmetry;
    const strategies::parallel::Platform platform = strategies::parallel::load_platform(o.hardware);
    const hardware::ClusterSpec& hw = platform.cluster;
    // Read and check every file before predicting anything.
    std::vector<cal::MeasurementFile> files;
    Outcome out;
    for (const auto& path : o.measurements) {
        files.push_back(cal::read_measurements(path));
        if (auto w = cal::check_device(hw, files.back(), path))
            out.warnings.push_back(*w);
        out.descriptions.push_back(path + ": " + describe_measurements(files.back()));
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
        cal::Validation v = cal::validate_measurements(platform, files[i], o.measurements[i], vo);
        for (auto& p : v.points)
            out.points.push_back(std::move(p));
        for (auto& s : v.skipped)
            out.warnings.push_back(o.measurements[i] + ": " + s);
    }
    const auto kinds = summaries(out, o.max_error);
    for (const auto& w : out.warnings)
        fmt::print(io.err, "warning: {}\n", w);
    if (o.format == "csv")
        print_csv(o, out, kinds, io);
    else if (o.format == "json")
        print_json(o, hw, out, kinds, io);
    else
        print_table(o, hw, out, kinds, io);
    if (out.points.empty()) {
        // Nothing was checked, so nothing passed: a CI job must not go green on it.
        std::size_t skipped = 0;
        for (const auto& f : files)
            skipped += f.collectives.size() + f.gemms.size() + f.copies.size() + f.p2p.size() +
                       f.launches.size() + f.steps.size();
        throw InputError(
            skipped == 0 ? "no point could be predicted: the measurement files hold no measurements"
                         : fmt::format("no point could be predicted: {} {} measured point{} "
                                       "{} skipped{} (the warnings above say why)",
                                       skipped == 1 ? "the" : "all", skipped,
                                       skipped == 1 ? "" : "s", skipped == 1 ? "was" : "were",
                                       o.kinds.empty() ? ""
                                                       : " or not of the kinds asked for (--kind " +
                                                             base::join(o.kinds, ", ") + ")"));
    }
    if (std::any_of(kinds.begin(), kinds.end(), [](auto& k) { return k.over; }))
        exit_code = kCheckFailed;
}

} // namespace

void register_validate(CLI::App& app, Io io, int& exit_code) {
    auto o = std::make_shared<ValidateOptions>();
    auto* cmd = app.add_subcommand(
        "validate", "Predict every measured point and report the error (exit 1 above a limit)");
    cmd->add_option("--hardware", o->hardware, "Preset or hardware file (a fitted one, say)")
        ->required();
    cmd->add_option("--measurements,-m", o->measurements, "Measurement files (JSON)")->required();
    cmd->add_option_function<double>(
        "--max-error", [o](double v) { o->max_error = v; },
        "Exit 1 when the mean |predicted / measured - 1| of any kind is above this percentage");
    cmd->add_option("--format", o->format, "table, csv or json")
        ->check(CLI::IsMember({"table", "csv", "json"}))
        ->capture_default_str();
    cmd->add_option("--min-bytes", o->min_bytes, "Skip collectives smaller than this size");
    cmd->add_option("--kind", o->kinds,
                    "Only these kinds: collectives, gemms, copies, p2p, launches, steps");
    add_fidelity_option(*cmd, o->fidelity, "Step predictions: ");
    cmd->add_flag("--summary", o->summary, "Only the summary by kind, not every point");
    cmd->callback([o, io, &exit_code] { run(*o, io, exit_code); });
}

} // namespace clustersim::app
