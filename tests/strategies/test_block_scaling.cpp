// MXFP8 and NVFP4 training (strategies/models/fp8.h): Transformer Engine's block-scaled
// recipes against hand counts of their casts, their GEMM rates, what they hold in memory, and
// the refusal of a format the GPU's hardware file lacks.
#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "layer_work_test_util.h"
#include "strategies/models/fp8.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::strategies::models;
using hardware::ComputeModel;
using hardware::Dtype;
using layer_work_test::op_named;
namespace parallel = clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

const ComputeModel& b200() {
    static const ComputeModel cm(hardware::load_hardware("dgx-b200"));
    return cm;
}

LayerConfig layer_cfg(Dtype d, Fp8Recipe recipe = Fp8Recipe::delayed) {
    LayerConfig c;
    c.dtype = d;
    c.fp8_recipe = recipe;
    return c;
}

Settings llama8b(const std::string& dtype) {
    return {{"model", "llama3-8B"},
            {"model.layers", "4"},
            {"training.global_batch", "8"},
            {"training.micro_batch", "1"},
            {"training.dtype", dtype},
            {"parallel.tp", "8"},
            {"parallel.sequence_parallel", "true"}};
}

/// The refusal of `settings` on `platform`: its message and key.
std::pair<std::string, std::string> refusal(const parallel::Platform& platform,
                                            const Settings& settings) {
    try {
        parallel::make_experiment(platform, 8, settings, "refused");
    } catch (const InputError& e) {
        return {e.what(), e.where() ? std::string(e.where()->key) : std::string()};
    }
    return {"accepted", ""};
}

} // namespace

TEST_CASE("block scaling: the Blackwell presets list an fp4 peak and block-scaled tensor cores",
          "[strategies][fp8][nvfp4]") {
    // Dense NVFP4 peaks of NVIDIA's dgxc-benchmarking table, in TFLOP/s.
    for (auto [preset, fp4] : {std::pair{"dgx-b200", 9000.0}, std::pair{"gb200-nvl72", 9800.0},
                               std::pair{"dgx-b300", 13500.0}, std::pair{"gb300-nvl72", 14700.0}}) {
        const auto c = hardware::load_hardware(preset);
        INFO(preset);
        CHECK(c.node.gpu.peak(Dtype::fp4) == Approx(fp4 * 1e12));
        CHECK(c.node.gpu.block_scaling);
    }
    for (const char* preset : {"dgx-h100", "hgx-h200", "dgx-a100"}) {
        const auto c = hardware::load_hardware(preset);
        INFO(preset);
        CHECK_FALSE(c.node.gpu.supports(Dtype::fp4));
        CHECK_FALSE(c.node.gpu.block_scaling);
    }
    // fp4 is half a byte: a GEMM's operand bytes are half its fp8 ones; both write a bf16 C.
    const std::int64_t c_bytes = ComputeModel::gemm_output_bytes(8192, 4096, Dtype::fp4);
    CHECK(c_bytes == ComputeModel::gemm_output_bytes(8192, 4096, Dtype::bf16));
    CHECK((ComputeModel::gemm_bytes(8192, 4096, 1024, Dtype::fp4) - c_bytes) * 2 ==
          ComputeModel::gemm_bytes(8192, 4096, 1024, Dtype::fp8) - c_bytes);
    // On a B200 the fp4 peak is twice the fp8 one and the fp4 efficiency the fp8 one: a
    // compute-bound GEMM takes half the time, less the launch, the fill and the epilogue's
    // write of the same bf16 C that they share.
    const double epilogue =
        static_cast<double>(ComputeModel::gemm_output_bytes(16384, 16384, Dtype::fp4)) /
        b200().sustained_bandwidth();
    const double fp8 = b200().gemm_seconds(16384, 16384, 16384, Dtype::fp8) - epilogue;
    const double fp4 = b200().gemm_seconds(16384, 16384, 16384, Dtype::fp4) - epilogue;
    CHECK(fp4 / fp8 == Approx(0.5).epsilon(0.02));
}

