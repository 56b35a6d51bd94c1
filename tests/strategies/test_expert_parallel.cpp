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
