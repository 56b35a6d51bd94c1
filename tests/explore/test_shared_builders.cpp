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
#include "support/scratch.h"

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

namespace {

/// The training and parallel sections of two reads equal: every field (defaulted operator==,
/// so a field added later is compared too).
void check_same_sections(const sp::ExperimentSpec& a, const sp::ExperimentSpec& b) {
    CHECK(a.training == b.training);
    CHECK(a.parallel == b.parallel);
}

} // namespace

TEST_CASE("ExperimentVariants::read equals its YAML path: values, and messages where it refuses",
          "[explore][variants]") {
    // read() takes the sections' scalar values once and re-reads them per variant; where that
    // refuses, it reads the YAML for the message. Both must agree on every kind of setting: good
    // values of each type, bad ones (type, range, unknown key, cross-key rules), nulls, empty
    // strings, keys below a key, and a section the file does not have.
    const std::string file = CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml";
    const std::vector<sp::Settings> cases{
        {{"parallel.tp", "4"}, {"parallel.pp", "16"}},
        {{"parallel.tp", "many"}},
        {{"parallel.tp", "0"}},
        {{"parallel.tp", ""}},
        {{"parallel.nonsense", "1"}},
        {{"parallel.tp.x", "1"}},
        {{"parallel.", "1"}},
        {{"training.micro_batch", "2"}, {"parallel.recompute", "selective"}},
        {{"training.micro_batch", "2x"}},
        {{"training.dtype", "fp8"}, {"training.fp8_recipe", "tensorwise"}},
        {{"training.fp8_recipe", "tensorwise"}}, // needs fp8: a cross-key rule
        {{"training.dtype", "int4"}},
        {{"parallel.schedule", "zb-v"}, {"parallel.virtual_stages", "1"}},
        {{"parallel.pipeline_schedule", "1f1b"}}, // both names given: refused
        {{"parallel.sequence_parallel", "yes"}, {"parallel.tp_comm_overlap", "on"}},
        {{"parallel.sequence_parallel", "false"}, {"parallel.tp_comm_overlap", "true"}},
        {{"parallel.zero", "1"}, {"parallel.overlap_param_gather", "true"}},
        {{"parallel.dp_bucket", "40MiB"}},
        {{"parallel.dp_bucket", "-1MiB"}},
        {{"parallel.recompute", "selective"}, {"parallel.recompute_modules", "[core_attn, mlp]"}},
        {{"parallel.recompute_modules", "mlp"}},
        {{"parallel.fsdp", "true"}, {"parallel.data_parallel_shard_degree", "-1"}},
        {{"parallel.data_parallel_shard_degree", "0"}},
        {{"parallel.pipeline_model_parallel_layout", ""}},
        {{"parallel.ep", "8"}, {"parallel.moe_token_dispatcher", "flex"}},
        {{"parallel.tp", "2"}, {"parallel.tp", "8"}}, // the last one wins
        {{"training.global_batch", "3072"}, {"gpus", "128"}},
    };
    for (const auto& overrides : cases) {
        for (const sp::Settings& fixed : {sp::Settings{}, sp::Settings{{"parallel.zero", "1"}}}) {
            const sp::ExperimentVariants variants(file, fixed);
            std::string quick_error, yaml_error;
            sp::ExperimentSpec quick, yaml;
            try {
                quick = variants.read(overrides);
            } catch (const InputError& e) {
                quick_error = e.what();
            }
            try {
                yaml = variants.read_from_yaml(overrides);
            } catch (const InputError& e) {
                yaml_error = e.what();
            }
            INFO("first override: " << overrides.front().first << "=" << overrides.front().second
                                    << ", fixed " << fixed.size());
            CHECK(quick_error == yaml_error);
            if (quick_error.empty())
                check_same_sections(quick, yaml);
        }
    }
    // The messages name the file, line and key, as the YAML reader does.
    const sp::ExperimentVariants variants(file);
    try {
        (void)variants.read({{"parallel.tp", "many"}});
        FAIL("parallel.tp=many was read");
    } catch (const InputError& e) {
        CHECK_THAT(std::string(e.what()),
                   Catch::StartsWith(file + ":") &&
                       Catch::Contains("key 'parallel.tp': expected an integer, got 'many'"));
    }
}