TEST_CASE("block scaling: MXFP8's and NVFP4's casts against a hand count",
          "[strategies][fp8][mxfp8][nvfp4]") {
    // Llama 3 8B, one sequence of T = 8192 at tp 1 on a B200. Per quantized GEMM input element
    // (bf16, 2 bytes): MXFP8 reads it once and writes both copies, 2 x (1 + 1/32); delayed
    // scaling casts with a transpose, 2 + 1 + 1. NVFP4 reads it for the amaxes, again to
    // write both copies, 2 x (1/2 + 1/16), in kernels of their own, norm outputs included.
    const ModelSpec m = load_model("llama3-8B");
    const std::int64_t T = 8192, h = 4096, f = 14336, qkv = 6144;
    const LayerWork te = layer_work(m, layer_cfg(Dtype::fp8), b200());
    const LayerWork mx = layer_work(m, layer_cfg(Dtype::fp8, Fp8Recipe::mxfp8), b200());
    const LayerWork nv = layer_work(m, layer_cfg(Dtype::fp4), b200());
    auto bytes = [](const LayerWork& w, Pass p, std::string_view name) {
        return op_named(w.pass(p), name).bytes;
    };
    // MXFP8: 1/16 byte more per element than delayed where a cast runs, none where fused.
    CHECK(bytes(mx, Pass::forward, "attention.proj") - bytes(te, Pass::forward, "attention.proj") ==
          T * h / 16);
    CHECK(bytes(mx, Pass::backward, "mlp.fc2.dgrad") - bytes(te, Pass::backward, "mlp.fc2.dgrad") ==
          T * h / 16);
    for (std::string_view name : {"attention.qkv", "mlp.fc1", "mlp.fc2"})
        CHECK(bytes(mx, Pass::forward, name) == bytes(te, Pass::forward, name));
    CHECK(bytes(mx, Pass::backward, "mlp.fc1.wgrad") == bytes(te, Pass::backward, "mlp.fc1.wgrad"));
    // NVFP4: fp4 operands, and 2 + 2 + 9/8 bytes per input element, fused or not.
    const std::int64_t per_input = 4 * 8 + 9; // in eighths of a byte
    CHECK(bytes(nv, Pass::forward, "attention.proj") ==
          ComputeModel::gemm_bytes(T, h, h, Dtype::fp4) + T * h * per_input / 8);
    CHECK(bytes(nv, Pass::forward, "attention.qkv") ==
          ComputeModel::gemm_bytes(T, qkv, h, Dtype::fp4) + T * h * per_input / 8);
    CHECK(bytes(nv, Pass::forward, "mlp.fc2") ==
          ComputeModel::gemm_bytes(T, h, f, Dtype::fp4) + T * f * per_input / 8);
    CHECK(bytes(nv, Pass::backward, "mlp.fc2.wgrad") ==
          ComputeModel::gemm_bytes(f, h, T, Dtype::fp4));
    // Two kernels of their own (the amax pass, the quantization) beside the GEMM.
    CHECK(op_named(nv.forward, "attention.proj").kernels ==
          op_named(te.forward, "attention.proj").kernels + 2);
    // What stays bf16 is untouched: attention, the norms, the activation.
    for (std::string_view name : {"attention.flash", "input_layernorm", "mlp.swiglu"}) {
        CHECK(op_named(nv.forward, name).time == op_named(te.forward, name).time);
        CHECK(op_named(mx.forward, name).time == op_named(te.forward, name).time);
    }
    CHECK(nv.forward.flops == te.forward.flops);
    // MXFP8 is a little slower than delayed scaling; NVFP4's faster GEMMs outweigh its casts.
    CHECK(mx.forward.time > te.forward.time);
    CHECK(mx.backward.time > te.backward.time);
    CHECK(nv.forward.time < te.forward.time);
    CHECK(nv.backward.time < te.backward.time);
}

