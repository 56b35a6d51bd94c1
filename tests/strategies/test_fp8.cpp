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

const ComputeModel& h100() {
    static const ComputeModel cm(hardware::load_hardware("dgx-h100"));
    return cm;
}

LayerConfig layer_cfg(int tp, bool sp, Dtype d) {
    LayerConfig c;
    c.tp = tp;
    c.sequence_parallel = sp;
    c.dtype = d;
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

} // namespace

TEST_CASE("fp8: a GEMM at equal efficiency takes the peak ratio of the bf16 time",
          "[strategies][fp8]") {
    hardware::ClusterSpec c = hardware::load_hardware("dgx-h100");
    // The datasheet's dense peaks: FP8 twice bf16 on H100 SXM.
    CHECK(c.node.gpu.peak(Dtype::fp8) == Approx(2 * c.node.gpu.peak(Dtype::bf16)).epsilon(1e-3));
    c.compute.gemm_efficiency[static_cast<std::size_t>(Dtype::fp8)] =
        c.compute.gemm_efficiency[static_cast<std::size_t>(Dtype::bf16)];
    const ComputeModel cm(c);
    const double ratio = c.node.gpu.peak(Dtype::bf16) / c.node.gpu.peak(Dtype::fp8);
    // Compute-bound shapes: past the epilogue, which writes the same bf16 C in both, the
    // launch and the fill are all that differ from the ratio.
    for (std::int64_t n : {8192, 16384}) {
        const double epilogue =
            static_cast<double>(ComputeModel::gemm_output_bytes(n, n, Dtype::bf16)) /
            cm.sustained_bandwidth();
        CHECK(ComputeModel::gemm_output_bytes(n, n, Dtype::fp8) ==
              ComputeModel::gemm_output_bytes(n, n, Dtype::bf16));
        const double fp8 = cm.gemm_seconds(n, n, n, Dtype::fp8) - epilogue;
        const double bf16 = cm.gemm_seconds(n, n, n, Dtype::bf16) - epilogue;
        CHECK(fp8 / bf16 == Approx(ratio).epsilon(0.01));
    }
    // In a layer: fc1's input is cast by the norm before it (fused): the FP8 GEMM alone; the
    // output projection's input is cast by a kernel of its own.
    const ModelSpec m = load_model("llama3-8B");
    const LayerWork w = layer_work(m, layer_cfg(1, false, Dtype::fp8), cm);
    const Op& fc1 = op_named(w.forward, "mlp.fc1");
    const std::int64_t T = m.seq;
    CHECK(fc1.time == cm.gemm(T, m.fc1_out(), m.hidden, Dtype::fp8));
    CHECK(fc1.flops == ComputeModel::gemm_flops(T, m.fc1_out(), m.hidden, 1));
    const Op& proj = op_named(w.forward, "attention.proj");
    CHECK(proj.time ==
          cm.gemm(T, m.hidden, m.hidden, Dtype::fp8) + cm.memory_bound(4 * T * m.hidden));
}

