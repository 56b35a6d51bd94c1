// Hybrid sharding (HSDP, torchtitan's data_parallel_replicate_degree x data_parallel_shard_degree
// on FSDP2's 2-D mesh): the model state divided by the shard degree, the per-layer gathers and
// the gradients' reduce-scatter on the shard group (inside a node), each gradient shard then
// all-reduced over the replicate group; shard = dp is plain FSDP
// (strategies/parallel/rank_plan.cpp).
#include "base/error.h"
#include "strategies/collectives/communicator.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// A small GPT on `gpus` A100s (8 per node), FSDP (ZeRO-3), bf16 gradients, one micro-batch
/// per data-parallel rank.
ExperimentSpec gpt(int gpus, Settings extra) {
    Platform p = load_platform("dgx-a100");
    p.framework.fp32_grad_reduce = false;
    Settings s{{"model.kind", "transformer"},
               {"model.layers", "8"},
               {"model.hidden", "2048"},
               {"model.heads", "16"},
               {"model.seq", "1024"},
               {"model.vocab", "51200"},
               {"training.dtype", "bf16"},
               {"training.micro_batch", "1"},
               {"training.global_batch", std::to_string(gpus)},
               {"parallel.fsdp", "true"}};
    for (auto& kv : extra)
        s.push_back(kv);
    return make_experiment(p, gpus, s, "hsdp-test");
}

StepPlan plan_of(const ExperimentSpec& e) {
    return build_step_plan(e, std::make_shared<hardware::Topology>(e.cluster));
}

