// What the loss's cross-entropy holds around the head's backward (models::CrossEntropy) and what
// torchtitan's op-level selective checkpointing keeps per block, in closed form, and their
// effect on a step's allocated and reserved peaks.
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies;
using models::CrossEntropy;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

const hardware::ComputeModel& h100() {
    static const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    return cm;
}

models::LayerConfig layer(int b, CrossEntropy ce, hardware::Dtype d = hardware::Dtype::bf16) {
    models::LayerConfig c;
    c.micro_batch = b;
    c.dtype = d;
    c.cross_entropy = ce;
    return c;
}

parallel::StepResult step(Settings extra) {
    Settings s{{"model", "llama3-8B"},
               {"training.dtype", "bf16"},
               {"training.micro_batch", "1"},
               {"training.global_batch", "8"},
               {"parallel.dp", "8"}};
    for (auto& kv : extra)
        s.push_back(kv);
    parallel::StepOptions o;
    o.oom_advice = false;
    return parallel::simulate_step(
        parallel::make_experiment(parallel::load_platform("dgx-h100"), 8, s, "loss-memory"), o);
}

} // namespace

TEST_CASE("cross-entropy: the logits' fp32 copies an eager loss holds, in closed form",
          "[models][memory]") {
    const models::ModelSpec m = models::load_model("llama3-8B");
    const std::int64_t T = 2 * std::int64_t{m.seq};
    const std::int64_t logits = T * models::padded_vocab(m, 1);
    const auto fused = models::head_work(m, layer(2, CrossEntropy::fused), h100());
    const auto eager = models::head_work(m, layer(2, CrossEntropy::eager), h100());
    const auto compiled = models::head_work(m, layer(2, CrossEntropy::compiled), h100());
    // The final norm's input and output beside the logits' memory.
    const std::int64_t norm = 2 * T * m.hidden * 2;
    // Megatron's fused loss: the fp32 softmax kept, its gradient in place.
    CHECK(fused.activation_bytes == norm + 4 * logits);
    CHECK(fused.recomputed_activation_bytes == 0);
    CHECK(fused.cached_bytes == 0);
    // Eager: log_softmax's fp32 output kept; nll_loss's and log_softmax's fp32 gradients at the
    // backward's start (12 bytes per logit at once); the bf16 logits' block cached unused.
    CHECK(eager.activation_bytes == norm + 4 * logits);
    CHECK(eager.recomputed_activation_bytes == 8 * logits);
    CHECK(eager.cached_bytes == 2 * logits);
    // Compiled: the bf16 logits kept with the max and log-sum-exp per token, the bf16 gradient.
    CHECK(compiled.activation_bytes == norm + 2 * logits + 8 * T);
    CHECK(compiled.recomputed_activation_bytes == 2 * logits);
    CHECK(compiled.cached_bytes == 0);
    // fp32 training: nll_loss's gradient reuses the freed logits' block.
    const auto fp32 =
        models::head_work(m, layer(2, CrossEntropy::eager, hardware::Dtype::fp32), h100());
    CHECK(fp32.cached_bytes == 0);
    CHECK(fp32.recomputed_activation_bytes == 8 * logits);
    // Under torchtitan's loss_parallel (DTensor, tp 8): the vocabulary-sharded logits; one
    // handler's zeros, exp(x) and their sum beside the saved output: 16 bytes per logit at
    // the backward's start. The output layer saves its gathered input.
    auto tp = layer(2, CrossEntropy::eager);
    tp.tp = 8;
    tp.sequence_parallel = true;
    tp.dtensor_tp = true;
    const auto parallel = models::head_work(m, tp, h100());
    const std::int64_t local = T * (models::padded_vocab(m, 8) / 8);
    CHECK(parallel.recomputed_activation_bytes == 12 * local);
    CHECK(parallel.activation_bytes == (T * m.hidden / 8 + T * m.hidden) * 2 + 4 * local);
    tp.dtensor_tp = false; // Megatron's linears keep the input sharded
    CHECK(models::head_work(m, tp, h100()).activation_bytes ==
          2 * T * m.hidden / 8 * 2 + 4 * local);
    // The kernels are the fused loss's whatever the choice: the step time does not move.
    CHECK(eager.forward.time == fused.forward.time);
    CHECK(compiled.backward.time == fused.backward.time);
}

