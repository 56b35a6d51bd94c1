#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "layer_work_test_util.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/memory_formulas.h"
#include "strategies/models/model_loader.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

using namespace clustersim;
using namespace clustersim::strategies::models;
using hardware::ComputeModel;
using hardware::Dtype;
using layer_work_test::op_named;

namespace {

const ComputeModel& a100() {
    static const ComputeModel cm(hardware::load_hardware("dgx-a100"));
    return cm;
}

LayerConfig layer_config(int tp, bool sp, int b, Recompute r = Recompute::none,
                         Dtype d = Dtype::fp16) {
    LayerConfig c;
    c.tp = tp;
    c.sequence_parallel = sp;
    c.micro_batch = b;
    c.dtype = d;
    c.recompute = r;
    return c;
}

double gemm_flops(const PassWork& p) {
    double f = 0;
    for (const Op& op : p.ops) {
        if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm)
            f += op.flops;
    }
    return f;
}

/// The collectives of `w` are well formed: issued after an op of their pass (or at its
/// start), waited for by a later op (or the pass's end).
void check_collective_references(const LayerWork& w) {
    for (const auto& c : w.collectives) {
        INFO(c.name);
        const int n = w.pass(c.pass).ops.count();
        CHECK(c.after >= -1);
        CHECK(c.after < n);
        CHECK(c.needed_by > c.after);
        CHECK(c.needed_by <= n);
        CHECK(c.bytes > 0);
    }
}

bool has_op(const PassWork& p, std::string_view name) {
    for (const Op& op : p.ops) {
        if (op.name == name)
            return true;
    }
    return false;
}

} // namespace

TEST_CASE("layer work: FLOPs add up to Narayanan et al.'s Eq. 3", "[models][flops]") {
    // 96 B s l h^2 (1 + s/(6h) + V/(16 l h)): a forward, a backward of twice its cost and a
    // recomputed forward of every layer, forward and backward of the LM head.
    for (const char* name : {"megatron-22B", "gpt3-175B", "turing-530B", "megatron-1T"}) {
        INFO(name);
        const ModelSpec m = load_model(name);
        const std::int64_t batch = 1536;
        const double eq3 = narayanan_iteration_flops(batch, m.seq, m.layers, m.hidden, m.vocab);
        CHECK(model_flops_per_iteration(m, batch, true) == Approx(eq3).epsilon(1e-12));
        // The same from the kernels of one layer and of the head, with recompute = full.
        const LayerWork layer = layer_work(m, layer_config(1, false, 1, Recompute::full), a100());
        const LayerWork head = head_work(m, layer_config(1, false, 1), a100());
        CHECK(gemm_flops(layer.backward) == Approx(2 * gemm_flops(layer.forward)));
        CHECK(gemm_flops(layer.recompute) == Approx(gemm_flops(layer.forward)));
        const double per_sample =
            m.layers * (gemm_flops(layer.forward) + gemm_flops(layer.backward) +
                        gemm_flops(layer.recompute)) +
            gemm_flops(head.forward) + gemm_flops(head.backward);
        CHECK(batch * per_sample == Approx(eq3).epsilon(1e-12));
        // Tensor parallelism splits every GEMM evenly.
        const LayerWork split = layer_work(m, layer_config(8, true, 1), a100());
        CHECK(8 * gemm_flops(split.forward) == Approx(gemm_flops(layer.forward)));
    }
    // Without recompute the layers count three passes: 72 B s l h^2 (1 + s/(6h)) + 6 B s h V.
    const ModelSpec g = load_model("gpt3-175B");
    const double s = g.seq, h = g.hidden, l = g.layers, v = g.vocab;
    CHECK(model_flops_per_iteration(g, 2, false) ==
          Approx(2 * (72 * s * l * h * h * (1 + s / (6 * h)) + 6 * s * h * v)));
}

TEST_CASE("layer work: Megatron's tensor-parallel collectives", "[models][tp]") {
    const ModelSpec m = load_model("gpt3-175B");
    const std::int64_t sbh2 = std::int64_t{2048} * 2 * 12288 * 2; // s b h, fp16, b = 2
    SECTION("no tensor parallelism: no collectives") {
        const LayerWork w = layer_work(m, layer_config(1, true, 2), a100());
        CHECK(w.collectives.empty());
    }
    SECTION("tensor parallel: 2 all-reduces forward, 2 backward, of s b h each") {
        const LayerWork w = layer_work(m, layer_config(8, false, 2), a100());
        check_collective_references(w);
        CHECK(w.collectives.size() == 4);
        CHECK(w.collective_count(Pass::forward, TpOp::all_reduce) == 2);
        CHECK(w.collective_count(Pass::backward, TpOp::all_reduce) == 2);
        for (const auto& c : w.collectives)
            CHECK(c.bytes == sbh2);
        // The forward all-reduces follow the row-parallel GEMMs; the backward ones follow
        // the data gradients of the column-parallel GEMMs and overlap their weight gradients.
        for (const auto& c : w.collectives) {
            const Op& after = w.pass(c.pass).ops[static_cast<std::size_t>(c.after)];
            INFO(c.name << " after " << after.name);
            if (c.pass == Pass::forward) {
                CHECK((after.name == "attention.proj" || after.name == "mlp.fc2"));
                CHECK(c.needed_by == c.after + 1);
            } else {
                CHECK((after.name == "attention.qkv.dgrad" || after.name == "mlp.fc1.dgrad"));
                const Op& overlapped = w.backward.ops[static_cast<std::size_t>(c.after + 1)];
                CHECK(overlapped.name.ends_with(".wgrad"));
                CHECK(c.needed_by == c.after + 2);
            }
        }
    }
    SECTION("sequence parallel: all-gathers and reduce-scatters instead, same volume") {
        const LayerWork tp = layer_work(m, layer_config(8, false, 2), a100());
        const LayerWork sp = layer_work(m, layer_config(8, true, 2), a100());
        check_collective_references(sp);
        CHECK(sp.collective_count(Pass::forward, TpOp::all_gather) == 2);
        CHECK(sp.collective_count(Pass::forward, TpOp::reduce_scatter) == 2);
        CHECK(sp.collective_count(Pass::forward, TpOp::all_reduce) == 0);
        CHECK(sp.collective_count(Pass::backward, TpOp::reduce_scatter) == 2);
        int regathers = 0, grad_gathers = 0;
        for (const auto& c : sp.collectives) {
            CHECK(c.bytes == sbh2);
            if (c.pass == Pass::backward && c.op == TpOp::all_gather)
                (c.regather ? regathers : grad_gathers)++;
        }
        // Korthikanti et al.: 4 all-gathers + 4 reduce-scatters per layer (forward and
        // backward); Megatron re-gathers the two sharded GEMM inputs for the weight gradients.
        CHECK(grad_gathers == 2);
        CHECK(regathers == 2);
        // An all-reduce moves what a reduce-scatter and an all-gather move (nccl-tests sizes
        // are equal; busbw factors 2(n-1)/n vs (n-1)/n each).
        CHECK(sp.collective_bytes(Pass::forward) == 2 * tp.collective_bytes(Pass::forward));
        // Sequence parallelism shards the norms and dropouts: less memory-bound work.
        CHECK(sp.forward.time < tp.forward.time);
    }
    SECTION("full recompute repeats the forward's collectives") {
        const LayerWork w = layer_work(m, layer_config(8, false, 2, Recompute::full), a100());
        CHECK(w.collective_count(Pass::recompute, TpOp::all_reduce) == 2);
        CHECK(w.recompute.ops.size() == w.forward.ops.size());
        CHECK(w.recompute.time == w.forward.time);
        check_collective_references(w);
    }
}

