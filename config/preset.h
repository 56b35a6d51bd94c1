#pragma once
/// \file
/// Presets and `extends:` layering, one resolver for every kind of config file.
///
/// A preset is `configs/<folder>/<name>.yaml` (hardware, models, experiments). Wherever a file
/// or an experiment names one, it may give a path instead; and a file may start from another
/// with `extends: NAME_OR_PATH`, then change only the keys it names. `load_layered` walks that
/// chain for any value type, so the hardware and model loaders (and any later kind) share one
/// rule for names, paths, depth and the errors they give.

#include "config/yaml_map.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace clustersim::config {

/// The configs/ directory: $CLUSTERSIM_CONFIG_DIR if set; else, for an installed binary,
/// PREFIX/share/clustersim/configs beside it; else the source tree's (a build directory).
std::string config_dir();

/// One kind of preset: the folder under configs/ and how errors name it.
struct PresetKind {
    std::string folder; ///< "hardware", "models"
    std::string noun;   ///< "hardware", "model": "unknown model preset 'x'"
    std::string hint;   ///< what else the user may give: "or give a path to a YAML file"
};

/// Names of the presets of `kind`, sorted.
std::vector<std::string> preset_names(const PresetKind& kind);

/// The file a name or path stands for. A value with a '/' or a .yaml/.yml ending is a path;
/// a relative one is taken relative to `relative_to` (the including file's folder; empty for a
/// path given on the command line, which is relative to the working directory).
/// Anything else names a preset. Throws InputError listing the presets when none matches.
std::filesystem::path resolve_preset(const PresetKind& kind, const std::string& name_or_path,
                                     const std::filesystem::path& relative_to = {});

/// `extends:` chains deeper than this are refused (a cycle, most likely).
inline constexpr int kMaxExtendsDepth = 8;

/// Reads one layer into `value`: `value` holds what the layers below gave (default-constructed
/// at the bottom) and `extended` says whether there were any. The callback reads the keys it
/// knows from `root` (`extends` is already read) and calls `root.finish()`.
template <class T>
using LayerReader = std::function<void(YamlMap& root, T& value, bool extended)>;

namespace detail {
/// The layer below `root`, when it has `extends:`: its file, resolved; errors re-raised at the
/// `extends` key of `root`.
template <class T>
T load_layered_file(const PresetKind& kind, const std::filesystem::path& path,
                    const LayerReader<T>& read, int depth);
} // namespace detail

/// Loads `doc` (read from `file`) as the top of an `extends:` chain.
template <class T>
T load_layered(const PresetKind& kind, const YAML::Node& doc, const std::string& file,
               const LayerReader<T>& read, int depth = 0) {
    YamlMap root(doc, file);
    T value{};
    bool extended = false;
    if (root.has("extends")) {
        if (depth >= kMaxExtendsDepth)
            root.fail("extends", "too many levels of 'extends' (a cycle?)");
        const std::string base = root.str("extends");
        try {
            value = detail::load_layered_file<T>(
                kind, resolve_preset(kind, base, std::filesystem::path(file).parent_path()), read,
                depth + 1);
        } catch (const InputError& e) {
            root.fail("extends", std::string("cannot load '") + base + "': " + e.what());
        }
        extended = true;
    }
    read(root, value, extended);
    return value;
}

/// Loads the file at `path` as the top of an `extends:` chain.
template <class T>
T load_layered_file(const PresetKind& kind, const std::filesystem::path& path,
                    const LayerReader<T>& read) {
    return detail::load_layered_file<T>(kind, path, read, 0);
}

namespace detail {
template <class T>
T load_layered_file(const PresetKind& kind, const std::filesystem::path& path,
                    const LayerReader<T>& read, int depth) {
    return load_layered<T>(kind, load_yaml_file(path.string()), path.string(), read, depth);
}
} // namespace detail

} // namespace clustersim::config
