#pragma once
/// \file
/// A config mapping re-read many times with a few values changed, without its YAML: what a
/// sweep does with an experiment's training and parallel sections for each configuration.
///
///     // once: the file's section (nullopt: it has something only YamlMap reads, such as a
///     // key given twice; a mapping or list as a value is kept, and refused when read)
///     std::optional<ScalarSection> base = ScalarSection::of(doc["parallel"]);
///     // per configuration: the overrides set on a view of it, read with YamlMap's getters
///     ScalarMap m(*base);
///     m.set("tp", "4");
///     read_parallel(m, spec); // the loader's own code, templated on the map type
///
/// ScalarMap accepts exactly what YamlMap accepts, with the same conversions, but it has no
/// lines, columns or messages: every getter or check that YamlMap would fail with an InputError
/// throws ScalarMap::Refused instead, and the caller then reads the YAML with YamlMap for the
/// message (file, line, key). A refusal costs what the YAML read costs; success costs a few
/// string comparisons per key, where building a YamlMap over a cloned YAML tree cost ~80% of
/// a sweep's per-configuration read (issue 16).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace YAML {
class Node;
}

namespace clustersim::config {

/// The keys and scalar values of one YAML mapping, in file order (owned; shared read-only by
/// the ScalarMaps over it).
class ScalarSection {
public:
    enum class Kind : std::uint8_t {
        scalar,
        null, ///< `key:` or `key: ~`: present, but has() is false, as YamlMap says
        other ///< a mapping or a sequence: any getter refuses it
    };
    struct Entry {
        std::string key;
        std::string value; ///< the scalar's text (empty unless Kind::scalar)
        Kind kind = Kind::scalar;
    };

    /// An empty mapping (a section the file does not have, created by an override).
    ScalarSection() = default;
    /// The entries of `node`, a mapping; nullopt when YamlMap would read it differently from a
    /// list of scalar keys: not a mapping, a key that is not a scalar, or a key given twice.
    static std::optional<ScalarSection> of(const YAML::Node& node);

    const std::vector<Entry>& entries() const { return entries_; }

private:
    std::vector<Entry> entries_;
};

class ScalarMap {
public:
    /// What every failing getter or check throws: read the YAML for the message.
    struct Refused {};

    /// A view of `section` (which must outlive it), nothing asked yet.
    explicit ScalarMap(const ScalarSection& section);

    /// Sets `key` to the scalar `value` as `node[key] = value` does in the YAML: an existing
    /// entry takes the value in its place, a new key is added at the end. `key` and `value`
    /// must outlive the map.
    void set(std::string_view key, std::string_view value);

    // YamlMap's getters (yaml_map.h), same acceptance and conversions; Refused where YamlMap
    // throws.
    bool has(std::string_view key);
    std::string str(std::string_view key);
    std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max);
    bool boolean(std::string_view key);
    std::int64_t bytes(std::string_view key, bool positive = true);
    std::string choice(std::string_view key, const std::vector<std::string>& choices);
    void read(std::string_view key, std::string& out);
    void read(std::string_view key, int& out, int min, int max);
    void read(std::string_view key, bool& out);
    void read_bytes(std::string_view key, std::int64_t& out, bool positive = true);
    /// Lists and mappings are YamlMap's alone: always Refused.
    [[noreturn]] YAML::Node raw(std::string_view key);

    /// Refused when a key was never asked for (YamlMap::finish lists them).
    void finish();
    [[noreturn]] void fail(std::string_view key, const std::string& what) const;
    [[noreturn]] void fail_at(const YAML::Node& at, std::string_view key,
                              const std::string& what) const;
    [[noreturn]] void missing(std::string_view key, const std::string& what) const;

private:
    struct Item {
        std::string_view key;
        std::string_view value;
        ScalarSection::Kind kind;
        bool asked;
    };
    /// Marks `key` asked (as YamlMap::ask does) and returns its item, or null when absent.
    Item* ask(std::string_view key);
    /// The scalar text of a present, non-null, scalar `key`; Refused otherwise.
    std::string_view scalar(std::string_view key);

    std::vector<Item> items_;
};

} // namespace clustersim::config
