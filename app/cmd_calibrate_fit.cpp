// clustersim calibrate fit | split: a hardware file fitted to measurements, and a reproducible
// split of measurements into a fitting and a validation set.
#include "app/cluster_options.h"
#include "app/cmd_calibrate.h"
#include "app/output.h"
#include "base/error.h"
#include "base/text.h"
#include "calibrate/fit.h"
#include "calibrate/kernel_fit.h"
#include "calibrate/split.h"
#include "calibrate/validation.h"
#include "strategies/parallel/platform.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <memory>

namespace clustersim::app {
namespace {

namespace fs = std::filesystem;

struct FitCommand {
    std::vector<std::string> files;
    std::string hardware;
    std::string out;
    std::string name;
    std::vector<std::string> holdout;
    std::vector<std::string> step_fields;
    double huber_delta = 0.05;
    std::string fidelity = "analytic";
};

struct SplitCommand {
    std::string file;
    double fraction = 0;
    std::string seed;
    std::string out;
    std::string rest;
    bool by_shape = false;
};

struct FitKernelsCommand {
    std::string fit;
    std::string holdout;
    std::string hardware;
};

void check_out(const std::string& out, const char* flag) {
    const fs::path p(out);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (!fs::is_directory(dir))
        throw InputError(fmt::format("{}: directory '{}' does not exist", flag, dir.string()));
    if (fs::is_directory(p))
        throw InputError(fmt::format("{}: '{}' is a directory", flag, out));
}

/// --seed: an integer from 0 to 2^64-1 (CLI11 would wrap "-1" to 2^64-1 silently).
std::uint64_t parse_seed(const std::string& text) {
    std::uint64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end)
        throw InputError(fmt::format("--seed: expected an integer from 0 to {}, got '{}'",
                                     std::numeric_limits<std::uint64_t>::max(),
                                     base::excerpt(text)));
    return v;
}

/// What `extends:` says in the fitted file: the preset name, or BASE's path relative to the
/// fitted file's directory (the loader resolves it from there).
std::string extends_value(const std::string& base, const std::string& out) {
    const bool path =
        base.find('/') != std::string::npos || base.ends_with(".yaml") || base.ends_with(".yml");
    if (!path)
        return base;
    const fs::path out_dir = fs::absolute(fs::path(out)).parent_path();
    return fs::relative(fs::absolute(fs::path(base)), out_dir).generic_string();
}

std::vector<calibrate::NamedMeasurements> read_all(const std::vector<std::string>& paths) {
    std::vector<calibrate::NamedMeasurements> out;
    for (const auto& p : paths)
        out.push_back({p, calibrate::read_measurements(p)});
    return out;
}

} // namespace

