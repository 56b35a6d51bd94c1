// clustersim calibrate run|import: measurements of real hardware, in the format of
// docs/measurements.md.
#include "app/cmd_calibrate.h"

#include "app/output.h"
#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "calibrate/import.h"
#include "calibrate/measurements.h"
#include "calibrate/runner.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <memory>

namespace clustersim::app {

std::string describe_measurements(const calibrate::MeasurementFile& file) {
    std::vector<std::string> parts;
    auto add = [&](std::size_t n, std::string_view one, std::string_view many) {
        if (n > 0)
            parts.push_back(fmt::format("{} {}", n, n == 1 ? one : many));
    };
    add(file.collectives.size(), "collective", "collectives");
    add(file.gemms.size(), "GEMM", "GEMMs");
    add(file.copies.size(), "copy", "copies");
    add(file.p2p.size(), "point-to-point transfer", "point-to-point transfers");
    add(file.launches.size(), "launch overhead", "launch overheads");
    add(file.steps.size(), "training step", "training steps");
    add(file.kernels.size(), "kernel group", "kernel groups");
    add(file.trace_steps.size(), "traced step", "traced steps");
    const auto& e = file.environment;
    return fmt::format("{} on {}{}", parts.empty() ? "no measurements" : base::join(parts, ", "),
                       e.device,
                       e.device_count > 0 ? fmt::format(" ({} GPU{})", e.device_count,
                                                        e.device_count == 1 ? "" : "s")
                                          : "");
}

namespace {

/// The directory of --out must exist before anything long runs.
void check_output_path(const std::string& out) {
    namespace fs = std::filesystem;
    if (out.empty())
        throw InputError("--out: expected a file name");
    const fs::path p(out);
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (!fs::is_directory(dir))
        throw InputError("--out: directory '" + dir.string() + "' does not exist");
    if (fs::is_directory(p))
        throw InputError("--out: '" + out + "' is a directory");
}

void print_warnings(const Io& io, const std::vector<std::string>& warnings) {
    for (const auto& w : warnings)
        fmt::print(io.err, "warning: {}\n", w);
}

std::int64_t positive_size(const std::string& text, std::string_view flag) {
    const std::int64_t v = base::parse_bytes(text);
    if (v <= 0)
        throw InputError(fmt::format("{}: expected a positive size, got '{}'", flag, text));
    return v;
}

struct RunCommand {
    std::string out;
    bool quick = false;
    int gpus = 0;
    std::vector<std::string> only;
    std::string min_bytes;
    std::string max_bytes;
    int factor = 0;
    std::vector<std::string> gemm;
    std::vector<std::string> gemm_dtypes;
};

struct ImportCommand {
    std::vector<std::string> files;
    std::string out;
    std::string op;
    int gpus = 0;
    std::string device;
    std::string column;
    std::string dtype;
    bool in_place = false;
    std::vector<std::string> settings;
};

} // namespace

void add_calibrate_run(CLI::App& calibrate, Io io, int& exit_code) {
    auto o = std::make_shared<RunCommand>();
    auto* cmd = calibrate.add_subcommand(
        "run", "Measure this machine's GPUs: NCCL collectives, GEMMs, copies, launch overhead");
    cmd->add_option("--out,-o", o->out, "Measurement file to write (JSON)")->required();
    cmd->add_flag("--quick", o->quick, "The short suite (under 3 minutes on one GPU)");
    cmd->add_option("--gpus", o->gpus, "Use GPUs 0..N-1 (default: every visible GPU)");
    cmd->add_option("--only", o->only, "Only these parts: collectives, p2p, gemm, copy, launch");
    cmd->add_option("--min-bytes,-b", o->min_bytes, "Smallest collective size (default 8)");
    cmd->add_option("--max-bytes,-e", o->max_bytes,
                    "Largest collective size (default 8G; 1G with --quick)");
    cmd->add_option("--factor,-f", o->factor, "Size multiplier of the sweep (default 2)");
    cmd->add_option("--gemm", o->gemm,
                    "Also measure this GEMM shape, MxNxK[:LAYOUT] (layout TN by default)");
    cmd->add_option("--gemm-dtype", o->gemm_dtypes,
                    "GEMM dtypes (default: fp32 tf32 fp16 bf16 fp8, as the GPU supports)");
    cmd->callback([o, io, &exit_code] {
        calibrate::RunOptions options =
            o->quick ? calibrate::quick_run_options() : calibrate::RunOptions{};
        options.gpus = o->gpus;
        if (o->gpus < 0)
            throw InputError(fmt::format("--gpus: expected a positive count, got {}", o->gpus));
        options.only = o->only;
        if (!o->min_bytes.empty())
            options.min_bytes = positive_size(o->min_bytes, "--min-bytes");
        if (!o->max_bytes.empty())
            options.max_bytes = positive_size(o->max_bytes, "--max-bytes");
        if (o->factor != 0)
            options.factor = o->factor;
        for (const auto& g : o->gemm)
            options.gemm_shapes.push_back(calibrate::parse_gemm_shape(g, "--gemm"));
        for (const auto& d : o->gemm_dtypes) {
            const auto dtype = hardware::parse_dtype(d);
            if (!dtype)
                throw InputError(fmt::format("--gemm-dtype: unknown dtype '{}' (fp32, tf32, fp16, "
                                             "bf16, fp8)",
                                             d));
            options.gemm_dtypes.push_back(*dtype);
        }
        check_output_path(o->out);

        calibrate::RunResult result;
        try {
            result = calibrate::run_calibration(
                options, [&io](const std::string& line) { fmt::print(io.err, "{}\n", line); });
        } catch (const calibrate::DeviceFailure& e) {
            // A call failed on a GPU that was there: not bad input, not a missing device.
            fmt::print(io.err, "clustersim: error: measuring failed: {}; nothing was written\n",
                       e.what());
            exit_code = kCheckFailed;
            return;
        }
        print_warnings(io, result.warnings);
        write_file_atomically(o->out, calibrate::format_measurements(result.measurements, o->out));
        fmt::print(io.out, "wrote {}: {}\n", o->out, describe_measurements(result.measurements));
    });
}

void add_calibrate_import(CLI::App& calibrate, Io io, int& /*exit_code*/) {
    auto o = std::make_shared<ImportCommand>();
    auto* cmd = calibrate.add_subcommand(
        "import", "Import nccl-tests logs, CSV tables, PyTorch profiler traces and measurement "
                  "files into one file");
    cmd->add_option("files", o->files,
                    "nccl-tests logs, .csv tables, PyTorch profiler traces (.json, .json.gz), "
                    ".json measurement files")
        ->required();
    cmd->add_option("--out,-o", o->out, "Measurement file to write (JSON)")->required();
    cmd->add_option("--op", o->op, "The collective, when neither the log nor the file name says");
    cmd->add_option("--gpus", o->gpus, "GPU count, when neither the log nor the file name says");
    cmd->add_option("--device", o->device, "The GPU's name, when the file does not say");
    cmd->add_option("--column", o->column,
                    "Which DEVICE_busbw column of a table with one per device (e.g. h100)");
    cmd->add_option("--dtype", o->dtype, "Element type of tables without a type column (fp32)");
    cmd->add_flag("--in-place", o->in_place,
                  "A table with one set of columns was measured in place");
    cmd->add_option("--set", o->settings,
                    "SECTION.KEY=VALUE shared by every imported training step that its file does "
                    "not say (model.vocab=50257, parallel.recompute=full); for a profiler "
                    "trace, the model it ran (model.kind=transformer, model.hidden=...)");
    cmd->callback([o, io] {
        calibrate::ImportOptions options;
        if (!o->op.empty()) {
            options.op = strategies::collectives::parse_op(o->op);
            if (!options.op)
                throw InputError(fmt::format("--op: unknown collective '{}' (valid: {})", o->op,
                                             strategies::collectives::op_names()));
        }
        if (o->gpus < 0)
            throw InputError(fmt::format("--gpus: expected a positive count, got {}", o->gpus));
        if (o->gpus > 0)
            options.gpus = o->gpus;
        options.device = o->device;
        options.column = o->column;
        if (!o->dtype.empty()) {
            options.dtype = hardware::parse_dtype(o->dtype);
            if (!options.dtype)
                throw InputError(fmt::format("--dtype: unknown dtype '{}' (fp64, fp32, fp16, "
                                             "bf16, fp8)",
                                             o->dtype));
        }
        options.in_place = o->in_place;
        options.step_settings = o->settings;
        {
            // Check every --set before reading any file, so a typo is reported as the flag's.
            calibrate::StepMeasurement probe;
            for (const auto& s : o->settings)
                calibrate::apply_setting(probe, s, "--set");
        }
        check_output_path(o->out);

        calibrate::ImportResult result = calibrate::import_files(o->files, options);
        if (!o->settings.empty() && result.measurements.steps.empty())
            result.warnings.push_back("--set applies to training steps, and none were imported");
        print_warnings(io, result.warnings);
        if (result.measurements.environment.tool.empty())
            result.measurements.environment.tool = "clustersim calibrate import";
        write_file_atomically(o->out, calibrate::format_measurements(result.measurements, o->out));
        fmt::print(io.out, "wrote {}: {}\n", o->out, describe_measurements(result.measurements));
    });
}

void register_calibrate(CLI::App& app, Io io, int& exit_code) {
    auto* cmd = app.add_subcommand("calibrate", "Measure real hardware, or import measurements");
    cmd->require_subcommand(1);
    add_calibrate_run(*cmd, io, exit_code);
    add_calibrate_import(*cmd, io, exit_code);
    add_calibrate_fit(*cmd, io, exit_code);
    add_calibrate_split(*cmd, io, exit_code);
    add_calibrate_fit_kernels(*cmd, io, exit_code);
}

} // namespace clustersim::app
