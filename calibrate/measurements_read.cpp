// Reading a measurement file: bounded JSON (depth, sizes), every object read key by key with
// its unit and range checked, unknown keys refused, each error naming the file and the entry.
#include "calibrate/measurements.h"

#include "base/error.h"
#include "base/units.h"
#include "calibrate/measurements_detail.h"
#include "calibrate/measurements_reader.h"
#include "config/bounded_read.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace clustersim::calibrate {

using hardware::Dtype;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

using namespace measurements_detail;

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

namespace {
/// The longest excerpt of a value that an error message echoes.
constexpr std::size_t kShowChars = 40;

/// Appends `v` as JSON text to `out` until `out` holds more than `limit` characters; stops
/// there, so a 20 MB string or a value nested 10^5 deep costs no more than a short one.
void show_into(const json& v, std::string& out, std::size_t limit) {
    if (out.size() > limit)
        return;
    if (v.is_string()) {
        // Dump only a prefix of a long string (plus its quotes and escapes).
        const std::string& s = v.get_ref<const std::string&>();
        const json part = s.size() > limit ? json(s.substr(0, limit)) : v;
        out += part.dump(-1, ' ', false, json::error_handler_t::replace);
        return;
    }
    if (v.is_array()) {
        out += '[';
        bool first = true;
        for (const json& e : v) {
            if (out.size() > limit)
                return;
            if (!first)
                out += ',';
            first = false;
            show_into(e, out, limit);
        }
        out += ']';
        return;
    }
    if (v.is_object()) {
        out += '{';
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (out.size() > limit)
                return;
            if (!first)
                out += ',';
            first = false;
            show_into(json(it.key()), out, limit);
            out += ':';
            show_into(it.value(), out, limit);
        }
        out += '}';
        return;
    }
    out += v.dump();
}

} // namespace

std::string measurements_detail::show(const json& v) {
    std::string text;
    show_into(v, text, kShowChars);
    if (text.size() > kShowChars)
        text = text.substr(0, kShowChars - 3) + "...";
    return text;
}

namespace {

/// The deepest nesting of arrays and objects a measurement file may have (the format needs
/// four); deeper input is refused before parsing, so nothing downstream recurses without bound.
constexpr int kMaxJsonDepth = 64;

/// Throws InputError at the line and column where `text` nests deeper than kMaxJsonDepth.
/// Brackets inside strings do not count.
void check_json_depth(std::string_view text, const std::string& name) {
    int depth = 0;
    int line = 1;
    std::size_t line_start = 0;
    bool in_string = false;
    bool escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
            line_start = i + 1;
        }
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth)
                throw InputError(fmt::format("{}:{}:{}: nested deeper than {} levels of arrays "
                                             "and objects; a measurement file needs a few",
                                             name, line, i - line_start + 1, kMaxJsonDepth));
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
}

/// The index of the value of `info.name` in `info.choices`; another name is refused in the
/// words of `info.what`.
std::size_t read_choice(ObjectReader& r, const FieldInfo& info) {
    const std::string s = r.str(info.name);
    const auto it = std::find(info.choices.begin(), info.choices.end(), s);
    if (it == info.choices.end()) {
        const std::string valid = base::join(info.choices, ", ");
        if (info.what.empty())
            r.fail(info.name, fmt::format("expected one of {}, got '{}'", valid, base::excerpt(s)));
        r.fail(info.name,
               fmt::format("unknown {} '{}' (valid: {})", info.what, base::excerpt(s), valid));
    }
    return static_cast<std::size_t>(it - info.choices.begin());
}

std::vector<std::vector<std::int64_t>> read_dims(ObjectReader& r, std::string_view key) {
    const json& shapes = r.get(key);
    if (!shapes.is_array())
        r.fail(key, "expected a list of lists of dimensions, got " + show(shapes));
    std::vector<std::vector<std::int64_t>> out;
    for (const auto& s : shapes) {
        if (!s.is_array())
            r.fail(key, "expected a list of lists of dimensions, got " + show(s));
        std::vector<std::int64_t> dims;
        for (const auto& d : s) {
            if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
                r.fail(key, "expected non-negative integer dimensions, got " + show(d));
            dims.push_back(d.get<std::int64_t>());
        }
        out.push_back(std::move(dims));
    }
    return out;
}