void add_calibrate_fit(CLI::App& calibrate, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<FitCommand>();
    auto* cmd = calibrate.add_subcommand(
        "fit", "Fit a hardware file's parameters to measurements (a file that extends BASE)");
    cmd->add_option("measurements", o->files, "Measurement files (JSON)")->required();
    cmd->add_option("--hardware", o->hardware, "BASE: the preset or hardware file to extend")
        ->required();
    cmd->add_option("--out,-o", o->out, "Fitted hardware file to write (YAML)")->required();
    cmd->add_option("--name", o->name, "name: of the fitted hardware (default: --out's stem)");
    cmd->add_option("--validate", o->holdout,
                    "Held-out measurement files: the uncertainty bands come from them (default: "
                    "the fitted points, in-sample)");
    cmd->add_option("--step-fields", o->step_fields,
                    "Framework fields the training steps may tune (default: all the steps "
                    "determine)")
        ->delimiter(',');
    cmd->add_option("--huber-delta", o->huber_delta,
                    "Huber threshold of the relative residual (collectives, GEMMs, copies)")
        ->capture_default_str();
    add_fidelity_option(*cmd, o->fidelity, "Step predictions: ");
    cmd->callback([o, io] {
        check_out(o->out, "--out");
        {
            // The fitted file over a measurement file or its own base would destroy an input.
            std::vector<std::string> inputs = o->files;
            inputs.insert(inputs.end(), o->holdout.begin(), o->holdout.end());
            if (o->hardware.find('/') != std::string::npos || o->hardware.ends_with(".yaml") ||
                o->hardware.ends_with(".yml"))
                inputs.push_back(o->hardware);
            refuse_output_over_input(o->out, "--out", inputs);
        }
        if (!(o->huber_delta > 0 && o->huber_delta < 10))
            throw InputError(
                fmt::format("--huber-delta: expected a positive fraction, got {}", o->huber_delta));
        const strategies::parallel::Platform base =
            strategies::parallel::load_platform(o->hardware);
        calibrate::FitOptions options;
        options.huber_delta = o->huber_delta;
        options.step_fields = o->step_fields;
        const strategies::parallel::StepOptions so = step_options_of(o->fidelity);
        options.step_fidelity = so.fidelity;
        options.step_flow_symmetry = so.flow_symmetry;
        options.holdout = read_all(o->holdout);
        const auto inputs = read_all(o->files);
        const calibrate::FitResult r = calibrate::fit_hardware(base, inputs, options);
        const std::string name = o->name.empty() ? fs::path(o->out).stem().string() : o->name;
        const std::string text =
            calibrate::format_fitted_hardware(r, extends_value(o->hardware, o->out), name);
        // The file must load as what was fitted before it is written.
        strategies::parallel::parse_platform_yaml(text, o->out);
        for (const auto& w : r.warnings)
            fmt::print(io.err, "warning: {}\n", w);
        for (const auto& part : r.parts) {
            fmt::print(io.out, "{:<12} {:>5} points  ", part.name, part.points);
            if (part.fitted)
                fmt::print(io.out, "mean |error| {} -> {}, max {} -> {} ({})\n",
                           base::percent(part.before.mean_abs, 2),
                           base::percent(part.after.mean_abs, 2),
                           base::percent(part.before.max_abs, 2),
                           base::percent(part.after.max_abs, 2), part.method);
            else
                fmt::print(io.out, "not fitted\n");
            for (const auto& n : part.notes)
                fmt::print(io.out, "  {}\n", n);
        }
        for (const auto& rec : r.records)
            fmt::print(io.out, "  {} = {}\n", rec.key, rec.value);
        const auto& u = r.uncertainty;
        auto band = [&](const char* kind, const strategies::parallel::ResidualBand& b) {
            if (b.present())
                fmt::print(io.out, "uncertainty  {:<12} p10 {}  p50 {}  p90 {}  ({} {} points)\n",
                           kind, base::signed_percent(b.p10), base::signed_percent(b.p50),
                           base::signed_percent(b.p90), b.points, u.basis);
        };
        band("collectives", u.collectives);
        for (const auto& rb : u.collective_bands)
            fmt::print(io.out, "  {:<9} {:>3} GPUs   p10 {}  p50 {}  p90 {}  ({} points{})\n",
                       strategies::parallel::to_string(rb.regime), rb.gpus,
                       base::signed_percent(rb.band.p10), base::signed_percent(rb.band.p50),
                       base::signed_percent(rb.band.p90), rb.band.points,
                       rb.band.points < strategies::parallel::kMinRegimeBandPoints
                           ? fmt::format(": under {}, not used alone",
                                         strategies::parallel::kMinRegimeBandPoints)
                           : "");
        band("gemms", u.gemms);
        band("steps", u.steps);
        write_file_atomically(o->out, text);
        fmt::print(io.out, "wrote {} ({} value{}, extends {})\n", o->out, r.records.size(),
                   r.records.size() == 1 ? "" : "s", extends_value(o->hardware, o->out));
    });
}

void add_calibrate_split(CLI::App& calibrate, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<SplitCommand>();
    auto* cmd = calibrate.add_subcommand(
        "split", "Split a measurement file into a fitting and a held-out set, reproducibly");
    cmd->add_option("measurements", o->file, "Measurement file (JSON)")->required();
    cmd->add_option("--fraction", o->fraction, "Share of each kind's points chosen, in (0, 1)")
        ->required();
    cmd->add_option("--seed", o->seed, "Seed of the choice (splitmix64 of seed + index)")
        ->required();
    cmd->add_option("--out,-o", o->out, "Measurement file of the chosen points")->required();
    cmd->add_option("--rest", o->rest, "Measurement file of the other points")->required();
    cmd->add_flag("--by-shape", o->by_shape,
                  "Hold out whole shapes (a GEMM's m x n x k, a trace's configuration), not "
                  "points: --fraction of the shapes are chosen");
    cmd->callback([o, io] {
        const std::uint64_t seed = parse_seed(o->seed);
        check_out(o->out, "--out");
        check_out(o->rest, "--rest");
        // Either output over the input would destroy the points not yet written; one output
        // over the other would lose half of them.
        refuse_output_over_input(o->out, "--out", {o->file});
        refuse_output_over_input(o->rest, "--rest", {o->file});
        if (same_file(o->out, o->rest))
            throw InputError(fmt::format("--out {} and --rest {}: the same file; the second would "
                                         "overwrite the first: give two files",
                                         o->out, o->rest));
        const auto file = calibrate::read_measurements(o->file);
        const auto s = o->by_shape ? calibrate::split_measurements_by_shape(file, o->fraction, seed)
                                   : calibrate::split_measurements(file, o->fraction, seed);
        const std::string chosen = calibrate::format_measurements(s.chosen, o->out);
        const std::string rest = calibrate::format_measurements(s.rest, o->rest);
        write_file_atomically(o->out, chosen);
        write_file_atomically(o->rest, rest);
        fmt::print(io.out, "wrote {}: {}\nwrote {}: {}\n", o->out, describe_measurements(s.chosen),
                   o->rest, describe_measurements(s.rest));
    });
}

