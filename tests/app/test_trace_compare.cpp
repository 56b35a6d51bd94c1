// run --compare: a PyTorch profiler trace beside the simulated step of the experiment that
// describes it (tests/calibrate/data/kineto-one-layer.{json,yaml}): the measured rows are the
// trace's kernels (hand-computed), the predicted ones add up to the simulated step, and the
// Perfetto file holds both timelines.
#include "app/trace_compare.h"
#include "cli_run.h"

#include "hardware/dtype.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

using namespace clustersim;
using namespace clustersim::test;

namespace {
const std::string kTrace = CLUSTERSIM_SOURCE_DIR "/tests/calibrate/data/kineto-one-layer.json";
const std::string kExperiment = CLUSTERSIM_SOURCE_DIR "/tests/calibrate/data/kineto-one-layer.yaml";

const app::CompareRow& row(const std::vector<app::CompareRow>& rows, const std::string& name) {
    const auto it = std::find_if(rows.begin(), rows.end(),
                                 [&](const app::CompareRow& r) { return r.name == name; });
    REQUIRE(it != rows.end());
    return *it;
}
} // namespace

TEST_CASE("compare: measured rows from the trace, predicted rows add up to the step",
          "[app][compare][kineto]") {
    const auto trace = app::read_trace_file(kTrace);
    const auto e = strategies::parallel::load_experiment(kExperiment);
    strategies::parallel::StepOptions o;
    o.timeline = true;
    const auto r = strategies::parallel::simulate_step(e, o);
    const app::StepComparison c = app::compare_step(trace, e, r);

    // Kernels of the one profiled step: GEMMs 3 x 100 us, flash 80 us, layer norm and the
    // optimizer's kernel 20 + 30 us, NCCL 50 us, copy 10 us; busy 490 of 1000 us.
    CHECK(row(c.classes, "gemm").measured_s == Approx(300e-6));
    CHECK(row(c.classes, "attention").measured_s == Approx(80e-6));
    CHECK(row(c.classes, "elementwise").measured_s == Approx(50e-6));
    CHECK(row(c.classes, "collective").measured_s == Approx(50e-6));
    CHECK(row(c.classes, "GPU idle").measured_s == Approx(510e-6));
    CHECK(row(c.classes, "step").measured_s == Approx(1000e-6));
    CHECK(row(c.layers, "layer 0").measured_s == Approx(400e-6));

    // Predicted: the kernel classes and the idle time are the simulated step.
    double sum = 0;
    for (const auto& x : c.classes)
        if (x.name != "step")
            sum += x.predicted_s;
    CHECK(sum == Approx(r.step_time_s).epsilon(1e-9));
    CHECK(row(c.classes, "step").predicted_s == r.step_time_s);
    CHECK(row(c.layers, "layer 0").predicted_s > 0);
}

TEST_CASE("cli run --compare: table, Perfetto file with both timelines, bad input",
          "[app][compare][kineto]") {
    TempDir dir("compare");
    const std::string out = (dir.path / "both.json").string();
    const Run ok = run({"run", kExperiment, "--compare", kTrace, "--compare-trace", out});
    REQUIRE(ok.code == 0);
    CHECK(ok.out.find("by layer") != std::string::npos);
    const auto j = nlohmann::json::parse(slurp(out));
    int measured = 0, predicted = 0, simulated = 0;
    for (const auto& ev : j["traceEvents"]) {
        if (ev["ph"] != "X")
            continue;
        const int pid = ev["pid"];
        (pid == 1 ? measured : pid == 2 ? predicted : simulated)++;
    }
    CHECK(measured == 8);
    CHECK(predicted > 10);
    CHECK(simulated > 0);
    // Same inputs, same bytes.
    const std::string first = slurp(out);
    REQUIRE(run({"run", kExperiment, "--compare", kTrace, "--compare-trace", out}).code == 0);
    CHECK(slurp(out) == first);

    // A trace of another GPU than the experiment's hardware.
    const Run other = run({"run", kExperiment, "--set", "hardware=dgx-a100", "--compare", kTrace});
    CHECK(other.code == 2);
    CHECK(other.err.find("A100") != std::string::npos);
    // The compare command: the same table.
    const Run cmp = run({"compare", kTrace, kExperiment});
    REQUIRE(cmp.code == 0);
    CHECK(cmp.out == ok.out.substr(0, ok.out.find("compare ")));
    // A simulated trace given where the measured one belongs.
    const Run swapped = run({"compare", out, kExperiment});
    CHECK(swapped.code == 2);
    CHECK(swapped.err.find("clustersim wrote") != std::string::npos);
    // --compare-trace alone.
    CHECK(run({"run", kExperiment, "--compare-trace", out}).code == 2);
}

TEST_CASE("compare: a trace without shapes compares by kernel class, the same rows",
          "[app][compare][kineto]") {
    // Recorded without record_shapes=True: the kernels are classed by name, so every measured
    // row is the one of the trace with shapes, and compare (or run --compare) takes it.
    TempDir dir("compare-no-shapes");
    std::string text = slurp(kTrace);
    for (auto at = text.find("\"Input Dims\""); at != std::string::npos;
         at = text.find("\"Input Dims\""))
        text.replace(at, 12, "\"Input Xims\"");
    const std::string no_shapes = dir.file("no-shapes.json");
    spit(no_shapes, text);
    const auto e = strategies::parallel::load_experiment(kExperiment);
    const auto r = strategies::parallel::simulate_step(e, {});
    const app::StepComparison with = app::compare_step(app::read_trace_file(kTrace), e, r);
    const app::StepComparison without = app::compare_step(app::read_trace_file(no_shapes), e, r);
    REQUIRE(without.classes.size() == with.classes.size());
    for (std::size_t i = 0; i < with.classes.size(); ++i) {
        CHECK(without.classes[i].name == with.classes[i].name);
        CHECK(without.classes[i].measured_s == with.classes[i].measured_s);
    }
    REQUIRE(without.layers.size() == with.layers.size());
    for (std::size_t i = 0; i < with.layers.size(); ++i)
        CHECK(without.layers[i].measured_s == with.layers[i].measured_s);
    const Run cli = run({"compare", no_shapes, kExperiment});
    CHECK(cli.code == 0);
    CHECK_THAT(cli.out, Catch::Contains("gemm"));
}

TEST_CASE("compare: the optimizer updates the weights in their own dtype under FP8",
          "[app][compare][kineto]") {
    // FP8 training keeps bf16 weights (and fp32 master weights): the predicted optimizer kernel
    // of an FP8 run is the bf16 run's, as the step model's ranks count it.
    const auto trace = app::read_trace_file(kTrace);
    auto optimizer_us = [&](const char* dtype) {
        auto e = strategies::parallel::load_experiment(kExperiment);
        e.training.dtype = *hardware::parse_dtype(dtype);
        const auto r = strategies::parallel::simulate_step(e, {});
        const auto j = nlohmann::json::parse(app::comparison_trace(trace, e, r));
        for (const auto& ev : j["traceEvents"])
            if (ev["ph"] == "X" && ev["pid"] == 2 && ev["name"] == "optimizer")
                return ev["dur"].get<double>();
        FAIL("no predicted optimizer event");
        return 0.0;
    };
    const double bf16 = optimizer_us("bf16");
    CHECK(bf16 > 0);
    // (the two events start at different times: equal to the trace's rounding; 1-byte
    // weights would make it 29 bytes a parameter against 30, 3% less)
    CHECK(optimizer_us("fp8") == Approx(bf16).epsilon(1e-4));
}
