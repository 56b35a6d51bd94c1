#include "config/scalar_map.h"

#include "base/error.h"
#include "base/units.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>

namespace clustersim::config {

std::optional<ScalarSection> ScalarSection::of(const YAML::Node& node) {
    if (!node.IsMap())
        return std::nullopt;
    ScalarSection s;
    s.entries_.reserve(node.size());
    for (auto it = node.begin(); it != node.end(); ++it) {
        const YAML::Node k = it->first;
        const YAML::Node v = it->second;
        // YamlMap matches only scalar keys and refuses the others as unknown (finish).
        if (!k.IsScalar())
            return std::nullopt;
        Entry e;
        e.key = k.Scalar();
        if (!v.IsDefined() || v.IsNull()) {
            e.kind = Kind::null;
        } else if (v.IsScalar()) {
            e.value = v.Scalar();
        } else {
            e.kind = Kind::other;
        }
        s.entries_.push_back(std::move(e));
    }
    // A key given twice is YamlMap's error (index_keys), with both lines.
    std::vector<std::string_view> keys;
    keys.reserve(s.entries_.size());
    for (const Entry& e : s.entries_)
        keys.emplace_back(e.key);
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end())
        return std::nullopt;
    return s;
}

ScalarMap::ScalarMap(const ScalarSection& section) {
    items_.reserve(section.entries().size() + 4);
    for (const auto& e : section.entries())
        items_.push_back({e.key, e.value, e.kind, false});
}

void ScalarMap::set(std::string_view key, std::string_view value) {
    for (Item& i : items_) {
        if (i.key == key) {
            i.value = value;
            i.kind = ScalarSection::Kind::scalar;
            return;
        }
    }
    items_.push_back({key, value, ScalarSection::Kind::scalar, false});
}

ScalarMap::Item* ScalarMap::ask(std::string_view key) {
    for (Item& i : items_) {
        if (i.key == key) {
            i.asked = true;
            return &i;
        }
    }
    return nullptr;
}

std::string_view ScalarMap::scalar(std::string_view key) {
    const Item* i = ask(key);
    if (!i || i->kind != ScalarSection::Kind::scalar)
        throw Refused{}; // YamlMap: missing, or "expected ..., got a mapping"
    return i->value;
}

bool ScalarMap::has(std::string_view key) {
    const Item* i = ask(key);
    return i && i->kind != ScalarSection::Kind::null;
}

std::string ScalarMap::str(std::string_view key) {
    return std::string(scalar(key));
}

std::int64_t ScalarMap::integer(std::string_view key, std::int64_t min, std::int64_t max) {
    // YamlMap::integer: the whole text one integer, within [min, max].
    const std::string_view text = scalar(key);
    std::int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < min || value > max)
        throw Refused{};
    return value;
}

bool ScalarMap::boolean(std::string_view key) {
    // YamlMap::boolean's words.
    const std::string_view text = scalar(key);
    if (text == "true" || text == "yes" || text == "on")
        return true;
    if (text == "false" || text == "no" || text == "off")
        return false;
    throw Refused{};
}

std::int64_t ScalarMap::bytes(std::string_view key, bool positive) {
    // YamlMap::bytes: base::parse_bytes, and positive where asked.
    const std::string_view text = scalar(key);
    std::int64_t v = 0;
    try {
        v = base::parse_bytes(text);
    } catch (const UnitsError&) {
        throw Refused{};
    }
    if (positive && v <= 0)
        throw Refused{};
    return v;
}

std::string ScalarMap::choice(std::string_view key, const std::vector<std::string>& choices) {
    const std::string_view text = scalar(key);
    for (const auto& c : choices) {
        if (c == text)
            return c;
    }
    throw Refused{};
}

void ScalarMap::read(std::string_view key, std::string& out) {
    if (has(key))
        out = str(key);
}
void ScalarMap::read(std::string_view key, int& out, int min, int max) {
    if (has(key))
        out = static_cast<int>(integer(key, min, max));
}
void ScalarMap::read(std::string_view key, bool& out) {
    if (has(key))
        out = boolean(key);
}
void ScalarMap::read_bytes(std::string_view key, std::int64_t& out, bool positive) {
    if (has(key))
        out = bytes(key, positive);
}

YAML::Node ScalarMap::raw(std::string_view) {
    throw Refused{};
}

void ScalarMap::finish() {
    for (const Item& i : items_) {
        if (!i.asked)
            throw Refused{}; // YamlMap: unknown key, listing the valid ones
    }
}

void ScalarMap::fail(std::string_view, const std::string&) const {
    throw Refused{};
}
void ScalarMap::fail_at(const YAML::Node&, std::string_view, const std::string&) const {
    throw Refused{};
}
void ScalarMap::missing(std::string_view, const std::string&) const {
    throw Refused{};
}

} // namespace clustersim::config