TEST_CASE("layer work: activations match Korthikanti et al. 2022", "[models][memory]") {
    // Per layer and micro-batch, for the configurations of their Table 3 (t = 8, s = 2048):
    // the item-by-item accounting of layer_work against the closed forms, within 1%.
    for (const char* name : {"megatron-22B", "gpt3-175B", "turing-530B", "megatron-1T"}) {
        const ModelSpec m = load_model(name);
        const double s = m.seq, h = m.hidden, a = m.heads;
        for (int b : {1, 4}) {
            for (int t : {1, 8}) {
                for (bool sp : {false, true}) {
                    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
                        INFO(name << " b=" << b << " t=" << t << " sp=" << sp << " "
                                  << to_string(r));
                        const LayerWork w = layer_work(m, layer_config(t, sp, b, r), a100());
                        double expected =
                            korthikanti_activation_bytes(s, b, h, a, t, sp && t > 1, r, false);
                        // Full recompute keeps the layer input, sequence-sharded under SP.
                        if (r == Recompute::full && sp)
                            expected /= t;
                        CHECK(static_cast<double>(w.activation_bytes) ==
                              Approx(expected).epsilon(0.01));
                    }
                }
            }
        }
        // FlashAttention removes the 5as/h term (it keeps only a row statistic per query).
        ModelSpec flash = m;
        flash.attention = AttentionKind::flash;
        for (bool sp : {false, true}) {
            const LayerWork w = layer_work(flash, layer_config(8, sp, 1), a100());
            CHECK(static_cast<double>(w.activation_bytes) ==
                  Approx(korthikanti_activation_bytes(s, 1, h, a, 8, sp, Recompute::none, true))
                      .epsilon(0.01));
        }
    }
    // Without parallelism: s b h (34 + 5 a s / h), exactly; for GPT-3 the attention core's
    // 5as/h = 80 outweighs the other 34.
    const ModelSpec g = load_model("gpt3-175B");
    const LayerWork w = layer_work(g, layer_config(1, false, 1), a100());
    const std::int64_t sbh = std::int64_t{2048} * 12288;
    CHECK(5 * 96 * 2048 / 12288 == 80);
    CHECK(w.activation_bytes == sbh * (34 + 80));
    // Selective recompute keeps 34 sbh/t with SP: 107 MB per GPT-3 layer on 8 GPUs.
    const LayerWork sel = layer_work(g, layer_config(8, true, 1, Recompute::selective), a100());
    CHECK(sel.activation_bytes == 34 * sbh / 8);
    CHECK(sel.recomputed_activation_bytes == 5 * 96 * std::int64_t{2048} * 2048 / 8);
}

TEST_CASE("layer work: recompute passes", "[models][recompute]") {
    for (const char* name : {"megatron-22B", "gpt3-175B", "turing-530B", "megatron-1T"}) {
        INFO(name);
        const ModelSpec m = load_model(name);
        const LayerWork none = layer_work(m, layer_config(8, true, 1), a100());
        const LayerWork sel = layer_work(m, layer_config(8, true, 1, Recompute::selective), a100());
        const LayerWork full = layer_work(m, layer_config(8, true, 1, Recompute::full), a100());
        CHECK(none.recompute.ops.empty());
        // Selective recomputes exactly the attention core: QK^T, softmax, dropout, A.V.
        REQUIRE(sel.recompute.ops.size() == 4);
        CHECK(sel.recompute.ops[0].name == "attention.scores");
        CHECK(sel.recompute.ops[3].name == "attention.context");
        // Their cost relative to forward + backward: Korthikanti et al. measure a few percent
        // for selective and 33-39% for full recompute (Korthikanti et al. 2022, "Reducing
        // Activation Recomputation in Large Transformer Models", arXiv:2205.05198).
        const double step = (none.forward.time + none.backward.time).seconds();
        const double sel_overhead = sel.recompute.time.seconds() / step;
        const double full_overhead = full.recompute.time.seconds() / step;
        CHECK(sel_overhead > 0.01);
        CHECK(sel_overhead < 0.10);
        CHECK(full_overhead > 0.30);
        CHECK(full_overhead < 0.40);
        CHECK(sel.forward.time == none.forward.time);
        CHECK(sel.backward.time == none.backward.time);
    }
    // FlashAttention recomputes inside its own backward: selective has nothing to add.
    const LayerWork flash = layer_work(load_model("llama2-70B"),
                                       layer_config(8, true, 1, Recompute::selective), a100());
    CHECK(flash.recompute.ops.empty());
}

