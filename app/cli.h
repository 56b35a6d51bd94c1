#pragma once
/// \file
/// The `clustersim` command line. Each subcommand lives in its own file (cmd_*.cpp) and
/// registers itself on the CLI11 app; `run_cli` is the only place that maps errors to exit
/// codes, and tests call it in-process.
///
/// Exit codes: 0 success; 1 a check failed (validate above its limit) or an internal error;
/// 2 bad usage or bad input; 3 a device (GPU) was needed and none was found.

#include <iosfwd>

namespace CLI {
class App;
}

namespace clustersim::app {

/// Where a command prints. Commands never touch std::cout directly, so tests can capture them.
struct Io {
    std::ostream& out;
    std::ostream& err;
};

/// Exit codes of clustersim.
enum ExitCode : int { kOk = 0, kCheckFailed = 1, kUsage = 2, kNoDevice = 3 };

/// Runs the command line; returns the exit code.
int run_cli(int argc, const char* const* argv, Io io);

// Registration of each subcommand; each sets `exit_code` when its check fails.
void register_hardware(CLI::App& app, Io io, int& exit_code);
void register_transfer(CLI::App& app, Io io, int& exit_code);
void register_collective(CLI::App& app, Io io, int& exit_code);
void register_demo(CLI::App& app, Io io, int& exit_code);
void register_report(CLI::App& app, Io io, int& exit_code);
void register_run(CLI::App& app, Io io, int& exit_code);
void register_compare(CLI::App& app, Io io, int& exit_code);
void register_sweep(CLI::App& app, Io io, int& exit_code);
void register_scale(CLI::App& app, Io io, int& exit_code);
void register_compare_hardware(CLI::App& app, Io io, int& exit_code);
void register_bubble(CLI::App& app, Io io, int& exit_code);
void register_calibrate(CLI::App& app, Io io, int& exit_code);
void register_validate(CLI::App& app, Io io, int& exit_code);
void register_list(CLI::App& app, Io io, int& exit_code);
void register_init(CLI::App& app, Io io, int& exit_code);

} // namespace clustersim::app
