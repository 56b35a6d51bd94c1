#include "config/yaml_map.h"

#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "config/input_record.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

namespace clustersim::config {

SourceLocation location(const std::string& file, const YAML::Mark& mark, std::string key) {
    if (mark.is_null())
        return {file, 0, 0, std::move(key)};
    return {file, mark.line + 1, mark.column + 1, std::move(key)};
}

std::string format_mark(const std::string& file, const YAML::Mark& mark) {
    if (mark.is_null())
        return file;
    return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

YAML::Node load_yaml_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError(path + ": is a directory, expected a YAML file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(path + ": cannot open the file");
    note_input(path);
    // Read at most one byte past the limit, in chunks: a device or a huge file is refused
    // after kMaxYamlFileBytes, not read whole first, and a small file costs what it holds (not
    // a zeroed buffer of the limit's size).
    std::string text;
    std::array<char, 64 * 1024> chunk{};
    while (text.size() <= kMaxYamlFileBytes) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
        if (!in)
            break;
    }
    if (in.bad())
        throw InputError(path + ": cannot read the file");
    if (text.size() > kMaxYamlFileBytes)
        throw InputError(path + ": larger than " + std::to_string(kMaxYamlFileBytes >> 20) +
                         " MiB; a config file is a few KiB (is this the right file?)");
    return parse_yaml(text, path);
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
    try {
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw InputError(format_mark(file, e.mark) + ": invalid YAML: " + e.msg);
    }
}

YamlMap::YamlMap(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node))
    , file_(std::make_shared<const std::string>(std::move(file)))
    , path_(std::move(path)) {
    if (!node_.IsMap()) {
        const std::string where = path_.empty() ? "the document" : "key '" + path_ + "'";
        throw InputError(location(*file_, node_.Mark()),
                         where + ": expected a mapping of keys to values");
    }
    index_keys();
}

void YamlMap::index_keys() {
    const YAML::Node& node = node_;
    entries_.reserve(node.size());
    for (auto it = node.begin(); it != node.end(); ++it)
        entries_.push_back({it->first.IsScalar() ? it->first.Scalar() : std::string(), it->first,
                            it->second, false});
    // yaml-cpp keeps both entries of a repeated key and lookups find the first, so a repeated
    // section would silently drop the second: refuse it, naming both places.
    if (entries_.size() < 2)
        return;
    std::vector<const Entry*> sorted;
    sorted.reserve(entries_.size());
    for (const Entry& e : entries_) {
        if (e.key_node.IsScalar())
            sorted.push_back(&e);
    }
    // Stable: for a key given twice, the first entry in the file comes first.
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Entry* a, const Entry* b) { return a->key < b->key; });
    for (std::size_t i = 1; i < sorted.size(); ++i) {
        if (sorted[i]->key != sorted[i - 1]->key)
            continue;
        const std::string key = key_path(sorted[i]->key);
        const YAML::Mark first = sorted[i - 1]->key_node.Mark();
        const YAML::Mark second = sorted[i]->key_node.Mark();
        const auto& [earlier, later] =
            first.line < second.line || (first.line == second.line && first.column < second.column)
                ? std::pair{first, second}
                : std::pair{second, first};
        throw InputError(location(*file_, later, key),
                         "key '" + key + "' given twice (first at " + format_mark(*file_, earlier) +
                             "); keep one",
                         InputError::KeyShown::no);
    }
}

YamlMap::Entry* YamlMap::ask(std::string_view key) {
    asked_.emplace_back(key);
    for (Entry& e : entries_) {
        if (e.key == key && e.key_node.IsScalar()) {
            e.asked = true;
            return &e;
        }
    }
    return nullptr;
}

std::string YamlMap::asked_list() const {
    std::vector<std::string> keys = asked_;
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::string list;
    for (const auto& k : keys)
        list += (list.empty() ? "" : ", ") + k;
    return list;
}

std::string YamlMap::key_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void YamlMap::fail(std::string_view key, const std::string& what) const {
    const YAML::Node& node = node_;
    const YAML::Node v = node[std::string(key)];
    fail_at(v.IsDefined() ? v : node_, key, what);
}

void YamlMap::fail_at(const YAML::Node& at, std::string_view key, const std::string& what) const {
    throw InputError(location(*file_, at.Mark(), key_path(key)), what);
}

void YamlMap::missing(std::string_view key, const std::string& what) const {
    throw InputError(location(*file_, node_.Mark(), key_path(key)),
                     "missing key '" + key_path(key) + "' (" + what + ")",
                     InputError::KeyShown::no);
}

bool YamlMap::has(std::string_view key) {
    const Entry* e = ask(key);
    return e && e->value.IsDefined() && !e->value.IsNull();
}

YAML::Node YamlMap::scalar(std::string_view key, std::string_view expected) {
    const Entry* e = ask(key);
    if (!e || !e->value.IsDefined() || e->value.IsNull())
        missing(key, std::string(expected));
    const YAML::Node& v = e->value;
    if (!v.IsScalar())
        fail(key, "expected " + std::string(expected) + ", got a " +
                      (v.IsMap() ? "mapping" : "sequence"));
    return v;
}

std::string YamlMap::str(std::string_view key) {
    return scalar(key, "a string").Scalar();
}

