// The collectives against real measurements (data/reference), with the thresholds.
// The same numbers are the "collectives" section of docs/validation.md.
#include "calibrate/accuracy_collectives.h"

#include <catch2/catch.hpp>

using namespace clustersim::calibrate;

namespace {
const CollectiveAccuracy& accuracy() {
    static const CollectiveAccuracy a =
        collective_accuracy(CLUSTERSIM_SOURCE_DIR "/data/reference");
    return a;
}
constexpr double kMiB = 1 << 20;
} // namespace

TEST_CASE("collectives accuracy: dgx-a100 all_reduce, 2/4/8 GPUs, 1 MiB to 1 GiB",
          "[collectives][accuracy]") {
    REQUIRE(accuracy().a100_all_reduce.size() == 3);
    for (const AccuracyCurve& c : accuracy().a100_all_reduce) {
        INFO(c.title);
        REQUIRE(c.rows.size() == 1024);
        CHECK(c.errors().mean_abs <= 0.08);
        CHECK(c.errors(64 * kMiB).mean_abs <= 0.05);
    }
}

TEST_CASE("collectives accuracy: the 8x A100 nccl-tests log's floor and plateau",
          "[collectives][accuracy]") {
    REQUIRE(accuracy().a100_log.rows.size() == 30);
    CHECK(accuracy().a100_floor.measured == Approx(40.12));
    CHECK(std::abs(accuracy().a100_floor.error()) <= 0.10);
    CHECK(accuracy().a100_plateau.measured == Approx(232.44));
    CHECK(std::abs(accuracy().a100_plateau.error()) <= 0.10);
}

TEST_CASE("collectives accuracy: H100 and H200 busbw from 16 MiB, large messages, lecture",
          "[collectives][accuracy]") {
    for (const AccuracyCurve& c : accuracy().busbw_8gpu) {
        if (c.title.rfind("dgx-a100", 0) == 0)
            continue;
        INFO(c.title);
        REQUIRE(c.rows.size() == 15);
        CHECK(c.errors(16 * kMiB).max_abs <= 0.10);
    }
    REQUIRE(accuracy().h200_16gib.size() == 4);
    for (const AccuracyRow& r : accuracy().h200_16gib) {
        INFO(r.label << ": measured " << r.measured << ", predicted " << r.predicted);
        CHECK(std::abs(r.error()) <= 0.05);
    }
    REQUIRE(accuracy().lecture.size() == 2);
    for (const AccuracyRow& r : accuracy().lecture) {
        INFO(r.label << ": measured " << r.measured << " ms, predicted " << r.predicted);
        CHECK(std::abs(r.error()) <= 0.15);
    }
}