TEST_CASE("layer work: Llama 3's GQA, SwiGLU and RoPE layer against its closed form",
          "[models][flops][llama3]") {
    for (const char* name : {"llama3-8B", "llama3-70B", "llama3-405B"}) {
        INFO(name);
        const ModelSpec m = load_model(name);
        const double s = m.seq, h = m.hidden, a = m.heads, g = m.kv_heads, f = m.ffn;
        const double d = h / a;
        // Forward GEMMs per sample: Q, K, V (h x (a + 2g) d), the output projection (h x h),
        // SwiGLU's gate, up and down (3 h f); the attention products 2 x 2 s^2 h (full scores).
        const double gemms = 2 * s * (h * (a + 2 * g) * d + h * h + 3 * h * f);
        CHECK(layer_forward_flops(m) == Approx(gemms + 4 * s * s * h).epsilon(1e-12));
        // The layer's GEMM kernels (FlashAttention counted apart) at t = 8, micro-batch 2.
        const int t = 8, b = 2;
        const LayerWork w =
            layer_work(m, layer_config(t, true, b, Recompute::none, Dtype::bf16), a100());
        CHECK(gemm_flops(w.forward) == Approx(b * gemms / t).epsilon(1e-12));
        CHECK(gemm_flops(w.backward) == Approx(2 * b * gemms / t).epsilon(1e-12));
        // FlashAttention's causal forward: 4 b (a/t) s^2 d, the blocks above the diagonal
        // skipped (128-query blocks).
        const Op& core = w.forward.ops[3];
        REQUIRE(core.kind == OpKind::fused_attention);
        CHECK(core.flops ==
              Approx(4 * b * (a / t) * s * s * d * 0.5 * (1 + 128 / s)).epsilon(1e-12));
        // RoPE: one read and one write of this rank's Q and K heads, forward and backward.
        const Op& rope = w.forward.ops[2];
        CHECK(rope.name == "attention.rope");
        const std::int64_t rope_bytes =
            2 * b * m.seq * (std::int64_t{m.heads} + m.kv_heads) * m.head_dim() / t * 2;
        CHECK(rope.bytes == rope_bytes);
        bool rope_bwd = false;
        for (const Op& op : w.backward.ops)
            rope_bwd = rope_bwd || (op.name == "attention.rope.bwd" && op.bytes == rope_bytes);
        CHECK(rope_bwd);
        // The K/V activations shrink with GQA: the stored QKV output is (a + 2g) d per token.
        ModelSpec mha = m;
        mha.kv_heads = m.heads;
        const LayerWork wm =
            layer_work(mha, layer_config(t, true, b, Recompute::none, Dtype::bf16), a100());
        CHECK(wm.activation_bytes - w.activation_bytes ==
              2 * b * m.seq * 2 * (std::int64_t{m.heads} - m.kv_heads) * m.head_dim() / t);
    }
    // Learned positions (GPT-3) have no rotary kernel.
    for (const Op& op :
         layer_work(load_model("gpt3-175B"), layer_config(1, false, 1), a100()).forward.ops)
        CHECK(op.name != "attention.rope");
}

TEST_CASE("layer work: torchtitan's op-level selective recompute reruns every second matmul",
          "[models][recompute][llama3]") {
    // Llama 3 8B at tp 1, micro-batch 2: the block calls wq, wk, wv, wo, w1, w3, w2; the 2nd,
    // 4th and 6th (wk, wo, w3) run again, 2 T h (g d + h + f) FLOPs, with every elementwise
    // op of the forward. Megatron's selective recompute with flash attention reruns nothing.
    const ModelSpec m = load_model("llama3-8B");
    LayerConfig cfg = layer_config(1, false, 2, Recompute::selective, Dtype::bf16);
    const LayerWork megatron = layer_work(m, cfg, a100());
    CHECK(megatron.recompute.ops.size() == 0);
    cfg.selective_op = true;
    const LayerWork op = layer_work(m, cfg, a100());
    const double T = 2.0 * m.seq, h = m.hidden, f = m.ffn;
    const double kv = double(m.kv_heads) * m.head_dim();
    CHECK(gemm_flops(op.recompute) == Approx(2 * T * h * (kv + h + f)).epsilon(1e-12));
    std::int64_t elementwise = 0;
    for (const Op& o : op.forward.ops)
        if (o.kind == OpKind::memory_bound)
            elementwise += o.bytes;
    CHECK(op.recompute.bytes - [&] {
        std::int64_t g = 0;
        for (const Op& o : op.recompute.ops)
            if (o.kind == OpKind::gemm)
                g += o.bytes;
        return g;
    }() == elementwise);
    for (const Op& o : op.recompute.ops)
        CHECK(o.kind != OpKind::fused_attention); // SDPA's output is saved
    // The activations kept are the policy's saved set (test_loss_sac_memory.cpp has it in
    // closed form): fewer than Megatron's selective keeps, the rest held in the backward.
    CHECK(op.activation_bytes < megatron.activation_bytes);
    CHECK(op.activation_bytes + op.recomputed_activation_bytes == megatron.activation_bytes);
}

