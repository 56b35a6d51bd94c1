// clustersim init: a commented experiment file with every key, its unit and its default, to
// start from, written from the key tables (app/config_docs.h); `--docs` prints the reference
// pages of the experiment and hardware files from the same tables. A test loads the template
// and checks it names every key of the tables.
#include "app/cli.h"
#include "app/config_docs.h"
#include "app/output.h"

#include <CLI/CLI.hpp>

#include <string>

namespace clustersim::app {

void register_init(CLI::App& app, Io io, int& /*exit_code*/) {
    auto* cmd = app.add_subcommand(
        "init", "Write a commented experiment file with every key, its unit and default");
    auto path = std::make_shared<std::string>();
    cmd->add_option("--out,-o", *path, "Write the template to this file (default: print it)");
    auto docs = std::make_shared<std::string>();
    // Hidden: what scripts/gen-config-docs.sh writes to docs/ and CI compares.
    cmd->add_option("--docs", *docs, "Print docs/experiments.md or docs/hardware-files.md")
        ->check(CLI::IsMember({"experiments", "hardware"}))
        ->group("");
    cmd->callback([io, path, docs] {
        const std::string text = docs->empty()            ? experiment_template()
                                 : *docs == "experiments" ? experiments_markdown()
                                                          : hardware_markdown();
        if (path->empty())
            io.out << text;
        else
            write_file_atomically(*path, text);
    });
}

} // namespace clustersim::app
