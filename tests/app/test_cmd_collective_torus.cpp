// `clustersim collective` on a TPU slice: --slice, and --gpus picking the documented shape.
#include "cli_run.h"

#include <catch2/catch.hpp>

using clustersim::test::run;

TEST_CASE("collective runs on a TPU slice named by --slice or --gpus", "[cli][torus]") {
    const auto r = run({"collective", "-H", "tpu-v5p", "--slice", "4x4x4", "--op", "all_reduce",
                        "--bytes", "1GiB"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("64 x TPU-v5p") && Catch::Contains("torus"));
    // The closed form: 2 x (3 axes x 2 hops x 1 us + 1 GiB / 180 GB/s x (1 + 1/4 + 1/16)).
    CHECK_THAT(r.out, Catch::Contains("15671"));
    const auto g = run({"collective", "-H", "tpu-v5p", "--gpus", "128", "--op", "all_gather",
                        "--bytes", "64MiB", "--format", "csv"});
    REQUIRE(g.code == 0);
    CHECK_THAT(g.out, Catch::Contains("all_gather,torus,"));
    const auto bad = run({"collective", "-H", "tpu-v5e", "--slice", "4x4x4", "--op", "all_reduce"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--slice") && Catch::Contains("16x16 (256)"));
    const auto count = run({"collective", "-H", "tpu-v5p", "--gpus", "100", "--op", "all_reduce"});
    CHECK(count.code == 2);
    CHECK_THAT(count.err, Catch::Contains("gpus: 100") && Catch::Contains("whole 4x4x4 cubes"));
}
