// The measurement files' field tables (calibrate/measurement_fields.h) drive the tests here:
// every field of every record type is written and read back, a missing or out-of-range value
// is refused naming its key, and docs/measurements.md lists every key. A field added to a
// table is covered with no edit here.
#include "base/error.h"
#include "calibrate/measurement_fields.h"
#include "calibrate/measurements.h"
#include "calibrate/measurements_detail.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>

using namespace clustersim;
using namespace clustersim::calibrate;
using namespace clustersim::calibrate::measurements_detail;
using json = nlohmann::json;

namespace {

/// A valid value, other than a default record's, for the `index`-th field of a table: what the
/// field's type, bounds and choices allow, so that every optional field is written.
template <class S>
void set_field(S& s, const Field<S>& f, int index) {
    const FieldInfo& i = f.info;
    static const S none{};
    auto choice = [&](std::optional<std::size_t> avoid) {
        for (std::size_t c = i.choices.size(); c-- > 0;) {
            if (!i.choices[c].empty() && c != avoid)
                return c;
        }
        FAIL(i.name << ": no choice to take");
        return std::size_t{0};
    };
    std::visit(
        [&](auto member) {
            using M = decltype(member);
            if constexpr (std::is_same_v<M, int S::*> || std::is_same_v<M, std::int64_t S::*> ||
                          std::is_same_v<M, std::optional<std::int64_t> S::*>) {
                s.*member = std::min<std::int64_t>(i.min + 1 + index, i.max);
            } else if constexpr (std::is_same_v<M, double S::*>) {
                s.*member = 1.5 * (index + 1);
            } else if constexpr (std::is_same_v<M, bool S::*>) {
                s.*member = !(none.*member);
            } else if constexpr (std::is_same_v<M, std::string S::*>) {
                if (i.choices.empty()) {
                    s.*member = fmt::format("{}-{}", i.name, index);
                } else {
                    const auto at = std::find(i.choices.begin(), i.choices.end(), none.*member);
                    const auto avoid = at == i.choices.end()
                                           ? std::nullopt
                                           : std::optional<std::size_t>(at - i.choices.begin());
                    s.*member = i.choices[choice(avoid)];
                }
            } else if constexpr (std::is_same_v<M, sim::Time S::*>) {
                // Decreasing down the table: a trace step's busy time stays within its time.
                s.*member = sim::Time::ps(1'000'000'123 - 1'000'000 * index);
            } else if constexpr (std::is_same_v<M, std::vector<std::vector<std::int64_t>> S::*>) {
                s.*member = {{index, 2}, {}, {7}};
            } else if constexpr (std::is_same_v<M, Settings S::*>) {
                // A key of the section the field names, as the experiment file has it.
                s.*member = i.name == "parallel" ? Settings{{"tp", std::int64_t{2}}}
                                                 : Settings{{"global_batch", std::int64_t{8}}};
            } else if constexpr (std::is_same_v<M, EnumMember<S>>) {
                member.set(s, choice(member.get(none)));
            }
        },
        f.member.v);
}

/// A record with every field set by the table; the fields with functions of their own and the
/// rules across fields (measurements_check.cpp) are set by name.
template <class S>
S full_record() {
    S s;
    int index = 0;
    for (const auto& f : record<S>().fields)
        set_field(s, f, index++);
    if constexpr (std::is_same_v<S, StepMeasurement>) {
        s.model_preset = "gpt3-125M";
        s.model = {{"layers", std::int64_t{2}}};
    }
    if constexpr (std::is_same_v<S, CopyMeasurement>) {
        if (s.src_gpu != s.dst_gpu)
            s.kind = CopyKind::peer;
    }
    return s;
}

MeasurementFile full_file() {
    MeasurementFile file;
    file.environment = full_record<Environment>();
    for_each_list(
        [](const auto&, auto& list) {
            using T = typename std::decay_t<decltype(list)>::value_type;
            list.push_back(full_record<T>());
        },
        file);
    return file;
}

/// Sets an integer field one above its table's bound (where its member can hold that).
template <class S>
bool raise_over_bound(S& s, const Field<S>& f) {
    if (const auto* m = std::get_if<int S::*>(&f.member.v);
        m != nullptr && f.info.max < std::numeric_limits<int>::max()) {
        s.** m = static_cast<int>(f.info.max + 1);
        return true;
    }
    if (const auto* m = std::get_if<std::int64_t S::*>(&f.member.v)) {
        s.** m = f.info.max + 1;
        return true;
    }
    if (const auto* m = std::get_if<std::optional<std::int64_t> S::*>(&f.member.v)) {
        s.** m = f.info.max + 1;
        return true;
    }
    return false;
}

std::string error_of(const json& j) {
    try {
        parse_measurements(j.dump(), "M.json");
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

/// The object of the record `r` in a file's JSON: the environment, or the first of its list.
json& object_of(json& file, const RecordInfo& r) {
    return r.list.empty() ? file["environment"] : file[std::string(r.list)][0];
}
std::string path_of(const RecordInfo& r) {
    return r.list.empty() ? "environment" : fmt::format("{}[0]", r.list);
}

} // namespace

TEST_CASE("measurement fields: every field of every table is written and read back",
          "[calibrate][measurements]") {
    const MeasurementFile file = full_file();
    const std::string text = format_measurements(file, "full");
    const MeasurementFile back = parse_measurements(text, "full");
    CHECK(back == file);
    CHECK(format_measurements(back, "back") == text);

    // Each key of each table is in the written record (a `with` key with its partner).
    const json j = json::parse(text);
    for (const RecordInfo& r : measurement_records()) {
        const json& o = r.list.empty() ? j.at("environment") : j.at(std::string(r.list)).at(0);
        for (const FieldInfo* f : r.fields) {
            INFO(path_of(r) << "." << f->name);
            CHECK(o.contains(std::string(f->name)));
        }
        CHECK(o.size() == r.fields.size());
    }
    // Each list is written; the optional ones only when they have points.
    CHECK(j.size() == 3 + measurement_records().size() - 1);
    MeasurementFile without = file;
    without.kernels.clear();
    without.trace_steps.clear();
    const json k = json::parse(format_measurements(without, "without"));
    for (const RecordInfo& r : measurement_records()) {
        if (!r.list.empty())
            CHECK(k.contains(std::string(r.list)) == !r.optional_list);
    }
}

TEST_CASE("measurement fields: a missing or out-of-range value is refused naming its key",
          "[calibrate][measurements]") {
    const json good = json::parse(format_measurements(full_file(), "full"));
    REQUIRE(error_of(good) == "(no error)");
    for (const RecordInfo& r : measurement_records()) {
        const std::string path = path_of(r);
        {
            json j = good;
            object_of(j, r)["nonesuch"] = 1;
            const std::string what = error_of(j);
            INFO(what);
            CHECK_THAT(what, Catch::StartsWith("M.json: " + path + ": unknown key 'nonesuch'"));
            // The reader asks for every key of the table: the error lists them all.
            const auto from = what.find("(valid: ");
            REQUIRE(from != std::string::npos);
            std::set<std::string> valid;
            std::istringstream names(what.substr(from + 8, what.rfind(')') - from - 8));
            for (std::string name; std::getline(names >> std::ws, name, ',');)
                valid.insert(name);
            for (const FieldInfo* f : r.fields)
                CHECK(valid.count(std::string(f->name)) == 1);
            CHECK(valid.size() == r.fields.size());
        }
        for (const FieldInfo* f : r.fields) {
            const std::string key(f->name);
            const std::string at = fmt::format("M.json: {}.{}: ", path, key);
            auto refused = [&](const json& value, const std::string& expected) {
                json j = good;
                object_of(j, r)[key] = value;
                const std::string what = error_of(j);
                INFO(key << " = " << value.dump());
                CHECK_THAT(what, Catch::StartsWith(at) && Catch::Contains(expected));
            };
            if (f->presence == Presence::required) {
                json j = good;
                object_of(j, r).erase(key);
                CHECK(error_of(j) == fmt::format("M.json: {}: missing key '{}'", path, key));
            }
            switch (f->type) {
            case FieldType::integer:
                refused(f->max + 1, fmt::format("expected an integer from {} to {}, got {}", f->min,
                                                f->max, f->max + 1));
                refused(f->min - 1, fmt::format("from {} to {}", f->min, f->max));
                refused(1.5, "expected an integer, got 1.5");
                break;
            case FieldType::number:
            case FieldType::time:
                refused(-1, "expected a positive number, got -1");
                refused("1", "expected a positive number");
                break;
            case FieldType::rate: {
                json copy = good;
                refused(object_of(copy, r)[key].get<double>() * 2 + 1,
                        "disagrees with " + std::string(f->formula));
                break;
            }
            case FieldType::choice:
                refused("nonesuch", "'nonesuch'");
                break;
            case FieldType::boolean:
                refused(1, "expected true or false, got 1");
                break;
            case FieldType::text:
                refused(1, "expected a string, got 1");
                if (!f->if_empty.empty())
                    refused("", std::string(f->if_empty));
                break;
            case FieldType::dims:
                refused(5, "expected a list of lists of dimensions, got 5");
                refused(json::array({json::array({-1})}),
                        "expected non-negative integer dimensions");
                break;
            case FieldType::settings:
            case FieldType::model: {
                // Its keys are the experiment file's section's, each named in its error.
                json j = good;
                object_of(j, r)[key] = json::object({{"nonesuch", 1}});
                CHECK_THAT(error_of(j), Catch::StartsWith(fmt::format(
                                            "M.json: {}.{}.nonesuch: unknown", path, key)));
                break;
            }
            }
        }
    }
}

TEST_CASE("measurement fields: what the reader would refuse is not written",
          "[calibrate][measurements]") {
    // Each integer one above its table's bound, in memory: the writer refuses it in the
    // reader's words, naming the key.
    MeasurementFile bad = full_file();
    int checked = 0;
    auto check = [&](auto& s, const auto& record, const std::string& path) {
        for (const auto& f : record.fields) {
            const auto saved = s;
            if (raise_over_bound(s, f)) {
                ++checked;
                INFO(path << "." << f.info.name);
                CHECK_THROWS_WITH(format_measurements(bad, "out.json"),
                                  fmt::format("out.json: {}.{}: expected an integer from {} to "
                                              "{}, got {}",
                                              path, f.info.name, f.info.min, f.info.max,
                                              f.info.max + 1));
            }
            s = saved;
        }
    };
    check(bad.environment, record<Environment>(), "environment");
    for_each_list(
        [&](const auto& record, auto& list) {
            check(list.front(), record, fmt::format("{}[0]", record.list));
        },
        bad);
    CHECK(checked >= 20); // every integer field of the tables but two bounded by INT_MAX
    CHECK_NOTHROW(format_measurements(bad, "out.json"));
}

TEST_CASE("measurement fields: docs/measurements.md lists every key of every table",
          "[calibrate][measurements]") {
    std::ifstream in(CLUSTERSIM_SOURCE_DIR "/docs/measurements.md");
    std::stringstream doc;
    doc << in.rdbuf();
    const std::string text = doc.str();
    for (const RecordInfo& r : measurement_records()) {
        const std::string heading =
            fmt::format("\n### `{}`\n", r.list.empty() ? "environment" : r.list);
        const auto at = text.find(heading);
        REQUIRE(at != std::string::npos);
        const auto next = text.find("\n### ", at + heading.size());
        const std::string section = text.substr(at, next - at);
        for (const FieldInfo* f : r.fields) {
            INFO(heading << f->name);
            CHECK_THAT(section,
                       Catch::Contains(fmt::format("| `{}` | {} |", f->name, to_string(f->type))) &&
                           Catch::Contains(std::string(f->meaning)));
        }
    }
}
