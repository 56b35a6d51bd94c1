// torchao's FSDP float8 all-gather (TrainingSpec::fp8_fsdp_all_gather): the layers' linear
// weights (Float8Linear's) gathered and held in FP8, one byte each, their norms, the embedding
// and the output layer in bf16; checked in closed form on FSDP2's gathered bytes with and
// without a pipeline, on the gathers' time (the bytes they move), and refused without FP8 or
// FSDP2.
#include "base/error.h"
#include "hardware/hardware_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/param_gathers.h"
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

/// The Float8Linear weights of one layer of `e`'s Llama-like model per tensor-parallel rank:
/// wq (h x h), wk and wv (h x kv), wo (h x h), w1 and w3 (h x ffn), w2 (ffn x h).
std::int64_t linear_weights(const ExperimentSpec& e) {
    const std::int64_t h = e.model.hidden;
    const std::int64_t kv = h / e.model.heads * e.model.kv_heads;
    return (2 * h * h + 2 * h * kv + 3 * h * std::int64_t{e.model.ffn}) / e.parallel.tp;
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
        const std::int64_t f8_layer = linear_weights(on_e);
        REQUIRE(detail::float8_gathered_weights(on_e.model, 1, false) == f8_layer);
        for (int vs = 0; vs < 2; ++vs) {
            INFO("stage " << vs);
            const VirtualStagePlan& a = off_plan.stage(vs);
            const VirtualStagePlan& b = on_plan.stage(vs);
            REQUIRE(b.parameters == a.parameters);
            REQUIRE(b.layer_parameters > 0);
            // A layer's parameters beyond its linear weights: its two RMSNorm weights.
            REQUIRE(b.layer_parameters - b.layers * f8_layer ==
                    b.layers * 2 * std::int64_t{on_e.model.hidden});
            const std::int64_t f8 = b.layers * f8_layer;
            CHECK(a.step_gathered_bytes == 2 * a.parameters);
            CHECK(b.step_gathered_bytes == f8 + 2 * (b.parameters - f8));
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
        const std::int64_t f8_layer = linear_weights(on_e);
        // Two layers' linear weights less by one byte each, in both passes (their norms stay
        // bf16); the backward's layer gradients (bf16 and the fp32 reduce-scatter input) as
        // before.
        CHECK(a.forward_gather_bytes - b.forward_gather_bytes == 2 * f8_layer);
        CHECK(a.backward_gather_bytes - b.backward_gather_bytes == 2 * f8_layer);
        CHECK(a.gathered_bytes - b.gathered_bytes == b.layers * f8_layer);
    }
    SECTION("the gathers move the bytes they hold: a layer's in FP8 about half its bf16 time") {
        // FSDP2 without a pipeline gathers each layer in the backward (3 of 4 here, the last
        // kept from its forward): one layer more is one more layer's gather. Its time is a
        // latency and the bytes over the bandwidth, so with the bytes halved and more
        // (bf16: 2 per parameter; FP8: 1 per linear weight, 2 per norm weight) the time falls
        // to their ratio plus the latency's share; it stays well above the ratio's half.
        auto one_layer = [](bool on) {
            Settings s{{"parallel.dp", "8"}};
            if (on)
                s.push_back({"training.fp8_fsdp_all_gather", "true"});
            Settings s5 = s;
            s5.push_back({"model.layers", "5"});
            const ExperimentSpec e4 = llama(s);
            const ExperimentSpec e5 = llama(s5);
            return plan_of(e5).stage(0).backward.param_gather.seconds() -
                   plan_of(e4).stage(0).backward.param_gather.seconds();
        };
        const ExperimentSpec e = llama({{"parallel.dp", "8"}});
        const std::int64_t layer = e.model.hidden * 2 + linear_weights(e);
        const double ratio =
            static_cast<double>(2 * layer - linear_weights(e)) / static_cast<double>(2 * layer);
        const double off = one_layer(false);
        const double on = one_layer(true);
        REQUIRE(off > 0);
        CHECK(on / off >= ratio);
        CHECK(on / off < ratio * 1.1);
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
