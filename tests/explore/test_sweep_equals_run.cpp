// `clustersim sweep` and `clustersim run` give the same answer for the same configuration: each
// row of a sweep's CSV is compared, field by field, with `run --format json` of that row's
// settings, in both fidelities. Configurations: GPT-3 175B on 64 A100s (interleaved 1F1B with
// pp > 1, ZeRO-1 with dp = 2, recompute none and selective: some out of memory, some invalid
// because tp x pp x dp is not the GPU count) and the lecture MLP (dp, ZeRO, GPU counts that
// do not match dp: invalid).
//
// The mapping, CSV column -> JSON of `run --format json`:
//   gpus                              -> gpus
//   tp, pp, dp, cp, micro_batches,
//   virtual_stages, schedule          -> parallel.<same>
//   ep                                -> parallel.ep (MoE models; "1" where the JSON has none)
//   step_time_s, tokens_per_s, mfu,
//   bubble_fraction                   -> <same> (top level)
//   compute_s, recompute_s, host_s,
//   tp_comm_exposed_s, pp_bubble_s,
//   pp_comm_exposed_s,
//   dp_comm_exposed_s, optimizer_s    -> breakdown.<same>
//   ep_comm_exposed_s                 -> breakdown.<same> (MoE models; "0" where the JSON has none)
//   peak_bytes                        -> memory.peak_bytes_max
//   capacity_bytes                    -> memory.capacity_bytes
//   oom                               -> oom
//   oom_stage, oom_excess_bytes       -> oom_detail.stage, oom_detail.excess_bytes (when oom)
//   invalid_reason                    -> run's error message (run exits non-zero)
//   micro_batch, recompute            -> none: they are inputs, given to run as --set
// Numbers: the CSV writes doubles with nine significant digits ("{:.9g}"), the JSON with the
// shortest text that reads back as the same double. The JSON's double printed as the CSV
// prints it must be the CSV's text exactly; integers and words are compared as they are.
#include "explore/evaluator.h"
#include "explore/sweep_row.h"
#include "strategies/parallel/experiment_variants.h"
#include "strategies/parallel/training_step.h"
#include "tests/app/cli_run.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

using namespace clustersim;
using namespace clustersim::test;

namespace {

const std::string kGpt3 = CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml";
const std::string kMlp = CLUSTERSIM_SOURCE_DIR "/configs/experiments/lecture-mlp-data.yaml";

/// A row of a sweep's CSV: its fields in order, and the result columns by name (a varied key
/// may have the name of a result column, as "gpus" does: the map holds the result's).
struct Row {
    std::vector<std::string> fields;
    std::map<std::string, std::string> by_name;
    const std::string& at(const std::string& column) const { return by_name.at(column); }
};

/// The rows of a sweep's CSV.
std::vector<Row> read_rows(const std::string& text) {
    std::vector<std::string> columns;
    std::vector<Row> rows;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("#", 0) == 0)
            continue;
        const auto fields = explore::split_csv(line);
        if (columns.empty()) {
            columns = fields;
            continue;
        }
        REQUIRE(fields.size() == columns.size());
        Row row;
        for (std::size_t i = 0; i < fields.size(); ++i)
            row.by_name[columns[i]] = fields[i];
        row.fields = fields;
        rows.push_back(std::move(row));
    }
    return rows;
}

/// A JSON number as the CSV writes it.
std::string as_csv(const nlohmann::json& v) {
    if (v.is_number_float())
        return explore::csv_number(v.get<double>());
    if (v.is_boolean())
        return v.get<bool>() ? "true" : "false";
    if (v.is_string())
        return v.get<std::string>();
    return v.dump();
}

struct Counts {
    int valid = 0, invalid = 0, oom = 0;
};

