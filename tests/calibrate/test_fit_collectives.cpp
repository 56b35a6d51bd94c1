// calibrate fit on collectives: the parameters it recovers from curves of a known model (a
// closed-form check), what it refuses to determine, and the accuracy it must show on the A100
// node's all-reduce tables (fit on 2 and 8 GPUs, validate on 4).
#include "fit_data.h"

#include "base/error.h"
#include "calibrate/fit.h"
#include "calibrate/validation.h"
#include "hardware/hardware_loader.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace clustersim;
using namespace clustersim::calibrate;
using namespace clustersim::calibrate::testing;
using hardware::LinkLevel;
using hardware::Protocol;

namespace {

hardware::LevelTuning& level(hardware::ClusterSpec& s, Protocol p, LinkLevel l) {
    return s.collectives.protocols[static_cast<std::size_t>(p)].levels[static_cast<std::size_t>(l)];
}

/// all_reduce curves 1 KiB .. 1 GiB (factor 4) on `gpus`, as `truth` predicts them.
MeasurementFile synthetic_curves(const hardware::ClusterSpec& truth, std::vector<int> gpus) {
    MeasurementFile f;
    f.environment.device = "NVIDIA A100-SXM4-80GB";
    CollectivePredictor predictor(truth);
    for (int n : gpus)
        for (std::int64_t bytes = 1024; bytes <= (std::int64_t{1} << 30); bytes *= 4) {
            CollectiveMeasurement c;
            c.op = CollectiveOp::all_reduce;
            c.gpus = n;
            c.bytes = bytes;
            c.dtype = hardware::Dtype::fp32;
            c.time = sim::Time::from_seconds(predictor.predict(c).seconds);
            f.collectives.push_back(c);
        }
    return f;
}

const FitPart& part(const FitResult& r, const std::string& name) {
    const auto it = std::find_if(r.parts.begin(), r.parts.end(),
                                 [&](const FitPart& p) { return p.name == name; });
    REQUIRE(it != r.parts.end());
    return *it;
}

bool has_note(const FitPart& p, const std::string& text) {
    return std::any_of(p.notes.begin(), p.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

} // namespace

TEST_CASE("fit collectives: recovers the parameters of curves a known model made",
          "[calibrate][fit]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    // The truth: other launch and step latencies, NVLink efficiency and memory passes; LL and
    // LL128 keep the base's ratios to Simple (0.5 and 0.9375 of the efficiency, NCCL's 0.6 and
    // 1.9 of 3.4 us of the step latency), as the fit assumes.
    hardware::ClusterSpec truth = base.cluster;
    truth.collectives.launch_latency = sim::Time::us(22);
    truth.collectives.memory_passes = 2.5;
    level(truth, Protocol::simple, LinkLevel::nvlink) = {sim::Time::ns(2000), 0.9};
    level(truth, Protocol::ll, LinkLevel::nvlink) = {sim::Time::ns(353), 0.45};
    level(truth, Protocol::ll128, LinkLevel::nvlink) = {sim::Time::ns(1118), 0.8438};
    const FitResult r = fit_hardware(base, {{"synthetic.json", synthetic_curves(truth, {2, 8})}});
    const auto& c = r.fitted.cluster.collectives;
    CHECK(c.launch_latency.seconds() == Approx(22e-6).epsilon(0.02));
    CHECK(c.memory_passes == Approx(2.5).epsilon(0.02));
    CHECK(c.protocol(Protocol::simple).level(LinkLevel::nvlink).efficiency ==
          Approx(0.9).epsilon(0.01));
    CHECK(c.protocol(Protocol::simple).level(LinkLevel::nvlink).step_latency.seconds() ==
          Approx(2e-6).epsilon(0.1));
    // LL and LL128 follow Simple by their ratios.
    CHECK(c.protocol(Protocol::ll).level(LinkLevel::nvlink).efficiency ==
          Approx(0.5 * c.protocol(Protocol::simple).level(LinkLevel::nvlink).efficiency)
              .margin(1e-4));
    const FitPart& p = part(r, "collectives");
    CHECK(p.fitted);
    CHECK(p.points == 2 * 11);
    CHECK(p.after.mean_abs < 0.005);
    CHECK(p.before.mean_abs > 0.05); // the base was far from the truth
    // Only what was fitted is written, each with its origin.
    for (const auto& rec : r.records) {
        INFO(rec.key);
        CHECK(rec.key.starts_with("collectives."));
        CHECK(rec.files == std::vector<std::string>{"synthetic.json"});
        CHECK(rec.points == 22);
    }
}

// On one GPU count the ring and the tree still take different numbers of steps (the choice
// changes with the size), so step and launch latency separate; the HBM passes do not: their
// cost grows with the size exactly as a lower link efficiency's does.
TEST_CASE("fit collectives: one GPU count cannot separate memory passes from link efficiency",
          "[calibrate][fit]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    const FitResult r = fit_hardware(base, {{"8gpu.json", a100_all_reduce(8)}});
    const FitPart& p = part(r, "collectives");
    CHECK(p.fitted);
    CHECK(has_note(p, "collectives.memory_passes: not fitted"));
    for (const auto& rec : r.records)
        CHECK(rec.key != "collectives.memory_passes");
    // What is not fitted stays as the base has it.
    CHECK(r.fitted.cluster.collectives.memory_passes == base.cluster.collectives.memory_passes);
}

TEST_CASE("fit collectives: points of one size determine nothing", "[calibrate][fit]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    MeasurementFile f;
    f.environment.device = kA100;
    for (int n : {2, 4, 8}) {
        CollectiveMeasurement c;
        c.gpus = n;
        c.bytes = 1 << 20;
        c.time = sim::Time::us(40 + n);
        f.collectives.push_back(c);
    }
    try {
        fit_hardware(base, {{"one-size.json", f}});
        FAIL("expected an error");
    } catch (const InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("one-size.json: nothing could be fitted") &&
                                 Catch::Contains("same size"));
    }
}

TEST_CASE("fit collectives: A100 all-reduce, fit on 2 and 8 GPUs, validate on 4 (slow)",
          "[calibrate][fit][accuracy]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    const FitResult r = fit_hardware(base, {{"nccl-all-reduce-2gpu.json", a100_all_reduce(2)},
                                            {"nccl-all-reduce-8gpu.json", a100_all_reduce(8)}});
    const FitPart& p = part(r, "collectives");
    REQUIRE(p.fitted);
    CHECK(p.points == 4096);
    // Every parameter is determined by two GPU counts.
    for (const char* key :
         {"collectives.launch_latency", "collectives.memory_passes",
          "collectives.simple.nvlink.efficiency", "collectives.simple.nvlink.step_latency"}) {
        INFO(key);
        CHECK(std::any_of(r.records.begin(), r.records.end(),
                          [&](const auto& rec) { return rec.key == key; }));
    }
    ValidationOptions o;
    o.min_collective_bytes = 1 << 20;
    const Validation v = validate_measurements(r.fitted, a100_all_reduce(4), "4gpu.json", o);
    const ErrorStats s = v.error_stats(PointKind::collective);
    CHECK(s.points == 2048); // 1 MiB .. 1 GiB in 1 MiB steps, out-of-place and in-place
    INFO("4-GPU mean |error| " << 100 * s.mean_abs << "%, max " << 100 * s.max_abs << "%");
    CHECK(s.mean_abs <= 0.05); // the bar
    // The uncertainty of the fitted file describes the fit's points (in-sample here).
    CHECK(r.uncertainty.basis == "in-sample");
    CHECK(r.uncertainty.collectives.points == 4096);
    CHECK(r.uncertainty.collectives.p10 <= r.uncertainty.collectives.p50);
    CHECK(r.uncertainty.collectives.p50 <= r.uncertainty.collectives.p90);
    CHECK_FALSE(r.uncertainty.steps.present());
}
