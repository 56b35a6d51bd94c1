// Training-step accuracy on the 1,440 measured Megatron steps of one DGX A100 node
// (data/reference/a100-node/megatron-steps-single-node.csv, imported with the conditions its
// header states): issue 4 (the dgx-a100 preset on every row) and issue 5 (a fifth of the rows,
// chosen by seed 1, fits the framework factors; the other four fifths validate them). The
// preset's `framework:` values are that seeded fit (configs/hardware/dgx-a100.yaml says how).
//
// Where the model does not reach an issue's target yet, the target is asserted in a test
// tagged [!shouldfail]: it documents the gap, and it fails (so the tag must go) the day the
// model reaches the target.
#include "fit_data.h"

#include "calibrate/fit.h"
#include "calibrate/split.h"
#include "calibrate/validation.h"
#include "hardware/hardware_loader.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::calibrate;
using namespace clustersim::calibrate::testing;

namespace {

const MeasurementSplit& seeded_split() {
    static const MeasurementSplit split = split_measurements(megatron_steps(), 0.2, 1);
    return split;
}

ErrorStats step_errors(const strategies::parallel::Platform& cluster, const MeasurementFile& file) {
    ValidationOptions o;
    o.kinds = {PointKind::step};
    const Validation v = validate_measurements(cluster, file, "megatron-steps", o);
    REQUIRE(v.skipped.empty());
    return v.error_stats(PointKind::step);
}

const ErrorStats& preset_on_all_rows() {
    static const ErrorStats s =
        step_errors(strategies::parallel::load_platform("dgx-a100"), megatron_steps());
    return s;
}

const ErrorStats& preset_held_out() {
    static const ErrorStats s =
        step_errors(strategies::parallel::load_platform("dgx-a100"), seeded_split().rest);
    return s;
}

} // namespace

TEST_CASE("steps accuracy: the seeded split is a fifth and four fifths of the 1,440 rows",
          "[calibrate][accuracy]") {
    REQUIRE(megatron_steps().steps.size() == 1440);
    CHECK(seeded_split().chosen.steps.size() == 288);
    CHECK(seeded_split().rest.steps.size() == 1152);
}

TEST_CASE("steps accuracy: dgx-a100 preset, every row, mean |error| at most 8% (issue 4)",
          "[calibrate][accuracy]") {
    const ErrorStats& s = preset_on_all_rows();
    INFO("mean |error| " << 100 * s.mean_abs << "%, max " << 100 * s.max_abs << "%");
    CHECK(s.points == 1440);
    CHECK(s.mean_abs <= 0.08);
}

// Issue 4's target, not reached: the tensor-parallel-8 rows are under-predicted by up to 27%.
TEST_CASE("steps accuracy: dgx-a100 preset, no row worse than 25% (issue 4 target)",
          "[calibrate][accuracy][!shouldfail]") {
    const ErrorStats& s = preset_on_all_rows();
    INFO("max |error| " << 100 * s.max_abs << "%");
    CHECK(s.max_abs <= 0.25);
}

TEST_CASE("steps accuracy: the preset (the seeded fifth's fit) on the other four fifths stays "
          "within 8%",
          "[calibrate][accuracy]") {
    const ErrorStats& s = preset_held_out();
    INFO("held-out mean |error| " << 100 * s.mean_abs << "%, max " << 100 * s.max_abs << "%");
    CHECK(s.points == 1152);
    CHECK(s.mean_abs <= 0.08);
}

// Issue 5's target, not reached: 6.9% when it was set.
TEST_CASE("steps accuracy: held-out mean |error| at most 6% (issue 5 target)",
          "[calibrate][accuracy][!shouldfail]") {
    const ErrorStats& s = preset_held_out();
    INFO("held-out mean |error| " << 100 * s.mean_abs << "%");
    CHECK(s.mean_abs <= 0.06);
}

// The fit itself: ~300 step simulations per evaluation, so it is the slowest test here. It
// starts from the preset's values and may take only a few hundred evaluations: from the
// documented fit's optimum it must not wander off. "(slow)" in the name lets
// scripts/test.sh --sanitize skip it (under ASan a Debug build takes minutes for it).
TEST_CASE("steps accuracy: refitting the seeded fifth keeps the preset's framework values "
          "(slow)",
          "[calibrate][accuracy][fit]") {
    const auto preset = strategies::parallel::load_platform("dgx-a100");
    FitOptions o;
    o.minimize.max_evaluations = 250;
    const FitResult r = fit_hardware(preset, {{"fit.json", seeded_split().chosen}}, o);
    const auto& a = preset.framework;
    const auto& b = r.fitted.framework;
    CHECK(b.host_overhead.seconds() == Approx(a.host_overhead.seconds()).epsilon(0.03));
    CHECK(b.gemm_efficiency == Approx(a.gemm_efficiency).margin(0.02));
    // memory_efficiency and microbatch_overhead lie along a shallow valley (a slower
    // memory-bound kernel and a shorter per-micro-batch cost nearly trade off: 0.83 with
    // 2.76 ms and 0.89 with 3.07 ms are 0.1 points apart in-sample), so they may move along
    // it; the predictions must not.
    CHECK(b.memory_efficiency == Approx(a.memory_efficiency).margin(0.08));
    CHECK(b.microbatch_overhead.seconds() == Approx(a.microbatch_overhead.seconds()).epsilon(0.15));
    const ErrorStats held = step_errors(r.fitted, seeded_split().rest);
    INFO("refitted: held-out mean |error| " << 100 * held.mean_abs << "%, preset's "
                                            << 100 * preset_held_out().mean_abs << "%");
    CHECK(held.mean_abs <= preset_held_out().mean_abs + 0.002);
}
