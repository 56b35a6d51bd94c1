#include "base/error.h"
#include "config/preset.h"
#include "config/yaml_map.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

using namespace clustersim;
using test::input_error_of;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

/// A layered value for the resolver tests: the `value:` of each layer appended.
struct Chain {
    std::string values;
};

const config::PresetKind& test_kind() {
    static const config::PresetKind kind{"test-kind-that-does-not-exist", "thing",
                                         "or give a path to a YAML file"};
    return kind;
}

Chain load_chain(const fs::path& path) {
    return config::load_layered_file<Chain>(
        test_kind(), path, [](config::YamlMap& root, Chain& c, bool extended) {
            c.values += (extended ? "+" : "") + root.str("value");
            root.finish();
        });
}

} // namespace

TEST_CASE("yaml: a key given twice is refused, naming both places", "[config][yaml]") {
    const YAML::Node doc = YAML::Load("gpu:\n  name: A\nnetwork:\n  x: 1\nnetwork:\n");
    const std::string err = input_error_of([&] { config::YamlMap m(doc, "hw.yaml"); });
    CHECK(err == "hw.yaml:5:1: key 'network' given twice (first at hw.yaml:3:1); keep one");

    const YAML::Node nested = YAML::Load("gpu:\n  name: A\n  name: B\n");
    config::YamlMap root(nested, "hw.yaml");
    try {
        root.map("gpu");
        FAIL("a repeated nested key was accepted");
    } catch (const InputError& e) {
        CHECK(std::string(e.what()) ==
              "hw.yaml:3:3: key 'gpu.name' given twice (first at hw.yaml:2:3); keep one");
        REQUIRE(e.where().has_value());
        CHECK(e.where()->line == 3);
        CHECK(e.where()->key == "gpu.name");
    }
}

TEST_CASE("yaml: errors carry their location as data", "[config][yaml]") {
    const YAML::Node doc = YAML::Load("a: 1\nb: fast\n");
    config::YamlMap m(doc, "f.yaml");
    try {
        m.bandwidth("b");
        FAIL("a bad bandwidth was accepted");
    } catch (const InputError& e) {
        REQUIRE(e.where().has_value());
        CHECK(e.where()->file == "f.yaml");
        CHECK(e.where()->line == 2);
        CHECK(e.where()->column == 4);
        CHECK(e.where()->key == "b");
    }
}

TEST_CASE("yaml files: a directory, a device and an oversized file are clean errors",
          "[config][yaml]") {
    const TempDir dir("files");
    CHECK(input_error_of([&] { config::load_yaml_file(dir.path.string()); }) ==
          dir.path.string() + ": is a directory, expected a YAML file");
    CHECK(input_error_of([&] { config::load_yaml_file((dir.path / "absent.yaml").string()); }) ==
          (dir.path / "absent.yaml").string() + ": cannot open the file");
    if (fs::exists("/dev/zero")) {
        // Refused after reading the limit, not after reading the device until memory runs out.
        CHECK(input_error_of([] {
                  config::load_yaml_file("/dev/zero");
              }).find("/dev/zero: larger than 16 MiB") == 0);
    }
    const fs::path big = dir.write("big.yaml", std::string(config::kMaxYamlFileBytes + 1, '#'));
    CHECK(input_error_of([&] {
              config::load_yaml_file(big.string());
          }).find("larger than 16 MiB") != std::string::npos);
}

TEST_CASE("presets: a relative extends: is relative to the file that names it",
          "[config][preset]") {
    const TempDir dir("extends");
    dir.write("base.yaml", "value: base\n");
    dir.write("sub/base.yaml", "value: sub-base\n");
    const fs::path top = dir.write("sub/top.yaml", "extends: base.yaml\nvalue: top\n");
    // Whatever the working directory holds, sub/top.yaml means sub/base.yaml.
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.path);
    const Chain from_root = load_chain(top);
    fs::current_path(dir.path / "sub");
    const Chain from_sub = load_chain(top);
    fs::current_path(cwd);
    CHECK(from_root.values == "sub-base+top");
    CHECK(from_sub.values == "sub-base+top");
}

TEST_CASE("presets: cycles and unknown names are errors at the extends key", "[config][preset]") {
    const TempDir dir("cycle");
    const fs::path a = dir.write("a.yaml", "extends: b.yaml\nvalue: a\n");
    dir.write("b.yaml", "extends: a.yaml\nvalue: b\n");
    const std::string cycle = input_error_of([&] { load_chain(a); });
    CHECK(cycle.find("too many levels of 'extends' (a cycle?)") != std::string::npos);
    CHECK(cycle.find(a.string() + ":1:10: key 'extends': cannot load 'b.yaml'") == 0);

    const fs::path unknown = dir.write("u.yaml", "extends: no-such-preset\nvalue: u\n");
    CHECK(input_error_of([&] {
              load_chain(unknown);
          }).find("cannot load 'no-such-preset': unknown thing preset 'no-such-preset'") !=
          std::string::npos);
}

TEST_CASE("presets: a name the file system refuses is an unknown preset, not a crash",
          "[config][preset]") {
    // Longer than any file name may be (NAME_MAX 255): std::filesystem::exists would throw
    // (fuzz_experiment_yaml found it); the message quotes an excerpt of the name.
    const std::string name(4000, 'x');
    const std::string e = input_error_of([&] { config::resolve_preset(test_kind(), name, {}); });
    CHECK(e.find("unknown thing preset 'xxxx") == 0);
    CHECK(e.size() < 1000);
}