void add_calibrate_fit_kernels(CLI::App& calibrate, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<FitKernelsCommand>();
    auto* cmd = calibrate.add_subcommand(
        "fit-kernels", "Fit each traced kernel class's cost on one set of shapes and validate it "
                       "on held-out shapes (profiler traces imported by calibrate import)");
    cmd->add_option("fit", o->fit, "Measurement file to fit on (calibrate split --by-shape)")
        ->required();
    cmd->add_option("--holdout", o->holdout, "Measurement file of the held-out shapes")->required();
    cmd->add_option("--hardware", o->hardware, "The preset or hardware file the traces ran on")
        ->required();
    cmd->callback([o, io] {
        const auto platform = strategies::parallel::load_platform(o->hardware);
        const auto fit_file = calibrate::read_measurements(o->fit);
        const auto hold_file = calibrate::read_measurements(o->holdout);
        for (const auto& [file, path] :
             {std::pair{&fit_file, o->fit}, std::pair{&hold_file, o->holdout}})
            if (auto w = calibrate::check_device(platform.cluster, *file, path))
                fmt::print(io.err, "warning: {}\n", *w);
        const auto fit = calibrate::fit_kernel_classes(platform, fit_file, o->fit);
        const auto v = calibrate::validate_kernel_classes(platform, fit, hold_file, o->holdout);
        fmt::print(io.out, "fit on {}, validated on {} (held-out shapes), {}\n\n", o->fit,
                   o->holdout, o->hardware);
        fmt::print(io.out, "{:<12}{:>8}{:>10}  {:>12}{:>12}{:>10}{:>10}\n", "class", "groups",
                   "factor", "held-out", "predicted", "error", "unfitted");
        for (const auto& c : fit.classes) {
            if (!c.fitted)
                continue;
            const auto it = std::find_if(v.classes.begin(), v.classes.end(), [&](const auto& x) {
                return x.name == calibrate::to_string(c.kernel_class);
            });
            if (it == v.classes.end()) {
                fmt::print(io.out, "{:<12}{:>8}{:>10.3f}  {:>12}\n",
                           calibrate::to_string(c.kernel_class), c.groups, c.factor, "-");
                continue;
            }
            fmt::print(io.out, "{:<12}{:>8}{:>10.3f}  {:>9.3f} ms{:>9.3f} ms{:>10}{:>10}\n",
                       calibrate::to_string(c.kernel_class), c.groups, c.factor,
                       it->measured_s * 1e3, it->predicted_s * 1e3,
                       base::signed_percent(it->error()),
                       base::signed_percent(it->error_unfitted()));
        }
        fmt::print(io.out,
                   "\nframework.gemm_efficiency {:.4f}, framework.memory_efficiency {:.4f} "
                   "(from the factors)\n",
                   fit.gemm_efficiency, fit.memory_efficiency);
        if (!v.steps.empty()) {
            fmt::print(io.out, "\n{:<48}{:>12}{:>12}{:>10}{:>10}\n", "held-out step", "measured",
                       "predicted", "error", "unfitted");
            for (const auto& s : v.steps)
                fmt::print(io.out, "{:<48}{:>9.3f} ms{:>9.3f} ms{:>10}{:>10}\n",
                           s.name.size() > 47 ? s.name.substr(0, 47) : s.name, s.measured_s * 1e3,
                           s.predicted_s * 1e3, base::signed_percent(s.error()),
                           base::signed_percent(s.error_unfitted()));
        }
        for (const auto& n : fit.notes)
            fmt::print(io.out, "note: {}\n", n);
        for (const auto& n : v.notes)
            fmt::print(io.out, "note: {}\n", n);
        for (const auto& c : fit.classes)
            if (c.fitted)
                fmt::print(io.out, "origin: {} factor {:.4f} from {}\n",
                           calibrate::to_string(c.kernel_class), c.factor, c.origin);
    });
}

} // namespace clustersim::app
