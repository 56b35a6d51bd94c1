// The slowest of N GPUs (strategies/parallel/straggler.h): the expected maximum of N standard
// normals against its closed forms and tabulated values, its quantiles, and a step that waits
// for its slowest GPU.
#include "base/error.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"
#include "strategies/parallel/collective_times.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/straggler.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

TEST_CASE("straggler: the expected maximum of N standard normals", "[parallel][straggler]") {
    const double sqrt_pi = std::sqrt(std::acos(-1.0));
    CHECK(expected_max_standard_normal(1) == 0.0);
    // Closed forms: E[max of 2] = 1/sqrt(pi), E[max of 3] = 3/(2 sqrt(pi)).
    CHECK(expected_max_standard_normal(2) == Approx(1.0 / sqrt_pi).epsilon(1e-9));
    CHECK(expected_max_standard_normal(3) == Approx(1.5 / sqrt_pi).epsilon(1e-9));
    // Tabulated expected normal order statistics (Harter 1961; Teichroew 1956): 5, 10, 100,
    // 1,000 samples.
    CHECK(expected_max_standard_normal(5) == Approx(1.16296).epsilon(1e-5));
    CHECK(expected_max_standard_normal(10) == Approx(1.53875).epsilon(1e-5));
    CHECK(expected_max_standard_normal(100) == Approx(2.50759).epsilon(1e-5));
    CHECK(expected_max_standard_normal(1000) == Approx(3.24144).epsilon(1e-5));
    // Grows with N, below the classic bound sqrt(2 ln N).
    double previous = 0;
    for (int n : {2, 8, 64, 512, 4096, 32768, 262144}) {
        const double m = expected_max_standard_normal(n);
        CHECK(m > previous);
        CHECK(m < std::sqrt(2 * std::log(static_cast<double>(n))));
        previous = m;
    }
}

TEST_CASE("straggler: quantiles of the slowest of N", "[parallel][straggler]") {
    // The max of one normal is the normal: its median 0, its 95th percentile 1.6449.
    CHECK(max_standard_normal_quantile(1, 0.5) == Approx(0.0).margin(1e-12));
    CHECK(max_standard_normal_quantile(1, 0.95) == Approx(1.644854).epsilon(1e-6));
    // P(max of n <= x) = Phi(x)^n: the median of the max of 2 is Phi^-1(sqrt(1/2)).
    CHECK(max_standard_normal_quantile(2, 0.5) == Approx(0.544952).epsilon(1e-5));
    // For every N the expected maximum lies between the 5th and 95th percentiles.
    for (int n : {2, 8, 1024, 100000}) {
        CHECK(max_standard_normal_quantile(n, 0.05) < expected_max_standard_normal(n));
        CHECK(max_standard_normal_quantile(n, 0.95) > expected_max_standard_normal(n));
    }
}

TEST_CASE("straggler: the band of a step", "[parallel][straggler]") {
    CHECK(straggler_slowdown(0.0, 1024) == 0.0);
    CHECK(straggler_slowdown(0.02, 1) == 0.0);
    CHECK(straggler_slowdown(0.02, 2) == Approx(0.02 / std::sqrt(std::acos(-1.0))));
    // 1,000 GPUs at spread 2%: the expected slowest 6.48% slower than the median GPU, between
    // its 5th and 95th percentiles (2.749 and 3.884 standard deviations: Phi^-1(0.05^(1/1000))
    // and Phi^-1(0.95^(1/1000))).
    const StragglerBand b = straggler_slowdowns(0.02, 1000);
    CHECK(b.slowdown == Approx(0.02 * 3.24144).epsilon(1e-5));
    CHECK(b.slowdown_p05 == Approx(0.02 * 2.74874).epsilon(1e-5));
    CHECK(b.slowdown_p95 == Approx(0.02 * 3.88440).epsilon(1e-5));
    CHECK(b.step_time_p05_s == 0.0); // not simulated here
    const StragglerBand none = straggler_slowdowns(0.0, 1000);
    CHECK(none.slowdown == 0.0);
    CHECK(none.slowdown_p95 == 0.0);
    // The framework at another slowdown: at_slowest_gpu then gives 1 / (1 + that) of the rate.
    FrameworkSpec fw;
    fw.gpu_speed_spread = 0.02;
    CHECK(at_slowest_gpu(with_slowest_gpu_at(fw, 1000, 0.1), 1000).gemm_efficiency ==
          Approx(1.0 / 1.1));
}