std::string message(int gpus, const Settings& s) {
    try {
        gpt(gpus, s);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("HSDP: model state divided by the shard degree, groups laid out as torchtitan's mesh",
          "[strategies][training][zero][hsdp]") {
    const auto e = gpt(16, {{"parallel.data_parallel_replicate_degree", "2"}});
    REQUIRE(e.parallel.zero == 3);
    REQUIRE(e.parallel.dp == 16);
    CHECK(e.parallel.dp_shard_size() == 8);
    const StepPlan plan = plan_of(e);
    const RankPlan& r = plan.ranks.front();
    // ZeRO-3 in bf16 with Adam: (2 + 2 + 12) bytes x ceil(P / shard), not ceil(P / dp).
    const std::int64_t shard = (r.parameters + 7) / 8;
    CHECK(r.weights_bytes == 2 * shard);
    CHECK(r.grads_bytes == 2 * shard);
    CHECK(r.optimizer_bytes == 12 * shard);
    // dp_shard is the inner mesh dimension: the shard group is the first node's 8 GPUs, the
    // replicate group one GPU per node.
    CHECK(r.dp_group == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(r.replicate_group == std::vector<int>{0, 8});

    // The same per-layer gathers, and the same model state, as plain FSDP over the 8 GPUs of one
    // node: the gather's group is the shard group.
    const auto one_node = gpt(8, {});
    const StepPlan fsdp8 = plan_of(one_node);
    CHECK(r.weights_bytes == fsdp8.ranks.front().weights_bytes);
    CHECK(r.optimizer_bytes == fsdp8.ranks.front().optimizer_bytes);
    const VirtualStagePlan& st = plan.stage(0);
    CHECK(st.gathered_bytes == 2 * st.parameters);
    CHECK(st.gathered_bytes == fsdp8.stage(0).gathered_bytes);
    CHECK(st.forward.param_gather == fsdp8.stage(0).forward.param_gather);
    CHECK(st.backward.param_gather == fsdp8.stage(0).backward.param_gather);
    // ... and cheaper than gathering over all 16 (across the nodes' NICs).
    const StepPlan fsdp16 = plan_of(gpt(16, {}));
    CHECK(st.forward.param_gather < fsdp16.stage(0).forward.param_gather);
    CHECK(r.weights_bytes > fsdp16.ranks.front().weights_bytes);

    // With context parallelism FSDP2 shards over dp_shard x cp (torchtitan's dp_shard_cp): dp 8
    // = replicate 2 x shard 4, the shard group 4 x 2 = 8 GPUs of one node.
    const auto cp = gpt(16, {{"model.attention", "flash"},
                             {"parallel.cp", "2"},
                             {"parallel.data_parallel_replicate_degree", "2"}});
    REQUIRE(cp.parallel.dp == 8);
    const StepPlan cp_plan = plan_of(cp);
    const RankPlan& rc = cp_plan.ranks.front();
    CHECK(rc.dp_group == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(rc.replicate_group == std::vector<int>{0, 8});
    CHECK(rc.weights_bytes == 2 * ((rc.parameters + 7) / 8));
    CHECK(rc.optimizer_bytes == 12 * ((rc.parameters + 7) / 8));
}

TEST_CASE("HSDP: each gradient reduce-scatter on the shard group, its shard all-reduced across "
          "the replicas",
          "[strategies][training][zero][hsdp]") {
    for (const bool overlap : {true, false}) {
        const auto e = gpt(16, {{"parallel.data_parallel_shard_degree", "4"},
                                {"parallel.data_parallel_replicate_degree", "4"},
                                {"parallel.overlap_grad_reduce", overlap ? "true" : "false"}});
        const StepPlan plan = plan_of(e);
        const RankPlan& r = plan.ranks.front();
        CHECK(r.dp_group == std::vector<int>{0, 1, 2, 3});
        CHECK(r.replicate_group == std::vector<int>{0, 4, 8, 12});
        const strategies::collectives::Communicator shard(*plan.topology, r.dp_group);
        const strategies::collectives::Communicator replicas(*plan.topology, r.replicate_group);
        std::int64_t scattered = 0;
        std::size_t pairs = 0;
        for (std::size_t i = 0; i < r.dp.size(); ++i) {
            const DpCollective& c = r.dp[i];
            if (c.role != DpRole::grad_reduce_scatter)
                continue;
            CHECK_FALSE(c.replicate);
            CHECK(c.time == shard.predict(c.collective));
            scattered += c.collective.bytes;
            REQUIRE(i + 1 < r.dp.size());
            const DpCollective& a = r.dp[i + 1];
            CHECK(a.replicate);
            CHECK(a.role == DpRole::grad_all_reduce);
            CHECK(a.collective.op == strategies::collectives::Op::all_reduce);
            CHECK(a.collective.bytes == (c.collective.bytes + 3) / 4);
            CHECK(a.chunk == c.chunk);
            CHECK(a.bucket == c.bucket);
            CHECK(a.time == replicas.predict(a.collective));
            ++pairs;
        }
        INFO("overlap " << overlap);
        CHECK(pairs > 0);
        CHECK(2 * pairs == r.dp.size());
        // Every gradient (bf16) reduce-scattered once.
        CHECK(scattered == 2 * r.parameters);
        // Both executors run it; every part of the step accounted for.
        for (const Fidelity f : {Fidelity::analytic, Fidelity::flow}) {
            StepOptions o;
            o.fidelity = f;
            const StepResult s = simulate_step(e, o);
            CHECK(s.step_time_s > 0);
            CHECK(s.breakdown.dp_comm_exposed_s >= 0);
        }
    }
}

TEST_CASE("HSDP: shard = dp is FSDP exactly, replicate = dp with shard 1 is DDP",
          "[strategies][training][zero][hsdp]") {
    const StepResult fsdp = simulate_step(gpt(16, {}));
    const StepResult full =
        simulate_step(gpt(16, {{"parallel.data_parallel_shard_degree", "16"},
                               {"parallel.data_parallel_replicate_degree", "1"}}));
    CHECK(full.step_time_s == fsdp.step_time_s);
    CHECK(full.memory.front().peak_bytes == fsdp.memory.front().peak_bytes);

    Settings ddp_keys{{"parallel.fsdp", "false"},
                      {"parallel.data_parallel_shard_degree", "1"},
                      {"parallel.data_parallel_replicate_degree", "16"}};
    const auto ddp = gpt(16, ddp_keys);
    CHECK(ddp.parallel.zero == 0);
    CHECK(ddp.parallel.dp_replicate == 1);
    Settings zero0{{"parallel.fsdp", "false"}};
    CHECK(simulate_step(ddp).step_time_s == simulate_step(gpt(16, zero0)).step_time_s);
}

TEST_CASE("HSDP: degrees that do not multiply to dp are refused with the key and the fix",
          "[strategies][training][zero][hsdp][errors]") {
    CHECK_THAT(message(16, {{"parallel.data_parallel_shard_degree", "4"},
                            {"parallel.data_parallel_replicate_degree", "2"}}),
               Catch::Contains("data_parallel_shard_degree 4 x data_parallel_replicate_degree 2") &&
                   Catch::Contains("use -1 or 8"));
    CHECK_THAT(message(16, {{"parallel.data_parallel_replicate_degree", "3"}}),
               Catch::Contains("data_parallel_replicate_degree 3") &&
                   Catch::Contains("does not divide the data-parallel size 16"));
    CHECK_THAT(message(16, {{"parallel.zero", "1"},
                            {"parallel.fsdp", "false"},
                            {"parallel.data_parallel_replicate_degree", "2"}}),
               Catch::Contains("zero"));
}