TEST_CASE("layer work: eager PyTorch's elementwise chains of torchtitan's Llama block against a "
          "hand count",
          "[models][fusion][llama3]") {
    // Llama 3 8B at tp 1, micro-batch 2, bf16: T = 16384 tokens, N = T h residual-stream
    // elements, Q = T a d query and K = T g d key elements, F = T f per SwiGLU input.
    // Per element, bytes read + written by each eager kernel (torchtitan/models/norms.py
    // RMSNorm, models/llama/model.py apply_rotary_emb, repeat_kv, FeedForward):
    //   RMSNorm forward: float 2+4, pow 4+4, mean 4, * rsqrt 4+4, type_as 4+2, * weight 2+2 = 36
    //   backward: * weight 2+2, 2+2+2 and its sum 2; type_as 2+4; * rsqrt 4+4, 4+4+4 and its
    //     sum 4; mean 4; pow 4+4, 4+4, 4+4+4; the two x.float() gradients 4+4+4; float 4+2;
    //     the residual sum 2+2+2 = 98; and 2+2+2 per add of the projections' gradients
    //     (wq, wk, wv: two adds; w1, w3: one)
    //   RoPE each of xq, xk: float 2+4, complex product 4+4, type_as 4+2 = 20; repeat_kv of
    //     keys and values: read K, write Q, 2 bytes each; the backward the same
    //   SwiGLU: silu 2+2, product 2+2+2 = 10; backward 2+2+2 three times = 18
    // Fused (Megatron-Core's kernels, and torch.compile): 4, 8, 4 (q and k), 6 and 10.
    const ModelSpec m = load_model("llama3-8B");
    LayerConfig cfg = layer_config(1, false, 2, Recompute::none, Dtype::bf16);
    const LayerWork fused = layer_work(m, cfg, a100());
    cfg.fusions = {.apply_rope_fusion = false,
                   .bias_activation_fusion = false,
                   .masked_softmax_fusion = false,
                   .norm_fusion = false};
    const LayerWork eager = layer_work(m, cfg, a100());
    const std::int64_t T = 16384, N = T * 4096, Q = T * 32 * 128, K = T * 8 * 128, F = T * 14336;
    auto bytes = [](const LayerWork& w, Pass p, std::string_view name) {
        return op_named(w.pass(p), name).bytes;
    };
    CHECK(bytes(eager, Pass::forward, "input_layernorm") == 36 * N);
    CHECK(bytes(eager, Pass::forward, "post_attention_layernorm") == 36 * N);
    CHECK(bytes(eager, Pass::backward, "input_layernorm.bwd") == 98 * N + 2 * 6 * N);
    CHECK(bytes(eager, Pass::backward, "post_attention_layernorm.bwd") == 98 * N + 6 * N);
    CHECK(bytes(eager, Pass::forward, "attention.rope") == 20 * (Q + K) + 2 * (2 * K + 2 * Q));
    CHECK(bytes(eager, Pass::backward, "attention.rope.bwd") == 20 * (Q + K) + 2 * (2 * K + 2 * Q));
    CHECK(bytes(eager, Pass::forward, "mlp.swiglu") == 10 * F);
    CHECK(bytes(eager, Pass::backward, "mlp.swiglu.bwd") == 18 * F);
    CHECK(bytes(fused, Pass::forward, "input_layernorm") == 4 * N);
    CHECK(bytes(fused, Pass::backward, "input_layernorm.bwd") == 8 * N);
    CHECK(bytes(fused, Pass::forward, "attention.rope") == 4 * (Q + K));
    CHECK(bytes(fused, Pass::forward, "mlp.swiglu") == 6 * F);
    CHECK(bytes(fused, Pass::backward, "mlp.swiglu.bwd") == 10 * F);
    // The GEMMs and the attention are the same; the eager chains only add time, each kernel
    // paying its own fill and launch.
    CHECK(eager.forward.flops == fused.forward.flops);
    CHECK(eager.backward.flops == fused.backward.flops);
    CHECK(eager.forward.ops.size() == fused.forward.ops.size());
    const Op& norm = op_named(eager.forward, "input_layernorm");
    CHECK(norm.time > a100().memory_bound(norm.bytes));
    // Every elementwise byte of the forward, and of the backward, the hand count's sum.
    auto elementwise = [](const PassWork& p) {
        std::int64_t b = 0;
        for (const Op& o : p.ops)
            if (o.kind == OpKind::memory_bound)
                b += o.bytes;
        return b;
    };
    CHECK(elementwise(eager.forward) - elementwise(fused.forward) ==
          2 * 32 * N + 16 * (Q + K) + 4 * (Q + K) + 4 * F);
    CHECK(elementwise(eager.backward) - elementwise(fused.backward) ==
          2 * 90 * N + 18 * N + 16 * (Q + K) + 4 * (Q + K) + 8 * F);
    // Compiled (every fusion on), PyTorch's grouped-query attention still copies the keys and
    // values to every query head for SDPA (Fusions::gqa_copies): RoPE's kernel writes K for
    // every head (Q - K more) and copies V (K + Q), 2 bytes each, and the backward sums them
    // back; SDPA keeps the copies, 2 (Q - K) bytes beside the fused layer's activations.
    LayerConfig compiled = layer_config(1, false, 2, Recompute::none, Dtype::bf16);
    compiled.fusions.gqa_copies = true;
    const LayerWork gqa = layer_work(m, compiled, a100());
    CHECK(bytes(gqa, Pass::forward, "attention.rope") == 4 * (Q + K) + 2 * 2 * Q);
    CHECK(bytes(gqa, Pass::backward, "attention.rope.bwd") == 4 * (Q + K) + 2 * 2 * Q);
    CHECK(gqa.activation_bytes - fused.activation_bytes == 2 * 2 * (Q - K));
    // Eager, the copies are counted once, with RoPE's chain.
    cfg.fusions.gqa_copies = true;
    CHECK(layer_work(m, cfg, a100()).activation_bytes == eager.activation_bytes);
    cfg.fusions.gqa_copies = false;
    // GPT-3's LayerNorm, learned positions and GeLU: nothing of this applies.
    const ModelSpec gpt = load_model("gpt3-175B");
    LayerConfig gcfg = layer_config(1, false, 1, Recompute::none, Dtype::bf16);
    const std::int64_t gpt_fused = layer_work(gpt, gcfg, a100()).forward.bytes;
    gcfg.fusions = cfg.fusions;
    gcfg.fusions.masked_softmax_fusion = true;
    CHECK(layer_work(gpt, gcfg, a100()).forward.bytes == gpt_fused);
}

TEST_CASE("layer work: without masked_softmax_fusion the unfused attention runs PyTorch's softmax",
          "[models][fusion]") {
    ModelSpec m = load_model("gpt3-175B");
    m.attention = AttentionKind::unfused;
    m.seq = 2048;
    LayerConfig cfg = layer_config(8, true, 1, Recompute::none, Dtype::bf16);
    const auto heads = std::int64_t{m.heads} / 8;
    REQUIRE(megatron_fused_softmax(heads, m.seq, m.seq, Dtype::bf16));
    const LayerWork fused = layer_work(m, cfg, a100());
    cfg.fusions.masked_softmax_fusion = false;
    const LayerWork torch = layer_work(m, cfg, a100());
    const std::int64_t scores = heads * m.seq * m.seq;
    CHECK(op_named(fused.forward, "attention.softmax").bytes == 2 * scores * 2);
    CHECK(op_named(torch.forward, "attention.softmax.torch").bytes == scores * 8);
    CHECK(torch.forward.bytes - fused.forward.bytes == scores * (6 + 8 + 9 + 8 + 6) - 4 * scores);
}