namespace {

StepResult llama_step(const Platform& p, int gpus, bool band = false) {
    std::vector<std::pair<std::string, std::string>> s{{"model", "llama3-8B"},
                                                       {"training.dtype", "bf16"},
                                                       {"training.micro_batch", "1"},
                                                       {"training.global_batch", "64"},
                                                       {"parallel.tp", "8"}};
    StepOptions o;
    o.oom_advice = false;
    o.straggler_band = band;
    return simulate_step(make_experiment(p, gpus, s, "straggler"), o);
}

} // namespace

TEST_CASE("straggler: a step waits for its slowest GPU", "[parallel][straggler]") {
    Platform alike = load_platform("dgx-h100");
    REQUIRE(alike.framework.gpu_speed_spread > 0);
    const Platform varied = alike;
    alike.framework.gpu_speed_spread = 0;
    for (int gpus : {8, 64}) {
        const StepResult even = llama_step(alike, gpus);
        const StepResult slow = llama_step(varied, gpus);
        const double s = straggler_slowdown(varied.framework.gpu_speed_spread, gpus);
        CHECK(slow.straggler.slowdown == Approx(s));
        CHECK(even.straggler.slowdown == 0.0);
        // Only the SM-bound kernels slow down: the step grows, by less than the slowdown.
        CHECK(slow.step_time_s > even.step_time_s);
        CHECK(slow.step_time_s < even.step_time_s * (1 + s));
        // The compute does slow by most of it (GEMMs and attention dominate Llama's kernels).
        const double compute_ratio = slow.breakdown.compute_s / even.breakdown.compute_s;
        CHECK(compute_ratio > 1 + 0.7 * s);
        CHECK(compute_ratio <= 1 + s + 1e-12);
        CHECK(slow.straggler.step_time_p95_s == 0.0); // not asked for
        // The band: the step re-simulated with the slowest GPU at the 95th percentile equals
        // the step of a cluster whose spread puts its expected slowest GPU there.
        const StepResult banded = llama_step(varied, gpus, true);
        CHECK(banded.step_time_s == slow.step_time_s);
        Platform wider = varied;
        wider.framework.gpu_speed_spread *= banded.straggler.slowdown_p95 / s;
        CHECK(banded.straggler.step_time_p95_s ==
              Approx(llama_step(wider, gpus).step_time_s).epsilon(1e-9));
        CHECK(banded.straggler.step_time_p05_s < banded.step_time_s);
        CHECK(banded.straggler.step_time_p95_s > banded.step_time_s);
    }
    // More GPUs, a slower slowest one.
    CHECK(llama_step(varied, 64).straggler.slowdown > llama_step(varied, 8).straggler.slowdown);
}

TEST_CASE("straggler: gpu_speed_spread is a relative standard deviation", "[parallel][straggler]") {
    auto load = [](const std::string& v) {
        return parse_platform_yaml("extends: dgx-h100\nframework:\n  gpu_speed_spread: " + v + "\n",
                                   "spread.yaml");
    };
    CHECK(load("0.03").framework.gpu_speed_spread == Approx(0.03));
    CHECK(load("0").framework.gpu_speed_spread == 0.0);
    CHECK_THROWS_WITH(load("0.8"), Catch::Contains("spread.yaml:3:") &&
                                       Catch::Contains("gpu_speed_spread") &&
                                       Catch::Contains("[0, 0.5)"));
    CHECK_THROWS_AS(load("-0.1"), InputError);
}

// Synchronisation jitter and congestion between jobs' flows (straggler.h): an expected maximum
// per synchronisation and per collective across nodes, 0 where the spreads are 0.

