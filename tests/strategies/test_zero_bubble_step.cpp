// Whole steps under the split-backward and bidirectional schedules: on a deep MLP of equal
// stages the simulated bubble is the closed form, both fidelities agree, B + W is the backward,
// DualPipe holds twice the parameters, and the split schedules beat 1F1B.
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <memory>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// As test_training_step.cpp's ideal cluster: no framework overheads, NVLink so fast that
/// transfers take only their latency.
Platform ideal_cluster() {
    Platform c = load_platform("dgx-a100");
    c.cluster.node.nvlink.bandwidth = 1e14;
    c.framework.host_overhead = sim::Time::zero();
    c.framework.p2p_overhead = sim::Time::zero();
    c.framework.gemm_efficiency = 1;
    c.framework.memory_efficiency = 1;
    return c;
}

/// A deep MLP of 48 equal layers on `pp` GPUs.
ExperimentSpec deep_mlp(const Platform& c, const std::string& schedule, int pp, int m) {
    const Settings s{{"model.kind", "mlp"},
                     {"model.layers", "48"},
                     {"model.dim", "4096"},
                     {"training.global_batch", std::to_string(8192 * m)},
                     {"training.micro_batch", "8192"},
                     {"training.dtype", "bf16"},
                     {"parallel.pp", std::to_string(pp)},
                     {"parallel.schedule", schedule},
                     {"parallel.dp", "1"},
                     {"parallel.pp_overlap", "true"}};
    return make_experiment(c, pp, s, "test");
}

} // namespace

TEST_CASE("zero bubble step: B + W is the backward, W is the wgrad GEMMs",
          "[strategies][zero-bubble]") {
    const auto c = ideal_cluster();
    const auto e = deep_mlp(c, "zb-h1", 4, 8);
    const StepPlan plan = build_step_plan(e, std::make_shared<const hardware::Topology>(e.cluster));
    for (const VirtualStagePlan& st : plan.stages) {
        CHECK(st.backward_input.time + st.weight.time == st.backward.time);
        // An MLP layer's backward is its dgrad and wgrad GEMMs of equal FLOPs (and a small
        // elementwise kernel): W is about half the backward.
        CHECK(st.weight.time.seconds() == Approx(st.backward.time.seconds() / 2).epsilon(0.1));
        CHECK(st.weight_activation_bytes > 0);
    }
}

TEST_CASE("zero bubble step: the simulated bubble is the closed form, in both fidelities",
          "[strategies][zero-bubble]") {
    const auto c = ideal_cluster();
    for (const char* schedule : {"zb-h1", "zb-v", "dualpipe"}) {
        for (int m : {8, 16}) {
            const auto e = deep_mlp(c, schedule, 4, m);
            const StepResult a = simulate_step(e);
            StepOptions flow;
            flow.fidelity = Fidelity::flow;
            const StepResult f = simulate_step(e, flow);
            INFO(schedule << " m=" << m);
            CHECK(f.step_time_s == Approx(a.step_time_s).epsilon(0.01));
            const double passes = a.step_time_s - a.breakdown.optimizer_s;
            CHECK(a.breakdown.pp_bubble_s / passes ==
                  Approx(a.ideal_bubble_fraction).epsilon(0.05).margin(0.005));
            const StepResult one = simulate_step(deep_mlp(c, "1f1b", 4, m));
            CHECK(a.step_time_s < one.step_time_s);
        }
    }
}

TEST_CASE("zero bubble step: DualPipe keeps two copies of the parameters, ZB-H1 and ZB-V one",
          "[strategies][zero-bubble]") {
    const auto c = ideal_cluster();
    const StepResult one = simulate_step(deep_mlp(c, "1f1b", 4, 8));
    for (const char* schedule : {"zb-h1", "zb-v", "dualpipe"}) {
        const StepResult r = simulate_step(deep_mlp(c, schedule, 4, 8));
        const int copies = std::string(schedule) == "dualpipe" ? 2 : 1;
        INFO(schedule);
        for (std::size_t p = 0; p < r.memory.size(); ++p) {
            CHECK(r.memory[p].weights_bytes == copies * one.memory[p].weights_bytes);
            CHECK(r.memory[p].optimizer_bytes == copies * one.memory[p].optimizer_bytes);
        }
    }
}
