// What Megatron-Core's token dispatchers cost around the experts beside their all-to-alls
// (layer_work_moe.cpp): the host's wait for the tokens per expert under every dropless
// dispatcher, and Transformer Engine's padding of the experts' rows for quantized grouped
// GEMMs where nothing pads them before.
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
#include <string_view>
#include <utility>
#include <vector>

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
    SECTION("DeepEP's received tokens padded too, their probabilities in fp32") {
        cfg.flex_dispatcher = true;
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        const models::Op* pad = find_op(w.forward, "moe.experts.pad");
        REQUIRE(pad != nullptr);
        CHECK(pad->bytes == copy + 2 * rows * 4);
    }
    SECTION("none in bf16, under HybridEP (its dispatch pads), nor the fused grouped MLP") {
        models::LayerConfig bf16 = cfg;
        bf16.dtype = Dtype::bf16;
        models::LayerConfig flex = cfg;
        flex.flex_dispatcher = true;
        flex.hybridep = true;
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

TEST_CASE(
    "MoE dispatch: HybridEP permutes and sums the tokens in kernels of its own, not Megatron's",
    "[strategies][moe][ep]") {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    const models::ModelSpec m = mixtral();
    models::LayerConfig deepep;
    deepep.ep = 4; // 2 local experts: the sort by local expert runs under DeepEP
    deepep.flex_dispatcher = true;
    models::LayerConfig hybridep = deepep;
    hybridep.hybridep = true;
    const models::LayerWork d = models::layer_work(m, deepep, cm);
    const models::LayerWork h = models::layer_work(m, hybridep, cm);
    // Megatron's permutation, sort, unsort and weighted sum are gone.
    const char* const forward[] = {"moe.permute", "moe.sort_chunks", "moe.unsort_chunks",
                                   "moe.unpermute"};
    const char* const backward[] = {"moe.unpermute.bwd", "moe.unsort_chunks.bwd",
                                    "moe.sort_chunks.bwd", "moe.permute.bwd"};
    std::int64_t gone = 0;
    for (const char* n : forward) {
        REQUIRE(find_op(d.forward, n) != nullptr);
        CHECK(find_op(h.forward, n) == nullptr);
        gone += find_op(d.forward, n)->bytes;
    }
    for (const char* n : backward) {
        REQUIRE(find_op(d.backward, n) != nullptr);
        CHECK(find_op(h.backward, n) == nullptr);
        gone += find_op(d.backward, n)->bytes;
    }
    // HybridEP's permute (Executor::dispatch_postprocess) reads the received tokens and writes
    // a row per (token, local expert) with its fp32 probability; its unpermute
    // (combine_preprocess) reads the rows and writes each received token once. The same rows
    // as DeepEP's sort (2 x rows x hidden x 2 bytes) and received tokens as DeepEP's
    // permutation writes (its bytes less the 4096 local tokens read).
    const std::int64_t row_bytes = find_op(d.forward, "moe.sort_chunks")->bytes / 2;
    const std::int64_t rows = row_bytes / (4096 * 2);
    const std::int64_t received = find_op(d.forward, "moe.permute")->bytes - 4096LL * 4096 * 2;
    REQUIRE(rows == 4096 * 2); // top-2, balanced
    const models::Op* permute = find_op(h.forward, "moe.hybridep.permute");
    const models::Op* unpermute = find_op(h.forward, "moe.hybridep.unpermute");
    const models::Op* permute_bwd = find_op(h.backward, "moe.hybridep.permute.bwd");
    const models::Op* unpermute_bwd = find_op(h.backward, "moe.hybridep.unpermute.bwd");
    REQUIRE(permute != nullptr);
    REQUIRE(unpermute != nullptr);
    REQUIRE(permute_bwd != nullptr);
    REQUIRE(unpermute_bwd != nullptr);
    CHECK(permute->bytes == 2 * row_bytes + 4 * rows);
    CHECK(unpermute->bytes == row_bytes + 4 * rows + received);
    // Backward the combine's gradient is dispatched (dispatch_with_permute) and the dispatch's
    // combined (combine_with_unpermute): the same kernels, the gradients without probabilities.
    CHECK(permute_bwd->bytes == 2 * row_bytes);
    CHECK(unpermute_bwd->bytes == row_bytes + received);
    const std::int64_t added =
        permute->bytes + unpermute->bytes + permute_bwd->bytes + unpermute_bwd->bytes;
    // Only those kernels change: the rest, the all-to-alls included, is the same.
    const auto bytes = [](const models::LayerWork& w) {
        std::int64_t b = 0;
        for (const auto* p : {&w.forward, &w.backward})
            for (int i = 0; i < p->ops.count(); ++i)
                b += p->ops[static_cast<std::size_t>(i)].bytes;
        return b;
    };
    CHECK(bytes(d) - bytes(h) == gone - added);
    CHECK(d.forward.ops.count() - h.forward.ops.count() == 2);
    CHECK(d.collectives.size() == h.collectives.size());
    for (std::size_t i = 0; i < d.collectives.size(); ++i)
        CHECK(d.collectives[i].bytes == h.collectives[i].bytes);
    // Across NVLink domains HybridEP first copies each dispatch's input (the 4096 tokens and
    // their fp32 probabilities) into its RDMA buffer (Executor::dispatch_preprocess), forward
    // and for the combine's gradient.
    CHECK(find_op(h.forward, "moe.hybridep.input_copy") == nullptr);
    models::LayerConfig nodes = hybridep;
    nodes.ep_nodes = 2;
    const models::LayerWork x = models::layer_work(m, nodes, cm);
    const models::Op* copy = find_op(x.forward, "moe.hybridep.input_copy");
    REQUIRE(copy != nullptr);
    CHECK(copy->bytes == 2 * 4096LL * 4096 * 2 + 2 * 4096 * 4);
    const models::Op* copy_bwd = find_op(x.backward, "moe.hybridep.input_copy");
    REQUIRE(copy_bwd != nullptr);
    CHECK(copy_bwd->bytes == copy->bytes);
}

TEST_CASE("MoE dispatch: parallel.moe_flex_dispatcher_backend", "[strategies][moe][ep]") {
    using namespace clustersim::strategies::parallel;
    const Platform p = load_platform("dgx-h100");
    std::vector<std::pair<std::string, std::string>> s = {
        {"model", "mixtral-8x7B"},     {"model.layers", "4"},
        {"model.seq", "1024"},         {"training.global_batch", "16"},
        {"training.micro_batch", "1"}, {"parallel.dp", "8"},
        {"parallel.ep", "8"},          {"parallel.moe_token_dispatcher", "flex"}};
    const ExperimentSpec deepep = make_experiment(p, 8, s, "deepep");
    CHECK(!deepep.parallel.hybridep); // Megatron-Core's default backend
    s.push_back({"parallel.moe_flex_dispatcher_backend", "hybridep"});
    const ExperimentSpec hybridep = make_experiment(p, 8, s, "hybridep");
    CHECK(hybridep.parallel.hybridep);
    // The same all-to-alls; around them HybridEP's permute and unpermute in place of
    // Megatron's (one local expert: no sort), the same rows moved.
    const StepResult h = simulate_step(hybridep);
    const StepResult d = simulate_step(deepep);
    CHECK(h.breakdown.ep_comm_exposed_s == Approx(d.breakdown.ep_comm_exposed_s).epsilon(1e-9));
    CHECK(h.breakdown.compute_s == Approx(d.breakdown.compute_s).epsilon(0.01));
    s.back().second = "nccl";
    CHECK_THROWS_AS(make_experiment(p, 8, s, "bad"), InputError);
}