TEST_CASE("scale costs: a synchronisation waits for its latest rank", "[parallel][straggler]") {
    const double sqrt_pi = std::sqrt(std::acos(-1.0));
    CHECK(sync_wait(0.0, 4096) == 0.0);
    CHECK(sync_wait(20e-6, 1) == 0.0);
    // Two ranks: the later of two normals, 1/sqrt(pi) standard deviations after the median.
    CHECK(sync_wait(20e-6, 2) == Approx(20e-6 / sqrt_pi).epsilon(1e-9));
    CHECK(sync_wait(20e-6, 1000) == Approx(20e-6 * 3.24144).epsilon(1e-5));
    // Grows with the group, in proportion to the jitter.
    double previous = 0;
    for (int n : {2, 16, 128, 1024, 16384}) {
        const double w = sync_wait(10e-6, n);
        CHECK(w > previous);
        CHECK(sync_wait(30e-6, n) == Approx(3 * w));
        previous = w;
    }
}

TEST_CASE("scale costs: a collective across nodes waits for its slowest flow",
          "[parallel][straggler]") {
    const double sqrt_pi = std::sqrt(std::acos(-1.0));
    CHECK(network_slowdown(0.0, 512) == 0.0);
    CHECK(network_slowdown(0.03, 1) == 0.0);
    CHECK(network_slowdown(0.03, 2) == Approx(0.03 / sqrt_pi).epsilon(1e-9));
    // Its percentiles: spread x Phi^-1(q^(1/n)) (the 5th and 95th of the max of 1,000:
    // 2.74874 and 3.88440 standard deviations), around the expectation.
    CHECK(network_slowdown(0.03, 1000, 0.05) == Approx(0.03 * 2.74874).epsilon(1e-5));
    CHECK(network_slowdown(0.03, 1000, 0.95) == Approx(0.03 * 3.88440).epsilon(1e-5));
    double previous = 0;
    for (int n : {2, 8, 64, 512, 4096}) {
        const double s = network_slowdown(0.03, n);
        CHECK(s > previous);
        CHECK(network_slowdown(0.03, n, 0.05) < s);
        CHECK(network_slowdown(0.03, n, 0.95) > s);
        previous = s;
    }
}

namespace {

ExperimentSpec llama_experiment(const Platform& p, int gpus,
                                std::vector<std::pair<std::string, std::string>> extra = {}) {
    std::vector<std::pair<std::string, std::string>> s{{"model", "llama3-8B"},
                                                       {"training.dtype", "bf16"},
                                                       {"training.micro_batch", "1"},
                                                       {"training.global_batch", "64"},
                                                       {"parallel.tp", "8"}};
    s.insert(s.end(), extra.begin(), extra.end());
    return make_experiment(p, gpus, s, "scale costs");
}

StepResult step_of(const ExperimentSpec& e, bool band = false) {
    StepOptions o;
    o.oom_advice = false;
    o.straggler_band = band;
    return simulate_step(e, o);
}

/// dgx-h100 with every GPU alike (the jitter's and the network's costs alone).
Platform even_h100() {
    Platform p = load_platform("dgx-h100");
    p.framework.gpu_speed_spread = 0;
    return p;
}

} // namespace