/// Reads one field into its member, with the checks of its type, bounds and choices.
template <class S>
void read_field(ObjectReader& r, const Field<S>& f, S& s) {
    const FieldInfo& i = f.info;
    const std::string_view key = i.name;
    if (f.read != nullptr) {
        f.read(r, key, s);
        return;
    }
    std::visit(
        [&](auto member) {
            using M = decltype(member);
            if constexpr (std::is_same_v<M, int S::*>) {
                s.*member = r.small_int(key, static_cast<int>(i.min), static_cast<int>(i.max));
            } else if constexpr (std::is_same_v<M, std::int64_t S::*> ||
                                 std::is_same_v<M, std::optional<std::int64_t> S::*>) {
                s.*member = r.integer(key, i.min, i.max);
            } else if constexpr (std::is_same_v<M, double S::*>) {
                s.*member = r.positive_number(key);
            } else if constexpr (std::is_same_v<M, bool S::*>) {
                s.*member = r.boolean(key);
            } else if constexpr (std::is_same_v<M, std::string S::*>) {
                s.*member = i.choices.empty() ? r.str(key) : i.choices[read_choice(r, i)];
                if ((s.*member).empty() && !i.if_empty.empty())
                    r.fail(key, std::string(i.if_empty));
            } else if constexpr (std::is_same_v<M, sim::Time S::*>) {
                s.*member = r.time(key, time_unit(i.unit).seconds);
            } else if constexpr (std::is_same_v<M, std::vector<std::vector<std::int64_t>> S::*>) {
                s.*member = read_dims(r, key);
            } else if constexpr (std::is_same_v<M, Settings S::*>) {
                s.*member = read_settings(r.get(key), key, r.file(), r.sub(key), nullptr);
            } else if constexpr (std::is_same_v<M, EnumMember<S>>) {
                member.set(s, read_choice(r, i));
            }
        },
        f.member.v);
}

/// A record as its table says: every field in order, an optional one only when given, one
/// given `with` another only when that one is; then the derived rates, checked against the
/// fields they derive from.
template <class S>
S read_record(ObjectReader& r, const Record<S>& record) {
    S s;
    for (const Field<S>& f : record.fields) {
        const FieldInfo& i = f.info;
        if (i.type == FieldType::rate || (!i.with.empty() && !r.has(i.with)) ||
            (i.presence != Presence::required && !r.has(i.name)))
            continue;
        read_field(r, f, s);
    }
    for (const Field<S>& f : record.fields) {
        const FieldInfo& i = f.info;
        if (i.type == FieldType::rate)
            r.check_rate(i.name, (s.*f.rate)() / rate_scale(i.unit), i.formula);
    }
    return s;
}

template <class S>
std::vector<S> read_list(ObjectReader& top, const json& root, const Record<S>& record,
                         const std::string& file) {
    std::vector<S> out;
    if (!top.has(record.list))
        return out;
    const json& list = root.at(std::string(record.list));
    if (!list.is_array())
        top.fail(record.list, fmt::format("expected a list, got {}", show(list)));
    out.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        ObjectReader r(list[i], file, fmt::format("{}[{}]", record.list, i));
        out.push_back(read_record(r, record));
        r.finish();
    }
    return out;
}
} // namespace

Settings measurements_detail::read_settings(const json& j, std::string_view section,
                                            const std::string& file, const std::string& path,
                                            std::string* preset) {
    if (!j.is_object())
        throw InputError(fmt::format("{}: {}: expected an object, got {}", file, path, show(j)));
    Settings out;
    for (const auto& [key, v] : j.items()) {
        const std::string where = fmt::format("{}: {}.{}", file, path, key);
        if (preset != nullptr && key == "preset") {
            if (!v.is_string() || v.get<std::string>().empty())
                throw InputError(where + ": expected a model preset name, got " + show(v));
            *preset = v.get<std::string>();
            continue;
        }
        SettingValue value;
        if (v.is_boolean())
            value = v.get<bool>();
        else if (v.is_number_integer())
            value = v.get<std::int64_t>();
        else if (v.is_number())
            value = v.get<double>();
        else if (v.is_string())
            value = v.get<std::string>();
        else
            throw InputError(where + ": expected a number, string or boolean, got " + show(v));
        check_setting(section, key, value, where);
        out[key] = value;
    }
    return out;
}