TEST_CASE("layer work: a Mixtral MoE layer against hand-computed FLOPs and bytes",
          "[models][moe]") {
    ModelSpec m = load_model("mixtral-8x7B");
    m.seq = 4096;
    const std::int64_t T = 4096, h = 4096, f = 14336, E = 8, k = 2, N = T * k;
    const std::int64_t g = 8, a = 32, d = 128;
    SECTION("one GPU: every expert local, a grouped GEMM over 8 experts of T k / E tokens") {
        const LayerWork w =
            layer_work(m, layer_config(1, false, 1, Recompute::none, Dtype::bf16), a100());
        const Op& router = op_named(w.forward, "moe.router");
        CHECK(router.m == T);
        CHECK(router.n == E);
        CHECK(router.k == h);
        const Op& fc1 = op_named(w.forward, "moe.experts.fc1");
        CHECK(fc1.kind == OpKind::batched_gemm);
        CHECK(fc1.batch == E);
        CHECK(fc1.m == N / E); // 1024 tokens per expert
        CHECK(fc1.n == 2 * f); // gate and up
        CHECK(fc1.k == h);
        CHECK(fc1.flops == Approx(2.0 * N * h * 2 * f));
        CHECK(op_named(w.forward, "moe.experts.fc2").flops == Approx(2.0 * N * f * h));
        // Forward GEMM FLOPs: attention (Q, K/V of 8 groups, output), the router, and each
        // token through 2 of the 8 experts: 2 T (h (a + 2g) d + h^2 + h E + k 3 h f).
        const double gemms = 2.0 * T * (h * (a + 2 * g) * d + h * h + h * E + k * 3.0 * h * f);
        CHECK(gemm_flops(w.forward) == Approx(gemms).epsilon(1e-12));
        CHECK(gemm_flops(w.backward) == Approx(2 * gemms).epsilon(1e-12));
        CHECK(moe_layer_forward_flops(m) == Approx(gemms + 4.0 * T * T * h).epsilon(1e-12));
        // Bytes: the permutation reads T tokens and writes T k copies of h bf16 values, the
        // combine reads the copies (and their fp32 probabilities) and writes T tokens.
        CHECK(op_named(w.forward, "moe.permute").bytes == (T + N) * h * 2);
        CHECK(op_named(w.forward, "moe.unpermute").bytes == N * h * 2 + N * 4 + T * h * 2);
        CHECK(op_named(w.forward, "moe.experts.swiglu").bytes == 3 * N * f * 2);
        // Every expert's weights (and the router's) live on this GPU.
        CHECK(w.parameters == parameter_counts(m).per_moe_layer);
        CHECK_FALSE(has_op(w.forward, "mlp.fc1"));
    }
    SECTION("expert tensor parallelism splits every expert's columns; the router is replicated") {
        const LayerWork w1 =
            layer_work(m, layer_config(1, false, 1, Recompute::none, Dtype::bf16), a100());
        const LayerWork w8 =
            layer_work(m, layer_config(8, true, 1, Recompute::none, Dtype::bf16), a100());
        CHECK(op_named(w8.forward, "moe.experts.fc1").n == 2 * f / 8);
        CHECK(op_named(w8.forward, "moe.router").m == T / 8); // its sequence shard
        CHECK(8 * (gemm_flops(w8.forward) - op_named(w8.forward, "moe.router").flops) ==
              Approx(gemm_flops(w1.forward) - op_named(w1.forward, "moe.router").flops));
        const std::int64_t replicated = E * h + 2 * h; // router and norms
        CHECK(w8.parameters == (w1.parameters - replicated) / 8 + replicated);
        // The same all-gather / reduce-scatter pairs as a dense layer with sequence parallelism.
        CHECK(w8.collective_count(Pass::forward, TpOp::all_gather) == 2);
        CHECK(w8.collective_count(Pass::forward, TpOp::reduce_scatter) == 2);
        CHECK(w8.collective_count(Pass::backward, TpOp::reduce_scatter) == 2);
        check_collective_references(w8);
        check_collective_references(
            layer_work(m, layer_config(8, true, 1, Recompute::full, Dtype::bf16), a100()));
    }
    SECTION("a capacity factor below 1 drops tokens; above 1 it drops none") {
        ModelSpec capped = m;
        capped.moe_expert_capacity_factor = 0.5;
        const LayerWork w =
            layer_work(capped, layer_config(1, false, 1, Recompute::none, Dtype::bf16), a100());
        CHECK(op_named(w.forward, "moe.experts.fc1").m == N / E / 2);
        capped.moe_expert_capacity_factor = 1.25;
        CHECK(op_named(layer_work(capped, layer_config(1, false, 1), a100()).forward,
                       "moe.experts.fc1")
                  .m == N / E);
    }
    SECTION("activations: the routed copies replace the dense MLP's") {
        const auto cfg = layer_config(1, false, 1, Recompute::none, Dtype::bf16);
        const LayerWork moe = layer_work(m, cfg, a100());
        ModelSpec dense = m;
        dense.num_experts = 0;
        const LayerWork mlp = layer_work(dense, cfg, a100());
        // Dense: activation and fc2 inputs, 2 T (2f + f). MoE: router probabilities 4 T E, the
        // copies (fc1 input and expert output) 2 x 2 N h, and 2 N (2f + f).
        CHECK(moe.activation_bytes - mlp.activation_bytes ==
              4 * T * E + 4 * N * h + 2 * N * 3 * f - 2 * T * 3 * f);
    }
    SECTION("shared experts and dense first layers (DeepSeek-style)") {
        ModelSpec ds = m;
        ds.moe_shared_expert_intermediate_size = 2 * f;
        ds.first_k_dense_replace = 1;
        auto cfg = layer_config(1, false, 1, Recompute::none, Dtype::bf16);
        const LayerWork w = layer_work(ds, cfg, a100());
        CHECK(op_named(w.forward, "moe.shared.fc1").n == 2 * 2 * f);
        CHECK(gemm_flops(w.forward) - gemm_flops(layer_work(m, cfg, a100()).forward) ==
              Approx(2.0 * T * 3 * h * 2 * f));
        cfg.dense_layer = true;
        const LayerWork first = layer_work(ds, cfg, a100());
        CHECK_FALSE(has_op(first.forward, "moe.router"));
        CHECK(op_named(first.forward, "mlp.fc1").n == 2 * f);
        CHECK(first.parameters == parameter_counts(ds).per_layer);
        // Model FLOPs count the dense layer's MLP and the other layers' experts.
        const double per_sample = 3 * (layer_forward_flops(ds) + 31 * moe_layer_forward_flops(ds)) +
                                  3 * head_forward_flops(ds);
        CHECK(model_flops_per_iteration(ds, 4, false) == Approx(4 * per_sample));
    }
}

