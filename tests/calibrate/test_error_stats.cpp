// The one statistics type of prediction errors (calibrate/error_stats.h).
#include "calibrate/error_stats.h"

#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

using namespace clustersim::calibrate;

TEST_CASE("error stats: count, signed mean, mean and largest |error|", "[calibrate][stats]") {
    const ErrorStats s = error_stats({0.10, -0.30, 0.05, -0.05});
    CHECK(s.points == 4);
    CHECK(s.mean == Approx(-0.05));
    CHECK(s.mean_abs == Approx(0.125));
    CHECK(s.max_abs == Approx(0.30));
}

TEST_CASE("error stats: none is all zero", "[calibrate][stats]") {
    const ErrorStats s = error_stats({});
    CHECK(s.points == 0);
    CHECK(s.mean == 0);
    CHECK(s.mean_abs == 0);
    CHECK(s.max_abs == 0);
}

TEST_CASE("error stats: summed in order, as the reports print them", "[calibrate][stats]") {
    // The same sums as a hand-written loop, bit for bit: reports stay byte-identical.
    const std::vector<double> e{0.1, 0.2, -0.3, 1e-17, 0.7};
    double sum = 0, sum_abs = 0;
    for (double x : e) {
        sum += x;
        sum_abs += std::abs(x);
    }
    const ErrorStats s = error_stats(e);
    CHECK(s.mean == sum / 5);
    CHECK(s.mean_abs == sum_abs / 5);
    CHECK(s.max_abs == 0.7);
}
