// ScalarMap against YamlMap: the same texts accepted, the same values read, a refusal wherever
// YamlMap throws (a sweep then reads the YAML for the message; explore tests check that path).
#include "base/error.h"
#include "config/scalar_map.h"
#include "config/yaml_map.h"

#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace clustersim;

namespace {

/// What a getter gives: its value as text, or nothing where it refuses.
using Got = std::optional<std::string>;

/// `get` applied to the YAML text `doc` through YamlMap and through ScalarMap; both results.
template <class Get>
std::pair<Got, Got> both(const std::string& doc, Get get) {
    const YAML::Node node = config::parse_yaml(doc, "t.yaml");
    Got by_yaml, by_scalars;
    try {
        config::YamlMap m(node, "t.yaml", "s");
        by_yaml = get(m);
    } catch (const InputError&) {
    }
    const auto section = config::ScalarSection::of(node);
    REQUIRE(section);
    try {
        config::ScalarMap m(*section);
        by_scalars = get(m);
    } catch (const config::ScalarMap::Refused&) {
    }
    return {by_yaml, by_scalars};
}

} // namespace

TEST_CASE("ScalarMap reads and refuses what YamlMap reads and refuses", "[config][scalar_map]") {
    const std::vector<std::string> values{
        "4",     "0",     "-1", "70000", "4x",   " 4",   "1e3",   "0x10", "true",    "yes",
        "on",    "false", "no", "off",   "True", "1",    "~",     "",     "[1, 2]",  "{a: 1}",
        "25MiB", "25MB",  "0B", "-1KiB", "lots", "1f1b", "gpipe", "'4'",  "\"yes\"", "null"};
    int compared = 0;
    for (const auto& v : values) {
        const std::string doc = "k: " + v + "\n";
        INFO("k: " << v);
        const auto integer = both(doc, [](auto& m) -> Got {
            const auto x = m.integer("k", 0, 1 << 16);
            m.finish();
            return std::to_string(x);
        });
        CHECK(integer.first == integer.second);
        const auto read_int = both(doc, [](auto& m) -> Got {
            int x = -7;
            m.read("k", x, -1, 8);
            return std::to_string(x);
        });
        CHECK(read_int.first == read_int.second);
        const auto boolean = both(doc, [](auto& m) -> Got {
            bool x = false;
            m.read("k", x);
            return x ? "t" : "f";
        });
        CHECK(boolean.first == boolean.second);
        const auto bytes = both(doc, [](auto& m) -> Got {
            std::int64_t x = -3;
            m.read_bytes("k", x);
            return std::to_string(x);
        });
        CHECK(bytes.first == bytes.second);
        const auto choice = both(doc, [](auto& m) -> Got {
            return m.has("k") ? m.choice("k", {"gpipe", "1f1b", "4"}) : "absent";
        });
        CHECK(choice.first == choice.second);
        const auto text = both(doc, [](auto& m) -> Got {
            std::string x = "unset";
            m.read("k", x);
            return x;
        });
        CHECK(text.first == text.second);
        // A key never asked for is refused by both at finish.
        const auto unasked = both(doc, [](auto& m) -> Got {
            m.finish();
            return "finished";
        });
        CHECK_FALSE(unasked.first);
        CHECK_FALSE(unasked.second);
        compared += 7;
    }
    CHECK(compared == 7 * static_cast<int>(values.size()));
    // Values both read (not only refusals agreeing).
    CHECK(both("k: 4\n", [](auto& m) -> Got {
              return std::to_string(m.integer("k", 0, 8));
          }).second == "4");
    CHECK(both("k: 25MiB\n", [](auto& m) -> Got { return std::to_string(m.bytes("k")); }).second ==
          std::to_string(25 << 20));
    CHECK(both("k: ~\n", [](auto& m) -> Got { return m.has("k") ? "has" : "not"; }).second ==
          "not");
}

TEST_CASE("ScalarMap::set changes a value in place or adds the key, as node[key] = value does",
          "[config][scalar_map]") {
    const YAML::Node node = config::parse_yaml("tp: 2\npp: ~\n", "t.yaml");
    const auto section = config::ScalarSection::of(node);
    REQUIRE(section);
    REQUIRE(section->entries().size() == 2);
    config::ScalarMap m(*section);
    m.set("pp", "4"); // a null value becomes the scalar
    m.set("dp", "8"); // a new key
    CHECK(m.integer("tp", 1, 64) == 2);
    CHECK(m.integer("pp", 1, 64) == 4);
    CHECK(m.integer("dp", 1, 64) == 8);
    m.finish();
    // The section it views is unchanged: a second map sees the file's values.
    config::ScalarMap fresh(*section);
    CHECK_FALSE(fresh.has("pp"));
    CHECK_FALSE(fresh.has("dp"));
    CHECK_THROWS_AS(fresh.finish(), config::ScalarMap::Refused); // tp not asked
    // An empty value set from a sweep is a present, empty string (YAML's "" scalar).
    m.set("layout", "");
    CHECK(m.has("layout"));
    CHECK(m.str("layout").empty());
}

TEST_CASE("ScalarSection::of leaves to YamlMap what only it reads", "[config][scalar_map]") {
    // A key given twice: YamlMap names both lines.
    CHECK_FALSE(config::ScalarSection::of(config::parse_yaml("a: 1\na: 2\n", "t.yaml")));
    // A key that is not a scalar.
    CHECK_FALSE(config::ScalarSection::of(config::parse_yaml("? [a]\n: 1\n", "t.yaml")));
    // Not a mapping.
    CHECK_FALSE(config::ScalarSection::of(config::parse_yaml("[1, 2]\n", "t.yaml")));
    CHECK_FALSE(config::ScalarSection::of(config::parse_yaml("x\n", "t.yaml")));
    // A list as a value is kept, and refused by every getter.
    const auto s = config::ScalarSection::of(config::parse_yaml("a: [1, 2]\nb: 3\n", "t.yaml"));
    REQUIRE(s);
    config::ScalarMap m(*s);
    CHECK(m.has("a"));
    CHECK_THROWS_AS(m.str("a"), config::ScalarMap::Refused);
    CHECK_THROWS_AS(m.raw("a"), config::ScalarMap::Refused);
}