TEST_CASE("layer work: a DeepSeek-V3 layer against hand-computed FLOPs and bytes",
          "[models][moe][mla]") {
    const ModelSpec m = load_model("deepseek-v3");
    const std::int64_t T = 4096, h = 7168, a = 128, E = 256, k = 8, fe = 2048, N = T * k;
    const std::int64_t ql = 1536, kl = 512, r = 64, qk = 128 + 64, v = 128;
    const auto cfg = layer_config(1, false, 1, Recompute::none, Dtype::bf16);
    const LayerWork w = layer_work(m, cfg, a100());
    // Latent attention's GEMMs: down to the latents, up to the heads, the output projection.
    const double attention =
        2.0 * T * (h * ql + ql * a * qk + h * (kl + r) + kl * a * (128 + v) + a * v * h);
    // The router, 8 of 256 experts and the shared one per token.
    const double moe = 2.0 * T * (h * E + k * 3 * h * fe + 3 * h * fe);
    CHECK(gemm_flops(w.forward) == Approx(attention + moe).epsilon(1e-12));
    CHECK(gemm_flops(w.backward) == Approx(2 * (attention + moe)).epsilon(1e-12));
    // Scores over 192 dimensions, values over 128, per head: 2 s^2 a (192 + 128) in all.
    CHECK(moe_layer_forward_flops(m) ==
          Approx(attention + moe + 2.0 * T * T * a * (qk + v)).epsilon(1e-12));
    const Op& flash = op_named(w.forward, "attention.flash");
    CHECK(flash.flops == Approx(2.0 * T * T * a * (qk + v) * 0.5 * (1 + 128.0 / T)));
    // FlashAttention reads Q, K (192 each), V (128) and writes O (128) per head and token.
    CHECK(flash.bytes == T * a * (qk + qk + v + v) * 2);
    // 128 tokens per expert in a grouped GEMM over all 256 experts.
    const Op& fc1 = op_named(w.forward, "moe.experts.fc1");
    CHECK(fc1.batch == E);
    CHECK(fc1.m == N / E);
    CHECK(fc1.n == 2 * fe);
    CHECK(op_named(w.forward, "moe.permute").bytes == (T + N) * h * 2);
    CHECK(op_named(w.forward, "moe.router.topk").bytes == T * E * (2 + 4 + 8 + 4) + T * k * 12);
    CHECK(w.parameters == parameter_counts(m).per_moe_layer);
    // The first three layers: latent attention and a dense MLP of 18432.
    auto dense_cfg = cfg;
    dense_cfg.dense_layer = true;
    const LayerWork dense = layer_work(m, dense_cfg, a100());
    CHECK(gemm_flops(dense.forward) == Approx(attention + 2.0 * T * 3 * h * 18432).epsilon(1e-12));
    CHECK(dense.parameters == parameter_counts(m).per_layer);
    // Tensor parallelism: the latents (not the hidden states) are gathered; the down
    // projections run replicated on each rank's sequence shard.
    const LayerWork w8 =
        layer_work(m, layer_config(8, true, 1, Recompute::none, Dtype::bf16), a100());
    CHECK(op_named(w8.forward, "attention.q_down").m == T / 8);
    CHECK(op_named(w8.forward, "attention.q_up").n == a / 8 * qk);
    bool latent = false;
    for (const TpCollective& c : w8.collectives) {
        if (c.name == "attention.latent_all_gather") {
            CHECK(c.bytes == T * (ql + kl + r) * 2);
            latent = true;
        }
    }
    CHECK(latent);
    check_collective_references(w8);
    const std::int64_t replicated = h * ql + ql + h * (kl + r) + kl + E * h + 2 * h;
    CHECK(w8.parameters == (w.parameters - replicated) / 8 + replicated);
}