TEST_CASE("fp8: which GEMMs run in FP8 and what their casts cost", "[strategies][fp8]") {
    CHECK(runs_in_fp8("attention.qkv"));
    CHECK(runs_in_fp8("mlp.fc2.wgrad"));
    CHECK(runs_in_fp8("moe.experts.fc1"));
    CHECK_FALSE(runs_in_fp8("lm_head"));
    CHECK_FALSE(runs_in_fp8("lm_head.dgrad"));
    CHECK_FALSE(runs_in_fp8("moe.router"));
    CHECK_FALSE(runs_in_fp8("attention.scores"));
    // A cast with transpose per forward and data-gradient input, none for weight gradients.
    CHECK(fp8_cast_bytes("attention.proj", 8192, 4096, 1) == 4 * 8192 * 4096);
    CHECK(fp8_cast_bytes("mlp.fc2.dgrad", 8192, 4096, 1) == 4 * 8192 * 4096);
    CHECK(fp8_cast_bytes("attention.qkv.dgrad", 8192, 4096, 1) == 4 * 8192 * 4096);
    CHECK(fp8_cast_bytes("mlp.fc1.wgrad", 4096, 8192, 1) == 0);
    // Fused into the norm, the activation or its backward (Transformer Engine's modules).
    CHECK(fp8_cast_bytes("mlp.fc1", 8192, 4096, 1) == 0);
    CHECK(fp8_cast_bytes("attention.qkv", 8192, 4096, 1) == 0);
    CHECK(fp8_cast_bytes("mlp.fc2", 8192, 4096, 1) == 0);
    CHECK(fp8_cast_bytes("mlp.fc1.dgrad", 8192, 4096, 1) == 0);
    CHECK(fp8_cast_bytes("lm_head", 8192, 4096, 1) == 0);

    const ModelSpec m = load_model("llama3-8B");
    const LayerWork b = layer_work(m, layer_cfg(8, true, Dtype::bf16), h100());
    const LayerWork f = layer_work(m, layer_cfg(8, true, Dtype::fp8), h100());
    // Attention, norms and the activation stay in bf16: the same kernels.
    for (std::string_view name : {"attention.flash", "input_layernorm", "mlp.swiglu"})
        CHECK(op_named(f.forward, name).time == op_named(b.forward, name).time);
    CHECK(op_named(f.backward, "attention.flash.bwd").time ==
          op_named(b.backward, "attention.flash.bwd").time);
    // The linear layers whose casts are fused are faster; the layer is, casts included.
    CHECK(f.forward.time < b.forward.time);
    CHECK(f.backward.time < b.backward.time);
    for (std::string_view name : {"attention.qkv", "mlp.fc1", "mlp.fc2"}) {
        INFO(name << ": fp8 " << op_named(f.forward, name).time.seconds() << " s, bf16 "
                  << op_named(b.forward, name).time.seconds() << " s");
        CHECK(op_named(f.forward, name).time < op_named(b.forward, name).time);
    }
    // The head and the collectives (bf16 activations) are unchanged.
    const LayerWork hb = head_work(m, layer_cfg(8, true, Dtype::bf16), h100());
    const LayerWork hf = head_work(m, layer_cfg(8, true, Dtype::fp8), h100());
    CHECK(hf.forward.time == hb.forward.time);
    CHECK(f.collective_bytes(Pass::forward) == b.collective_bytes(Pass::forward));
}