TEST_CASE("block scaling: memory holds both quantized copies and their scales",
          "[strategies][fp8][mxfp8][nvfp4]") {
    // Saved for the weight gradients: the column-wise copy, 1 + 1/32 bytes (MXFP8) or
    // 1/2 + 1/16 (NVFP4) per element, in place of the 1 byte of delayed scaling's FP8 input.
    const ModelSpec m = load_model("llama3-8B");
    const std::int64_t T = m.seq;
    const std::int64_t inputs = 3 * T * m.hidden + T * m.ffn; // qkv, proj, fc1, fc2
    const LayerWork te = layer_work(m, layer_cfg(Dtype::fp8), b200());
    const LayerWork mx = layer_work(m, layer_cfg(Dtype::fp8, Fp8Recipe::mxfp8), b200());
    const LayerWork nv = layer_work(m, layer_cfg(Dtype::fp4), b200());
    CHECK(mx.activation_bytes - te.activation_bytes == inputs / 32);
    CHECK(te.activation_bytes - nv.activation_bytes == inputs * 7 / 16);
    // Weights: bf16 and the recipe's copies: delayed 1 byte per parameter on Blackwell (the
    // FP8 data; no transpose: gpu.fp8_any_layout), MXFP8 2 x (1 + 1/32), NVFP4 2 x
    // (1/2 + 1/256) (one scale per 16 x 16 block).
    const auto platform = parallel::load_platform("dgx-b200");
    auto run = [&](const Settings& s) {
        return parallel::simulate_step(parallel::make_experiment(platform, 8, s, "block"));
    };
    Settings mxs = llama8b("fp8");
    mxs.emplace_back("training.fp8_recipe", "mxfp8");
    const auto rb = run(llama8b("bf16"));
    const auto rd = run(llama8b("fp8"));
    const auto rm = run(mxs);
    const auto rn = run(llama8b("fp4"));
    const std::int64_t params = 4 * layer_parameters_per_rank(m, 8);
    CHECK(rd.memory[0].weights_bytes - rb.memory[0].weights_bytes == params);
    CHECK(rm.memory[0].weights_bytes - rb.memory[0].weights_bytes == (params * 66 + 31) / 32);
    CHECK(rn.memory[0].weights_bytes - rb.memory[0].weights_bytes == (params * 129 + 127) / 128);
    CHECK(weight_copy_bytes(params, Fp8Recipe::tensorwise, true) == 0);
    // Gradients and optimizer state are bf16 mixed precision's in every recipe.
    for (const auto* r : {&rd, &rm, &rn}) {
        CHECK(r->memory[0].grads_bytes == rb.memory[0].grads_bytes);
        CHECK(r->memory[0].optimizer_bytes == rb.memory[0].optimizer_bytes);
    }
    // The weights quantized once per step: MXFP8 2 + 33/16, NVFP4 2 + 2 + 129/128 bytes per
    // parameter, against delayed's 4: in the optimizer's time.
    CHECK(weight_cast_bytes(params, Fp8Recipe::mxfp8, true) ==
          2 * params + (params * 66 + 31) / 32);
    CHECK(weight_cast_bytes(params, Fp8Recipe::nvfp4, true) ==
          4 * params + (params * 129 + 127) / 128);
    CHECK(rm.breakdown.optimizer_s > rd.breakdown.optimizer_s);
    CHECK(rn.breakdown.optimizer_s > rm.breakdown.optimizer_s);
    // The step: MXFP8 slower than delayed scaling. NVFP4 at tp 8 gains less on the small
    // GEMMs than its amax and quantization passes cost; on whole layers (tp 1) it is faster.
    CHECK(rm.step_time_s > rd.step_time_s);
    auto tp1 = [](Settings s) {
        for (auto& [key, value] : s)
            if (key == "parallel.tp")
                value = "1";
        return s;
    };
    CHECK(run(tp1(llama8b("fp4"))).step_time_s < run(tp1(llama8b("fp8"))).step_time_s);
}