TEST_CASE("layer work: kernels of a transformer layer", "[models][layer]") {
    SECTION("GQA shrinks the QKV projection (Llama 2 70B, t = 8)") {
        const LayerWork w = layer_work(load_model("llama2-70B"), layer_config(8, false, 1), a100());
        const Op& qkv = w.forward.ops[1];
        CHECK(qkv.name == "attention.qkv");
        CHECK(qkv.m == 4096);
        CHECK(qkv.n == (64 + 2 * 8) * 128 / 8);
        CHECK(qkv.k == 8192);
        // SwiGLU: fc1 produces gate and up (2 x 28672 / 8 columns).
        bool found = false;
        for (const Op& op : w.forward.ops) {
            if (op.name == "mlp.fc1") {
                CHECK(op.n == 2 * 28672 / 8);
                found = true;
            }
        }
        CHECK(found);
        // Everything but the two RMSNorms (replicated) is split 8 ways.
        const std::int64_t per_layer = parameter_counts(load_model("llama2-70B")).per_layer;
        CHECK(w.parameters == (per_layer - 2 * 8192) / 8 + 2 * 8192);
    }
    SECTION("unfused attention: batched GEMMs over micro-batch x heads / t") {
        const LayerWork w = layer_work(load_model("gpt3-175B"), layer_config(8, false, 2), a100());
        const Op& scores = w.forward.ops[2];
        CHECK(scores.name == "attention.scores");
        CHECK(scores.kind == OpKind::batched_gemm);
        CHECK(scores.batch == 2 * 96 / 8);
        CHECK(scores.m == 2048);
        CHECK(scores.n == 2048);
        CHECK(scores.k == 128);
        // The s^2 softmax is memory-bound: 2 bytes in, 2 out per score.
        CHECK(w.forward.ops[3].bytes == 2 * 2 * 24 * std::int64_t{2048} * 2048);
    }
    SECTION("Megatron's fused softmax, or PyTorch's in fp32 where its kernel does not fit") {
        // scaled_upper_triang_masked_softmax: 16-bit scores, 16 < sk <= 2048, rows
        // (micro-batch x heads per rank) a multiple of 4 and of its rows per block: 4 for
        // sk > 128 (a warp per row, 4 warps), 8 up to 128 (two rows per warp).
        CHECK_FALSE(megatron_fused_softmax(2, 1024, 1024, Dtype::fp16)); // 16 heads, tp 8, mb 1
        CHECK(megatron_fused_softmax(4, 1024, 1024, Dtype::fp16));       // ... mb 2
        CHECK(megatron_fused_softmax(4, 1024, 1024, Dtype::bf16));
        CHECK_FALSE(megatron_fused_softmax(4, 1024, 1024, Dtype::fp32)); // 16-bit only
        CHECK_FALSE(megatron_fused_softmax(4, 4096, 4096, Dtype::fp16)); // sk > 2048
        CHECK_FALSE(megatron_fused_softmax(4, 128, 128, Dtype::fp16));   // 8 rows per block
        CHECK(megatron_fused_softmax(8, 128, 128, Dtype::fp16));
        // A 16-head model at t = 8 and micro-batch 1 runs the fallback: cast to fp32, scale,
        // mask, softmax, cast back (4 kernels more), and five backward kernels for one.
        ModelSpec m = load_model("gpt3-175B");
        m.heads = 16;
        m.hidden = 2048;
        m.ffn = 4 * 2048;
        const LayerWork fused = layer_work(m, layer_config(8, false, 2), a100());
        const LayerWork fallback = layer_work(m, layer_config(8, false, 1), a100());
        CHECK(fallback.forward.ops.size() == fused.forward.ops.size() + 4);
        CHECK(fallback.backward.ops.size() == fused.backward.ops.size() + 4);
        CHECK(fallback.forward.ops[3].name == "attention.softmax.to_fp32");
        // Every fp32 pass reads and writes 4 bytes per score: 4 + 2 (casts), 8, 8 + mask, 8.
        const std::int64_t scores = 1 * 16 / 8 * std::int64_t{2048} * 2048;
        std::int64_t bytes = 0;
        for (int i = 3; i < 8; ++i)
            bytes += fallback.forward.ops[static_cast<std::size_t>(i)].bytes;
        CHECK(bytes == scores * (6 + 8 + 9 + 8 + 6));
    }
    SECTION("FlashAttention replaces the four kernels with one") {
        ModelSpec m = load_model("gpt3-175B");
        const LayerWork unfused = layer_work(m, layer_config(8, true, 1), a100());
        m.attention = AttentionKind::flash;
        const LayerWork flash = layer_work(m, layer_config(8, true, 1), a100());
        CHECK(flash.forward.ops.size() == unfused.forward.ops.size() - 3);
        CHECK(flash.forward.ops[2].kind == OpKind::fused_attention);
        CHECK(flash.forward.bytes < unfused.forward.bytes);
    }
    SECTION("pass totals are the sums of their kernels") {
        const LayerWork w =
            layer_work(load_model("megatron-22B"), layer_config(4, true, 2), a100());
        sim::Time t;
        double f = 0;
        for (const Op& op : w.backward.ops) {
            t += op.time;
            f += op.flops;
            CHECK(op.time > sim::Time::zero());
        }
        CHECK(t == w.backward.time);
        CHECK(f == Approx(w.backward.flops));
    }
    SECTION("bigger micro-batches and less tensor parallelism take longer") {
        const ModelSpec m = load_model("megatron-22B");
        CHECK(layer_work(m, layer_config(8, true, 2), a100()).forward.time >
              layer_work(m, layer_config(8, true, 1), a100()).forward.time);
        CHECK(layer_work(m, layer_config(4, true, 1), a100()).forward.time >
              layer_work(m, layer_config(8, true, 1), a100()).forward.time);
    }
    SECTION("identical inputs give identical work") {
        const ModelSpec m = load_model("turing-530B");
        const LayerWork a = layer_work(m, layer_config(8, true, 1, Recompute::selective), a100());
        const LayerWork b = layer_work(m, layer_config(8, true, 1, Recompute::selective), a100());
        REQUIRE(a.backward.ops.size() == b.backward.ops.size());
        for (std::size_t i = 0; i < a.backward.ops.size(); ++i) {
            CHECK(a.backward.ops[i].name == b.backward.ops[i].name);
            CHECK(a.backward.ops[i].time == b.backward.ops[i].time);
        }
        CHECK(a.activation_bytes == b.activation_bytes);
    }
}

TEST_CASE("layer work: the lecture's MLP, split naively over 4 GPUs", "[models][mlp]") {
    // cs336-parallelism-2.yaml, tensor_parallel: batch 128, each rank W[:, 256], all-gather of
    // the 128x256 fp32 slices after every layer.
    const ModelSpec m = load_model("lecture-mlp");
    const LayerWork w =
        layer_work(m, layer_config(4, false, 128, Recompute::none, Dtype::fp32), a100());
    REQUIRE(w.forward.ops.size() == 2);
    const Op& linear = w.forward.ops[0];
    CHECK(linear.m == 128);
    CHECK(linear.n == 256);
    CHECK(linear.k == 1024);
    CHECK(w.collective_count(Pass::forward, TpOp::all_gather) == 1);
    CHECK(w.collectives[0].bytes == 128 * 1024 * 4);
    CHECK(w.collectives[0].needed_by == 2); // the next layer waits for it
    CHECK(w.collective_count(Pass::backward, TpOp::all_reduce) == 1);
    CHECK(w.parameters == 1024 * 256);
    check_collective_references(w);
    // Data parallel over 4: local batch 32, no collectives in the layer.
    const LayerWork dp =
        layer_work(m, layer_config(1, false, 32, Recompute::none, Dtype::fp32), a100());
    CHECK(dp.collectives.empty());
    CHECK(dp.parameters == 1024 * 1024);
    CHECK(embedding_work(m, layer_config(1, false, 32), a100()).forward.ops.empty());
    CHECK(head_work(m, layer_config(1, false, 32), a100()).forward.ops.size() == 1);
    // Full recompute keeps only the layer input.
    const LayerWork full =
        layer_work(m, layer_config(4, false, 128, Recompute::full, Dtype::fp32), a100());
    CHECK(full.activation_bytes == 128 * 1024 * 4);
    CHECK(full.recompute.ops.size() == 2);
}

