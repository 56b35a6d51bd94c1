// results/step_json.h words a StepResult, which holds numbers and enums only: the recompute of a
// rank, the recompute plan, the OOM suggestion and the note on which GPUs were simulated. The
// golden examples hold the whole table and JSON; these pin each sentence to its numbers.
#include "results/step_json.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

TEST_CASE("run report: recompute counts and the plan", "[app][run][report]") {
    CHECK(results::describe_recompute({}) == "no layers");
    CHECK(results::describe_recompute({0, 12, 0}) == "12 selective");
    CHECK(results::describe_recompute({2, 8, 4}) == "4 full + 8 selective + 2 none");

    StepResult r;
    r.memory.resize(2);
    r.memory[0].stage = 0;
    r.memory[0].recompute = {0, 8, 4};
    r.memory[1].stage = 1;
    r.memory[1].recompute = {12, 0, 0};
    CHECK(results::recompute_plan_text(r) == "stage 0: 4 full + 8 selective, stage 1: 12 none");
    r.automatic_recompute = true;
    CHECK(results::recompute_plan_text(r) ==
          "auto: stage 0: 4 full + 8 selective, stage 1: 12 none");
}

TEST_CASE("run report: the OOM suggestion and the simulated GPUs", "[app][run][report]") {
    CHECK(results::oom_fix_text(std::nullopt).empty());
    CHECK(results::oom_fix_text(OomSuggestion{RecomputePolicy::selective, std::nullopt}) ==
          "fits with recompute: selective");
    CHECK(results::oom_fix_text(OomSuggestion{std::nullopt, 2}) == "fits with zero: 2");
    CHECK(results::oom_fix_text(OomSuggestion{}) ==
          "no recompute or ZeRO setting fits; use more GPUs for tensor or pipeline parallelism");

    StepResult r;
    r.gpus = 64;
    r.simulated_gpus = {0, 8};
    CHECK(results::simulated_note(r) ==
          "one GPU per pipeline rank (tensor-parallel rank 0 of data-parallel replica 0): 2 of 64 "
          "GPUs; tensor-parallel peers and data-parallel replicas do the same work");
}