TEST_CASE("fp8: torchao's tensorwise dynamic scaling, its casts against a hand count",
          "[strategies][fp8]") {
    // Llama 3 8B, one sequence of T = 8192 at tp 1. Per FP8 GEMM input element (bf16, 2
    // bytes): amax 2, cast 2 + 1, and for the weight gradient a column-major FP8 copy 1 + 1.
    // Per weight element: amax 2 and cast 2 + 1 in the forward, a column-major copy 1 + 1 for
    // the data gradient. Transformer Engine's delayed scaling: a cast with transpose 2 + 1 + 1
    // where not fused into the norm or activation, the weights once per step.
    const ModelSpec m = load_model("llama3-8B");
    const std::int64_t T = 8192, h = 4096, qkv = 6144, f = 14336;
    LayerConfig cfg = layer_cfg(1, false, Dtype::fp8);
    const LayerWork te = layer_work(m, cfg, h100());
    cfg.fp8_recipe = Fp8Recipe::tensorwise;
    const LayerWork ao = layer_work(m, cfg, h100());
    const LayerWork bf = layer_work(m, layer_cfg(1, false, Dtype::bf16), h100());
    auto extra = [&](const LayerWork& w, Pass p, std::string_view name) {
        return op_named(w.pass(p), name).bytes - op_named(bf.pass(p), name).bytes;
    };
    // GEMM bytes themselves: FP8 operands in both recipes.
    const std::int64_t qkv_gemm = extra(te, Pass::forward, "attention.qkv");
    CHECK(qkv_gemm < 0); // fused cast under TE: only the smaller operands
    CHECK(extra(ao, Pass::forward, "attention.qkv") - qkv_gemm ==
          (T * h + h * qkv) * (2 + 3)); // input and weight: amax, cast
    CHECK(extra(ao, Pass::forward, "attention.proj") - extra(te, Pass::forward, "attention.proj") ==
          (T * h + h * h) * 5 - T * h * 4);
    CHECK(extra(ao, Pass::forward, "mlp.fc2") - extra(te, Pass::forward, "mlp.fc2") ==
          (T * f + f * h) * 5);
    // Data gradient: dY's amax and cast, the weight's column-major copy.
    CHECK(extra(ao, Pass::backward, "mlp.fc1.dgrad") - extra(te, Pass::backward, "mlp.fc1.dgrad") ==
          T * 2 * f * 5 + 2 * f * h * 2);
    CHECK(extra(ao, Pass::backward, "attention.qkv.dgrad") -
              extra(te, Pass::backward, "attention.qkv.dgrad") ==
          T * qkv * 5 + qkv * h * 2 - T * qkv * 4);
    // Weight gradient: the two FP8 operands copied column-major.
    CHECK(extra(ao, Pass::backward, "mlp.fc2.wgrad") - extra(te, Pass::backward, "mlp.fc2.wgrad") ==
          2 * (f * T + T * h));
    // Attention and the elementwise ops are untouched; the GEMMs' FLOPs are the same.
    CHECK(ao.forward.flops == te.forward.flops);
    CHECK(op_named(ao.forward, "attention.flash").time ==
          op_named(te.forward, "attention.flash").time);
    CHECK(ao.forward.time > te.forward.time);
    CHECK(ao.backward.time > te.backward.time);
    // In a step: no weight cast in the optimizer (it is in every forward instead).
    const auto platform = parallel::load_platform("dgx-h100");
    Settings settings = llama8b("fp8");
    const auto delayed = parallel::make_experiment(platform, 8, settings, "delayed");
    settings.emplace_back("training.fp8_recipe", "tensorwise");
    const auto tensorwise = parallel::make_experiment(platform, 8, settings, "tensorwise");
    const auto rd = parallel::simulate_step(delayed);
    const auto rt = parallel::simulate_step(tensorwise);
    CHECK(rt.breakdown.optimizer_s < rd.breakdown.optimizer_s);
    CHECK(rt.step_time_s > rd.step_time_s);
}

TEST_CASE("fp8: Transformer Engine's current scaling, its casts against a hand count",
          "[strategies][fp8]") {
    // Per FP8 GEMM input element (bf16, 2 bytes): an amax pass 2, then the cast with its
    // transpose 2 + 1 + 1; where a norm or an activation produces the input, its kernel takes
    // the amax and only the cast remains. Delayed scaling: the cast with transpose 4 where not
    // fused, nothing where fused. Weight gradients read the transposes in both.
    const ModelSpec m = load_model("llama3-8B");
    const std::int64_t T = 8192, h = 4096, qkv = 6144, f = 14336;
    LayerConfig cfg = layer_cfg(1, false, Dtype::fp8);
    const LayerWork te = layer_work(m, cfg, h100());
    cfg.fp8_recipe = Fp8Recipe::current;
    const LayerWork cs = layer_work(m, cfg, h100());
    auto more = [&](Pass p, std::string_view name) {
        return op_named(cs.pass(p), name).bytes - op_named(te.pass(p), name).bytes;
    };
    CHECK(more(Pass::forward, "attention.qkv") == T * h * 4);      // norm: amax inside, cast
    CHECK(more(Pass::forward, "attention.proj") == T * h * 2);     // the amax pass
    CHECK(more(Pass::forward, "mlp.fc1") == T * h * 4);            // norm
    CHECK(more(Pass::forward, "mlp.fc2") == T * f * 4);            // activation
    CHECK(more(Pass::backward, "mlp.fc1.dgrad") == T * 2 * f * 4); // activation's backward
    CHECK(more(Pass::backward, "attention.qkv.dgrad") == T * qkv * 2);
    CHECK(more(Pass::backward, "mlp.fc2.wgrad") == 0);
    // Each cast is a kernel of its own (it waits for the amax), unlike delayed scaling's.
    CHECK(op_named(cs.forward, "attention.proj").kernels ==
          op_named(te.forward, "attention.proj").kernels + 2);
    CHECK(op_named(cs.forward, "mlp.fc1").kernels == op_named(te.forward, "mlp.fc1").kernels + 1);
    // Weights: quantized once per step, amax then cast with transpose; the copies kept.
    CHECK(weight_cast_bytes(1000, Fp8Recipe::current, true) == 6000);
    CHECK(weight_copy_bytes(1000, Fp8Recipe::current, true) ==
          weight_copy_bytes(1000, Fp8Recipe::delayed, true));
    CHECK(saved_input_bytes(1000, Fp8Recipe::current) == 1000);
    // Between delayed scaling and torchao's tensorwise, which casts weights every forward
    // and copies operands column-major: in a step of 8 micro-batches at tp 8.
    const auto platform = parallel::load_platform("dgx-h100");
    Settings settings = llama8b("fp8");
    const auto rd = parallel::simulate_step(parallel::make_experiment(platform, 8, settings, "d"));
    settings.emplace_back("training.fp8_recipe", "current");
    const auto rc = parallel::simulate_step(parallel::make_experiment(platform, 8, settings, "c"));
    settings.back().second = "tensorwise";
    const auto rt = parallel::simulate_step(parallel::make_experiment(platform, 8, settings, "t"));
    CHECK(rd.step_time_s < rc.step_time_s);
    CHECK(rc.step_time_s < rt.step_time_s);
    CHECK(rc.breakdown.optimizer_s > rd.breakdown.optimizer_s);
}