TEST_CASE("block scaling: a format the GPU's hardware file lacks is refused with the key",
          "[strategies][fp8][mxfp8][nvfp4]") {
    const auto h100 = parallel::load_platform("dgx-h100");
    // NVFP4 on Hopper: no fp4 peak.
    auto [nvfp4, nvfp4_key] = refusal(h100, llama8b("fp4"));
    CHECK(nvfp4_key == "training.dtype");
    CHECK_THAT(nvfp4, Catch::Contains("NVFP4") && Catch::Contains("gpu.peak_flops.fp4") &&
                          Catch::Contains("training.dtype: fp8 or bf16") &&
                          Catch::Contains("Blackwell"));
    // MXFP8 on Hopper and Ampere: no block-scaled tensor cores.
    Settings mx = llama8b("fp8");
    mx.emplace_back("training.fp8_recipe", "mxfp8");
    for (const char* preset : {"dgx-h100", "hgx-h200", "dgx-a100"}) {
        auto [what, key] = refusal(parallel::load_platform(preset), mx);
        INFO(preset << ": " << what);
        CHECK(key == "training.fp8_recipe");
        CHECK_THAT(what, Catch::Contains("gpu.block_scaling") &&
                             Catch::Contains("fp8_recipe: delayed, current or tensorwise"));
    }
    // Decided from the hardware file, not the preset's name: a B200 file without block
    // scaling refuses both; an H100 file given an fp4 peak still lacks block scaling.
    const auto no_blocks = parallel::parse_platform_yaml(
        "extends: dgx-b200\ngpu: {block_scaling: false}\n", "no-blocks.yaml");
    CHECK_THAT(refusal(no_blocks, llama8b("fp4")).first, Catch::Contains("no gpu.block_scaling"));
    CHECK(refusal(no_blocks, mx).second == "training.fp8_recipe");
    const auto h100_fp4 = parallel::parse_platform_yaml(
        "extends: dgx-h100\ngpu: {peak_flops: {fp4: 3958TFLOPS}}\ncompute: {gemm: {efficiency: "
        "{fp4: 0.9}}}\n",
        "h100-fp4.yaml");
    CHECK(refusal(h100_fp4, llama8b("fp4")).second == "training.dtype");
    // The same settings run on Blackwell.
    const auto b200 = parallel::load_platform("dgx-b200");
    CHECK(refusal(b200, llama8b("fp4")).first == "accepted");
    CHECK(refusal(b200, mx).first == "accepted");
    // The recipes name the dtype they scale.
    Settings mx_bf16 = llama8b("bf16");
    mx_bf16.emplace_back("training.fp8_recipe", "mxfp8");
    CHECK_THAT(refusal(b200, mx_bf16).first,
               Catch::Contains("fp8_recipe") && Catch::Contains("dtype: fp8"));
    Settings fp4_recipe = llama8b("fp8");
    fp4_recipe.emplace_back("training.fp4_recipe", "nvfp4");
    CHECK_THAT(refusal(b200, fp4_recipe).first,
               Catch::Contains("fp4_recipe") && Catch::Contains("dtype: fp4"));
}

TEST_CASE("block scaling: AMD Instinct: MI300X trains FP8 with one scale per tensor and refuses "
          "MXFP8 and NVFP4, MI355X's CDNA 4 runs MXFP8",
          "[strategies][fp8][mxfp8][nvfp4][xgmi]") {
    const auto mi300x = parallel::load_platform("mi300x");
    CHECK_FALSE(mi300x.cluster.node.gpu.block_scaling);
    Settings mx = llama8b("fp8");
    mx.emplace_back("training.fp8_recipe", "mxfp8");
    auto [what, key] = refusal(mi300x, mx);
    INFO(what);
    CHECK(key == "training.fp8_recipe");
    CHECK_THAT(what, Catch::Contains("MXFP8") && Catch::Contains("gpu.block_scaling") &&
                         Catch::Contains("fp8_recipe: delayed, current or tensorwise") &&
                         Catch::Contains("mi355x"));
    auto [nvfp4, nvfp4_key] = refusal(mi300x, llama8b("fp4"));
    CHECK(nvfp4_key == "training.dtype");
    CHECK_THAT(nvfp4, Catch::Contains("gpu.peak_flops.fp4"));
    // FP8 current (tensorwise) scaling and delayed scaling run.
    Settings cs = llama8b("fp8");
    cs.emplace_back("training.fp8_recipe", "tensorwise");
    CHECK(refusal(mi300x, cs).first == "accepted");
    CHECK(refusal(mi300x, llama8b("fp8")).first == "accepted");
    const auto mi355x = parallel::load_platform("mi355x");
    CHECK(mi355x.cluster.node.gpu.block_scaling);
    CHECK(refusal(mi355x, mx).first == "accepted");
    CHECK(refusal(mi355x, cs).first == "accepted");
}

