#pragma once
/// \file
/// A config section's keys declared once, as a table: each key's name and other names, type and
/// unit, default, range or choices, the Megatron-LM flag or torchtitan name it mirrors, a
/// one-line meaning, and the field it lands in. The way SimGrid's `config::Flag`, ns-3's
/// `AddAttribute` and Megatron-Core's `TransformerConfig` declare theirs.
///
/// One table serves everything that knows a section's keys: the loader reads every key with a
/// target by looping over it (`read_keys`, here, over a YamlMap or a ScalarMap); keys without
/// one (a list, a key whose value feeds a rule over several keys) are read by the loader's own
/// code. `clustersim init`, docs/experiments.md and docs/hardware-files.md are generated from
/// the tables (app/config_docs.cpp), and the measurement files' step settings and the sweep's
/// key list look keys up in them. Rules that relate several keys stay in the loaders.
///
/// No yaml-cpp here: the tables are plain data, readable below and above the loaders.

#include "sim/time.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace clustersim::config {

/// What a key's value is: how the generic reader converts it and how the docs describe it.
enum class KeyType : std::uint8_t {
    integer,   ///< within [min, max]
    number,    ///< a real number, at least number_min
    boolean,   ///< true | false
    choice,    ///< one of `choices`
    text,      ///< any string
    bytes,     ///< a size through base/units.h ("25MiB"); positive unless min is 0
    time,      ///< a duration through base/units.h ("2us")
    bandwidth, ///< bytes per second through base/units.h ("900GB/s")
    flop_rate, ///< FLOP per second through base/units.h ("989TFLOPS")
    list,      ///< a YAML list (or its items in one string separated by commas)
    section,   ///< a mapping of its own keys (or a preset's name, where the section says so)
};
/// "integer", "size", ..., as the docs name the types.
std::string_view to_string(KeyType t);

/// What is known of one key, for every reader of the table. Written with designated
/// initializers, in this order.
struct KeyInfo {
    std::string_view name;
    /// Other names read as this key (an old name, or torchtitan's); giving two is an error.
    std::vector<std::string_view> other_names = {};
    KeyType type = KeyType::integer;
    /// The default as a person reads it ("1", "gpus / (tp x pp x cp)").
    std::string_view fallback = {};
    /// The file must give it (read_key reads it whether present or not, for the message).
    bool required = false;
    std::int64_t min = 0; ///< integer: least value; bytes: 1 for positive sizes
    std::int64_t max = 0; ///< integer: greatest value
    double number_min = -1e300;
    std::vector<std::string> choices = {};
    /// The Megatron-LM flag or torchtitan name it mirrors ("--tensor-model-parallel-size").
    std::string_view mirrors = {};
    std::string_view meaning = {};
    /// The field it lands in ("ParallelSpec::tp").
    std::string_view lands = {};
    /// A valid value, as `clustersim init` writes it and the tests set it.
    std::string_view example = {};
    /// A group of related keys ("moe", "mla"): the docs' sub-heading, and a loader's rule
    /// may apply to the whole group.
    std::string_view group = {};
    /// The section's kind it applies to ("mlp", "transformer"); empty: every kind.
    std::string_view when = {};
    /// Written commented out by `clustersim init` (an alternative to another key, or a key of
    /// models the template's model is not).
    bool commented = false;
};

/// Where a key's value lands in `Spec`: a reference to the field, a setter from a choice's
/// name, or nothing (the loader reads the key by its own code).
template <class Spec>
using KeyTarget = std::variant<std::monostate, int& (*)(Spec&), std::int64_t& (*)(Spec&),
                               double& (*)(Spec&), bool& (*)(Spec&), std::string& (*)(Spec&),
                               sim::Time& (*)(Spec&), void (*)(Spec&, std::string_view)>;

template <class Spec>
struct Key {
    KeyInfo info;
    KeyTarget<Spec> target = {};
};