TEST_CASE("fp8: on a GPU whose FP8 GEMMs take any layout the per-tensor casts write no "
          "transpose",
          "[strategies][fp8]") {
    // Transformer Engine's per-tensor quantizers write the transpose only where the GPU's FP8
    // GEMMs need TN operands (with_transpose = columnwise_usage &&
    // !nvte_is_non_tn_fp8_gemm_supported()): one byte less per cast element on Blackwell,
    // nothing else moved. Hand counts per element of a bf16 input: delayed 2 + 1 (against
    // Hopper's 2 + 1 + 1), current's amax 2 then 2 + 1.
    const ModelSpec m = load_model("llama3-8B");
    const std::int64_t T = 8192, h = 4096, qkv = 6144;
    for (Fp8Recipe recipe : {Fp8Recipe::delayed, Fp8Recipe::current}) {
        INFO(to_string(recipe));
        LayerConfig cfg = layer_cfg(1, false, Dtype::fp8);
        cfg.fp8_recipe = recipe;
        const LayerWork hopper = layer_work(m, cfg, h100());
        cfg.fp8_transposes = false;
        const LayerWork blackwell = layer_work(m, cfg, h100());
        auto fewer = [&](Pass p, std::string_view name) {
            return op_named(hopper.pass(p), name).bytes - op_named(blackwell.pass(p), name).bytes;
        };
        CHECK(fewer(Pass::forward, "attention.proj") == T * h);
        CHECK(fewer(Pass::backward, "attention.qkv.dgrad") == T * qkv);
        CHECK(fewer(Pass::backward, "mlp.fc2.wgrad") == 0);
        // A cast fused into the norm: delayed writes nothing apart; current's cast remains.
        CHECK(fewer(Pass::forward, "attention.qkv") == (recipe == Fp8Recipe::current ? T * h : 0));
        CHECK(blackwell.activation_bytes == hopper.activation_bytes);
        CHECK(blackwell.forward.time < hopper.forward.time);
    }
    // The weights: the copy kept is the FP8 data alone, and its cast writes one byte.
    CHECK(weight_copy_bytes(1000, Fp8Recipe::delayed, false) == 1000);
    CHECK(weight_cast_bytes(1000, Fp8Recipe::delayed, false) == 3000);
    CHECK(weight_cast_bytes(1000, Fp8Recipe::current, false) == 5000);
    // Block-scaled copies differ in their scales' direction: both stay.
    CHECK(weight_copy_bytes(1000, Fp8Recipe::mxfp8, false) ==
          weight_copy_bytes(1000, Fp8Recipe::mxfp8, true));
    // From the hardware file: dgx-b200 (and the presets extending it) sets gpu.fp8_any_layout,
    // dgx-h100 does not; a step's FP8 weight copies follow it.
    const auto b200 = parallel::load_platform("dgx-b200");
    const auto h100p = parallel::load_platform("dgx-h100");
    CHECK(b200.cluster.node.gpu.fp8_any_layout);
    CHECK_FALSE(h100p.cluster.node.gpu.fp8_any_layout);
    const auto rb =
        parallel::simulate_step(parallel::make_experiment(b200, 8, llama8b("bf16"), "b"));
    const auto rf =
        parallel::simulate_step(parallel::make_experiment(b200, 8, llama8b("fp8"), "f"));
    CHECK(rf.memory[0].weights_bytes - rb.memory[0].weights_bytes ==
          4 * layer_parameters_per_rank(m, 8));
}

