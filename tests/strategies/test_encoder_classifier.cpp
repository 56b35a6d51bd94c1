// An encoder with a classification head (BERT as Hugging Face's AutoModelForSequenceClassification
// loads it), torch.cuda.amp's autocast and a single process's CUDA context (issue 35): the
// parameter count in closed form, the activations of one layer item by item, the model
// states, the device total and the errors of the new keys.
#include "model_test_util.h"

#include "base/error.h"
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
using namespace clustersim::strategies::models;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// bert-large-uncased with its classification head, one V100-SXM2-16GB, AdamW.
Settings bert(int micro, const std::string& dtype, bool autocast) {
    Settings s{{"model.extends", "bert-large-uncased"},
               {"training.global_batch", std::to_string(micro)},
               {"training.micro_batch", std::to_string(micro)},
               {"training.optimizer", "adamw"},
               {"training.dtype", dtype},
               {"training.masked_softmax_fusion", "false"},
               {"training.bias_activation_fusion", "false"}};
    if (autocast)
        s.emplace_back("training.autocast", "true");
    return s;
}

parallel::StepResult step(const Settings& s, const char* preset = "v100-sxm2-16gb") {
    parallel::StepOptions o;
    o.oom_advice = false;
    return parallel::simulate_step(
        parallel::make_experiment(parallel::load_platform(preset), 1, s, "bert"), o);
}

