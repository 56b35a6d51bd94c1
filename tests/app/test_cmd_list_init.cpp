#include "app/cli.h"
#include "base/error.h"
#include "strategies/parallel/experiment.h"

#include "cli_run.h"

#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <sstream>

using namespace clustersim;

TEST_CASE("list: every preset with its one line", "[app][list]") {
    const test::Run r = test::run({"list"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("Hardware (") == 0);
    CHECK(std::regex_search(r.out, std::regex("\n  dgx-a100 +NVIDIA DGX A100 80GB")));
    CHECK(r.out.find("gpt3-175B") != std::string::npos);
    CHECK(r.out.find("Experiments (") != std::string::npos);
    // Experiments have no description key; their first comment line says what they are.
    CHECK(r.out.find("pipeline-schedules") != std::string::npos);
    CHECK(r.out.find("(cannot be read") == std::string::npos);
}

namespace {

/// The keys a section of the experiment accepts, as its loader lists them when it meets an
/// unknown one ("valid keys here: a, b, c").
std::set<std::string> accepted_keys(const std::string& section_yaml) {
    const test::TempDir dir("init-keys");
    const std::string path = (dir.path / "e.yaml").string();
    test::spit(path, section_yaml);
    std::string message;
    try {
        strategies::parallel::load_experiment(path);
    } catch (const InputError& e) {
        message = e.what();
    }
    const std::smatch m = [&] {
        std::smatch match;
        std::regex_search(message, match, std::regex(R"(valid keys here: ([^)]*)\))"));
        return match;
    }();
    std::set<std::string> keys;
    if (m.empty())
        return keys;
    std::stringstream list(m[1].str());
    std::string key;
    while (std::getline(list, key, ','))
        keys.insert(key.substr(key.find_first_not_of(' ')));
    return keys;
}

} // namespace

TEST_CASE("init: the template runs as written and names every key", "[app][init]") {
    const test::TempDir dir("init");
    const std::string path = (dir.path / "exp.yaml").string();
    REQUIRE(test::run({"init", "--out", path}).code == 0);
    CHECK(test::slurp(path) == app::kExperimentTemplate);
    CHECK(test::run({"init"}).out == app::kExperimentTemplate);

    const test::Run r = test::run({"run", path});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("step time") != std::string::npos);

    // Every key the loader accepts in training: and parallel: appears in the template.
    const std::string base = "hardware: dgx-a100\nmodel: gpt3-175B\n";
    const std::string tmpl = app::kExperimentTemplate;
    for (const auto& [section, body] :
         {std::pair{"training", "training:\n  global_batch: 8\n  bogus: 1\n"},
          std::pair{"parallel", "training:\n  global_batch: 8\nparallel:\n  bogus: 1\n"}}) {
        const std::set<std::string> keys = accepted_keys(base + body);
        INFO(section);
        REQUIRE(keys.size() > 3);
        for (const auto& k : keys)
            CHECK(tmpl.find("  " + k + ":") != std::string::npos);
    }
}

TEST_CASE("cli: a mistyped command is named, with the commands there are", "[app][cli]") {
    const test::Run r = test::run({"frobnicate"});
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown command 'frobnicate' (commands: hardware, ") == 19);
    CHECK(r.err.find("list, init)") != std::string::npos);
}