/// Sweeps `experiment` over `vary` in `fidelity`, then runs every row's settings and compares.
Counts check_sweep_equals_run(const std::string& experiment, const std::vector<std::string>& vary,
                              const std::string& fidelity) {
    TempDir dir("sweep-equals-run");
    const std::string csv = dir.file("sweep.csv");
    std::vector<std::string> args{"sweep",      experiment, "--out",  csv,
                                  "--fidelity", fidelity,   "--jobs", "2"};
    std::vector<std::string> keys;
    for (const auto& v : vary) {
        args.push_back("--vary");
        args.push_back(v);
        keys.push_back(v.substr(0, v.find('=')));
    }
    const Run sweep = run(args);
    INFO(sweep.err);
    REQUIRE(sweep.code == 0);
    const auto rows = read_rows(slurp(csv));
    REQUIRE(!rows.empty());

    Counts counts;
    for (const Row& row : rows) {
        std::vector<std::string> cmd{"run", experiment, "--format", "json", "--fidelity", fidelity};
        std::string settings;
        for (std::size_t k = 0; k < keys.size(); ++k) {
            const std::string& value = row.fields.at(1 + k); // after "config"
            cmd.push_back("--set");
            cmd.push_back(keys[k] + "=" + value);
            settings += " " + keys[k] + "=" + value;
        }
        INFO("configuration " << row.at("config") << ":" << settings << " (" << fidelity << ")");
        const Run r = run(cmd);
        if (!row.at("invalid_reason").empty()) {
            ++counts.invalid;
            CHECK(r.code != 0);
            CHECK_THAT(r.err, Catch::Contains(row.at("invalid_reason")));
            continue;
        }
        ++counts.valid;
        INFO(r.err);
        REQUIRE(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        CHECK(as_csv(j.at("gpus")) == row.at("gpus"));
        for (const char* k :
             {"tp", "pp", "dp", "cp", "micro_batches", "virtual_stages", "schedule"})
            CHECK(as_csv(j.at("parallel").at(k)) == row.at(k));
        CHECK((j.at("parallel").contains("ep") ? as_csv(j.at("parallel").at("ep")) : "1") ==
              row.at("ep"));
        CHECK((j.at("breakdown").contains("ep_comm_exposed_s")
                   ? as_csv(j.at("breakdown").at("ep_comm_exposed_s"))
                   : "0.0") == row.at("ep_comm_exposed_s"));
        for (const char* k : {"step_time_s", "tokens_per_s", "mfu", "bubble_fraction"})
            CHECK(as_csv(j.at(k)) == row.at(k));
        for (const char* k :
             {"compute_s", "recompute_s", "host_s", "tp_comm_exposed_s", "pp_bubble_s",
              "pp_comm_exposed_s", "dp_comm_exposed_s", "optimizer_s"})
            CHECK(as_csv(j.at("breakdown").at(k)) == row.at(k));
        CHECK(as_csv(j.at("memory").at("peak_bytes_max")) == row.at("peak_bytes"));
        CHECK(as_csv(j.at("memory").at("capacity_bytes")) == row.at("capacity_bytes"));
        CHECK(as_csv(j.at("oom")) == row.at("oom"));
        if (j.at("oom").get<bool>()) {
            ++counts.oom;
            CHECK(as_csv(j.at("oom_detail").at("stage")) == row.at("oom_stage"));
            CHECK(as_csv(j.at("oom_detail").at("excess_bytes")) == row.at("oom_excess_bytes"));
        } else {
            CHECK(row.at("oom_stage").empty());
            CHECK(row.at("oom_excess_bytes").empty());
        }
    }
    return counts;
}

} // namespace

TEST_CASE("sweep equals run: GPT-3 interleaved pipeline, ZeRO, OOM and invalid rows",
          "[explore][sweep_equals_run]") {
    const std::vector<std::string> vary{"parallel.pp=4,8", "parallel.dp=1,2", "parallel.zero=0,1",
                                        "parallel.recompute=none,selective"};
    for (const std::string fidelity : {"analytic", "flow"}) {
        const Counts c = check_sweep_equals_run(kGpt3, vary, fidelity);
        // tp 8 x pp x dp must be 64: pp 4 with dp 2 and pp 8 with dp 1 run, the others not.
        CHECK(c.valid == 8);
        CHECK(c.invalid == 8);
        CHECK(c.oom > 0);
        CHECK(c.oom < c.valid);
    }
}

TEST_CASE("sweep equals run: the lecture MLP, data parallel with ZeRO",
          "[explore][sweep_equals_run]") {
    const std::vector<std::string> vary{"gpus=2,4", "parallel.dp=2,4", "parallel.zero=0,1,2"};
    for (const std::string fidelity : {"analytic", "flow"}) {
        const Counts c = check_sweep_equals_run(kMlp, vary, fidelity);
        CHECK(c.valid == 6);
        CHECK(c.invalid == 6);
    }
}

TEST_CASE("sweep equals run: the whole result, for MoE, context parallelism and FSDP2",
          "[explore][sweep_equals_run]") {
    // The library below both commands: the sweep's evaluator (shared topologies and
    // communicators, settings re-read per configuration) against a run's load_experiment and
    // simulate_step, compared as whole StepResults (every field, defaulted operator==).
    namespace sp = strategies::parallel;
    const std::string mixtral =
        CLUSTERSIM_SOURCE_DIR "/configs/experiments/mixtral-8x7B-64xH100.yaml";
    struct Case {
        std::string file;
        sp::Settings settings;
    };
    const std::vector<Case> cases{
        {mixtral, {}},
        {mixtral, {{"parallel.ep", "4"}, {"parallel.zero", "1"}}},
        {kGpt3, {{"parallel.pp", "4"}, {"parallel.cp", "2"}, {"model.attention", "flash"}}},
        {kGpt3,
         {{"parallel.pp", "1"},
          {"parallel.dp", "8"},
          {"parallel.schedule", "1f1b"},
          {"parallel.virtual_stages", "1"},
          {"parallel.zero", "3"},
          {"parallel.fsdp", "true"}}},
        {kGpt3,
         {{"parallel.pp", "2"},
          {"parallel.dp", "4"},
          {"parallel.zero", "3"},
          {"parallel.fsdp", "true"}}},
    };
    for (const auto fidelity : {sp::Fidelity::analytic, sp::Fidelity::flow}) {
        for (const Case& c : cases) {
            std::string shown = c.file.substr(c.file.rfind('/') + 1);
            for (const auto& [k, v] : c.settings)
                shown += " " + k + "=" + v;
            INFO(shown << (fidelity == sp::Fidelity::flow ? " (flow)" : " (analytic)"));
            const sp::ExperimentVariants variants(c.file);
            explore::EvalOptions eo;
            eo.fidelity = fidelity;
            const explore::Evaluator evaluator(variants, eo);
            const explore::Outcome swept = evaluator.evaluate(c.settings);
            INFO(swept.reason);
            REQUIRE(swept.valid);

            sp::StepOptions so;
            so.fidelity = fidelity;
            so.oom_advice = false; // as a sweep runs it
            const sp::StepResult ran =
                sp::simulate_step(sp::load_experiment(c.file, c.settings), so);
            CHECK(swept.result == ran);
        }
    }
}
