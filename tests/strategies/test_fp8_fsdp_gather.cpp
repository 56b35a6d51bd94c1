// torchao's FSDP float8 all-gather (TrainingSpec::fp8_fsdp_all_gather): the layers' weights
// gathered and held in FP8, one byte each, the embedding and the output layer in bf16; checked
// in closed form on FSDP2's gathered bytes with and without a pipeline, and refused without FP8
// or FSDP2.
#include "base/error.h"
#include "hardware/hardware_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"

#include "support/llama_settings.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// A Llama-like model of 4 layers on one DGX H100 node, FP8 as torchao's tensorwise recipe
/// (bf16 without `fp8`), FSDP2 over the data-parallel ranks.
ExperimentSpec llama(Settings extra, bool fp8 = true) {
    Settings s = test::llama_model_settings(4);
    s.insert(s.end(), {{"model.tied_embeddings", "false"},
                       {"training.dtype", fp8 ? "fp8" : "bf16"},
                       {"training.optimizer", "adamw"},
                       {"training.compile", "true"},
                       {"training.global_batch", "8"},
                       {"training.micro_batch", "1"},
                       {"parallel.fsdp", "true"}});
    if (fp8)
        s.push_back({"training.fp8_recipe", "tensorwise"});
    for (auto& kv : extra)
        s.push_back(kv);
    return make_experiment(load_platform("dgx-h100"), 8, s, "fp8-fsdp-gather-test");
}

/// The plan of `e`, which must outlive it (StepPlan::experiment points to it).
StepPlan plan_of(const ExperimentSpec& e) {
    return build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
}

} // namespace

TEST_CASE("FP8 all-gather: FSDP2's gathered layer weights one byte each, the rest bf16",
          "[strategies][zero][fsdp2][fp8][memory]") {
    SECTION("under a pipeline: each chunk held gathered for the step") {
        const Settings pp{{"parallel.pp", "2"}, {"parallel.dp", "4"}};
        Settings on = pp;
        on.push_back({"training.fp8_fsdp_all_gather", "true"});
        const ExperimentSpec off_e = llama(pp);
        const ExperimentSpec on_e = llama(on);
        const StepPlan off_plan = plan_of(off_e);
        const StepPlan on_plan = plan_of(on_e);
        // The reduce dtype's bytes: torchtitan's float32 (the preset's fp32 gradient reduction).
        const std::int64_t g = on_e.framework.fp32_grad_reduce ? 4 : 2;
        for (int vs = 0; vs < 2; ++vs) {
            INFO("stage " << vs);
            const VirtualStagePlan& a = off_plan.stage(vs);
            const VirtualStagePlan& b = on_plan.stage(vs);
            REQUIRE(b.parameters == a.parameters);
            REQUIRE(b.layer_parameters > 0);
            CHECK(a.step_gathered_bytes == 2 * a.parameters);
            CHECK(b.step_gathered_bytes ==
                  b.layer_parameters + 2 * (b.parameters - b.layer_parameters));
            // The gradients stay unsharded in fp32 either way.
            CHECK(b.step_grad_bytes == g * b.parameters);
            CHECK(b.step_grad_bytes == a.step_grad_bytes);
        }
    }
    SECTION("without a pipeline: the two layers gathered at a time in FP8, the root in bf16") {
        const Settings dp{{"parallel.dp", "8"}};
        Settings on = dp;
        on.push_back({"training.fp8_fsdp_all_gather", "true"});
        const ExperimentSpec off_e = llama(dp);
        const ExperimentSpec on_e = llama(on);
        const VirtualStagePlan a = plan_of(off_e).stage(0);
        const VirtualStagePlan b = plan_of(on_e).stage(0);
        const std::int64_t layer = b.layer_parameters / b.layers;
        // Two layers less by one byte each per parameter, in both passes; the backward's
        // layer gradients (bf16 and the fp32 reduce-scatter input) as before.
        CHECK(a.forward_gather_bytes - b.forward_gather_bytes == 2 * layer);
        CHECK(a.backward_gather_bytes - b.backward_gather_bytes == 2 * layer);
    }
    SECTION("refused without FP8 or FSDP2") {
        const auto refusal = [](Settings s, bool fp8) {
            try {
                (void)llama(std::move(s), fp8);
            } catch (const InputError& e) {
                return std::string(e.what());
            }
            return std::string();
        };
        const std::string why = "fp8_fsdp_all_gather is torchao's FP8 all-gather";
        CHECK_THAT(refusal({{"parallel.dp", "8"}, {"training.fp8_fsdp_all_gather", "true"}}, false),
                   Catch::Contains(why));
        CHECK_THAT(refusal({{"parallel.dp", "8"},
                            {"training.fp8_fsdp_all_gather", "true"},
                            {"parallel.fsdp", "false"},
                            {"parallel.zero", "1"}},
                           true),
                   Catch::Contains(why));
        // FSDP over the context-parallel ranks alone (dp 1, cp 8): torchtitan leaves it off.
        CHECK_THAT(refusal({{"parallel.dp", "1"},
                            {"parallel.cp", "8"},
                            {"training.fp8_fsdp_all_gather", "true"}},
                           true),
                   Catch::Contains("shard group of more than one GPU"));
    }
}
