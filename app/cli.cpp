#include "app/cli.h"

#include "app/version.h"
#include "base/error.h"
#include "base/text.h"
#include "config/input_record.h"
#include "hardware/memory_limit.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <exception>
#include <new>
#include <ostream>
#include <string>
#include <vector>

namespace clustersim::app {

int run_cli(int argc, const char* const* argv, Io io) {
    CLI::App app{"clustersim: a discrete-event simulator of GPU clusters and parallel training",
                 "clustersim"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("clustersim ") + std::string(kVersion));
    int exit_code = kOk;
    register_hardware(app, io, exit_code);
    register_transfer(app, io, exit_code);
    register_collective(app, io, exit_code);
    register_demo(app, io, exit_code);
    register_report(app, io, exit_code);
    register_run(app, io, exit_code);
    register_compare(app, io, exit_code);
    register_sweep(app, io, exit_code);
    register_scale(app, io, exit_code);
    register_compare_hardware(app, io, exit_code);
    register_bubble(app, io, exit_code);
    register_calibrate(app, io, exit_code);
    register_validate(app, io, exit_code);
    register_list(app, io, exit_code);
    register_init(app, io, exit_code);

    // CLI11 reports a mistyped command as "A subcommand is required"; name it instead.
    if (argc > 1 && argv[1][0] != '-') {
        const std::string given = argv[1];
        std::vector<std::string> names;
        bool known = false;
        for (const CLI::App* sub : app.get_subcommands({})) {
            names.push_back(sub->get_name());
            known = known || sub->check_name(given);
        }
        if (!known) {
            fmt::print(io.err, "clustersim: error: unknown command '{}' (commands: {})\n",
                       base::excerpt(given), base::join(names, ", "));
            fmt::print(io.err, "Run with --help for usage.\n");
            return kUsage;
        }
    }

    try {
        // The files this command reads, so that none of its outputs replaces one.
        const config::InputRecord inputs;
        app.parse(argc, argv);
        return exit_code;
    } catch (const CLI::CallForHelp&) {
        io.out << app.help();
        return kOk;
    } catch (const CLI::CallForAllHelp&) {
        io.out << app.help("", CLI::AppFormatMode::All);
        return kOk;
    } catch (const CLI::CallForVersion& e) {
        io.out << e.what() << "\n";
        return kOk;
    } catch (const CLI::ParseError& e) {
        fmt::print(io.err, "clustersim: error: {}\n", e.what());
        fmt::print(io.err, "Run with --help for usage.\n");
        return kUsage;
    } catch (const InputError& e) {
        fmt::print(io.err, "clustersim: error: {}\n", e.what());
        return kUsage;
    } catch (const DeviceUnavailable& e) {
        fmt::print(io.err, "clustersim: error: {}\n", e.what());
        return kNoDevice;
    } catch (const std::bad_alloc&) {
        // What the size checks before a build do not count (a flow run's flows, the sweep's
        // rows) can still exhaust a limit: say which limit, and the ways out, as an input that
        // is too large (exit 2), not an internal error. Outputs are written whole or not at all.
        const hardware::MemoryLimit limit = hardware::memory_limit();
        fmt::print(io.err,
                   "clustersim: error: out of memory: this run needs more than this process may "
                   "use ({}); simulate fewer GPUs (data-parallel replicas repeat), use "
                   "--fidelity analytic, or raise the limit\n",
                   limit.which.empty() ? "its memory limit" : limit.which);
        return kUsage;
    } catch (const std::exception& e) {
        fmt::print(io.err, "clustersim: internal error: {}\n", e.what());
        return kCheckFailed;
    }
}

} // namespace clustersim::app
