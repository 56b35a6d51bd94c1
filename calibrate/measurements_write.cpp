// Writing a measurement file: one JSON document, each entry on one line, derived rates
// rounded so that files are stable.
#include "calibrate/measurements.h"

#include "calibrate/measurements_detail.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace clustersim::calibrate {

using ordered_json = nlohmann::ordered_json;

using namespace measurements_detail;

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

ordered_json measurements_detail::settings_json(const Settings& s) {
    ordered_json out = ordered_json::object();
    for (const auto& [key, value] : s)
        std::visit([&, k = key](const auto& v) { out[k] = v; }, value);
    return out;
}

namespace {
/// Six significant digits: derived rates are written rounded so that files are stable and
/// readable; the reader recomputes them from the times and checks them to 1%.
double round_significant(double x) {
    return base::round_significant(x, 6);
}

/// The value of a field as JSON.
template <class S, class M>
nlohmann::ordered_json value_json(const S& s, M member, const FieldInfo& info) {
    const auto& v = s.*member;
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, sim::Time>)
        return static_cast<double>(v.picoseconds()) / time_unit(info.unit).picoseconds;
    else if constexpr (std::is_same_v<V, Settings>)
        return settings_json(v);
    else if constexpr (std::is_same_v<V, std::optional<std::int64_t>>)
        return *v;
    else
        return v;
}

/// A record as its table says, in the table's order: an optional field only when it differs
/// from a default record's, one written `with` another only when that one is, derived rates
/// computed and rounded.
template <class S>
ordered_json to_json(const S& s, const Record<S>& record) {
    static const S none{};
    ordered_json j;
    for (const Field<S>& f : record.fields) {
        const FieldInfo& i = f.info;
        const std::string key(i.name);
        if (!i.with.empty() && !j.contains(std::string(i.with)))
            continue;
        if (f.write != nullptr) {
            f.write(s, i.name, j);
        } else if (i.type == FieldType::rate) {
            j[key] = round_significant((s.*f.rate)() / rate_scale(i.unit));
        } else {
            std::visit(
                [&](auto member) {
                    using M = decltype(member);
                    if constexpr (std::is_same_v<M, EnumMember<S>>) {
                        const auto index = member.get(s);
                        if (index &&
                            !(i.presence == Presence::optional && index == member.get(none)))
                            j[key] = i.choices[*index];
                    } else if constexpr (!std::is_same_v<M, std::monostate>) {
                        if (!(i.presence == Presence::optional && s.*member == none.*member))
                            j[key] = value_json(s, member, i);
                    }
                },
                f.member.v);
        }
    }
    return j;
}

template <class S>
void write_list(std::string& out, const Record<S>& record, const std::vector<S>& items, bool last) {
    out += fmt::format("  \"{}\": [", record.list);
    for (std::size_t i = 0; i < items.size(); ++i) {
        out += i == 0 ? "\n    " : ",\n    ";
        out += to_json(items[i], record).dump();
    }
    out += items.empty() ? "]" : "\n  ]";
    out += last ? "\n" : ",\n";
}
} // namespace

std::string format_measurements(const MeasurementFile& file, const std::string& name) {
    check_measurements(file, name);
    std::string out = "{\n";
    out += fmt::format("  \"format\": \"{}\",\n", kMeasurementFormat);
    out += fmt::format("  \"version\": {},\n", kMeasurementVersion);
    out += "  \"environment\": ";
    // The environment is small: indented, one key per line, with the file's indentation.
    std::string env_text = to_json(file.environment, record<Environment>()).dump(2);
    std::string indented;
    for (char c : env_text) {
        indented += c;
        if (c == '\n')
            indented += "  ";
    }
    out += indented + ",\n";
    // An optional list is written only when it or a list after it has records, so that files
    // without them read as before the list existed.
    std::size_t written = 0;
    std::size_t index = 0;
    for_each_list(
        [&](const auto& record, const auto& list) {
            ++index;
            if (!record.optional_list || !list.empty())
                written = index;
        },
        file);
    index = 0;
    for_each_list(
        [&](const auto& record, const auto& list) {
            ++index;
            if (index <= written)
                write_list(out, record, list, index == written);
        },
        file);
    out += "}\n";
    // What the reader would refuse is not written: its checks, from the same tables, run on the
    // text (the bounds and choices that check_measurements does not restate).
    parse_measurements(out, name);
    return out;
}

} // namespace clustersim::calibrate
