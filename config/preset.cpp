#include "config/preset.h"

#include "base/error.h"
#include "base/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#ifndef CLUSTERSIM_DEFAULT_CONFIG_DIR
#define CLUSTERSIM_DEFAULT_CONFIG_DIR "configs"
#endif

namespace clustersim::config {

namespace fs = std::filesystem;

namespace {

/// share/clustersim/configs beside an installed binary (`cmake --install` puts the binary in
/// PREFIX/bin and the presets in PREFIX/share/clustersim/configs); empty when not installed.
std::string installed_config_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        return {};
    const fs::path dir = exe.parent_path().parent_path() / "share" / "clustersim" / "configs";
    return fs::is_directory(dir / "hardware", ec) ? dir.string() : std::string();
}

} // namespace

std::string config_dir() {
    if (const char* env = std::getenv("CLUSTERSIM_CONFIG_DIR"); env && *env)
        return env;
    static const std::string installed = installed_config_dir();
    return installed.empty() ? CLUSTERSIM_DEFAULT_CONFIG_DIR : installed;
}

namespace {
/// The presets in `folder` (none when it does not exist).
std::vector<std::string> names_in(const fs::path& folder) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
        // Regular files only (symbolic links to them too): opening a FIFO named x.yaml would
        // wait for a writer forever, and a device or a folder is no preset.
        std::error_code type_ec;
        if (entry.path().extension() == ".yaml" && entry.is_regular_file(type_ec))
            names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}
} // namespace

std::vector<std::string> preset_names(const PresetKind& kind) {
    std::error_code ec;
    const fs::path folder = fs::path(config_dir()) / kind.folder;
    if (!fs::is_directory(folder, ec)) {
        const char* env = std::getenv("CLUSTERSIM_CONFIG_DIR");
        throw InputError(fmt::format("{}: no such folder, so no {} presets{}", folder.string(),
                                     kind.noun,
                                     env && *env ? " (CLUSTERSIM_CONFIG_DIR names a folder that "
                                                   "should hold hardware/, models/ and "
                                                   "experiments/)"
                                                 : ""));
    }
    return names_in(folder);
}

fs::path resolve_preset(const PresetKind& kind, const std::string& name_or_path,
                        const fs::path& relative_to) {
    const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                                 name_or_path.ends_with(".yaml") || name_or_path.ends_with(".yml");
    if (looks_like_path) {
        fs::path p(name_or_path);
        // Relative to the file that names it, never to wherever the command runs: the same
        // file must mean the same hardware from any directory.
        if (p.is_relative() && !relative_to.empty())
            p = relative_to / p;
        // The error_code form: a name the file system refuses (too long, say) is a file that
        // is not there, not an exception escaping as a crash.
        std::error_code ec;
        if (!fs::exists(p, ec))
            throw InputError(name_or_path + ": no such " + kind.noun + " file");
        return p;
    }
    const fs::path preset = fs::path(config_dir()) / kind.folder / (name_or_path + ".yaml");
    std::error_code ec;
    if (!fs::is_regular_file(preset, ec))
        throw InputError(
            "unknown " + kind.noun + " preset '" + base::excerpt(name_or_path) +
            "' (presets: " + base::join(names_in(fs::path(config_dir()) / kind.folder), ", ") +
            "; " + kind.hint + ")");
    return preset;
}

} // namespace clustersim::config
