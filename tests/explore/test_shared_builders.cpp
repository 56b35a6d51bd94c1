// The three pieces a sweep shares between configurations, each against what it stands in for:
// ExperimentVariants::read against load_experiment with the same --set, StepSimulator against
// simulate_step, and CommunicatorCache (one communicator per GPU list, the same one to two
// threads that ask at the same time: neither waits, each may build it, the first published is
// kept). A sweep is only as right as these equalities.
#include "strategies/collectives/communicator_cache.h"
#include "strategies/parallel/experiment_variants.h"
#include "strategies/parallel/step_simulator.h"

#include "base/error.h"
#include "hardware/topology.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

using namespace clustersim;
namespace sp = clustersim::strategies::parallel;
namespace sc = clustersim::strategies::collectives;

namespace {

const std::string kGpt3 = CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml";
const std::string kMlp = CLUSTERSIM_SOURCE_DIR "/configs/experiments/lecture-mlp-pipeline.yaml";

/// Every number of two steps equal (exactly: the same computation must give the same bits).
void check_same_step(const sp::StepResult& a, const sp::StepResult& b) {
    CHECK(a.gpus == b.gpus);
    CHECK(a.tp == b.tp);
    CHECK(a.pp == b.pp);
    CHECK(a.dp == b.dp);
    CHECK(a.micro_batches == b.micro_batches);
    CHECK(a.virtual_stages == b.virtual_stages);
    CHECK(a.schedule == b.schedule);
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.tokens_per_s == b.tokens_per_s);
    CHECK(a.mfu == b.mfu);
    CHECK(a.model_flops == b.model_flops);
    CHECK(a.bubble_fraction == b.bubble_fraction);
    CHECK(a.ideal_bubble_fraction == b.ideal_bubble_fraction);
    CHECK(a.critical_rank == b.critical_rank);
    CHECK(a.breakdown.compute_s == b.breakdown.compute_s);
    CHECK(a.breakdown.recompute_s == b.breakdown.recompute_s);
    CHECK(a.breakdown.host_s == b.breakdown.host_s);
    CHECK(a.breakdown.tp_comm_exposed_s == b.breakdown.tp_comm_exposed_s);
    CHECK(a.breakdown.pp_bubble_s == b.breakdown.pp_bubble_s);
    CHECK(a.breakdown.pp_comm_exposed_s == b.breakdown.pp_comm_exposed_s);
    CHECK(a.breakdown.dp_comm_exposed_s == b.breakdown.dp_comm_exposed_s);
    CHECK(a.breakdown.optimizer_s == b.breakdown.optimizer_s);
    REQUIRE(a.memory.size() == b.memory.size());
    for (std::size_t i = 0; i < a.memory.size(); ++i) {
        CHECK(a.memory[i].peak_bytes == b.memory[i].peak_bytes);
        CHECK(a.memory[i].weights_bytes == b.memory[i].weights_bytes);
        CHECK(a.memory[i].grads_bytes == b.memory[i].grads_bytes);
        CHECK(a.memory[i].optimizer_bytes == b.memory[i].optimizer_bytes);
        CHECK(a.memory[i].recompute == b.memory[i].recompute);
    }
    CHECK(a.peak_bytes_max == b.peak_bytes_max);
    CHECK(a.capacity_bytes == b.capacity_bytes);
    CHECK(a.oom == b.oom);
    CHECK(a.automatic_recompute == b.automatic_recompute);
    CHECK(a.simulated_gpus == b.simulated_gpus);
    CHECK(a.events == b.events);
}

} // namespace