TEST_CASE("cross-entropy: torchtune's losses, the model-upcast logits and the chunked one",
          "[models][memory]") {
    const models::ModelSpec m = models::load_model("llama3-8B");
    const std::int64_t T = 2 * std::int64_t{m.seq};
    const std::int64_t logits = T * models::padded_vocab(m, 1);
    const std::int64_t norm = 2 * T * m.hidden * 2;
    // The compiled loss on the fp32 logits the model upcast: they are its saved input, and its
    // backward writes an fp32 gradient: 8 bytes per logit at once; the bf16 block cached.
    const auto fp32 = models::head_work(m, layer(2, CrossEntropy::compiled_fp32), h100());
    CHECK(fp32.activation_bytes == norm + 4 * logits + 8 * T);
    CHECK(fp32.recomputed_activation_bytes == 4 * logits);
    CHECK(fp32.cached_bytes == 2 * logits);
    // CEWithChunkedOutputLoss, 8 slices, compiled: the bf16 logits kept (each slice's), one
    // slice's bf16 gradient at a time.
    auto cfg = layer(2, CrossEntropy::chunked);
    cfg.compile = true;
    const auto chunked = models::head_work(m, cfg, h100());
    CHECK(chunked.activation_bytes == norm + 2 * logits + 8 * T);
    CHECK(chunked.recomputed_activation_bytes == 2 * (logits / 8));
    // Eager: each slice's fp32 log_softmax kept; one slice's two fp32 gradients and its bf16
    // one at a time: an eighth of the unchunked eager loss's 8 bytes per logit, plus 2.
    cfg.compile = false;
    const auto eager_chunked = models::head_work(m, cfg, h100());
    CHECK(eager_chunked.activation_bytes == norm + 4 * logits);
    CHECK(eager_chunked.recomputed_activation_bytes == 10 * (logits / 8));
    // More slices, less at once.
    cfg.cross_entropy_chunks = 16;
    CHECK(models::head_work(m, cfg, h100()).recomputed_activation_bytes == 10 * (logits / 16));
}

TEST_CASE("cross-entropy: an eager loss's gradients on top of every activation, its logits "
          "reserved",
          "[parallel][memory]") {
    const models::ModelSpec m = models::load_model("llama3-8B");
    const std::int64_t logits = std::int64_t{m.seq} * models::padded_vocab(m, 1);
    const auto fused = step({});
    const auto eager = step({{"training.cross_entropy", "eager"}});
    const auto compiled = step({{"training.cross_entropy", "compiled"}});
    REQUIRE(fused.memory.size() == 1);
    // No recompute: the layers re-materialise nothing, so the head's backward is the peak.
    CHECK(eager.memory[0].activations_bytes - fused.memory[0].activations_bytes == 8 * logits);
    CHECK(eager.memory[0].reserved_bytes - eager.memory[0].peak_bytes ==
          fused.memory[0].reserved_bytes - fused.memory[0].peak_bytes + 2 * logits);
    // Compiled: 2 bytes per logit kept and 2 at the backward where the fused loss keeps 4, and
    // the max and log-sum-exp per token.
    CHECK(compiled.memory[0].activations_bytes - fused.memory[0].activations_bytes ==
          8 * std::int64_t{m.seq});
    CHECK(eager.step_time_s == fused.step_time_s);
}

TEST_CASE("torchtitan's op-level selective checkpointing keeps its policy's outputs per block",
          "[models][memory]") {
    const models::ModelSpec m = models::load_model("llama3-8B");
    auto cfg = layer(2, CrossEntropy::fused);
    cfg.recompute = models::Recompute::selective;
    cfg.selective_op = true;
    const auto sac = models::layer_work(m, cfg, h100());
    cfg.recompute = models::Recompute::none;
    const auto none = models::layer_work(m, cfg, h100());
    const std::int64_t T = 2 * std::int64_t{m.seq};
    const std::int64_t h = m.hidden;
    const std::int64_t kv = std::int64_t{m.kv_heads} * (h / m.heads);
    // Per token: the block's input and SDPA's output (bf16), the outputs of wq, wv, w1 and w2
    // (the 1st, 3rd, 5th and 7th aten.mm), SDPA's fp32 log-sum-exp per head.
    const std::int64_t per_token = 2 * (h + h + h + kv + m.ffn + h) + 4 * m.heads;
    CHECK(per_token == 63616);
    CHECK(sac.activation_bytes == T * per_token);
    // The rest is rerun in the block's backward and held only then.
    CHECK(sac.activation_bytes + sac.recomputed_activation_bytes == none.activation_bytes);
    // Float8: the policy sees torchao's matmuls as aten.mm and saves their 16-bit outputs.
    cfg.recompute = models::Recompute::selective;
    cfg.dtype = hardware::Dtype::fp8;
    cfg.fp8_recipe = models::Fp8Recipe::tensorwise;
    CHECK(models::layer_work(m, cfg, h100()).activation_bytes == T * per_token);
}
