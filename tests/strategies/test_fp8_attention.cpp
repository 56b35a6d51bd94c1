// Transformer Engine's FP8 attention (training.fp8_dot_product_attention): the fused attention
// kernel in fp8 at the GPU's measured rates, Q, K and V quantized before it and the output
// gradient before its backward, checked in closed form on a Llama-like layer on a GB200; the
// GEMMs untouched; refused where Transformer Engine has no backend for it.
#include "layer_work_test_util.h"

#include "base/error.h"
#include "hardware/compute_model.h"
#include "strategies/models/layer_work.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"

#include "support/llama_settings.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using clustersim::strategies::models::Fp8Recipe;
using clustersim::strategies::models::LayerConfig;
using clustersim::strategies::models::LayerWork;
using hardware::AttentionScaling;
using hardware::ComputeModel;
using hardware::Dtype;
using layer_work_test::op_named;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// The Llama-like model (32 query and 8 key/value heads of 128, 4,096 tokens) in FP8 on 8
/// GPUs of `preset`, with `extra` settings.
ExperimentSpec llama(const std::string& preset, const std::string& recipe, Settings extra) {
    Settings s = test::llama_model_settings(2);
    s.insert(s.end(), {{"training.dtype", "fp8"},
                       {"training.fp8_recipe", recipe},
                       {"training.optimizer", "adamw"},
                       {"training.global_batch", "8"},
                       {"training.micro_batch", "1"},
                       {"parallel.dp", "8"}});
    s.insert(s.end(), extra.begin(), extra.end());
    return make_experiment(load_platform(preset), 8, s, "fp8-attention-test");
}

/// The message of the InputError that building `preset`'s experiment throws ("" if none).
std::string refusal(const std::string& preset, const std::string& recipe, Settings extra) {
    try {
        llama(preset, recipe, std::move(extra));
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("FP8 attention: the kernel in fp8, Q, K, V and dO quantized around it",
          "[strategies][fp8][attention]") {
    for (const auto& [recipe, scaling] : {std::pair{"mxfp8", AttentionScaling::mxfp8},
                                          std::pair{"current", AttentionScaling::per_tensor}}) {
        INFO(recipe);
        const ExperimentSpec e =
            llama("gb200-nvl72", recipe, {{"training.fp8_dot_product_attention", "true"}});
        REQUIRE(e.training.fp8_dot_product_attention);
        const ComputeModel cm(e.cluster);
        LayerConfig cfg;
        cfg.dtype = Dtype::fp8;
        cfg.fp8_recipe = e.training.fp8_recipe;
        const LayerWork bf16_attn = layer_work(e.model, cfg, cm);
        cfg.fp8_dot_product_attention = true;
        const LayerWork fp8_attn = layer_work(e.model, cfg, cm);
        // 32 heads of 128 over 4,096 tokens, causal, at the fp8 rates with the recipe's scaling.
        const std::int64_t bh = 32, s = 4096, d = 128;
        for (bool backward : {false, true}) {
            const auto& pass = backward ? fp8_attn.backward : fp8_attn.forward;
            const auto& op = op_named(pass, backward ? "attention.flash.bwd" : "attention.flash");
            CHECK(op.time == cm.fused_attention(bh, s, d, Dtype::fp8, true, backward, 0, scaling));
            const auto& base = op_named(backward ? bf16_attn.backward : bf16_attn.forward,
                                        backward ? "attention.flash.bwd" : "attention.flash");
            CHECK(base.time == cm.fused_attention(bh, s, d, Dtype::bf16, true, backward));
            CHECK(op.time < base.time);
        }
        // Forward: Q (32 heads) and K, V (8 heads each) of 4,096 x 128, bf16 in; backward: dO
        // (the queries' shape). MXFP8: one kernel writing both copies with a scale per 32;
        // current scaling: an amax pass and the cast.
        const std::int64_t q = s * 32 * d, kv = s * 8 * d;
        // (the recipe's name copied: clang before 16 refuses a structured binding in a lambda)
        const bool mx = std::string(recipe) == "mxfp8";
        const auto bytes = [mx](std::int64_t n) {
            return mx ? n * 2 + n * 66 / 32 : n * 2 + n * 3;
        };
        CHECK(op_named(fp8_attn.forward, "attention.flash.quantize").bytes == bytes(q + 2 * kv));
        CHECK(op_named(fp8_attn.backward, "attention.flash.quantize.bwd").bytes == bytes(q));
        // The linear layers' GEMMs are the same either way: the pass changes by the attention
        // kernel and the quantization alone.
        const auto delta = [](const auto& a, const auto& b, const char* name) {
            return op_named(a, name).time - op_named(b, name).time;
        };
        const std::string q_name = "attention.flash.quantize";
        CHECK(fp8_attn.forward.time - bf16_attn.forward.time ==
              delta(fp8_attn.forward, bf16_attn.forward, "attention.flash") +
                  op_named(fp8_attn.forward, q_name).time);
        CHECK(fp8_attn.backward.time - bf16_attn.backward.time ==
              delta(fp8_attn.backward, bf16_attn.backward, "attention.flash.bwd") +
                  op_named(fp8_attn.backward, q_name + ".bwd").time);
    }
}

TEST_CASE("FP8 attention: refused where Transformer Engine runs none",
          "[strategies][fp8][attention][errors]") {
    const Settings on{{"training.fp8_dot_product_attention", "true"}};
    SECTION("without FP8") {
        Settings s = on;
        s.push_back({"training.dtype", "bf16"});
        const std::string msg = refusal("gb200-nvl72", "delayed", s);
        CHECK(msg.find("fp8_dot_product_attention is") != std::string::npos);
        CHECK(msg.find("needs training.dtype fp8") != std::string::npos);
    }
    SECTION("NVFP4: no attention backend for its recipe") {
        Settings s = on;
        s.push_back({"training.dtype", "fp4"});
        CHECK(refusal("gb200-nvl72", "delayed", s).find("NVFP4") != std::string::npos);
    }
    SECTION("torchao's tensorwise recipe") {
        CHECK(refusal("gb200-nvl72", "tensorwise", on).find("torchao") != std::string::npos);
    }
    SECTION("unfused attention") {
        Settings s = on;
        s.push_back({"model.attention", "unfused"});
        CHECK(refusal("gb200-nvl72", "mxfp8", s).find("model.attention: flash") !=
              std::string::npos);
    }
    SECTION("current scaling before Blackwell") {
        CHECK(refusal("dgx-h100", "current", on).find("Blackwell") != std::string::npos);
    }
    SECTION("a GPU whose file has no measured FP8 attention") {
        const std::string msg = refusal("dgx-h100", "delayed", on);
        CHECK(msg.find("fp8_backward_scores_per_sm_clock") != std::string::npos);
    }
    SECTION("Blackwell with every recipe Transformer Engine runs it under") {
        for (const char* recipe : {"delayed", "current", "mxfp8"})
            CHECK(refusal("dgx-b200", recipe, on).empty());
    }
}