TEST_CASE("ExperimentVariants::read equals load_experiment with the same --set",
          "[explore][variants]") {
    const sp::Settings fixed{{"parallel.zero", "1"}};
    const sp::ExperimentVariants variants(kGpt3, fixed);
    CHECK(variants.path() == kGpt3);
    CHECK(variants.is_key("parallel.tp"));
    CHECK(variants.is_key("training.micro_batch"));
    CHECK(variants.is_key("model.layers"));
    CHECK_FALSE(variants.is_key("parallel.nonsense"));
    CHECK(std::is_sorted(variants.keys().begin(), variants.keys().end()));

    const std::vector<sp::Settings> cases{
        {},
        {{"parallel.pp", "4"}, {"parallel.dp", "2"}},
        {{"parallel.recompute", "none"}, {"training.micro_batch", "2"}},
        {{"gpus", "128"}, {"parallel.dp", "2"}}, // a heavy key: another cluster
        {{"model.layers", "48"}, {"parallel.pp", "4"}, {"parallel.dp", "2"}}, // another model
    };
    for (const auto& overrides : cases) {
        sp::Settings all = fixed;
        all.insert(all.end(), overrides.begin(), overrides.end());
        INFO("overrides: " << overrides.size());
        const sp::ExperimentSpec loaded = sp::load_experiment(kGpt3, all);
        sp::ExperimentSpec read = variants.read(overrides);
        sp::validate_experiment(read);
        CHECK(read.name == loaded.name);
        CHECK(read.gpus == loaded.gpus);
        CHECK(read.cluster.gpu_count() == loaded.cluster.gpu_count());
        CHECK(read.model.layers == loaded.model.layers);
        CHECK(read.training.global_batch == loaded.training.global_batch);
        CHECK(read.training.micro_batch == loaded.training.micro_batch);
        CHECK(read.parallel.tp == loaded.parallel.tp);
        CHECK(read.parallel.pp == loaded.parallel.pp);
        CHECK(read.parallel.dp == loaded.parallel.dp);
        CHECK(read.parallel.zero == loaded.parallel.zero);
        CHECK(read.parallel.recompute == loaded.parallel.recompute);
        CHECK(read.parallel.schedule == loaded.parallel.schedule);
        CHECK(read.parallel.virtual_stages == loaded.parallel.virtual_stages);
        // And what matters in the end: the same step.
        check_same_step(sp::simulate_step(read), sp::simulate_step(loaded));
    }
    // A value of the wrong type fails as loading would.
    CHECK_THROWS_AS(variants.read({{"parallel.tp", "many"}}), InputError);
    CHECK_THROWS_AS(sp::load_experiment(kGpt3, {{"parallel.tp", "many"}}), InputError);
    CHECK_THROWS_AS(variants.read({{"parallel.nonsense", "1"}}), InputError);
}

TEST_CASE("StepSimulator reproduces simulate_step", "[explore][step_simulator]") {
    for (const auto fidelity : {sp::Fidelity::analytic, sp::Fidelity::flow}) {
        for (const auto& path : {kGpt3, kMlp}) {
            const sp::ExperimentVariants variants(path);
            const sp::ExperimentSpec base = sp::load_experiment(path);
            const sp::StepSimulator simulator(base.cluster);
            CHECK(simulator.topology().gpu_count() == base.cluster.gpu_count());
            sp::StepOptions options;
            options.fidelity = fidelity;
            // The same simulator for several experiments on its cluster, as a sweep uses it.
            std::vector<sp::Settings> cases{{}};
            if (path == kGpt3)
                cases.push_back(
                    {{"parallel.pp", "4"}, {"parallel.dp", "2"}, {"parallel.zero", "1"}});
            for (const auto& overrides : cases) {
                sp::ExperimentSpec e = variants.read(overrides);
                sp::validate_experiment(e);
                INFO(path << " overrides " << overrides.size());
                check_same_step(simulator.simulate(e, options), sp::simulate_step(e, options));
            }
            CHECK(simulator.communicators() > 0);
        }
    }
    // Another cluster is refused, not silently simulated on the wrong graph.
    const sp::ExperimentSpec gpt3 = sp::load_experiment(kGpt3);
    const sp::StepSimulator small(sp::load_experiment(kMlp).cluster);
    CHECK_THROWS_AS(small.simulate(gpt3), std::invalid_argument);
}

TEST_CASE("CommunicatorCache builds one communicator per GPU list", "[explore][communicators]") {
    const sp::ExperimentSpec e = sp::load_experiment(kGpt3);
    const hardware::Topology topology(e.cluster);
    sc::CommunicatorCache cache(topology);
    CHECK(&cache.topology() == &topology);
    CHECK(cache.size() == 0);

    const sc::Communicator& a = cache.get({0, 1, 2, 3});
    CHECK(a.gpus() == std::vector<int>{0, 1, 2, 3});
    CHECK(&cache.get({0, 1, 2, 3}) == &a); // the same key: the same communicator
    CHECK(cache.size() == 1);
    const sc::Communicator& b = cache.get({0, 8, 16, 24});
    const sc::Communicator& c = cache.get({3, 2, 1, 0}); // the same GPUs, other ranks
    CHECK(&b != &a);
    CHECK(&c != &a);
    CHECK(c.gpus() == std::vector<int>{3, 2, 1, 0});
    CHECK(cache.size() == 3);
    CHECK_THROWS_AS(cache.get({0, 0}), InputError);

    // Two threads asking for a new list at once: one communicator, the same to both.
    for (int round = 0; round < 20; ++round) {
        const std::vector<int> gpus{round, round + 8, round + 16};
        const std::size_t before = cache.size();
        const sc::Communicator* seen[2] = {nullptr, nullptr};
        std::thread t0([&] { seen[0] = &cache.get(gpus); });
        std::thread t1([&] { seen[1] = &cache.get(gpus); });
        t0.join();
        t1.join();
        CHECK(seen[0] == seen[1]);
        CHECK(cache.size() == before + 1);
    }
}
