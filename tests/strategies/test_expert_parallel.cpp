#include "base/error.h"
#include "strategies/models/expert_parallel.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"

#include <catch2/catch.hpp>

#include <string>

using namespace clustersim;
using namespace clustersim::strategies::models;
using hardware::Dtype;

namespace {
std::string error_of(const ModelSpec& m, int ep) {
    try {
        check_expert_parallel(m, ep);
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}
} // namespace

TEST_CASE("expert parallelism: all-to-all bytes and expert work per GPU in closed form",
          "[models][moe][ep]") {
    ModelSpec m = load_model("mixtral-8x7B");
    m.seq = 4096;
    const std::int64_t h = 4096, f = 14336, k = 2;
    SECTION("Mixtral 8x7B over 8 GPUs, one expert each, balanced routing") {
        const ExpertParallelWork w = expert_parallel_work(m, 8, 1, false, 1, Dtype::bf16);
        CHECK(w.local_experts == 1);
        CHECK(w.routed_copies == 4096 * k);
        // Dispatch: every copy of this GPU's 4096 x 2 routings, h bf16 values each; 7/8 of
        // them leave the GPU. The combine returns as many.
        CHECK(w.dispatch_bytes == 4096 * k * h * 2);
        CHECK(w.combine_bytes == w.dispatch_bytes);
        CHECK(w.busiest_receive_bytes == 4096 * k * 7 / 8 * h * 2);
        CHECK(w.tokens_per_expert == 4096 * k);
        CHECK(w.expert_parameters == 3 * h * f);
    }
    SECTION("the busiest GPU sets the pace; a capacity factor caps it") {
        m.moe_load_imbalance = 1.5;
        const ExpertParallelWork w = expert_parallel_work(m, 4, 1, false, 2, Dtype::bf16);
        CHECK(w.local_experts == 2);
        CHECK(w.routed_copies == 2 * 4096 * k);
        CHECK(w.busiest_copies == 3 * 4096 * k); // 1.5 x the mean
        CHECK(w.tokens_per_expert == 3 * 4096 * k / 2);
        CHECK(w.busiest_receive_bytes == 3 * 4096 * k * 3 / 4 * h * 2);
        m.moe_expert_capacity_factor = 1.25;
        CHECK(expert_parallel_work(m, 4, 1, false, 2, Dtype::bf16).busiest_copies ==
              2 * 4096 * k * 5 / 4);
        // Without expert parallelism every GPU computes all its copies: no imbalance.
        m.moe_expert_capacity_factor = 0;
        CHECK(expert_parallel_work(m, 1, 1, false, 2, Dtype::bf16).busiest_copies == 2 * 4096 * k);
    }
    SECTION("with tensor and sequence parallelism each GPU routes its sequence shard") {
        const ExpertParallelWork w = expert_parallel_work(m, 2, 4, true, 1, Dtype::bf16);
        CHECK(w.routed_copies == 4096 / 4 * k);
        CHECK(w.expert_parameters == 4 * 3 * h * f / 4);
    }
    SECTION("DeepSeek-V3 over 64 GPUs: 4 of 256 experts each") {
        const ModelSpec ds = load_model("deepseek-v3");
        const ExpertParallelWork w = expert_parallel_work(ds, 64, 1, false, 1, Dtype::bf16);
        CHECK(w.local_experts == 4);
        CHECK(w.dispatch_bytes == 4096 * 8 * 7168 * 2);
        CHECK(w.busiest_receive_bytes == 4096 * 8 * 63 / 64 * 7168 * 2);
        CHECK(w.tokens_per_expert == 4096 * 8 / 4);
        CHECK(w.expert_parameters == 4 * 3 * 7168 * 2048);
        // Expert weights divided by ep: the layer's routed experts across the group.
        CHECK(64 * w.expert_parameters == 256 * 3 * std::int64_t{7168} * 2048);
    }
    SECTION("ep must divide the experts") {
        CHECK(error_of(m, 8) == "(no error)");
        CHECK_THAT(error_of(m, 3), Catch::Contains("ep=3 does not divide num_experts=8") &&
                                       Catch::Contains("1, 2, 4, 8"));
        CHECK_THAT(error_of(load_model("llama3-8B"), 2), Catch::Contains("set ep to 1"));
        CHECK_THROWS_AS(expert_parallel_work(m, 16, 1, false, 1, Dtype::bf16), InputError);
    }
}

TEST_CASE("expert parallelism: destinations per token and the flex (DeepEP) dispatch bytes",
          "[models][moe][ep]") {
    // C(n, k) ratios by hand: C(s - x, k) / C(s, k) = prod_i (s - x - i) / (s - i).
    auto miss = [](int s, int x, int k) {
        double p = 1;
        for (int i = 0; i < k; ++i)
            p *= static_cast<double>(s - x - i) / (s - i);
        return p;
    };
    ModelSpec v3 = load_model("deepseek-v3");
    REQUIRE(v3.moe_router_num_groups == 8);
    REQUIRE(v3.moe_router_group_topk == 4);
    SECTION("DeepSeek-V3 at ep 64 on 8 nodes: node-limited routing, one group per node") {
        // A node is reachable when its group is among the token's 4 of 8 (chance 1/2); then
        // the 8 experts, drawn from the 4 groups' 128, miss its 32 with C(96,8)/C(128,8).
        const double nodes = 8 * 0.5 * (1 - miss(128, 32, 8));
        CHECK(expected_bins_per_token(v3, 8) == Approx(nodes).epsilon(1e-12));
        CHECK(nodes == Approx(3.629).margin(1e-3)); // at most 4, the report's bound
        // Per GPU (4 experts each; each group spans 8 GPUs).
        const double gpus = 64 * 0.5 * (1 - miss(128, 4, 8));
        CHECK(expected_bins_per_token(v3, 64) == Approx(gpus).epsilon(1e-12));
        // Without the group limit the 8 experts spread over more nodes.
        ModelSpec free = v3;
        free.moe_router_num_groups = free.moe_router_group_topk = 0;
        CHECK(expected_bins_per_token(free, 8) == Approx(8 * (1 - miss(256, 32, 8))));
        CHECK(expected_bins_per_token(free, 8) > expected_bins_per_token(v3, 8));
        // 2048 tokens per GPU (4096 over the 2 sequence-parallel ranks): the all-to-all over the
        // 8-GPU rail carries one copy per destination node, against 8 per token (one per
        // expert) with the alltoall dispatcher.
        const std::int64_t bytes = flex_dispatch_bytes(v3, 64, 8, 2048, Dtype::bf16);
        CHECK(bytes == std::llround(2048 * nodes) * 7168 * 2);
        CHECK(static_cast<double>(bytes) / (2048.0 * 8 * 7168 * 2) ==
              Approx(nodes / 8).epsilon(1e-4)); // the count rounded
        // Inside one node (ep 8, 32 experts per GPU): once per destination GPU.
        CHECK(flex_dispatch_bytes(v3, 8, 1, 2048, Dtype::bf16) ==
              std::llround(2048 * expected_bins_per_token(v3, 8)) * 7168 * 2);
    }
    SECTION("invariants: one bin, top-1, distinct experts one per bin") {
        CHECK(expected_bins_per_token(v3, 1) == 1);
        ModelSpec top1 = v3;
        top1.moe_router_topk = 1;
        CHECK(expected_bins_per_token(top1, 8) == Approx(1));
        CHECK(expected_bins_per_token(top1, 64) == Approx(1));
        // Mixtral: 8 experts on 8 GPUs, top-2 distinct experts: always 2 GPUs.
        CHECK(expected_bins_per_token(load_model("mixtral-8x7B"), 8) == Approx(2));
        // Never more than top-k, nor than the bins.
        for (int bins : {2, 4, 8, 16, 32, 64, 128, 256}) {
            CHECK(expected_bins_per_token(v3, bins) <= 8 + 1e-9);
            CHECK(expected_bins_per_token(v3, bins) <= bins + 1e-9);
        }
    }
}
