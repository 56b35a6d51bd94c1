// clustersim list: the presets a user can name (hardware, models, experiments), one line each.
#include "app/cli.h"
#include "base/error.h"
#include "config/preset.h"
#include "config/yaml_map.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace clustersim::app {

namespace {

namespace fs = std::filesystem;

/// The one line that says what a preset is: its `description:`, else the first comment line
/// (experiments open with a comment), else nothing.
std::string describe(const fs::path& file) {
    try {
        const YAML::Node doc = config::load_yaml_file(file.string());
        if (doc.IsMap() && doc["description"] && doc["description"].IsScalar())
            return doc["description"].Scalar();
    } catch (const InputError&) {
        return "(cannot be read: run `clustersim run` or `hardware show` on it for the error)";
    }
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("# ", 0) == 0)
            return line.substr(2);
        if (!line.empty() && line[0] != '#')
            break;
    }
    return "";
}

void list_kind(std::ostream& out, const std::string& title, const std::string& folder,
               const std::string& use) {
    const config::PresetKind kind{folder, folder, ""};
    const std::vector<std::string> names = config::preset_names(kind);
    fmt::print(out, "{} ({}, {}):\n", title, (fs::path(config::config_dir()) / folder).string(),
               use);
    if (names.empty())
        fmt::print(out, "  (none)\n");
    std::size_t width = 0;
    for (const auto& n : names)
        width = std::max(width, n.size());
    for (const auto& n : names) {
        const std::string what = describe(fs::path(config::config_dir()) / folder / (n + ".yaml"));
        fmt::print(out, "  {:<{}}  {}\n", n, width, what);
    }
}

} // namespace

void register_list(CLI::App& app, Io io, int& /*exit_code*/) {
    auto* cmd = app.add_subcommand(
        "list", "List the hardware, model and experiment presets, with one line each");
    cmd->callback([io] {
        list_kind(io.out, "Hardware", "hardware", "--hardware NAME, or hardware: NAME");
        io.out << "\n";
        list_kind(io.out, "Models", "models", "model: NAME in an experiment");
        io.out << "\n";
        list_kind(io.out, "Experiments", "experiments",
                  "clustersim run " + config::config_dir() + "/experiments/NAME.yaml");
        io.out << "\nPresets are read from $CLUSTERSIM_CONFIG_DIR when it is set.\n";
    });
}

} // namespace clustersim::app