TEST_CASE("scale costs: the synchronisations of a step", "[parallel][straggler]") {
    Platform p = even_h100();
    p.framework.sync_jitter = sim::Time::from_seconds(20e-6);
    const double w = p.framework.sync_jitter.seconds();
    // No pipeline: one synchronisation, the step's end, over all the GPUs.
    const ExperimentSpec flat = llama_experiment(p, 64);
    CHECK(step_synchronisations(flat) == 1);
    CHECK(step_sync_wait(flat) == Approx(sync_wait(w, 64)));
    // Megatron's 1F1B: one more at each micro-batch's forward and backward exchange, over
    // both stages' tensor-parallel ranks.
    const ExperimentSpec piped = llama_experiment(p, 64, {{"parallel.pp", "4"}});
    const int m = piped.micro_batches();
    REQUIRE(pipeline_exchanges_synchronise(piped));
    CHECK(step_synchronisations(piped) == 1 + 2 * m);
    CHECK(pipeline_sync_wait(piped) == Approx(sync_wait(w, 16)));
    CHECK(step_sync_wait(piped) == Approx(sync_wait(w, 64) + 2 * m * sync_wait(w, 16)));
    // The interleaved schedule overlaps its exchanges (overlap_p2p_comm): no synchronize.
    const ExperimentSpec interleaved = llama_experiment(p, 64,
                                                        {{"parallel.pp", "4"},
                                                         {"parallel.schedule", "interleaved-1f1b"},
                                                         {"parallel.virtual_stages", "2"}});
    CHECK_FALSE(pipeline_exchanges_synchronise(interleaved));
    CHECK(step_synchronisations(interleaved) == 1);
    // Megatron-LM of 2021's interleaved schedule synchronised too, but one call carries a
    // forward's and a backward's exchange in its steady state: not counted (left out).
    ExperimentSpec old = interleaved;
    old.framework.profile = FrameworkProfile::megatron_lm;
    CHECK_FALSE(pipeline_exchanges_synchronise(old));
    // torch.distributed.pipelining (FSDP2 with a pipeline) does not run Megatron's exchanges.
    const ExperimentSpec torch_pp =
        llama_experiment(p, 64, {{"parallel.pp", "4"}, {"parallel.fsdp", "true"}});
    CHECK_FALSE(pipeline_exchanges_synchronise(torch_pp));
    // Forward only: no optimizer, no synchronisation counted.
    CHECK(step_synchronisations(llama_experiment(p, 8, {{"training.forward_only", "true"}})) == 0);
}

TEST_CASE("scale costs: a step pays its synchronisations' waits", "[parallel][straggler]") {
    const Platform quiet = even_h100();
    Platform noisy = quiet;
    noisy.framework.sync_jitter = sim::Time::from_seconds(50e-6);
    const double w = noisy.framework.sync_jitter.seconds();
    // Without a pipeline the step's end waits for the latest of all GPUs: exactly that much
    // longer, and more GPUs wait longer.
    double previous = 0;
    for (int gpus : {8, 64, 512}) {
        const StepResult a = step_of(llama_experiment(quiet, gpus));
        const StepResult b = step_of(llama_experiment(noisy, gpus));
        CHECK(a.straggler.sync_wait_s == 0.0);
        CHECK(b.straggler.synchronisations == 1);
        CHECK(b.straggler.sync_wait_s == Approx(sync_wait(w, gpus)));
        const double grew = b.step_time_s - a.step_time_s;
        CHECK(grew == Approx(sync_wait(w, gpus)).epsilon(1e-6));
        CHECK(grew > previous);
        previous = grew;
    }
    // Under 1F1B each exchange waits too: more than the step's end alone, at most every wait
    // on the longest chain of exchanges (2 per micro-batch and 2 per stage of the fill).
    const ExperimentSpec e = llama_experiment(noisy, 64, {{"parallel.pp", "4"}});
    const double grew = step_of(e).step_time_s -
                        step_of(llama_experiment(quiet, 64, {{"parallel.pp", "4"}})).step_time_s;
    const int m = e.micro_batches();
    CHECK(grew > sync_wait(w, 64) + m * pipeline_sync_wait(e));
    CHECK(grew <= sync_wait(w, 64) + 2 * (m + 4) * pipeline_sync_wait(e) + 1e-9);
}