TEST_CASE("layer work: embedding and head stages", "[models][stages]") {
    const ModelSpec m = load_model("gpt3-175B");
    const std::int64_t s = 2048, h = 12288, v = 51200;
    SECTION("head: LM head GEMM over the padded vocabulary, cross entropy, memory") {
        const LayerWork w = head_work(m, layer_config(8, true, 1), a100());
        check_collective_references(w);
        const Op& head = w.forward.ops[1];
        CHECK(head.name == "lm_head");
        CHECK(head.n == v / 8);
        CHECK(head.flops == Approx(2.0 * s * h * v / 8));
        CHECK(w.collective_count(Pass::forward, TpOp::all_reduce) == 3); // max, sum, target
        // Korthikanti et al. 2022 section 4.3: 4 s b h / t (1 + v / h).
        CHECK(static_cast<double>(w.activation_bytes) ==
              Approx(4.0 * s * h / 8 * (1.0 + static_cast<double>(v) / h)));
        CHECK(w.shares_embedding_weights);
        CHECK(w.parameters == v / 8 * h + 2 * h);
    }
    SECTION("embedding: vocabulary-parallel lookup reduced across the ranks") {
        const LayerWork w = embedding_work(m, layer_config(8, false, 1), a100());
        check_collective_references(w);
        CHECK(w.collective_count(Pass::forward, TpOp::all_reduce) == 1);
        CHECK(w.parameters == v / 8 * h + s * h);
        CHECK(w.activation_bytes == s * h); // the dropout mask
        CHECK(w.backward.time > sim::Time::zero());
    }
    SECTION("Megatron pads the vocabulary to a multiple of 128 t") {
        ModelSpec odd = m;
        odd.vocab = 50257;
        CHECK(padded_vocab(odd, 1) == 50304);
        CHECK(padded_vocab(odd, 8) == 51200);
        CHECK(head_work(odd, layer_config(8, false, 1), a100()).forward.ops[1].n == 6400);
    }
}

TEST_CASE("layer work: optimizer step and model state", "[models][memory]") {
    const std::int64_t p = 1'000'000;
    CHECK(optimizer_step(p, Dtype::fp16, Optimizer::adam, 0, a100()).bytes == 30 * p);
    CHECK(optimizer_step(p, Dtype::bf16, Optimizer::adam, 1, a100()).bytes == 28 * p);
    CHECK(optimizer_step(p, Dtype::fp32, Optimizer::adam, 0, a100()).bytes == 28 * p);
    CHECK(optimizer_step(p, Dtype::fp32, Optimizer::sgd, 0, a100()).bytes == 12 * p);
    // Pure bf16 (no master weights): gradient 2, weights 2 + 2, m and v 2 + 2 each.
    CHECK(optimizer_step(p, Dtype::bf16, Optimizer::adam, 0, a100(), false).bytes == 14 * p);
    CHECK(optimizer_step(p, Dtype::bf16, Optimizer::sgd, 0, a100(), false).bytes == 6 * p);
    CHECK(optimizer_step(p, Dtype::fp32, Optimizer::adam, 0, a100(), false).bytes == 28 * p);
    // Memory-bound: 30 MB at the A100's sustained 1.61 TB/s.
    const Op big = optimizer_step(1'000'000'000, Dtype::fp16, Optimizer::adam, 0, a100());
    CHECK(big.time.seconds() == Approx(30e9 / 1.61e12).epsilon(0.01));
    CHECK(parse_optimizer("adamw") == Optimizer::adam);
    CHECK_FALSE(parse_optimizer("lamb"));
}

TEST_CASE("layer work: configurations the model cannot take", "[models][errors]") {
    const ModelSpec g = load_model("gpt3-175B");
    SECTION("tp not dividing the heads names the numbers and the tp values that work") {
        CHECK_THROWS_AS(layer_work(g, layer_config(5, false, 1), a100()), InputError);
        CHECK_THROWS_WITH(layer_work(g, layer_config(5, false, 1), a100()),
                          Catch::Contains("tp=5") && Catch::Contains("heads=96") &&
                              Catch::Contains("1, 2, 3, 4, 6, 8"));
    }
    SECTION("GQA: tp must divide kv_heads") {
        CHECK_THROWS_WITH(layer_work(load_model("llama2-70B"), layer_config(16, false, 1), a100()),
                          Catch::Contains("kv_heads=8"));
    }
    SECTION("sequence parallelism needs tp to divide seq") {
        ModelSpec m = g;
        m.seq = 2047;
        CHECK_NOTHROW(layer_work(m, layer_config(8, false, 1), a100()));
        CHECK_THROWS_WITH(layer_work(m, layer_config(8, true, 1), a100()), Catch::Contains("seq"));
    }
    SECTION("sequence parallelism on the MLP") {
        CHECK_THROWS_WITH(layer_work(load_model("lecture-mlp"), layer_config(4, true, 32), a100()),
                          Catch::Contains("transformers"));
    }
    SECTION("micro-batch of zero, tp of zero") {
        CHECK_THROWS_WITH(layer_work(g, layer_config(8, false, 0), a100()),
                          Catch::Contains("micro-batch"));
        CHECK_THROWS_AS(layer_work(g, layer_config(0, false, 1), a100()), InputError);
    }
    SECTION("a dtype the GPU lacks") {
        CHECK_THROWS_WITH(
            layer_work(g, layer_config(8, false, 1, Recompute::none, Dtype::fp8), a100()),
            Catch::Contains("fp8"));
    }
}