std::string experiment_error(const Settings& s) {
    try {
        (void)parallel::make_experiment(parallel::load_platform("v100-sxm2-16gb"), 1, s, "bert");
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

// bert-large-uncased: h 1024, 16 heads, f 4096, s 512, 24 layers, V 30522, 2 token types.
constexpr std::int64_t h = 1024, f = 4096, s = 512, a = 16, V = 30522;

} // namespace

TEST_CASE("encoder classifier: bert-large-uncased's parameters in closed form",
          "[models][params][encoder]") {
    const ModelSpec m = load_model("bert-large-uncased");
    CHECK_FALSE(m.causal);
    CHECK(m.head == ModelHead::classification);
    const ParameterCounts c = parameter_counts(m);
    // Embeddings: words, positions, token types; the embeddings' LayerNorm.
    CHECK(c.embedding == V * h + s * h + 2 * h);
    CHECK(c.final_norm == 2 * h);
    // A layer: query, key, value and output projections with biases, two LayerNorms, the MLP.
    const std::int64_t layer = 4 * (h * h + h) + 2 * 2 * h + (h * f + f) + (f * h + h);
    CHECK(c.per_layer == layer);
    CHECK(layer == 12'596'224);
    // The pooler (dense h -> h) and the classifier (h -> 2), with biases.
    CHECK(c.head == (h * h + h) + (h * 2 + 2));
    CHECK(c.total == 335'143'938);
    // The step's pieces hold the same parameters (no vocabulary padding).
    hardware::ComputeModel cm(hardware::load_hardware("v100-sxm2-16gb"));
    LayerConfig cfg;
    cfg.dtype = hardware::Dtype::fp32;
    CHECK(embedding_work(m, cfg, cm).parameters + 24 * layer_work(m, cfg, cm).parameters +
              head_work(m, cfg, cm).parameters ==
          c.total);
    // The head's forward is the pooler and the classifier on one token per sample.
    CHECK(head_forward_flops(m) == 2.0 * h * (h + 2));
    // Bidirectional: every attention score counts (nothing halved for a causal mask).
    CHECK(causal_model_flops_per_iteration(m, 4) == model_flops_per_iteration(m, 4, false));
}

TEST_CASE("encoder classifier: one layer's activations, fp32 and under autocast",
          "[models][memory][encoder]") {
    const ModelSpec m = load_model("bert-large-uncased");
    hardware::ComputeModel cm(hardware::load_hardware("v100-sxm2-16gb"));
    const std::int64_t b = 4, sbh = s * b * h, as2b = a * s * s * b;
    // fp32: Korthikanti et al.'s items at 4 bytes (the masks at 1): the norm inputs, the
    // QKV input and outputs, the context, the MLP input, GeLU's input and output (4h each);
    // the softmax output, the dropout's mask and output.
    LayerConfig fp32;
    fp32.micro_batch = static_cast<int>(b);
    fp32.dtype = hardware::Dtype::fp32;
    CHECK(layer_work(m, fp32, cm).activation_bytes == 66 * sbh + 9 * as2b);
    // Autocast: the norm inputs in fp32 (8), three 16-bit casts of the attention's input
    // (6), the 16-bit queries, keys, values and context (8), the MLP input's cast (2),
    // GeLU's 16-bit input and output (16), the masks (2); the fp32 softmax output, the mask
    // and the 16-bit copy of the dropped probabilities (7).
    LayerConfig amp = fp32;
    amp.dtype = hardware::Dtype::fp16;
    amp.autocast = true;
    CHECK(layer_work(m, amp, cm).activation_bytes == 42 * sbh + 7 * as2b);
    // Full recompute (Hugging Face's gradient checkpointing) keeps the fp32 layer input.
    amp.recompute = Recompute::full;
    CHECK(layer_work(m, amp, cm).activation_bytes == 4 * sbh);
    // The head keeps the last layer's output through the pooler's view in fp32, its
    // 16-bit [CLS] copy under autocast.
    CHECK(head_work(m, fp32, cm).activation_bytes == 4 * sbh + b * h * 9 + 4 * b * 2);
    amp.recompute = Recompute::none;
    CHECK(head_work(m, amp, cm).activation_bytes == 2 * b * h + b * h * 5 + 4 * b * 2);
}

TEST_CASE("encoder classifier: model states and the device's total on one GPU",
          "[strategies][memory][encoder]") {
    const std::int64_t P = 335'143'938;
    const std::int64_t layers = 24 * std::int64_t{12'596'224};
    const auto fp32 = step(bert(4, "fp32", false));
    REQUIRE(fp32.memory.size() == 1);
    CHECK(fp32.memory[0].weights_bytes == 4 * P);
    CHECK(fp32.memory[0].grads_bytes == 4 * P);
    CHECK(fp32.memory[0].optimizer_bytes == 8 * P);
    // Autocast: the same fp32 model, plus the weights' 16-bit casts of the forward.
    const auto amp = step(bert(4, "fp16", true));
    CHECK(amp.memory[0].weights_bytes == 4 * P + 2 * layers);
    CHECK(amp.memory[0].grads_bytes == 4 * P);
    CHECK(amp.memory[0].optimizer_bytes == 8 * P);
    // One GPU: the device holds the CUDA context Hugging Face's guide measured, not the
    // preset's runtime_memory with NCCL's buffers.
    CHECK(fp32.memory[0].runtime_bytes == 1343 * (std::int64_t{1} << 20));
    CHECK(fp32.device_bytes_max == fp32.peak_reserved_bytes_max + fp32.memory[0].runtime_bytes);
    // Without context_memory (dgx2-v100) one GPU counts runtime_memory.
    CHECK(step(bert(1, "fp32", false), "dgx2-v100").memory[0].runtime_bytes ==
          2 * (std::int64_t{1} << 30));
    // The guide's capacity: 16160 MiB as nvidia-smi reports it.
    CHECK(fp32.capacity_bytes == 16160 * (std::int64_t{1} << 20));
}

TEST_CASE("encoder classifier: bad keys are refused with what to do", "[models][encoder][errors]") {
    const std::string base = "kind: transformer\nlayers: 2\nhidden: 64\nheads: 4\nseq: 32\n"
                             "vocab: 1000\n";
    CHECK_THAT(load_error(base + "head: pooler\n"), Catch::Contains("model.yaml:7") &&
                                                        Catch::Contains("head") &&
                                                        Catch::Contains("classification"));
    CHECK_THAT(load_error(base + "num_labels: 3\n"), Catch::Contains("model.yaml:7") &&
                                                         Catch::Contains("'num_labels'") &&
                                                         Catch::Contains("head: classification"));
    CHECK_THAT(load_error(base + "head: classification\nnum_labels: 0\n"),
               Catch::Contains("num_labels"));
    CHECK_THAT(load_error(base + "type_vocab_size: -1\n"), Catch::Contains("type_vocab_size"));
    CHECK_THAT(load_error(base + "causal: sometimes\n"), Catch::Contains("causal"));
    CHECK(load_error(base + "head: classification\nnum_labels: 3\ncausal: false\n") ==
          "(no error)");
    // Autocast casts to a 16-bit dtype from fp32 weights.
    CHECK_THAT(experiment_error(bert(1, "fp32", true)),
               Catch::Contains("autocast") && Catch::Contains("fp16 or bf16"));
    Settings pure = bert(1, "fp16", true);
    pure.emplace_back("training.master_weights", "false");
    CHECK_THAT(experiment_error(pure), Catch::Contains("master_weights true"));
    // Modelled for BERT's layer on one GPU: a Llama layer or a second GPU is refused, naming
    // what differs.
    Settings swiglu = bert(1, "fp16", true);
    swiglu.emplace_back("model.activation", "swiglu");
    CHECK_THAT(experiment_error(swiglu),
               Catch::Contains("SwiGLU") && Catch::Contains("training.autocast"));
    Settings rms = bert(1, "fp16", true);
    rms.emplace_back("model.norm", "rmsnorm");
    CHECK_THAT(experiment_error(rms), Catch::Contains("RMSNorm"));
    std::string two = "(no error)";
    Settings pair = bert(1, "fp16", true);
    pair.emplace_back("training.global_batch", "2");
    try {
        (void)parallel::make_experiment(parallel::load_platform("v100-sxm2-16gb"), 2, pair, "bert");
    } catch (const InputError& e) {
        two = e.what();
    }
    CHECK_THAT(two, Catch::Contains("more than one GPU"));
}