MeasurementFile parse_measurements(std::string_view json_text, const std::string& name) {
    check_json_depth(json_text, name);
    json root;
    try {
        // A key given twice in one object is refused, as the YAML readers refuse it: JSON
        // parsers keep one of the two silently (nlohmann the last), so one of the user's
        // values would be ignored without a word.
        std::vector<std::set<std::string>> keys;
        std::string duplicate;
        const json::parser_callback_t refuse_duplicates = [&](int, json::parse_event_t event,
                                                              json& parsed) {
            if (event == json::parse_event_t::object_start) {
                keys.emplace_back();
            } else if (event == json::parse_event_t::object_end) {
                keys.pop_back();
            } else if (event == json::parse_event_t::key && !keys.empty() &&
                       !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
                duplicate = parsed.get<std::string>();
            }
            return true;
        };
        root = json::parse(json_text.begin(), json_text.end(), refuse_duplicates);
        if (!duplicate.empty())
            throw InputError(fmt::format("{}: key '{}' appears twice in one object; JSON keeps "
                                         "only one of them: remove the other",
                                         name, base::excerpt(duplicate)));
    } catch (const json::out_of_range& e) {
        // A number beyond double's range ("1e400"): nlohmann says which, but not where; find
        // the token it quotes to name its line and column.
        std::string what = e.what();
        const auto close = what.find("] ");
        if (close != std::string::npos)
            what = what.substr(close + 2);
        std::string where;
        const auto q1 = what.find('\'');
        const auto q2 = q1 == std::string::npos ? q1 : what.find('\'', q1 + 1);
        if (q2 != std::string::npos && q2 > q1 + 1) {
            const auto at = json_text.find(what.substr(q1 + 1, q2 - q1 - 1));
            if (at != std::string_view::npos) {
                const std::string_view before = json_text.substr(0, at);
                const auto line = 1 + std::count(before.begin(), before.end(), '\n');
                const auto nl = before.rfind('\n');
                where = fmt::format(":{}:{}", line,
                                    at - (nl == std::string_view::npos ? 0 : nl + 1) + 1);
            }
        }
        throw InputError(fmt::format("{}{}: not valid JSON: {} (numbers must be finite doubles)",
                                     name, where, base::excerpt(what, 80)));
    } catch (const json::exception& e) {
        // parse_error (out_of_range is caught above).
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line 3, column
        // 5: syntax error ..."; keep the part after the bracketed id.
        std::string what = e.what();
        const auto close = what.find("] ");
        if (close != std::string::npos)
            what = what.substr(close + 2);
        // Cut: its "last read: '...'" can quote a 20 MB token.
        throw InputError(fmt::format("{}: not valid JSON: {}", name, base::excerpt(what, 200)));
    }
    MeasurementFile file;
    ObjectReader top(root, name, "");
    const std::string format = top.str("format");
    if (format != kMeasurementFormat)
        top.fail("format", fmt::format("expected \"{}\", got \"{}\"", kMeasurementFormat,
                                       base::excerpt(format)));
    const json& version = top.get("version");
    if (!version.is_number_integer())
        top.fail("version", "expected an integer, got " + show(version));
    file.version = static_cast<int>(version.get<std::int64_t>());
    if (file.version < 1 || file.version > kMeasurementVersion)
        top.fail("version", fmt::format("version {} is not supported: this clustersim reads "
                                        "versions 1 to {}",
                                        version.get<std::int64_t>(), kMeasurementVersion));
    {
        ObjectReader env(top.get("environment"), name, "environment");
        file.environment = read_record(env, record<Environment>());
        env.finish();
    }
    for_each_list(
        [&](const auto& record, auto& list) { list = read_list(top, root, record, name); }, file);
    top.finish();
    check_measurements(file, name);
    return file;
}

MeasurementFile read_measurements(const std::string& path) {
    return parse_measurements(
        config::read_bounded(path, config::kMaxDataFileBytes, "a measurement file"), path);
}

} // namespace clustersim::calibrate
