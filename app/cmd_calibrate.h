#pragma once
/// \file
/// The `clustersim calibrate` command and its subcommands. `register_calibrate` (declared in
/// app/cli.h) creates `calibrate` and calls one `add_calibrate_*` per subcommand; a new
/// subcommand (`fit`) is a function declared here, implemented in its own file, and one line
/// in register_calibrate.

#include "app/cli.h"

#include <string>

namespace clustersim::calibrate {
struct MeasurementFile;
}

namespace clustersim::app {

/// `calibrate run --out M.json [--quick] [--gpus N] ...`: measure this machine's GPUs.
void add_calibrate_run(CLI::App& calibrate, Io io, int& exit_code);
/// `calibrate import FILE... --out M.json [--op OP] [--gpus N] ...`: existing measurements.
void add_calibrate_import(CLI::App& calibrate, Io io, int& exit_code);

/// `calibrate fit M.json... --hardware BASE --out FITTED.yaml`: a fitted hardware file
/// (cmd_calibrate_fit.cpp).
void add_calibrate_fit(CLI::App& calibrate, Io io, int& exit_code);
/// `calibrate split M.json --fraction F --seed S --out A.json --rest B.json`.
void add_calibrate_split(CLI::App& calibrate, Io io, int& exit_code);
void add_calibrate_fit_kernels(CLI::App& calibrate, Io io, int& exit_code);

/// "1440 training steps, 2048 collectives" and the device: what a measurement file holds.
std::string describe_measurements(const calibrate::MeasurementFile& file);

} // namespace clustersim::app
