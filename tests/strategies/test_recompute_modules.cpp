// Megatron-Core's selective recompute by module (parallel.recompute_modules, its
// TransformerConfig.recompute_modules): what each module runs again and what it frees,
// against the layer's own forward kernels and the activation items it drops.
#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "layer_work_test_util.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies;
using namespace clustersim::strategies::models;
using layer_work_test::op_named;

namespace {

const hardware::ComputeModel& h100() {
    static const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    return cm;
}

LayerConfig selective(int tp, std::uint8_t modules) {
    LayerConfig c;
    c.tp = tp;
    c.sequence_parallel = tp > 1;
    c.dtype = hardware::Dtype::bf16;
    c.recompute = Recompute::selective;
    c.recompute_modules = modules;
    return c;
}

LayerConfig none(int tp) {
    LayerConfig c = selective(tp, 0);
    c.recompute = Recompute::none;
    return c;
}

std::vector<std::string_view> names(const PassWork& p) {
    std::vector<std::string_view> out;
    for (const Op& op : p.ops)
        out.push_back(op.name);
    return out;
}

std::vector<const TpCollective*> in_pass(const LayerWork& w, Pass pass) {
    std::vector<const TpCollective*> out;
    for (const auto& c : w.collectives)
        if (c.pass == pass)
            out.push_back(&c);
    return out;
}

using Settings = std::vector<std::pair<std::string, std::string>>;

std::string error_of(const Settings& extra, const std::string& model = "deepseek-v3") {
    static const parallel::Platform p = parallel::load_platform("dgx-h100");
    Settings s{{"model", model},
               {"model.layers", "4"},
               {"training.global_batch", "8"},
               {"training.micro_batch", "1"},
               {"parallel.recompute", "selective"}};
    for (const auto& kv : extra)
        s.push_back(kv);
    try {
        parallel::make_experiment(p, 8, s, "recompute.yaml");
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

TEST_CASE("recompute_modules: Megatron-Core's default is the core attention",
          "[models][recompute]") {
    // With FlashAttention the core attention recomputes inside its own backward: selective
    // recompute of the default module runs nothing again and keeps every activation.
    const ModelSpec m = load_model("llama3-8B");
    const auto all = layer_work(m, none(2), h100());
    const auto sel = layer_work(m, selective(2, recompute_bit(RecomputeModule::core_attn)), h100());
    CHECK(sel.recompute.ops.empty());
    CHECK(sel.activation_bytes == all.activation_bytes);
    CHECK(LayerConfig{}.recompute_modules == recompute_bit(RecomputeModule::core_attn));
    for (int i = 0; i < kRecomputeModules; ++i) {
        const auto module = static_cast<RecomputeModule>(i);
        CHECK(parse_recompute_module(to_string(module)) == module);
    }
    CHECK_FALSE(parse_recompute_module("mla_up"));
}

TEST_CASE("recompute_modules: mlpwi reruns the MLP's input projections, not fc2",
          "[models][recompute][mesh]") {
    // MaxText's save_dot_except_mlp: fc1 (SwiGLU's two input projections) and the activation
    // again, with fc1's all-gather; fc2 and its reduce-scatter not; the same activations freed
    // as "mlp" (6 T f / t).
    const ModelSpec m = load_model("llama3-8B");
    const int t = 2;
    const auto all = layer_work(m, none(t), h100());
    const auto w = layer_work(m, selective(t, recompute_bit(RecomputeModule::mlpwi)), h100());
    CHECK(names(w.recompute) == std::vector<std::string_view>{"mlp.fc1", "mlp.swiglu"});
    CHECK(w.recompute.flops == Approx(op_named(all.forward, "mlp.fc1").flops));
    const auto again = in_pass(w, Pass::recompute);
    REQUIRE(again.size() == 1);
    CHECK(again[0]->op == TpOp::all_gather);
    CHECK(all.activation_bytes - w.activation_bytes == 6 * std::int64_t{m.seq} * m.ffn / t);
}

TEST_CASE("full recompute as JAX's remat: the forward up to the MLP's down projection",
          "[models][recompute][mesh]") {
    // jax.checkpoint recomputes what the backward reads (remat_partial_eval's dce_jaxpr): fc2's
    // output, its reduce-scatter and the residual add only feed the next layer, so a MaxText
    // remat_policy full reruns every forward op before fc2 and its collectives (the two
    // all-gathers and the attention's reduce-scatter), not fc2 nor the MLP's reduce-scatter;
    // it keeps the layer's input as Megatron's full recompute does.
    const ModelSpec m = load_model("llama3-8B");
    const int t = 2;
    LayerConfig megatron = none(t);
    megatron.recompute = Recompute::full;
    LayerConfig jax = megatron;
    jax.remat_backward_reads = true;
    const auto whole = layer_work(m, megatron, h100());
    const auto w = layer_work(m, jax, h100());
    const int fc2 = [&] {
        for (int k = 0; k < whole.forward.ops.count(); ++k)
            if (whole.forward.ops[static_cast<std::size_t>(k)].name == "mlp.fc2")
                return k;
        return -1;
    }();
    REQUIRE(fc2 > 0);
    CHECK(w.recompute.ops.count() == fc2);
    CHECK(names(whole.recompute).size() == static_cast<std::size_t>(whole.forward.ops.count()));
    CHECK(w.recompute.flops ==
          Approx(whole.recompute.flops - op_named(whole.forward, "mlp.fc2").flops));
    CHECK(w.recompute.bytes == whole.recompute.bytes - op_named(whole.forward, "mlp.fc2").bytes -
                                   op_named(whole.forward, "mlp.residual_add").bytes);
    const auto again = in_pass(w, Pass::recompute);
    const auto forward = in_pass(w, Pass::forward);
    REQUIRE(forward.size() == 4);
    REQUIRE(again.size() == 3);
    CHECK(again[0]->op == TpOp::all_gather);
    CHECK(again[1]->op == TpOp::reduce_scatter);
    CHECK(again[2]->op == TpOp::all_gather);
    CHECK(again[2]->needed_by == forward[2]->needed_by); // fc1 waits for its input again
    CHECK(in_pass(whole, Pass::recompute).size() == 4);
    CHECK(w.activation_bytes == whole.activation_bytes);
    CHECK(w.recomputed_activation_bytes == whole.recomputed_activation_bytes);
}

TEST_CASE("MaxText's named-dot remat policies: the unsaved kernels before fc2 again",
          "[models][recompute][mesh]") {
    // minimal saves the projections' outputs by name (save_only_these_names), not the
    // attention's ("context"): the backward reruns the norms, RoPE, the residual add, SwiGLU
    // and the FlashAttention forward (the output projection's weight gradient reads its
    // output), no GEMM, no collective (the gathered inputs are the backward's re-gathers).
    // minimal_with_context saves the attention's output too; save_dot_except_mlpwi adds fc1.
    const ModelSpec m = load_model("llama3-8B");
    const int t = 2;
    const auto with = [&](std::uint8_t modules) {
        LayerConfig cfg = selective(t, modules);
        cfg.remat_backward_reads = true;
        return layer_work(m, cfg, h100());
    };
    const std::uint8_t attn = recompute_bit(RecomputeModule::core_attn);
    const auto all = layer_work(m, none(t), h100());
    const auto minimal = with(attn);
    const std::vector<std::string_view> unsaved{
        "input_layernorm",        "attention.rope",           "attention.flash",
        "attention.residual_add", "post_attention_layernorm", "mlp.swiglu"};
    CHECK(names(minimal.recompute) == unsaved);
    CHECK(minimal.recompute.flops == Approx(op_named(all.forward, "attention.flash").flops));
    CHECK(in_pass(minimal, Pass::recompute).empty());
    CHECK(minimal.activation_bytes == all.activation_bytes);
    const auto context = with(0);
    CHECK(context.recompute.ops.count() == minimal.recompute.ops.count() - 1);
    CHECK(context.recompute.flops == 0);
    const auto mlpwi = with(attn | recompute_bit(RecomputeModule::mlpwi));
    CHECK(mlpwi.recompute.flops ==
          Approx(minimal.recompute.flops + op_named(all.forward, "mlp.fc1").flops));
    CHECK(all.activation_bytes - mlpwi.activation_bytes == 6 * std::int64_t{m.seq} * m.ffn / t);
}

TEST_CASE("recompute_modules: mlp reruns a dense layer's MLP and its TP collectives",
          "[models][recompute]") {
    // Llama 3 8B, tp 2 with sequence parallelism, bf16, one 8192-token sequence: the MLP's
    // all-gather, fc1, SwiGLU, fc2 and reduce-scatter again; freed: SwiGLU's input (the fc1
    // output, 2 f columns) and fc2's input (f columns), 2 bytes each: 6 T f / t.
    const ModelSpec m = load_model("llama3-8B");
    const int t = 2;
    const auto all = layer_work(m, none(t), h100());
    const auto w = layer_work(m, selective(t, recompute_bit(RecomputeModule::mlp)), h100());
    CHECK(names(w.recompute) == std::vector<std::string_view>{"mlp.fc1", "mlp.swiglu", "mlp.fc2"});
    CHECK(w.recompute.flops ==
          Approx(op_named(all.forward, "mlp.fc1").flops + op_named(all.forward, "mlp.fc2").flops));
    const auto again = in_pass(w, Pass::recompute);
    REQUIRE(again.size() == 2);
    CHECK(again[0]->op == TpOp::all_gather);
    CHECK(again[0]->needed_by == 0); // fc1 waits for its input
    CHECK(again[1]->op == TpOp::reduce_scatter);
    CHECK(again[1]->after == 2); // after fc2
    const std::int64_t T = m.seq;
    const std::int64_t dropped = 6 * T * m.ffn / t;
    CHECK(all.activation_bytes - w.activation_bytes == dropped);
    CHECK(w.recomputed_activation_bytes == dropped);
    // A dense layer only: a layer with experts is "moe".
    LayerConfig moe_cfg = selective(1, recompute_bit(RecomputeModule::mlp));
    const auto moe = layer_work(load_model("mixtral-8x7B"), moe_cfg, h100());
    CHECK(moe.recompute.ops.empty());
}

TEST_CASE("recompute_modules: mla_up_proj reruns latent attention's up projections",
          "[models][recompute]") {
    // DeepSeek-V3 (q_lora 1536, kv_lora 512, 128 heads of qk 128 + rope 64 and v 128), tp 2
    // with sequence parallelism, 4096 tokens: the latents' all-gather, the two norms, the up
    // projections and the rotary parts again. Freed: the gathered latents and their norms'
    // outputs less the sharded latents the checkpoint keeps, 2 e T (q + kv) - e T / t (q + kv),
    // and every head's Q, K and V, e T (a / t)(2 (qk + rope) + v).
    ModelSpec m = load_model("deepseek-v3");
    m.seq = 4096;
    const int t = 2;
    const auto all = layer_work(m, none(t), h100());
    const auto w = layer_work(m, selective(t, recompute_bit(RecomputeModule::mla_up_proj)), h100());
    CHECK(names(w.recompute) == std::vector<std::string_view>{
                                    "attention.q_norm", "attention.q_up", "attention.kv_norm",
                                    "attention.kv_up", "attention.rope", "attention.mla_assemble"});
    double seconds = 0;
    for (const Op& op : w.recompute.ops)
        seconds += op_named(all.forward, op.name).time.seconds();
    CHECK(w.recompute.time.seconds() == Approx(seconds));
    const auto again = in_pass(w, Pass::recompute);
    REQUIRE(again.size() == 1);
    CHECK(again[0]->name == "attention.latent_all_gather");
    CHECK(again[0]->needed_by == 0);
    const std::int64_t e = 2, T = 4096, latents = 1536 + 512, a = 128 / t;
    const std::int64_t dropped =
        2 * e * T * latents - e * T / t * latents + e * T * a * (2 * (128 + 64) + 128);
    CHECK(all.activation_bytes - w.activation_bytes == dropped);
    CHECK(w.recomputed_activation_bytes == dropped);
}

TEST_CASE("recompute_modules: moe_act, shared_experts and moe on a layer with experts",
          "[models][recompute]") {
    ModelSpec m = load_model("deepseek-v3");
    m.seq = 4096;
    LayerConfig base = none(1);
    base.ep = 8; // experts laid out apart: the alltoall dispatcher
    const auto all = layer_work(m, base, h100());
    auto with = [&](std::uint8_t modules) {
        LayerConfig c = base;
        c.recompute = Recompute::selective;
        c.recompute_modules = modules;
        return layer_work(m, c, h100());
    };
    SECTION("moe_act: the routed experts' SwiGLU again, its output freed") {
        const auto w = with(recompute_bit(RecomputeModule::moe_act));
        CHECK(names(w.recompute) == std::vector<std::string_view>{"moe.experts.swiglu"});
        // SwiGLU reads two halves and writes one, 3 N fe e bytes; the output, N fe e, is freed.
        CHECK(w.recomputed_activation_bytes * 3 ==
              op_named(all.forward, "moe.experts.swiglu").bytes);
        CHECK(all.activation_bytes - w.activation_bytes == w.recomputed_activation_bytes);
    }
    SECTION("shared_experts: the shared expert MLP again") {
        const auto w = with(recompute_bit(RecomputeModule::shared_experts));
        CHECK(names(w.recompute) == std::vector<std::string_view>{
                                        "moe.shared.fc1", "moe.shared.swiglu", "moe.shared.fc2"});
        // Its SwiGLU input (2 fs columns) and fc2 input (fs), 2 bytes each, T tokens.
        CHECK(w.recomputed_activation_bytes == 6 * std::int64_t{4096} * 2048);
    }
    SECTION("moe: the whole block again, the all-to-alls included; moe_act inside it") {
        const auto w = with(recompute_bit(RecomputeModule::moe));
        const auto both =
            with(recompute_bit(RecomputeModule::moe) | recompute_bit(RecomputeModule::moe_act));
        CHECK(names(both.recompute) == names(w.recompute));
        double flops = 0;
        bool in_block = false;
        for (const Op& op : all.forward.ops) {
            in_block = in_block || op.name == "moe.router";
            if (op.name == "mlp.residual_add")
                break;
            if (in_block)
                flops += op.flops;
        }
        CHECK(w.recompute.flops == Approx(flops));
        int a2a = 0;
        for (const TpCollective* c : in_pass(w, Pass::recompute))
            a2a += c->op == TpOp::all_to_all;
        CHECK(a2a == 2); // dispatch and combine
        CHECK(w.activation_bytes + w.recomputed_activation_bytes == all.activation_bytes);
        CHECK(w.activation_bytes < with(recompute_bit(RecomputeModule::moe_act)).activation_bytes);
    }
}

TEST_CASE("recompute_modules: parsed as Megatron-Core names them, refused where they do not apply",
          "[strategies][recompute]") {
    CHECK(error_of({{"parallel.recompute_modules", "[mla_up_proj, mlp]"}}) == "(no error)");
    CHECK(error_of({{"parallel.recompute_modules", "moe_act,shared_experts"}}) == "(no error)");
    CHECK_THAT(error_of({{"parallel.recompute_modules", "[mla_up, mlp]"}}),
               Catch::Contains("recompute_modules") && Catch::Contains("'mla_up'") &&
                   Catch::Contains("mla_up_proj"));
    CHECK_THAT(error_of({{"parallel.recompute", "full"}, {"parallel.recompute_modules", "mlp"}}),
               Catch::Contains("recompute: selective"));
    CHECK_THAT(error_of({{"parallel.recompute_modules", "mla_up_proj"}}, "llama3-8B"),
               Catch::Contains("no multi-head latent attention"));
    CHECK_THAT(error_of({{"parallel.recompute_modules", "moe_act"}}, "llama3-8B"),
               Catch::Contains("moe_act") && Catch::Contains("has none"));
    CHECK_THAT(error_of({{"parallel.recompute_modules", "shared_experts"}}, "mixtral-8x7B"),
               Catch::Contains("no shared experts"));
}

TEST_CASE("recompute_modules: layernorm reruns only the norms Megatron-Core runs apart",
          "[models][recompute]") {
    // Transformer Engine's layer spec fuses a dense layer's norms into linear_qkv and
    // linear_fc1 (IdentityOp norms, never checkpointed): nothing again, nothing freed.
    const ModelSpec llama = load_model("llama3-8B");
    const auto dense_all = layer_work(llama, none(2), h100());
    const auto dense =
        layer_work(llama, selective(2, recompute_bit(RecomputeModule::layernorm)), h100());
    CHECK(dense.recompute.ops.empty());
    CHECK(dense.activation_bytes == dense_all.activation_bytes);
    // A layer with experts runs its pre-MLP norm apart: it runs again, and its output (bf16,
    // T x h, tp 1) is freed.
    const ModelSpec mixtral = load_model("mixtral-8x7B");
    const auto moe_all = layer_work(mixtral, none(1), h100());
    const auto moe =
        layer_work(mixtral, selective(1, recompute_bit(RecomputeModule::layernorm)), h100());
    CHECK(names(moe.recompute) == std::vector<std::string_view>{"post_attention_layernorm"});
    CHECK(moe_all.activation_bytes - moe.activation_bytes ==
          2 * std::int64_t{mixtral.seq} * mixtral.hidden);
}

TEST_CASE("recompute_modules: mlp on a model whose every layer has experts is refused",
          "[models][recompute]") {
    const std::string e = error_of({{"parallel.recompute_modules", "mlp"}}, "mixtral-8x7B");
    CHECK_THAT(e, Catch::Contains("recompute_modules: mlp") && Catch::Contains("moe"));
}
