// The configuration surface declared once: every key of the experiment's and the hardware
// file's tables (config/key_table.h) is accepted and listed alike by `run --set`, a sweep's
// `--vary`, `calibrate import --set` (the step settings), `clustersim init` and the docs; and
// the tables hold every key the loaders accept (the loaders list the keys they asked for when
// refusing an unknown one).
#include "app/config_docs.h"
#include "base/error.h"
#include "calibrate/measurements.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/experiment_keys.h"
#include "strategies/parallel/experiment_variants.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/platform_keys.h"

#include "cli_run.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace clustersim;
namespace sp = strategies::parallel;

namespace {

/// The keys a loader listed when it refused an unknown one ("valid keys here: a, b, c").
std::set<std::string> listed_keys(const std::string& message) {
    std::smatch m;
    std::set<std::string> keys;
    if (!std::regex_search(message, m, std::regex(R"(valid keys here: ([^)]*)\))")))
        return keys;
    std::stringstream list(m[1].str());
    for (std::string key; std::getline(list, key, ',');)
        keys.insert(key.substr(key.find_first_not_of(' ')));
    return keys;
}

/// A table's names, each `<enum>` entry as its choices, with the other names.
std::set<std::string> table_names(const config::KeySection& s) {
    std::set<std::string> out;
    for (const config::KeyInfo* k : s.keys) {
        if (k->name.starts_with("<")) {
            out.insert(k->choices.begin(), k->choices.end());
            continue;
        }
        out.emplace(k->name);
        for (std::string_view other : k->other_names)
            out.emplace(other);
    }
    return out;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

constexpr const char* kBase = "hardware: dgx-a100\n"
                              "model: gpt3-175B\n"
                              "training:\n  global_batch: 16\n"
                              "parallel:\n  tp: 8\n  sequence_parallel: true\n";

} // namespace

TEST_CASE("config keys: run, sweep, calibrate --set, init and the docs take every key of the "
          "experiment's tables",
          "[app][init][config-keys]") {
    const test::TempDir dir("config-keys");
    const std::string path = (dir.path / "e.yaml").string();
    test::spit(path, kBase);
    const sp::ExperimentVariants variants(path, {});
    const std::string tmpl = app::experiment_template();
    const std::string docs = app::experiments_markdown();

    // The sweep lists exactly the tables' keys.
    CHECK(variants.keys() == sp::experiment_key_paths());
    int walked = 0;
    for (const config::KeySection& s : sp::experiment_sections()) {
        const std::string prefix = s.path.empty() ? "" : std::string(s.path) + ".";
        const std::string indent = s.path.empty() ? "" : "  ";
        for (const config::KeyInfo* k : s.keys) {
            std::vector<std::string> names{std::string(k->name)};
            names.insert(names.end(), k->other_names.begin(), k->other_names.end());
            INFO(prefix << k->name);
            // init writes it, at its section's indentation, given or commented out.
            const std::string lead =
                "\n" + indent + (k->commented ? "# " : "") + std::string(k->name) + ":";
            CHECK(tmpl.find(lead) != std::string::npos);
            CHECK(docs.find("`" + prefix + std::string(k->name) + "`") != std::string::npos);
            if (s.path.empty() && sp::experiment_section(k->name) != nullptr && k->name != "model")
                continue; // training:, parallel: take a mapping, not a value
            REQUIRE_FALSE(k->example.empty());
            for (const std::string& name : names) {
                const std::string key = prefix + name;
                INFO(key << "=" << k->example);
                CHECK(variants.is_key(key));
                // `run --set`: read (a rule over several keys may refuse the value, the
                // reader never the key).
                std::vector<std::pair<std::string, std::string>> set;
                if (!k->when.empty()) // a key of one kind of model: that kind's
                    set.emplace_back("model.kind", std::string(k->when));
                set.emplace_back(key, std::string(k->example));
                const std::string err = error_of([&] { sp::load_experiment(path, set); });
                CHECK(err.find("unknown key") == std::string::npos);
                CHECK(err.find("valid keys") == std::string::npos);
                // `calibrate import --set`: a step setting of the model, training or parallel.
                if (!s.path.empty()) {
                    calibrate::StepMeasurement step;
                    CHECK_NOTHROW(calibrate::apply_setting(
                        step, key + "=" + std::string(k->example), "--set"));
                }
                ++walked;
            }
        }
    }
    CHECK(walked > 80);
}

TEST_CASE("config keys: the experiment's tables hold every key its loaders accept",
          "[app][config-keys]") {
    const test::TempDir dir("config-keys-loaders");
    const std::string path = (dir.path / "e.yaml").string();
    const auto refused = [&](const std::string& yaml) {
        test::spit(path, yaml);
        return listed_keys(error_of([&] { sp::load_experiment(path); }));
    };
    const auto names = [](std::string_view section) {
        return table_names(*sp::experiment_section(section));
    };
    CHECK(refused("hardware: dgx-a100\nmodel: gpt3-175B\ntraining:\n  global_batch: 8\n"
                  "  bogus: 1\n") == names("training"));
    CHECK(refused("hardware: dgx-a100\nmodel: gpt3-175B\ntraining:\n  global_batch: 8\n"
                  "parallel:\n  bogus: 1\n") == names("parallel"));
    // A transformer's keys and an MLP's: the model section's less those of the other kind.
    std::set<std::string> transformer, mlp;
    for (const config::KeyInfo* k : sp::experiment_section("model")->keys) {
        if (k->when != "mlp")
            transformer.emplace(k->name);
        if (k->when != "transformer")
            mlp.emplace(k->name);
    }
    CHECK(refused("hardware: dgx-a100\nmodel:\n  extends: gpt3-175B\n  bogus: 1\n"
                  "training:\n  global_batch: 8\n") == transformer);
    CHECK(refused("hardware: dgx-a100\nmodel:\n  kind: mlp\n  layers: 2\n  dim: 64\n"
                  "  bogus: 1\ntraining:\n  global_batch: 8\n") == mlp);
    CHECK(refused("hardware: dgx-a100\nmodel: gpt3-175B\ntraining:\n  global_batch: 8\n"
                  "bogus: 1\n") == names(""));
}

TEST_CASE("config keys: the hardware file's tables hold every key its loaders accept, and the "
          "docs list them",
          "[app][config-keys]") {
    const test::TempDir dir("config-keys-hardware");
    const std::string path = (dir.path / "h.yaml").string();
    const std::string docs = app::hardware_markdown();
    int sections = 0;
    for (const config::KeySection& s : sp::hardware_sections()) {
        INFO(s.path);
        for (const config::KeyInfo* k : s.keys)
            CHECK(docs.find("`" + (s.path.empty() ? "" : std::string(s.path) + ".") +
                            std::string(k->name) + "`") != std::string::npos);
        // A section of its own path (not one per enum value, not a list's record): a bogus key
        // in it, nested below a preset that has every section.
        const std::string p(s.path);
        if (p.find('<') != std::string::npos || p.find('[') != std::string::npos)
            continue;
        std::string yaml = "extends: dgx-h100\n";
        std::string indent;
        std::size_t start = 0;
        for (std::size_t dot; !p.empty() && (dot = p.find('.', start)) != std::string::npos;
             start = dot + 1) {
            yaml += indent + p.substr(start, dot - start) + ":\n";
            indent += "  ";
        }
        if (!p.empty()) {
            yaml += indent + p.substr(start) + ":\n";
            indent += "  ";
        }
        yaml += indent + "bogus: 1\n";
        test::spit(path, yaml);
        const std::string err = error_of([&] { sp::load_platform(path); });
        INFO(err);
        std::set<std::string> expected = table_names(s);
        CHECK(listed_keys(err) == expected);
        ++sections;
    }
    CHECK(sections > 20);
}

TEST_CASE("config keys: init's template runs, and the docs in docs/ are the tables'",
          "[app][init][config-keys]") {
    const test::TempDir dir("init-run");
    const std::string path = (dir.path / "exp.yaml").string();
    REQUIRE(test::run({"init", "--out", path}).code == 0);
    CHECK(test::slurp(path) == app::experiment_template());
    const test::Run r = test::run({"run", path});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(test::run({"init", "--docs", "experiments"}).out == app::experiments_markdown());
    CHECK(test::run({"init", "--docs", "hardware"}).out == app::hardware_markdown());
}

TEST_CASE("config keys: the training and parallel tables' defaults are the loader's",
          "[app][config-keys]") {
    // A key set to the default its table states changes nothing in the result. Defaults that
    // are not values ("gpus / (tp x pp x cp)", "tp") are refused as values and skipped.
    const test::TempDir dir("config-keys-defaults");
    const std::string path = (dir.path / "e.yaml").string();
    test::spit(path, kBase);
    const test::Run base = test::run({"run", path, "--format", "json"});
    REQUIRE(base.code == 0);
    int compared = 0;
    for (std::string_view section : {"training", "parallel"}) {
        for (const config::KeyInfo* k : sp::experiment_section(section)->keys) {
            if (std::string(kBase).find("  " + std::string(k->name) + ":") != std::string::npos)
                continue; // the base gives it
            const std::string set =
                std::string(section) + "." + std::string(k->name) + "=" + std::string(k->fallback);
            const test::Run r = test::run({"run", path, "--set", set, "--format", "json"});
            INFO(set << "\n" << r.err);
            if (r.code != 0)
                continue;
            CHECK(r.out == base.out);
            ++compared;
        }
    }
    CHECK(compared > 25);
}