TEST_CASE("fp8: memory follows Transformer Engine's rules", "[strategies][fp8]") {
    const ModelSpec m = load_model("llama3-8B");
    // Activations: the inputs of qkv, proj, fc1 and fc2 saved in FP8 (1 byte, not 2).
    for (auto [tp, sp] : {std::pair{1, false}, std::pair{8, true}, std::pair{8, false}}) {
        const LayerWork b = layer_work(m, layer_cfg(tp, sp, Dtype::bf16), h100());
        const LayerWork f = layer_work(m, layer_cfg(tp, sp, Dtype::fp8), h100());
        const std::int64_t T = m.seq;
        const std::int64_t shard = sp ? tp : 1;
        const std::int64_t saved = T * m.hidden / shard   // qkv input
                                   + T * m.hidden / tp    // proj input
                                   + T * m.hidden / shard // fc1 input
                                   + T * m.ffn / tp;      // fc2 input
        CHECK(b.activation_bytes - f.activation_bytes == saved);
        CHECK(f.parameters == b.parameters);
    }
    // Model state: bf16 weights + FP8 copies (data and transpose) of the layers' weights; the
    // same fp32 gradients and optimizer state as bf16 mixed precision.
    const auto platform = parallel::load_platform("dgx-h100");
    const auto eb = parallel::make_experiment(platform, 8, llama8b("bf16"), "bf16");
    const auto ef = parallel::make_experiment(platform, 8, llama8b("fp8"), "fp8");
    const auto rb = parallel::simulate_step(eb);
    const auto rf = parallel::simulate_step(ef);
    REQUIRE(rb.memory.size() == 1);
    const std::int64_t layer_params = 4 * layer_parameters_per_rank(m, 8);
    CHECK(rf.memory[0].weights_bytes - rb.memory[0].weights_bytes ==
          kFp8WeightCopyBytes * layer_params);
    CHECK(rf.memory[0].grads_bytes == rb.memory[0].grads_bytes);
    CHECK(rf.memory[0].optimizer_bytes == rb.memory[0].optimizer_bytes);
    CHECK(rf.memory[0].activations_bytes < rb.memory[0].activations_bytes);
    // And the step is faster.
    CHECK(rf.step_time_s < rb.step_time_s);
    // torchao's tensorwise recipe casts the weights in every forward and keeps no FP8 copies.
    Settings tw = llama8b("fp8");
    tw.emplace_back("training.fp8_recipe", "tensorwise");
    const auto rt = parallel::simulate_step(parallel::make_experiment(platform, 8, tw, "tw"));
    CHECK(rt.memory[0].weights_bytes == rb.memory[0].weights_bytes);
}

TEST_CASE("fp8: the tensorwise recipe without training.dtype fp8 is refused, naming the key",
          "[strategies][fp8]") {
    const auto platform = parallel::load_platform("dgx-h100");
    Settings s = llama8b("bf16");
    s.emplace_back("training.fp8_recipe", "tensorwise");
    try {
        parallel::make_experiment(platform, 8, s, "bf16-tensorwise");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("fp8_recipe") && Catch::Contains("dtype: fp8"));
    }
}

TEST_CASE("fp8: refused on a GPU without FP8 tensor cores, naming the key and the fix",
          "[strategies][fp8]") {
    const auto platform = parallel::load_platform("dgx-a100");
    try {
        parallel::make_experiment(platform, 8, llama8b("fp8"), "a100");
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("no fp8") && Catch::Contains("training.dtype: bf16") &&
                                 Catch::Contains("H100"));
        REQUIRE(e.where());
        CHECK(e.where()->key == "training.dtype");
    }
}