std::int64_t YamlMap::integer(std::string_view key, std::int64_t min, std::int64_t max) {
    const std::string text = scalar(key, "an integer").Scalar();
    std::int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size())
        fail(key, "expected an integer, got '" + base::excerpt(text) + "'");
    if (value < min || value > max)
        fail(key, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                      ", got " + text);
    return value;
}

double YamlMap::number(std::string_view key, double min) {
    const std::string text = scalar(key, "a number").Scalar();
    double value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value))
        fail(key, "expected a number, got '" + base::excerpt(text) + "'");
    if (value < min)
        fail(key, "expected a number >= " + std::to_string(min) + ", got " + text);
    return value;
}

bool YamlMap::boolean(std::string_view key) {
    const std::string text = scalar(key, "true or false").Scalar();
    if (text == "true" || text == "yes" || text == "on")
        return true;
    if (text == "false" || text == "no" || text == "off")
        return false;
    fail(key, "expected true or false, got '" + base::excerpt(text) + "'");
}

std::int64_t YamlMap::bytes(std::string_view key, bool positive) {
    const std::string text = scalar(key, "a size like '80GiB'").Scalar();
    std::int64_t v = 0;
    try {
        v = base::parse_bytes(text);
    } catch (const UnitsError& e) {
        fail(key, e.what());
    }
    if (positive && v <= 0)
        fail(key, "expected a positive size, got '" + base::excerpt(text) + "'");
    return v;
}

double YamlMap::bandwidth(std::string_view key) {
    const std::string text = scalar(key, "a bandwidth like '900GB/s'").Scalar();
    double v = 0;
    try {
        v = base::parse_bandwidth(text);
    } catch (const UnitsError& e) {
        fail(key, e.what());
    }
    if (!(v > 0))
        fail(key, "expected a positive bandwidth, got '" + base::excerpt(text) + "'");
    return v;
}

sim::Time YamlMap::time(std::string_view key) {
    const std::string text = scalar(key, "a time like '2us'").Scalar();
    try {
        return base::parse_time(text);
    } catch (const UnitsError& e) {
        fail(key, e.what());
    }
}

double YamlMap::flop_rate(std::string_view key, bool positive) {
    const std::string text = scalar(key, "a FLOP rate like '989TFLOPS'").Scalar();
    double v = 0;
    try {
        v = base::parse_flop_rate(text);
    } catch (const UnitsError& e) {
        fail(key, e.what());
    }
    if (positive && !(v > 0))
        fail(key, "expected a positive FLOP rate, got '" + base::excerpt(text) + "'");
    return v;
}

std::string YamlMap::choice(std::string_view key, const std::vector<std::string>& choices) {
    const std::string text = str(key);
    for (const auto& c : choices) {
        if (c == text)
            return text;
    }
    std::string list;
    for (const auto& c : choices)
        list += (list.empty() ? "" : ", ") + c;
    fail(key, "expected one of " + list + ", got '" + base::excerpt(text) + "'");
}

YamlMap YamlMap::map(std::string_view key) {
    const Entry* e = ask(key);
    if (!e || !e->value.IsDefined() || e->value.IsNull())
        missing(key, "a mapping");
    const YAML::Node& v = e->value;
    if (!v.IsMap())
        fail(key, "expected a mapping of keys to values");
    return YamlMap(v, *file_, key_path(key));
}

YAML::Node YamlMap::raw(std::string_view key) {
    if (const Entry* e = ask(key))
        return e->value;
    const YAML::Node& node = node_;
    return node[std::string(key)]; // undefined, without adding the key to the document
}

void YamlMap::read(std::string_view key, std::string& out) {
    if (has(key))
        out = str(key);
}
void YamlMap::read(std::string_view key, int& out, int min, int max) {
    if (has(key))
        out = static_cast<int>(integer(key, min, max));
}
void YamlMap::read(std::string_view key, bool& out) {
    if (has(key))
        out = boolean(key);
}
void YamlMap::read_number(std::string_view key, double& out, double min) {
    if (has(key))
        out = number(key, min);
}
void YamlMap::read_bytes(std::string_view key, std::int64_t& out, bool positive) {
    if (has(key))
        out = bytes(key, positive);
}
void YamlMap::read_bandwidth(std::string_view key, double& out) {
    if (has(key))
        out = bandwidth(key);
}
void YamlMap::read_time(std::string_view key, sim::Time& out) {
    if (has(key))
        out = time(key);
}
void YamlMap::read_flop_rate(std::string_view key, double& out, bool positive) {
    if (has(key))
        out = flop_rate(key, positive);
}

void YamlMap::finish() {
    // A whole file none of whose keys means anything here is another kind of file (`model:
    // ../../etc/shadow`): say so without quoting it, since its first key is its content.
    if (path_.empty() && !entries_.empty() &&
        std::none_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.asked; }))
        throw InputError(*file_ + ": none of its keys is one this file may have (valid keys: " +
                             asked_list() + "); is it the right file?",
                         location(*file_, node_.Mark()));
    for (const Entry& e : entries_) {
        if (e.asked)
            continue;
        const std::string shown = base::excerpt(key_path(e.key));
        throw InputError(location(*file_, e.key_node.Mark(), key_path(e.key)),
                         "unknown key '" + shown + "' (valid keys here: " + asked_list() + ")",
                         InputError::KeyShown::no);
    }
}

} // namespace clustersim::config
