// What Megatron-Core's token dispatchers cost around the experts beside their all-to-alls
// (layer_work_moe.cpp): the host's wait for the tokens per expert under every dropless
// dispatcher, and Transformer Engine's padding of the experts' rows for quantized grouped
// GEMMs where nothing pads them before.
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"

#include <catch2/catch.hpp>

#include <string_view>

using namespace clustersim;
namespace models = clustersim::strategies::models;
using hardware::Dtype;

namespace {

const models::Op* find_op(const models::PassWork& p, std::string_view name) {
    for (int i = 0; i < p.ops.count(); ++i)
        if (p.ops[static_cast<std::size_t>(i)].name == name)
            return &p.ops[static_cast<std::size_t>(i)];
    return nullptr;
}

models::ModelSpec mixtral() {
    models::ModelSpec m = models::load_model("mixtral-8x7B");
    m.seq = 4096;
    return m;
}

} // namespace

TEST_CASE("MoE dispatch: the host waits for the tokens per expert under both dispatchers",
          "[strategies][moe][ep]") {
    // The alltoall dispatcher's cuda_sync_point, DeepEP's CPU wait for the received counts and
    // HybridEP's sizing without num_permuted_tokens: one wait per forward, at the routing.
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    models::LayerConfig cfg;
    cfg.ep = 8;
    for (const bool flex : {false, true}) {
        cfg.flex_dispatcher = flex;
        const models::LayerWork w = models::layer_work(mixtral(), cfg, cm);
        const models::Op* topk = find_op(w.forward, "moe.router.topk");
        REQUIRE(topk != nullptr);
        CHECK(topk->host_sync);
        int waits = 0;
        for (int i = 0; i < w.forward.ops.count(); ++i)
            waits += w.forward.ops[static_cast<std::size_t>(i)].host_sync ? 1 : 0;
        CHECK(waits == 1);
    }
}

TEST_CASE("MoE dispatch: Transformer Engine pads the experts' rows for quantized GEMMs",
          "[strategies][moe][ep][fp8]") {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    const models::ModelSpec m = mixtral();
    models::LayerConfig cfg;
    cfg.dtype = Dtype::fp8;
    cfg.fp8_recipe = models::Fp8Recipe::current;
    cfg.ep = 8;
    // 4096 tokens, top-2: 8192 copies, balanced, each received once; hidden 4096, bf16.
    const std::int64_t rows = 4096 * 2, h = 4096, e = 2;
    const std::int64_t copy = 2 * rows * h * e;
    SECTION("alltoall: a copy of the rows each way in each pass") {
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        const models::Op* pad = find_op(w.forward, "moe.experts.pad");
        REQUIRE(pad != nullptr);
        CHECK(pad->kernels == 2); // the tokens and their probabilities
        CHECK(pad->bytes == copy + 2 * rows * e);
        CHECK(pad->time == cm.memory_bound(copy) + cm.memory_bound(2 * rows * e));
        CHECK(find_op(w.forward, "moe.experts.unpad")->bytes == copy);
        for (const auto* name : {"moe.experts.unpad.bwd", "moe.experts.pad.bwd"})
            CHECK(find_op(w.backward, name)->bytes == copy);
        // In order: padded before fc1, unpadded after fc2 (and back in the backward).
        const auto index = [](const models::PassWork& p, std::string_view n) {
            return static_cast<int>(find_op(p, n) - &p.ops[0]);
        };
        CHECK(index(w.forward, "moe.experts.pad") + 1 == index(w.forward, "moe.experts.fc1"));
        CHECK(index(w.forward, "moe.experts.unpad") > index(w.forward, "moe.experts.fc2"));
        CHECK(index(w.backward, "moe.experts.pad.bwd") >
              index(w.backward, "moe.experts.fc1.wgrad"));
    }
    SECTION("the same copies without expert parallelism (the all-gather dispatcher)") {
        cfg.ep = 1;
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        REQUIRE(find_op(w.forward, "moe.experts.pad") != nullptr);
        CHECK(find_op(w.backward, "moe.experts.pad.bwd")->bytes == copy);
    }
    SECTION("none in bf16, under HybridEP (its dispatch pads), nor the fused grouped MLP") {
        models::LayerConfig bf16 = cfg;
        bf16.dtype = Dtype::bf16;
        models::LayerConfig flex = cfg;
        flex.flex_dispatcher = true;
        models::LayerConfig fused = cfg;
        fused.fusions.fused_grouped_mlp = true;
        models::LayerConfig torchao = cfg;
        torchao.fp8_recipe = models::Fp8Recipe::tensorwise;
        for (const models::LayerConfig& c : {bf16, flex, fused, torchao}) {
            const models::LayerWork w = models::layer_work(m, c, cm);
            CHECK(find_op(w.forward, "moe.experts.pad") == nullptr);
            CHECK(find_op(w.backward, "moe.experts.unpad.bwd") == nullptr);
        }
    }
    SECTION("four copies of the rows in all, and the probabilities once") {
        const models::LayerWork a2a = models::layer_work(m, cfg, cm);
        std::int64_t pads = 0;
        for (const auto* p : {&a2a.forward, &a2a.backward})
            for (int i = 0; i < p->ops.count(); ++i) {
                const auto& op = p->ops[static_cast<std::size_t>(i)];
                if (std::string_view(op.name).find("pad") != std::string_view::npos)
                    pads += op.bytes;
            }
        CHECK(pads == 4 * copy + 2 * rows * e);
    }
}