TEST_CASE("ExperimentVariants reads a file without a parallel section, or with a list in it",
          "[explore][variants]") {
    // Sections the quick path does not take (a list as a value) and one the file lacks.
    const test::TempDir dir("variants");
    const std::string with_list = dir.write("list.yaml", R"(hardware: dgx-a100
nodes: 1
model: llama3-8B
training: {global_batch: 16}
parallel:
  recompute: selective
  recompute_modules: [core_attn, mlp]
)")
                                      .string();
    const std::string without = dir.write("none.yaml", R"(hardware: dgx-a100
nodes: 1
model: llama3-8B
training: {global_batch: 16}
)")
                                    .string();
    for (const std::string& file : {with_list, without}) {
        const sp::ExperimentVariants variants(file);
        for (const sp::Settings& overrides :
             {sp::Settings{{"parallel.tp", "2"}}, sp::Settings{{"training.micro_batch", "2"}},
              sp::Settings{{"parallel.recompute", "full"}}}) {
            std::string quick_error, yaml_error;
            sp::ExperimentSpec quick, yaml;
            try {
                quick = variants.read(overrides);
            } catch (const InputError& e) {
                quick_error = e.what();
            }
            try {
                yaml = variants.read_from_yaml(overrides);
            } catch (const InputError& e) {
                yaml_error = e.what();
            }
            INFO(file << ": " << overrides.front().first);
            CHECK(quick_error == yaml_error);
            if (quick_error.empty())
                check_same_sections(quick, yaml);
        }
        CHECK(variants.read({{"parallel.tp", "2"}}).parallel.tp == 2);
    }
    // The list is read: mlp and core_attn recomputed.
    const sp::ExperimentVariants listed(with_list);
    CHECK(listed.read({{"parallel.tp", "2"}}).parallel.recompute_modules ==
          (strategies::models::recompute_bit(strategies::models::RecomputeModule::core_attn) |
           strategies::models::recompute_bit(strategies::models::RecomputeModule::mlp)));
    // With recompute full, the list is refused (it is selective's): the same message both ways.
    CHECK_THROWS_AS(listed.read({{"parallel.recompute", "full"}}), InputError);
}

TEST_CASE("experiment_error names the key that would fix a configuration, and returns nothing "
          "for a valid one",
          "[explore][variants]") {
    // A sweep validates with experiment_error (no throw for an invalid configuration);
    // validate_experiment throws what it returns. GPT-3 175B on 64 A100s (tp 8, pp 8, 3 virtual
    // stages, 96 layers, a dense model), one override at a time, dp derived as a sweep does.
    const std::string file =
        std::string(CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml");
    const sp::ExperimentVariants variants(file);
    struct Case {
        sp::Settings overrides;
        const char* key; // nullptr: valid
    };
    const std::vector<Case> cases{
        {{}, nullptr},                                           // the file's own layout
        {{{"parallel.tp", "4"}, {"parallel.pp", "4"}}, nullptr}, // dp 4, 96 / (4 x 3) layers
        {{{"parallel.tp", "64"},
          {"parallel.pp", "1"},
          {"parallel.schedule", "1f1b"},
          {"parallel.virtual_stages", "1"}},
         "parallel.tp"},                         // 96 heads do not split 64 ways
        {{{"parallel.pp", "3"}}, "parallel.pp"}, // 3 x 8 does not divide 64
        {{{"parallel.ep", "2"}}, "parallel.ep"}, // a dense model has no experts
        {{{"parallel.schedule", "1f1b"}}, "parallel.virtual_stages"}, // v 3: interleaved only
    };
    for (const Case& c : cases) {
        INFO((c.overrides.empty() ? std::string("(none)")
                                  : c.overrides.front().first + "=" + c.overrides.front().second)
             << (c.overrides.size() > 1 ? " ..." : ""));
        sp::ExperimentSpec e = variants.read(c.overrides);
        e.parallel.dp = 0; // derived, as a sweep does
        sp::ExperimentSpec thrown = e;
        const auto error = sp::experiment_error(e);
        if (!c.key) {
            CHECK_FALSE(error.has_value());
            CHECK(e.parallel.dp == 64 / (e.parallel.tp * e.parallel.pp));
            CHECK_NOTHROW(sp::validate_experiment(thrown));
            continue;
        }
        REQUIRE(error.has_value());
        REQUIRE(error->where());
        CHECK(error->where()->key == c.key);
        CHECK(std::string(error->what()).starts_with(file + ": "));
        try {
            sp::validate_experiment(thrown);
            FAIL("validate_experiment accepted what experiment_error refused");
        } catch (const InputError& thrown_error) {
            CHECK(std::string(thrown_error.what()) == error->what());
        }
    }
}