TEST_CASE("scale costs: congestion slows the collectives across nodes", "[parallel][straggler]") {
    const double sqrt_pi = std::sqrt(std::acos(-1.0));
    Platform shared = even_h100();
    shared.framework.network_flow_spread = 0.05;
    const ExperimentSpec e = llama_experiment(shared, 16);
    const hardware::Topology topology(e.cluster);
    // Across two nodes, in a job of two flows: the slower of two; within a node, no flow on the
    // fabric; more flows in the job, a slower slowest one.
    const strategies::collectives::Communicator across(topology, std::vector<int>{0, 8});
    const strategies::collectives::Communicator within(topology, std::vector<int>{0, 1, 2, 3});
    CHECK(detail::congestion_stretch(shared.framework, &across, 2) ==
          Approx(1 + 0.05 / sqrt_pi).epsilon(1e-9));
    CHECK(detail::congestion_stretch(shared.framework, &across, 1024) ==
          Approx(1 + network_slowdown(0.05, 1024)));
    CHECK(detail::congestion_stretch(shared.framework, &within, 1024) == 1.0);
    CHECK(detail::congestion_stretch(even_h100().framework, &across, 1024) == 1.0);
    // A collective's time grows by that factor.
    strategies::collectives::Collective c;
    c.op = strategies::collectives::Op::all_reduce;
    c.bytes = std::int64_t{256} << 20;
    detail::CollectiveTimes plain(&across), congested(&across, shared.framework, 2);
    CHECK(congested.time(c).seconds() ==
          Approx(plain.time(c).seconds() * (1 + 0.05 / sqrt_pi)).epsilon(1e-9));

    // A step: one node has no flows on the fabric; eight nodes reduce their gradients across
    // the fabric (tp 8, dp 8), the slowest of 64 flows 5% x E[max of 64] slower than the median.
    const Platform quiet = even_h100();
    CHECK(step_of(llama_experiment(shared, 8)).step_time_s ==
          step_of(llama_experiment(quiet, 8)).step_time_s);
    const StepResult a = step_of(llama_experiment(quiet, 64));
    const StepResult b = step_of(llama_experiment(shared, 64), true);
    CHECK(b.straggler.network_flows == 64);
    CHECK(b.straggler.network_slowdown == Approx(network_slowdown(0.05, 64)));
    CHECK(b.step_time_s > a.step_time_s);
    CHECK(b.breakdown.dp_comm_exposed_s > a.breakdown.dp_comm_exposed_s);
    // The band: the slowest flow at its 5th and 95th percentiles around the expected.
    CHECK(b.straggler.step_time_p05_s < b.step_time_s);
    CHECK(b.straggler.step_time_p95_s > b.step_time_s);
    CHECK(a.straggler.network_slowdown == 0.0);

    // The band counts the flows wherever the stretch applies. tp 8 x pp 2 on two nodes: the
    // pipeline's sends alone cross the fabric (no collective, no flow counted, no stretch);
    // tied embeddings add the first and last stages' all-reduce across the nodes (counted, and
    // the step slower).
    auto piped = [&](const Platform& p, const char* tied) {
        return step_of(llama_experiment(p, 16,
                                        {{"parallel.pp", "2"},
                                         {"training.global_batch", "16"},
                                         {"model.tied_embeddings", tied}}),
                       true);
    };
    const StepResult untied = piped(shared, "false");
    CHECK(untied.straggler.network_flows == 0);
    CHECK(untied.step_time_s == piped(quiet, "false").step_time_s);
    const StepResult tied = piped(shared, "true");
    // (the first and last stages' 8 GPUs each: 16 of 16 here)
    CHECK(tied.straggler.network_flows == 16);
    CHECK(tied.straggler.network_slowdown == Approx(network_slowdown(0.05, 16)));
    CHECK(tied.step_time_s > piped(quiet, "true").step_time_s);
}

TEST_CASE("scale costs: sync_jitter and network_flow_spread in a hardware file",
          "[parallel][straggler]") {
    auto load = [](const std::string& key, const std::string& v) {
        return parse_platform_yaml("extends: dgx-h100\nframework:\n  " + key + ": " + v + "\n",
                                   "scale.yaml");
    };
    CHECK(load("sync_jitter", "25us").framework.sync_jitter.seconds() == Approx(25e-6));
    CHECK(load("network_flow_spread", "0.02").framework.network_flow_spread == Approx(0.02));
    // The presets measured nothing for either: 0.
    CHECK(load_platform("dgx-h100").framework.sync_jitter == sim::Time::zero());
    CHECK(load_platform("dgx-h100").framework.network_flow_spread == 0.0);
    CHECK_THROWS_WITH(load("network_flow_spread", "0.7"),
                      Catch::Contains("scale.yaml:3:") && Catch::Contains("network_flow_spread") &&
                          Catch::Contains("[0, 0.5)"));
    CHECK_THROWS_AS(load("network_flow_spread", "-0.1"), InputError);
    CHECK_THROWS_WITH(load("sync_jitter", "fast"),
                      Catch::Contains("scale.yaml:3:") && Catch::Contains("sync_jitter"));
    CHECK_THROWS_AS(load("sync_jitter", "-5us"), InputError);
}
