// The model features of 2025's open models (issue 33): per-head dimensions apart from
// hidden / heads (kv_channels), QK-norm, sliding-window attention and attention sinks,
// interleaved layers with experts (moe_layer_freq), multi-token prediction, and the presets
// built on them, whose parameter counts are the released models'.
#include "layer_work_test_util.h"
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
using namespace clustersim::strategies::models;
using hardware::ComputeModel;
using hardware::Dtype;
using layer_work_test::op_named;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

const std::string kBase = "kind: transformer\nlayers: 4\nhidden: 64\nheads: 4\nseq: 256\n"
                          "vocab: 1000\nattention: flash\n";

strategies::parallel::StepResult simulate(const Settings& settings, int gpus,
                                          const std::string& preset = "dgx-h100") {
    const auto platform = strategies::parallel::load_platform(preset);
    auto e = strategies::parallel::make_experiment(platform, gpus, settings, "test");
    strategies::parallel::StepOptions o;
    o.oom_advice = false;
    return strategies::parallel::simulate_step(e, o);
}

double step_seconds(const Settings& settings, int gpus) {
    return simulate(settings, gpus).step_time_s;
}

/// The refusal of an experiment made from `settings` ("(no error)" when it is accepted).
std::string experiment_error(const Settings& settings, int gpus,
                             const std::string& preset = "dgx-h100") {
    try {
        const auto platform = strategies::parallel::load_platform(preset);
        (void)strategies::parallel::make_experiment(platform, gpus, settings, "test");
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

// The published totals: Qwen3 technical report (arXiv 2505.09388) Table 2; the gpt-oss model
// card's Table 1 (to 10 M, with its breakdown); Kimi K2's model card (rounded to "1T, 32B");
// Gemma 3 27B from the dimensions of its released config.
TEST_CASE("model presets of 2025's open models: the released parameter counts",
          "[models][presets][features]") {
    const ParameterCounts q30 = parameter_counts(load_model("qwen3-30B-A3B"));
    CHECK(q30.total == Approx(30.5e9).margin(0.05e9));
    // "3.3B" activated: 3.35B, the report's figure cut to one decimal.
    CHECK(q30.active >= 3.3e9);
    CHECK(q30.active < 3.4e9);
    const ParameterCounts q235 = parameter_counts(load_model("qwen3-235B-A22B"));
    CHECK(q235.total == Approx(235e9).margin(0.5e9));
    CHECK(q235.active == Approx(22e9).margin(0.5e9));

    const ModelSpec oss = load_model("gpt-oss-120B");
    const ParameterCounts c120 = parameter_counts(oss);
    CHECK(c120.total == Approx(116.83e9).margin(0.005e9));
    // Attention 0.96B (projections with their biases and the sinks), embedding and
    // unembedding 1.16B, the MLP (router and experts, biases included) 114.71B.
    CHECK(oss.layers * attention_block_parameters_per_rank(oss, 1) ==
          Approx(0.96e9).margin(0.005e9));
    CHECK(c120.embedding + c120.head == Approx(1.16e9).margin(0.005e9));
    CHECK(c120.layers - oss.layers * attention_block_parameters_per_rank(oss, 1) ==
          Approx(114.71e9).margin(0.005e9));
    CHECK(parameter_counts(load_model("gpt-oss-20B")).total == Approx(20.91e9).margin(0.005e9));

    // Gemma 3 27B: the text model's 27.0B from its released dimensions (62 layers of 66.06 M
    // attention and 346.8 M MLP weights, a tied 262,208 x 5,376 embedding; the checkpoint's
    // 27.4B adds a 0.4B vision encoder), 52 local layers and 10 global ones (layers 6, ..., 60).
    const ModelSpec gemma = load_model("gemma3-27B");
    CHECK(parameter_counts(gemma).total == Approx(27.01e9).margin(0.02e9));
    int global = 0;
    for (int i = 0; i < gemma.layers; ++i)
        global += gemma.is_window_layer(i) ? 0 : 1;
    CHECK(global == 10);
    CHECK(!gemma.is_window_layer(5));
    CHECK(gemma.is_window_layer(60)); // the 61st and 62nd layers are local
    CHECK(gemma.is_window_layer(61));

    // Llama 4: the model cards' "17B active" and totals (109B, 400B, which count the vision
    // encoder as well): the text models are 107.8B and 400.7B, 17.2B active.
    const ParameterCounts scout = parameter_counts(load_model("llama4-scout"));
    CHECK(scout.total == Approx(109e9).epsilon(0.02));
    CHECK(scout.active == Approx(17e9).epsilon(0.02));
    const ParameterCounts maverick = parameter_counts(load_model("llama4-maverick"));
    CHECK(maverick.total == Approx(400e9).epsilon(0.01));
    CHECK(maverick.active == Approx(17e9).epsilon(0.02));

    const ParameterCounts k2 = parameter_counts(load_model("kimi-k2"));
    CHECK(k2.total == Approx(1e12).epsilon(0.05));
    CHECK(k2.active == Approx(32e9).epsilon(0.05));
    // DeepSeek-V3's 671B leaves out its multi-token prediction module.
    ModelSpec v3 = load_model("deepseek-v3");
    CHECK(v3.mtp_num_layers == 0);
    CHECK(parameter_counts(v3).total == Approx(671e9).margin(0.5e9));
    v3.mtp_num_layers = 1;
    const ParameterCounts v3_mtp = parameter_counts(v3);
    CHECK(v3_mtp.total == Approx(671e9).margin(0.5e9));
    // The block's own weights (a layer with experts, the 2h -> h projection, norms); the
    // report's 14B of MTP weights also counts its copies of the embedding and head (1.9B).
    CHECK(v3_mtp.mtp == Approx(11.7e9).margin(0.2e9));
}

TEST_CASE("kv_channels: queries and the output projection are heads x kv_channels wide",
          "[models][features]") {
    const ModelSpec q = load_model("qwen3-30B-A3B");
    REQUIRE(q.head_dim() == 128);
    REQUIRE(q.q_dim() == 4096); // not hidden = 2048
    const ComputeModel cm(hardware::load_hardware("dgx-h100"));
    LayerConfig cfg;
    cfg.tp = 2;
    cfg.sequence_parallel = true;
    const LayerWork w = layer_work(q, cfg, cm);
    const Op& qkv = op_named(w.forward, "attention.qkv");
    CHECK(qkv.n == (32 + 2 * 4) * 128 / 2);
    const Op& proj = op_named(w.forward, "attention.proj");
    CHECK(proj.k == 4096 / 2);
    CHECK(proj.n == 2048);
    CHECK(op_named(w.backward, "attention.proj.wgrad").m == 4096 / 2);
    // FlashAttention over 128-dimensional heads, and the per-head QK-norm forward and back.
    CHECK(op_named(w.forward, "attention.flash").k == 128);
    CHECK(op_named(w.forward, "attention.qk_norm").bytes ==
          2 * std::int64_t{4096} * (32 + 4) * 128 / 2 * 2);
    (void)op_named(w.backward, "attention.qk_norm.bwd");
    // Model FLOPs per layer: 2 s (h x qkv + q_dim x h + MLP) + 4 s^2 q_dim.
    ModelSpec dense = q;
    dense.num_experts = 0;
    const double s = dense.seq, h = dense.hidden;
    CHECK(layer_forward_flops(dense) ==
          Approx(2 * s * (h * 5120 + 4096 * h + h * 2 * 6144 + 6144 * h) + 4 * s * s * 4096));
    // Without kv_channels a head is hidden / heads wide, as before.
    ModelSpec plain = q;
    plain.kv_channels = 0;
    CHECK(plain.q_dim() == 2048);
}

TEST_CASE("sliding-window attention: the band's blocks only, on the layers Megatron windows",
          "[models][features]") {
    // FlashAttention's local attention visits, per block of 128 queries, the window's keys and
    // the block: (w + 128) / s of the square, against the causal half plus the diagonal.
    const std::int64_t s = 4096, w = 128, bh = 64, d = 64;
    const double full = ComputeModel::fused_attention_flops(bh, s, d, true, false);
    const double band = ComputeModel::fused_attention_flops(bh, s, d, true, false, w);
    CHECK(full == Approx(4.0 * bh * s * s * d * 0.5 * (1 + 128.0 / s)));
    CHECK(band == Approx(4.0 * bh * s * s * d * (w + 128.0) / s));
    // A window as long as the sequence is the causal kernel.
    CHECK(ComputeModel::fused_attention_flops(bh, s, d, true, true, s) ==
          Approx(ComputeModel::fused_attention_flops(bh, s, d, true, true)));

    // gpt-oss: Megatron-Core's window_attn_skip_freq 2 windows layers 1, 3, 5, ... (1-based).
    const ModelSpec oss = load_model("gpt-oss-120B");
    CHECK(oss.is_window_layer(0));
    CHECK_FALSE(oss.is_window_layer(1));
    CHECK(oss.is_window_layer(34));
    CHECK_FALSE(oss.is_window_layer(35));
    const ComputeModel cm(hardware::load_hardware("dgx-h100"));
    LayerConfig cfg;
    const LayerWork full_layer = layer_work(oss, cfg, cm);
    cfg.window = true;
    const LayerWork window_layer = layer_work(oss, cfg, cm);
    CHECK(op_named(window_layer.forward, "attention.flash").flops <
          0.5 * op_named(full_layer.forward, "attention.flash").flops);

    // In a step the windowed half of the layers costs less: the step falls, and by less than
    // the attention the windows skip could at most take off.
    const Settings base{{"model", "gpt-oss-120B"},      {"model.layers", "4"},
                        {"model.num_experts", "8"},     {"model.seq", "8192"},
                        {"training.global_batch", "8"}, {"training.micro_batch", "1"},
                        {"parallel.tp", "1"},           {"parallel.pp", "1"}};
    Settings no_window = base;
    no_window.emplace_back("model.window_size", "0");
    no_window.emplace_back("model.window_attn_skip_freq", "0");
    const double with = step_seconds(base, 8);
    const double without = step_seconds(no_window, 8);
    CHECK(with < without);
}

namespace {
bool has_op(const PassWork& p, std::string_view name) {
    for (const auto& op : p.ops)
        if (op.name == name)
            return true;
    return false;
}
} // namespace

// gpt-oss's experts on Megatron-Core's eager TEGroupedMLP (megatron/core/transformer/moe/
// experts.py, fusions/fused_bias_geglu.py at NVIDIA/Megatron-LM@2edffadb52): the activation's
// clamp by kernels of its own and fc2's bias added per local expert with the router's fp32
// probabilities; Transformer Engine's fused grouped MLP runs neither.
TEST_CASE("gpt-oss experts: the clamp and fc2's bias apart, unless the grouped MLP is fused",
          "[models][features]") {
    const ModelSpec oss = load_model("gpt-oss-120B");
    CHECK(oss.activation_func_clamp_value == 7);
    CHECK(oss.yarn_rotary_scaling_factor == 32);
    const ComputeModel cm(hardware::load_hardware("dgx-b200"));
    LayerConfig cfg;
    cfg.micro_batch = 4;
    cfg.ep = 8;
    cfg.etp = 1;
    const LayerWork w = layer_work(oss, cfg, cm);
    // Balanced routing: the 16 local experts compute the 4 copies of 16384 tokens, 4096 each.
    const std::int64_t N = 4 * 4096 * 4, h = 2880, f = 2880, L = 16;
    // bf16: each half clamped (read, written), then concatenated (read, written); backward,
    // each half's mask from input and gradient, then the halves' gradients concatenated.
    const Op& clamp = op_named(w.forward, "moe.experts.clamp");
    CHECK(clamp.bytes == 16 * N * f);
    CHECK(clamp.kernels == 3);
    // The forward's glu_linear_offset copied to the device synchronises the host, as the
    // alltoall dispatcher's split sizes after the router's top-k do.
    CHECK(clamp.host_sync);
    CHECK(op_named(w.forward, "moe.router.topk").host_sync);
    CHECK_FALSE(op_named(w.forward, "moe.experts.fc2_bias").host_sync);
    CHECK(op_named(w.backward, "moe.experts.clamp.bwd").bytes == 20 * N * f);
    // Per expert b * p and t + b * p, then the concatenation: with the alltoall dispatcher the
    // router's probabilities are bf16 (its logits' dtype), so 2 + 6 bytes per element of fc2's
    // output, 4 for the concatenation and no cast back; backward per expert two products and
    // two reductions (12), split's concatenation (4).
    const Op& bias = op_named(w.forward, "moe.experts.fc2_bias");
    CHECK(bias.bytes == 12 * N * h);
    CHECK(bias.kernels == 2 * L + 1);
    CHECK(op_named(w.backward, "moe.experts.fc2_bias.bwd").bytes == 16 * N * h);
    CHECK(op_named(w.backward, "moe.experts.fc2_bias.bwd").kernels == 4 * L + 1);
    // The flex dispatcher (HybridEP, DeepEP) upcasts them to fp32: the product and the sum in
    // fp32 (4 + 10 per element), the concatenation (8) and the cast back (6); backward the
    // cast (6), per expert the sum's gradient cast back (6), products and reductions (24),
    // split's concatenation (4).
    LayerConfig flex = cfg;
    flex.flex_dispatcher = true;
    const LayerWork wf = layer_work(oss, flex, cm);
    const Op& bias32 = op_named(wf.forward, "moe.experts.fc2_bias");
    CHECK(bias32.bytes == 28 * N * h);
    CHECK(bias32.kernels == 2 * L + 2);
    CHECK(op_named(wf.backward, "moe.experts.fc2_bias.bwd").bytes == 40 * N * h);
    CHECK(op_named(wf.backward, "moe.experts.fc2_bias.bwd").kernels == 5 * L + 2);
    // Both dispatchers wait on the host for the tokens per expert: DeepEP's dispatch and
    // HybridEP's without a token budget block the CPU as alltoall's split sizes do
    // (layer_work_moe.cpp, router_topk).
    CHECK(op_named(wf.forward, "moe.router.topk").host_sync);
    CHECK(op_named(w.forward, "moe.router.topk").host_sync);
    // moe_act recompute reruns the clamp with the activation (bias_act_func is checkpointed).
    cfg.recompute = Recompute::selective;
    cfg.recompute_modules = recompute_bit(RecomputeModule::moe_act);
    const LayerWork rec = layer_work(oss, cfg, cm);
    CHECK(rec.recompute.time == op_named(rec.forward, "moe.experts.clamp").time +
                                    op_named(rec.forward, "moe.experts.swiglu").time);
    // Fused: the GEMMs and the activation alone, and a shorter pass.
    cfg.recompute = Recompute::none;
    cfg.fusions.fused_grouped_mlp = true;
    const LayerWork fused = layer_work(oss, cfg, cm);
    CHECK_FALSE(has_op(fused.forward, "moe.experts.clamp"));
    CHECK_FALSE(has_op(fused.forward, "moe.experts.fc2_bias"));
    CHECK_FALSE(has_op(fused.backward, "moe.experts.fc2_bias.bwd"));
    CHECK(fused.forward.time == w.forward.time - clamp.time - bias.time);
    // torch.clamp keeps its input (a view of fc1's output, 2f per copy) beside the
    // activation's clamped input: one more fc1 output (bf16) kept than fused; moe_act
    // recompute drops as much more (the checkpoint keeps fc1's output alone).
    CHECK(w.activation_bytes - fused.activation_bytes == 2 * N * 2 * f);
    LayerConfig rec_fused = cfg;
    rec_fused.fusions.fused_grouped_mlp = true;
    rec_fused.recompute = Recompute::selective;
    rec_fused.recompute_modules = recompute_bit(RecomputeModule::moe_act);
    CHECK(rec.activation_bytes == layer_work(oss, rec_fused, cm).activation_bytes);
    // A mixture without biases or a clamp runs none of them either way.
    cfg.fusions.fused_grouped_mlp = false;
    const LayerWork mixtral = layer_work(load_model("mixtral-8x7B"), cfg, cm);
    CHECK_FALSE(has_op(mixtral.forward, "moe.experts.clamp"));
    CHECK_FALSE(has_op(mixtral.forward, "moe.experts.fc2_bias"));
}

TEST_CASE("fused grouped MLP: torch.compile's fusions keep the op fuser's choice",
          "[models][features]") {
    // compile turns every elementwise fusion on; whether the experts run Transformer Engine's
    // fused grouped MLP is the experiment's key either way (TrainingSpec::kernels).
    strategies::parallel::TrainingSpec t;
    t.compile = true;
    t.fusions.norm_fusion = false;
    t.fusions.fused_grouped_mlp = true;
    CHECK(t.kernels().fused_grouped_mlp);
    CHECK(t.kernels().norm_fusion);
    t.fusions.fused_grouped_mlp = false;
    CHECK_FALSE(t.kernels().fused_grouped_mlp);
    t.compile = false;
    CHECK_FALSE(t.kernels().norm_fusion);
}

// YaRN's mscale (0.1 ln 32 + 1 for gpt-oss) makes Megatron-Core refuse Transformer Engine's
// fused RoPE (rope_utils.py, apply_rotary_pos_emb): _apply_rotary_pos_emb_bshd's chain, 12 bytes
// per 16-bit element forward and 13 backward, against the fused kernel's 4.
TEST_CASE("YaRN: RoPE as Megatron-Core's unfused chain", "[models][features]") {
    ModelSpec oss = load_model("gpt-oss-120B");
    const ComputeModel cm(hardware::load_hardware("dgx-b200"));
    LayerConfig cfg;
    const std::int64_t q = 4096 * 64 * 64, k = 4096 * 8 * 64, table = 4096 * 64;
    const LayerWork yarn = layer_work(oss, cfg, cm);
    const Op& fwd = op_named(yarn.forward, "attention.rope");
    CHECK(fwd.bytes == 12 * (q + k) * 2 + 2 * (8 + 8 + 6 + 8 + 8 + 6) * table);
    CHECK(fwd.kernels == 24);
    const Op& bwd = op_named(yarn.backward, "attention.rope.bwd");
    CHECK(bwd.bytes == 13 * (q + k) * 2);
    CHECK(bwd.kernels == 14);
    oss.yarn_rotary_scaling_factor = 0;
    const LayerWork plain = layer_work(oss, cfg, cm);
    CHECK(op_named(plain.forward, "attention.rope").bytes == 4 * (q + k));
    CHECK(op_named(plain.forward, "attention.rope").kernels == 1);
}

TEST_CASE("moe_layer_freq: experts on every n-th layer, as Megatron-Core's integer form",
          "[models][features]") {
    ModelSpec m = load_model("mixtral-8x7B");
    m.moe_layer_pattern = {1, 0};
    CHECK(m.is_moe_layer(0));
    CHECK_FALSE(m.is_moe_layer(1));
    CHECK(m.moe_layers() == 16);
    CHECK(m.moe_layers_below(5) == 3); // layers 0, 2, 4
    m.first_k_dense_replace = 3;       // and with dense first layers: 4, 6, ..., 30
    CHECK(m.moe_layers() == 14);
    CHECK(m.moe_layers_below(5) == 1);
    // Half the layers dense: parameters between the dense and the all-experts model.
    ModelSpec half = load_model("mixtral-8x7B");
    half.moe_layer_pattern = {1, 0};
    const ParameterCounts c = parameter_counts(half);
    CHECK(c.layers == 16 * c.per_layer + 16 * c.per_moe_layer);
    // A step with the dense half is faster than with experts on every layer.
    const Settings base{{"model", "mixtral-8x7B"},     {"model.layers", "4"},
                        {"model.seq", "4096"},         {"training.global_batch", "8"},
                        {"training.micro_batch", "1"}, {"parallel.tp", "1"},
                        {"parallel.pp", "1"}};
    Settings interleaved = base;
    interleaved.emplace_back("model.moe_layer_freq", "2");
    CHECK(step_seconds(interleaved, 8) < step_seconds(base, 8));
}

TEST_CASE("moe_layer_freq: Megatron-Core's list form, as a YAML list or its expression",
          "[models][features]") {
    // Llama 4 Maverick: experts on the odd layers, ([0]+[1])*24, dense MLPs on the even ones.
    const ModelSpec mav = load_model("llama4-maverick");
    CHECK_FALSE(mav.is_moe_layer(0));
    CHECK(mav.is_moe_layer(1));
    CHECK(mav.is_moe_layer(47));
    CHECK(mav.moe_layers() == 24);
    CHECK(mav.moe_layers_below(4) == 2); // layers 1 and 3
    // The integer form k is the list 1, 0 x (k - 1): the same layers as i % k == 0.
    const std::string moe = kBase + "num_experts: 8\nmoe_router_topk: 2\n";
    auto model = [](const std::string& text) {
        return strategies::models::parse_model_yaml(text, "model.yaml");
    };
    const ModelSpec every2 = model(moe + "moe_layer_freq: 2\n");
    const ModelSpec list2 = model(moe + "moe_layer_freq: \"([1]+[0])*2\"\n");
    const ModelSpec yaml2 = model(moe + "moe_layer_freq: [1, 0, 1, 0]\n");
    for (int i = 0; i < 4; ++i) {
        INFO("layer " << i);
        CHECK(every2.is_moe_layer(i) == (i % 2 == 0));
        CHECK(list2.is_moe_layer(i) == every2.is_moe_layer(i));
        CHECK(yaml2.is_moe_layer(i) == every2.is_moe_layer(i));
    }
    CHECK(list2.moe_layers() == 2);
    // Parameters: 24 layers with 128 experts and a shared one, 24 dense ones.
    const ParameterCounts c = parameter_counts(mav);
    CHECK(c.layers == 24 * c.per_layer + 24 * c.per_moe_layer);
    // Bad lists name the key and what would do.
    CHECK_THAT(load_error(moe + "moe_layer_freq: [1, 0, 1]\n"),
               Catch::Contains("'moe_layer_freq'") && Catch::Contains("3 entries for layers=4"));
    CHECK_THAT(load_error(moe + "moe_layer_freq: \"([0]+[2])*2\"\n"),
               Catch::Contains("'moe_layer_freq'") && Catch::Contains("0 (a dense layer)"));
    CHECK_THAT(load_error(moe + "moe_layer_freq: \"([0]+[1]*2\"\n"),
               Catch::Contains("expected ')'"));
    CHECK_THAT(load_error(moe + "moe_layer_freq: \"[1]*99999999999\"\n"),
               Catch::Contains("more than 65536 layers"));
    CHECK_THAT(load_error(moe + "moe_layer_freq: [0, 0, 0, 0]\n"),
               Catch::Contains("no layer with experts"));
    CHECK_THAT(load_error(moe + "moe_layer_freq: 0\n"), Catch::Contains("'moe_layer_freq'"));
}

TEST_CASE("multi-token prediction: one more layer and the LM head again on the last stage",
          "[models][features]") {
    const Settings base{{"model", "deepseek-v3"},
                        {"model.layers", "4"},
                        {"model.num_experts", "16"},
                        {"model.first_k_dense_replace", "1"},
                        {"model.moe_router_num_groups", "0"},
                        {"model.moe_router_group_topk", "0"},
                        {"training.global_batch", "8"},
                        {"training.micro_batch", "1"},
                        {"parallel.tp", "1"},
                        {"parallel.pp", "2"}};
    Settings mtp = base;
    mtp.emplace_back("model.mtp_num_layers", "1");
    const double without = step_seconds(base, 8);
    const double with = step_seconds(mtp, 8);
    // The last of two stages runs 3 layers instead of 2 and its head twice: the step grows,
    // by less than the last stage's own time.
    CHECK(with > without);
    CHECK(with < 2 * without);
    // The block follows the recompute: selective recompute of nothing (core_attn with
    // FlashAttention) leaves the step as it is, the block included; full recompute makes the
    // step longer than without it, the block included.
    Settings selective = mtp;
    selective.emplace_back("parallel.recompute", "selective");
    CHECK(step_seconds(selective, 8) == Approx(with).epsilon(1e-12));
    Settings full = mtp;
    full.emplace_back("parallel.recompute", "full");
    CHECK(step_seconds(full, 8) > with);
    // Model FLOPs: the block's projection, layer and head, forward and backward.
    ModelSpec m = load_model("deepseek-v3");
    const double plain = model_flops_per_iteration(m, 1, false);
    m.mtp_num_layers = 1;
    const double s = m.seq, h = m.hidden;
    CHECK(model_flops_per_iteration(m, 1, false) - plain ==
          Approx(3 * (2 * s * 2 * h * h + moe_layer_forward_flops(m)) + 3 * head_forward_flops(m)));
}

TEST_CASE("model features: bad combinations name the key and the fix", "[models][features]") {
    CHECK_THAT(load_error(kBase + "window_attn_skip_freq: 2\n"),
               Catch::Contains("'window_attn_skip_freq'") && Catch::Contains("set window_size"));
    CHECK_THAT(load_error("kind: transformer\nlayers: 4\nhidden: 64\nheads: 4\nseq: 256\n"
                          "vocab: 1000\nwindow_size: 64\n"),
               Catch::Contains("'window_size'") && Catch::Contains("attention: flash"));
    CHECK_THAT(load_error(kBase + "moe_layer_freq: 2\n"),
               Catch::Contains("'moe_layer_freq'") && Catch::Contains("set num_experts"));
    CHECK_THAT(load_error(kBase + "softmax_type: sometimes\n"),
               Catch::Contains("'softmax_type'") && Catch::Contains("learnable"));
    CHECK_THAT(load_error(kBase + "yarn_rotary_scaling_factor: 32\n"),
               Catch::Contains("'yarn_rotary_scaling_factor'") &&
                   Catch::Contains("position_embedding: rope"));
    CHECK_THAT(load_error(kBase + "position_embedding: rope\nyarn_rotary_scaling_factor: 0.5\n"),
               Catch::Contains("'yarn_rotary_scaling_factor'") && Catch::Contains("1 or more"));
    // heads need not divide hidden once kv_channels says how wide a head is (gpt-oss: 2880
    // over 64 heads of 64), and must without it.
    CHECK(parse_model_yaml("kind: transformer\nlayers: 2\nhidden: 90\nheads: 4\nseq: 64\n"
                           "vocab: 100\nkv_channels: 16\n",
                           "model.yaml")
              .q_dim() == 64);
    CHECK_THAT(load_error("kind: transformer\nlayers: 2\nhidden: 90\nheads: 4\nseq: 64\n"
                          "vocab: 100\n"),
               Catch::Contains("'heads'") && Catch::Contains("kv_channels"));
}

TEST_CASE("recompute_method block: the first recompute_num_layers layers of each chunk",
          "[models][features][recompute]") {
    const Settings base{{"model", "llama3-8B"},         {"model.layers", "8"},
                        {"training.global_batch", "8"}, {"training.micro_batch", "1"},
                        {"parallel.tp", "1"},           {"parallel.pp", "2"}};
    const auto run = [](Settings s, const std::string& recompute, int block) {
        s.emplace_back("parallel.recompute", recompute);
        if (block > 0) {
            s.emplace_back("parallel.recompute_method", "block");
            s.emplace_back("parallel.recompute_num_layers", std::to_string(block));
        }
        return simulate(s, 8);
    };
    const auto none = run(base, "none", 0);
    const auto full = run(base, "full", 0);
    const auto two = run(base, "full", 2);
    const auto all = run(base, "full", 4); // every layer of each 4-layer stage
    CHECK(none.step_time_s < two.step_time_s);
    CHECK(two.step_time_s < full.step_time_s);
    CHECK(all.step_time_s == Approx(full.step_time_s).epsilon(1e-12));
    CHECK(all.peak_bytes_max == full.peak_bytes_max);
    CHECK(two.peak_bytes_max < none.peak_bytes_max);
    CHECK(two.peak_bytes_max > full.peak_bytes_max);

    // block applies to full recompute; uniform groups of layers are not modelled.
    Settings selective = base;
    selective.emplace_back("parallel.recompute", "selective");
    selective.emplace_back("parallel.recompute_method", "block");
    CHECK_THAT(experiment_error(selective, 8),
               Catch::Contains("recompute_method") && Catch::Contains("recompute: full"));
    Settings groups = base;
    groups.emplace_back("parallel.recompute", "full");
    groups.emplace_back("parallel.recompute_num_layers", "2");
    CHECK_THAT(experiment_error(groups, 8), Catch::Contains("recompute_num_layers 2") &&
                                                Catch::Contains("recompute_method: block"));
}

// Issue 33's bad input: a group asked to stay inside an NVLink domain that the layout puts
// across domains exits with the key and the fix.
TEST_CASE("inside_nvlink: groups kept inside one NVLink domain, or refused",
          "[models][features][nvl72]") {
    const Settings llama{{"model", "llama3-70B"},
                         {"training.global_batch", "64"},
                         {"training.micro_batch", "1"},
                         {"parallel.pp", "1"}};
    // tp 8 on 8-GPU DGX H100 nodes stays inside; tp 16 is larger than the domain.
    Settings tp8 = llama;
    tp8.emplace_back("parallel.tp", "8");
    tp8.emplace_back("parallel.inside_nvlink", "[tp, dp]");
    // dp crosses nodes (16 GPUs = 2 domains): asked to stay inside, refused.
    CHECK_THAT(experiment_error(tp8, 16, "dgx-h100"),
               Catch::Contains("inside_nvlink asks dp") &&
                   Catch::Contains("a dp group's 2 ranks span 16 consecutive GPUs"));
    tp8.back().second = "[tp]";
    CHECK(experiment_error(tp8, 16, "dgx-h100") == "(no error)");
    Settings tp16 = llama;
    tp16.emplace_back("parallel.tp", "16");
    tp16.emplace_back("parallel.inside_nvlink", "tp");
    CHECK_THAT(experiment_error(tp16, 16, "dgx-h100"),
               Catch::Contains("tp 16 is larger than the NVLink domain of 8 GPUs"));

    // A GB200 NVL72 rack: ep 64 of DeepSeek-V3 stays on NVLink; on 144 GPUs (two racks)
    // ep 16 would put some groups across the racks' boundary (72 is not a multiple of 16).
    const Settings v3{{"model", "deepseek-v3"},
                      {"model.layers", "8"},
                      {"model.first_k_dense_replace", "0"},
                      {"training.global_batch", "144"},
                      {"training.micro_batch", "1"},
                      {"parallel.tp", "1"},
                      {"parallel.pp", "1"},
                      {"parallel.inside_nvlink", "[ep]"}};
    Settings ep8 = v3;
    ep8.emplace_back("parallel.ep", "8");
    CHECK(experiment_error(ep8, 144, "gb200-nvl72") == "(no error)");
    Settings ep16 = v3;
    ep16.emplace_back("parallel.ep", "16");
    CHECK_THAT(experiment_error(ep16, 144, "gb200-nvl72"),
               Catch::Contains("ep 16 puts some groups across two NVLink domains of 72 GPUs"));
    Settings bad = v3;
    bad.back().second = "[xp]";
    CHECK_THAT(experiment_error(bad, 144, "gb200-nvl72"),
               Catch::Contains("expected tp, cp, ep, dp or pp"));
}

// DeepSeek-V2-Lite's released config (deepseek-ai/DeepSeek-V2-Lite, config.json): latent
// attention without a query latent (q_lora_rank null), 64 routed experts of 1408 with 2 shared,
// top-6, the first layer dense. The model card counts 15.7B parameters.
TEST_CASE("latent attention without a query latent: the queries from the hidden state",
          "[models][features][mla]") {
    const ModelSpec m = parse_model_yaml("name: v2-lite\nkind: transformer\nlayers: 27\n"
                                         "hidden: 2048\nheads: 16\nffn: 10944\nseq: 4096\n"
                                         "vocab: 102400\nattention: flash\nactivation: swiglu\n"
                                         "norm: rmsnorm\nposition_embedding: rope\n"
                                         "tied_embeddings: false\nbias: false\ndropout: 0\n"
                                         "kv_lora_rank: 512\nqk_head_dim: 128\n"
                                         "qk_pos_emb_head_dim: 64\nv_head_dim: 128\n"
                                         "num_experts: 64\nmoe_router_topk: 6\n"
                                         "moe_ffn_hidden_size: 1408\n"
                                         "moe_shared_expert_intermediate_size: 2816\n"
                                         "first_k_dense_replace: 1\n",
                                         "v2-lite.yaml");
    REQUIRE(m.q_lora_rank == 0);
    // linear_q_proj (2048 x 16 x 192 per layer, 170M in all) is 1.1% of the total: without it
    // the count would be 15.54B.
    CHECK(parameter_counts(m).total == Approx(15.7e9).epsilon(0.005));

    const ComputeModel cm(hardware::load_hardware("dgx-h100"));
    LayerConfig cfg;
    cfg.tp = 2;
    cfg.sequence_parallel = true;
    const LayerWork w = layer_work(m, cfg, cm);
    const Op& q = op_named(w.forward, "attention.q_proj");
    CHECK(q.n == 16 / 2 * (128 + 64));
    CHECK(q.k == 2048);
    for (const Op& op : w.forward.ops)
        CHECK_FALSE(std::string_view(op.name).starts_with("attention.q_down"));
    CHECK(op_named(w.backward, "attention.q_proj.wgrad").m == 2048);
    // Under sequence parallelism the hidden state is gathered for linear_q_proj, beside the
    // key/value latent and the shared rotary key.
    bool gathered = false;
    for (const TpCollective& c : w.collectives)
        if (c.name == "attention.latent_all_gather") {
            gathered = true;
            CHECK(c.bytes == q.m * (2048 + 512 + 64) * 2);
        }
    CHECK(gathered);
}
