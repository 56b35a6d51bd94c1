#pragma once
/// \file
/// Reading YAML config files into value types with errors a person can act on.
///
/// Every loader reads mappings through `YamlMap`: each getter names the key it reads, converts
/// the value (units through base/units.h) and, when something is wrong, throws an InputError of
/// the form `FILE:LINE:COL: key 'gpu.hbm.bandwidth': expected a bandwidth like '900GB/s', got
/// 'fast'`. `finish()` then refuses any key that no getter asked for, listing the valid ones.
/// yaml-cpp appears only in loader files; model code never sees a YAML node.

#include "base/error.h"
#include "sim/time.h"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::config {

/// The structured form of a mark (1-based), for InputError::where().
SourceLocation location(const std::string& file, const YAML::Mark& mark, std::string key = "");

/// "FILE:LINE:COL" from a yaml-cpp mark (which is 0-based).
std::string format_mark(const std::string& file, const YAML::Mark& mark);

/// Config files larger than this are refused before parsing (a device, a log given by mistake).
inline constexpr std::size_t kMaxYamlFileBytes = std::size_t{16} << 20;

/// Parses a YAML file; a syntax error becomes an InputError with the file, line and column, as
/// do a directory, an unreadable file and one over kMaxYamlFileBytes.
YAML::Node load_yaml_file(const std::string& path);

/// Parses YAML text; a syntax error becomes an InputError naming `file`, line and column.
YAML::Node parse_yaml(const std::string& text, const std::string& file);

class YamlMap {
public:
    /// Wraps `node`, which must be a mapping with no key given twice (else InputError naming
    /// `path`).
    YamlMap(YAML::Node node, std::string file, std::string path = "");

    const std::string& file() const { return *file_; }
    /// Dotted key path of this mapping ("" at the root, "gpu.hbm" below).
    const std::string& path() const { return path_; }
    const YAML::Node& node() const { return node_; }

    bool has(std::string_view key);

    std::string str(std::string_view key);
    std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max);
    double number(std::string_view key, double min = -1e300);
    bool boolean(std::string_view key);
    std::int64_t bytes(std::string_view key, bool positive = true);
    double bandwidth(std::string_view key);
    sim::Time time(std::string_view key);
    double flop_rate(std::string_view key, bool positive = true);
    /// One of `choices`.
    std::string choice(std::string_view key, const std::vector<std::string>& choices);
    YamlMap map(std::string_view key);
    /// The raw node of a key (a sequence, say); the caller reports errors with `fail_at`.
    YAML::Node raw(std::string_view key);

    // Override-style reading: each sets `out` only when the key is present, so a file that
    // extends another changes just the keys it names.
    void read(std::string_view key, std::string& out);
    void read(std::string_view key, int& out, int min, int max);
    void read(std::string_view key, bool& out);
    void read_number(std::string_view key, double& out, double min = -1e300);
    void read_bytes(std::string_view key, std::int64_t& out, bool positive = true);
    void read_bandwidth(std::string_view key, double& out);
    void read_time(std::string_view key, sim::Time& out);
    void read_flop_rate(std::string_view key, double& out, bool positive = true);

    /// Refuses keys that no getter asked for.
    void finish();

    /// Throws an InputError at `key` (at this mapping's mark if the key is absent).
    [[noreturn]] void fail(std::string_view key, const std::string& what) const;
    /// Throws an InputError at an arbitrary node below this mapping.
    [[noreturn]] void fail_at(const YAML::Node& at, std::string_view key,
                              const std::string& what) const;
    /// Throws for a required key that is absent.
    [[noreturn]] void missing(std::string_view key, const std::string& what) const;

    std::string key_path(std::string_view key) const;

private:
    /// One key of the mapping, in file order: found by a scan of these (a config section has
    /// a few dozen keys at most), never through yaml-cpp's non-const lookup, which converts
    /// every key it passes and inserts an undefined entry for each absent key it is asked.
    struct Entry {
        std::string key;
        YAML::Node key_node; ///< for its mark
        YAML::Node value;
        bool asked = false;
    };

    /// Indexes the keys; throws when one appears twice in this mapping (naming both lines).
    void index_keys();
    /// Records that `key` was asked for; returns its entry, or null when it is absent.
    Entry* ask(std::string_view key);
    /// The keys asked for so far, sorted and without repeats, joined by ", ".
    std::string asked_list() const;
    YAML::Node scalar(std::string_view key, std::string_view expected);

    YAML::Node node_;
    std::shared_ptr<const std::string> file_;
    std::string path_;
    std::vector<Entry> entries_;
    /// Every key asked for, present or not, in asking order (repeats sorted out when listed).
    std::vector<std::string> asked_;
};

} // namespace clustersim::config
