// torchtune's single-device memory features (pure bf16, optimizer_in_bwd, activation
// offloading, 8-bit AdamW): what each changes in a step's allocated peak, in closed form where
// the model's accounting gives one, and the combinations torchtune refuses.
#include "strategies/models/memory_formulas.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/training_step.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// Llama 3.2 3B's shape (tied embeddings) on one A100, batch 2 of 4,096 tokens, full
/// recompute, pure bf16: torchtune's README table's recipe.
Settings base() {
    return {{"model.kind", "transformer"},
            {"model.layers", "28"},
            {"model.hidden", "3072"},
            {"model.heads", "24"},
            {"model.kv_heads", "8"},
            {"model.ffn", "8192"},
            {"model.seq", "4096"},
            {"model.vocab", "128256"},
            {"model.attention", "flash"},
            {"model.activation", "swiglu"},
            {"model.norm", "rmsnorm"},
            {"model.position_embedding", "rope"},
            {"model.tied_embeddings", "true"},
            {"model.bias", "false"},
            {"model.dropout", "0"},
            {"training.global_batch", "2"},
            {"training.micro_batch", "2"},
            {"training.dtype", "bf16"},
            {"training.optimizer", "adamw"},
            {"training.compile", "true"},
            {"training.cross_entropy", "chunked"},
            {"parallel.recompute", "full"}};
}

parallel::ExperimentSpec experiment(Settings extra, int gpus = 1) {
    Settings s = base();
    for (auto& kv : extra)
        s.push_back(kv);
    return parallel::make_experiment(parallel::load_platform("dgx-a100"), gpus, s, "torchtune");
}

parallel::StepResult step(Settings extra) {
    parallel::StepOptions o;
    o.oom_advice = false;
    return parallel::simulate_step(experiment(std::move(extra)), o);
}

} // namespace

TEST_CASE("torchtune: pure bf16 holds 8 bytes per parameter, the gradients only in the backward",
          "[strategies][memory]") {
    const auto mixed = step({});
    const auto pure = step({{"training.master_weights", "false"}});
    REQUIRE(pure.memory.size() == 1);
    const auto& m = pure.memory[0];
    const std::int64_t p = 3'212'749'824;
    CHECK(m.weights_bytes == 2 * p);
    CHECK(m.grads_bytes == 2 * p);
    CHECK(m.optimizer_bytes == 4 * p);
    // Mixed precision keeps the fp32 master copy and moments (12 bytes) and fp32 gradients.
    CHECK(mixed.memory[0].optimizer_bytes == 12 * p);
    // With full recompute the peak is the backward's end: every gradient, and the embedding
    // backward's gradient of the tied matrix before it is added into the output layer's; the
    // activations' peak with the head's gradient is lower.
    const std::int64_t tied = std::int64_t{128256} * 3072 * 2;
    CHECK(m.peak_bytes == 8 * p + tied);
    CHECK(m.activations_bytes + tied < m.grads_bytes);
}

TEST_CASE("torchtune: optimizer_in_bwd holds the embedding's gradient and one layer matrix's",
          "[strategies][memory]") {
    const auto pure = step({{"training.master_weights", "false"}});
    const auto inbwd =
        step({{"training.master_weights", "false"}, {"training.optimizer_in_bwd", "true"}});
    const auto& m = inbwd.memory[0];
    const std::int64_t embedding = std::int64_t{128256} * 3072 * 2;
    CHECK(m.grads_bytes == embedding + std::int64_t{3072} * 8192 * 2);
    // The peak: the activations at the backward's start (the loss's gradients among them),
    // or the kept ones beside the embedding's gradient, or the gradients held at the end with
    // the embedding backward's gradient of the tied matrix (2 bytes an element, as the held
    // ones) before AccumulateGrad adds it in.
    CHECK(m.peak_bytes <= m.weights_bytes + m.optimizer_bytes +
                              std::max(m.activations_bytes, m.grads_bytes) + embedding);
    CHECK(m.peak_bytes >= m.weights_bytes + m.optimizer_bytes +
                              std::max(m.activations_bytes, m.grads_bytes + embedding));
    CHECK(m.peak_bytes < pure.memory[0].peak_bytes);
}

TEST_CASE("torchtune: activation offloading keeps 5 layer inputs on the GPU",
          "[strategies][memory]") {
    const Settings pure{{"training.master_weights", "false"},
                        {"training.optimizer_in_bwd", "true"}};
    Settings off = pure;
    off.emplace_back("training.activation_offloading", "true");
    const auto kept = step(pure).memory[0].activations_bytes;
    const auto offloaded = step(off).memory[0].activations_bytes;
    // Each layer keeps its input (b s h bf16) under full recompute; 23 of the 28 go to the
    // host (max_fwd_stash_size 5).
    CHECK(kept - offloaded == 23 * std::int64_t{2} * 4096 * 3072 * 2);
}

TEST_CASE("torchtune: 8-bit AdamW's state in a step", "[strategies][memory]") {
    const auto m =
        step({{"training.master_weights", "false"}, {"training.optimizer", "adamw8bit"}}).memory[0];
    CHECK(m.optimizer_bytes == models::adam8bit_state_bytes(3'212'749'824));
}

TEST_CASE("torchtune: the combinations it refuses", "[strategies][memory]") {
    using test::input_error_of;
    CHECK_THAT(
        input_error_of([] {
            experiment({{"training.optimizer_in_bwd", "true"}, {"training.global_batch", "4"}});
        }),
        Catch::Contains("gradient_accumulation_steps=1"));
    CHECK_THAT(
        input_error_of([] {
            experiment({{"training.optimizer_in_bwd", "true"}, {"training.global_batch", "16"}}, 8);
        }),
        Catch::Contains("one GPU"));
    CHECK_THAT(input_error_of([] {
                   experiment({{"training.activation_offloading", "true"},
                               {"parallel.recompute", "none"}});
               }),
               Catch::Contains("enable_activation_checkpointing"));
    CHECK_THAT(input_error_of([] {
                   experiment({{"training.master_weights", "false"}, {"training.dtype", "fp32"}});
               }),
               Catch::Contains("master_weights"));
    CHECK_THAT(input_error_of([] {
                   experiment({{"training.cross_entropy", "eager"},
                               {"training.cross_entropy_chunks", "4"}});
               }),
               Catch::Contains("cross_entropy: chunked"));
}
