// clustersim init: a commented experiment file with every key, its unit and its default, to
// start from, written from the key tables (app/config_docs.h); `--docs` prints the reference
// pages of the experiment and hardware files from the same tables. A test loads the template
// and checks it names every key of the tables.
#include "app/cli.h"
#include "app/config_docs.h"
#include "app/output.h"
#include "base/error.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

namespace clustersim::app {

void register_init(CLI::App& app, Io io, int& /*exit_code*/) {
    auto* cmd = app.add_subcommand(
        "init", "Write a commented experiment file with every key, its unit and default");
    auto path = std::make_shared<std::string>();
    auto force = std::make_shared<bool>(false);
    cmd->add_option("--out,-o", *path, "Write the template to this file (default: print it)");
    auto docs = std::make_shared<std::string>();
    // Hidden: what scripts/gen-config-docs.sh writes to docs/ and CI compares.
    cmd->add_option("--docs", *docs,
                    "Print docs/experiments.md, docs/hardware-files.md or the field tables of "
                    "docs/measurements.md")
        ->check(CLI::IsMember({"experiments", "hardware", "measurements"}))
        ->group("");
    cmd->add_flag("--force", *force, "Replace the --out file when it exists");
    cmd->callback([io, path, docs, force] {
        const std::string text = docs->empty()             ? experiment_template()
                                 : *docs == "experiments"  ? experiments_markdown()
                                 : *docs == "measurements" ? measurement_fields_markdown()
                                                           : hardware_markdown();
        if (path->empty()) {
            io.out << text;
            return;
        }
        // The file is likely the user's experiment, edited since the last init.
        std::error_code ec;
        if (!*force && std::filesystem::is_regular_file(*path, ec))
            throw InputError("--out " + *path +
                             ": the file exists; pass --force to replace it with the template");
        write_file_atomically(*path, text);
    });
}

} // namespace clustersim::app