/// `&field<&S::m>` is a KeyTarget for the member m of S.
template <auto Member>
struct FieldOf;
template <class S, class T, T S::*Member>
struct FieldOf<Member> {
    static T& get(S& s) { return s.*Member; }
};
template <auto Member>
inline constexpr auto field = &FieldOf<Member>::get;

/// One section of a config file for the docs: its dotted path ("" at the top, "parallel"),
/// a line on what it holds, and its keys.
struct KeySection {
    using Group = std::pair<std::string_view, std::string_view>;
    std::string_view path;
    std::string_view meaning;
    std::vector<const KeyInfo*> keys;
    /// Each KeyInfo::group of the keys with its title ("moe", "A mixture of experts").
    std::vector<Group> groups;
};

template <class Spec>
KeySection section_of(std::string_view path, std::string_view meaning,
                      const std::vector<Key<Spec>>& keys,
                      std::vector<KeySection::Group> groups = {}) {
    KeySection s{path, meaning, {}, std::move(groups)};
    for (const auto& k : keys)
        s.keys.push_back(&k.info);
    return s;
}

/// The key named `name` or by one of its other names in `keys`; null when none.
const KeyInfo* find_key(const KeySection& keys, std::string_view name);

/// The name under which `m` has `k`: its own, or the other name given instead (refusing both).
template <class Map>
std::string_view given_name(Map& m, const KeyInfo& k) {
    std::string_view given = k.name;
    const bool own = m.has(k.name);
    for (std::string_view other : k.other_names) {
        if (!m.has(other))
            continue;
        if (own)
            m.fail(other, "give " + std::string(k.name) + " or its other name " +
                              std::string(other) + ", not both");
        given = other;
    }
    return given;
}

/// Reads `k` into `s` through its target when the map has it (under any of its names); a key
/// without a target is the caller's. `Map` is YamlMap or ScalarMap (which refuses the types
/// it cannot read).
template <class Map, class Spec>
void read_key(Map& m, const Key<Spec>& k, Spec& s) {
    if (std::holds_alternative<std::monostate>(k.target))
        return;
    const KeyInfo& i = k.info;
    const std::string_view key = given_name(m, i);
    if (!i.required && !m.has(key))
        return;
    std::visit(
        [&](auto target) {
            using T = decltype(target);
            if constexpr (std::is_same_v<T, std::monostate>) {
                return;
            } else if constexpr (std::is_same_v<T, void (*)(Spec&, std::string_view)>) {
                target(s, m.choice(key, i.choices));
            } else if constexpr (std::is_same_v<T, int& (*)(Spec&)>) {
                target(s) = static_cast<int>(m.integer(key, i.min, i.max));
            } else if constexpr (std::is_same_v<T, std::int64_t& (*)(Spec&)>) {
                target(s) = i.type == KeyType::bytes ? m.bytes(key, i.min > 0)
                                                     : m.integer(key, i.min, i.max);
            } else if constexpr (std::is_same_v<T, bool& (*)(Spec&)>) {
                target(s) = m.boolean(key);
            } else if constexpr (std::is_same_v<T, std::string& (*)(Spec&)>) {
                target(s) = m.str(key);
            } else if constexpr (std::is_same_v<T, double& (*)(Spec&)>) {
                if constexpr (requires { m.number(key, i.number_min); }) {
                    if (i.type == KeyType::bandwidth)
                        target(s) = m.bandwidth(key);
                    else if (i.type == KeyType::flop_rate)
                        target(s) = m.flop_rate(key, i.min > 0);
                    else
                        target(s) = m.number(key, i.number_min);
                } else {
                    m.fail(key, "is read from the file only");
                }
            } else if constexpr (std::is_same_v<T, sim::Time& (*)(Spec&)>) {
                if constexpr (requires { m.time(key); })
                    target(s) = m.time(key);
                else
                    m.fail(key, "is read from the file only");
            }
        },
        k.target);
}

/// read_key for every key of `keys`, in order.
template <class Map, class Spec>
void read_keys(Map& m, const std::vector<Key<Spec>>& keys, Spec& s) {
    for (const auto& k : keys)
        read_key(m, k, s);
}

} // namespace clustersim::config