TEST_CASE("block scaling: fp8_output_proj runs the LM head's GEMMs in MXFP8",
          "[strategies][fp8][mxfp8]") {
    // Megatron-Core's TELMHeadColumnParallelLinear: the head's forward, data- and
    // weight-gradient GEMMs at the fp8 rate, its input quantized into both MXFP8 copies by a
    // kernel of its own (2 bytes read, 2 x (1 + 1/32) written per element), the weight
    // gradient's input saved as the column-wise copy (1 + 1/32 bytes, not bf16's 2).
    const ModelSpec m = load_model("llama3-8B");
    LayerConfig cfg = layer_cfg(Dtype::fp8, Fp8Recipe::mxfp8);
    const LayerWork bf16_head = head_work(m, cfg, b200());
    cfg.fp8_output_proj = true;
    const LayerWork mx_head = head_work(m, cfg, b200());
    const std::int64_t T = m.seq;
    const std::int64_t input = T * m.hidden;
    const std::int64_t vocab = padded_vocab(m, 1);
    const auto& f_bf16 = op_named(bf16_head.forward, "lm_head");
    const auto& f_mx = op_named(mx_head.forward, "lm_head");
    // The GEMM reads 1-byte operands in place of 2-byte ones, plus the input's cast.
    CHECK(f_bf16.bytes - (f_mx.bytes - (2 * input + (input * 66 + 31) / 32)) ==
          input + vocab * m.hidden);
    CHECK(f_mx.time < f_bf16.time);
    CHECK(op_named(mx_head.backward, "lm_head.wgrad").time <
          op_named(bf16_head.backward, "lm_head.wgrad").time);
    CHECK(bf16_head.activation_bytes - mx_head.activation_bytes ==
          2 * input - (input * 66 + 63) / 64);
    // In a step: the head's MXFP8 weight copies kept beside its bf16 weights.
    const auto platform = parallel::load_platform("dgx-b200");
    Settings s = llama8b("fp8");
    s.emplace_back("training.fp8_recipe", "mxfp8");
    const auto r0 = parallel::simulate_step(parallel::make_experiment(platform, 8, s, "mx"));
    s.emplace_back("training.fp8_output_proj", "true");
    const auto r1 = parallel::simulate_step(parallel::make_experiment(platform, 8, s, "mxo"));
    const std::int64_t vocab_local = padded_vocab(m, 8) / 8;
    CHECK(r1.memory[0].weights_bytes - r0.memory[0].weights_bytes ==
          (vocab_local * m.hidden * 66 + 31) / 32);
    CHECK(r1.step_time_s < r0.step_time_s);
}

TEST_CASE("block scaling: fp8_output_proj is refused where Megatron-Core refuses it",
          "[strategies][fp8][mxfp8]") {
    const auto platform = parallel::load_platform("dgx-b200");
    auto with = [](Settings s, const char* recipe) {
        if (recipe)
            s.emplace_back("training.fp8_recipe", recipe);
        s.emplace_back("training.fp8_output_proj", "true");
        return s;
    };
    for (const Settings& s : {with(llama8b("bf16"), nullptr), with(llama8b("fp8"), "current"),
                              with(llama8b("fp8"), "delayed")}) {
        auto [what, key] = refusal(platform, s);
        CHECK(key == "training.fp8_output_proj");
        CHECK_THAT(what, Catch::Contains("fp8_recipe mxfp8"));
    }
    Settings tied = with(llama8b("fp8"), "mxfp8");
    tied.emplace_back("model.tied_embeddings", "true");
    auto [what, key] = refusal(platform, tied);
    CHECK(key == "training.fp8_output_proj");
    CHECK_THAT(what, Catch::Contains("tied_embeddings false"));
}
