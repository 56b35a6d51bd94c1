#include "base/error.h"
#include "base/units.h"
#include "sim/time.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using sim::Time;

TEST_CASE("Time: named constructors and arithmetic are exact in picoseconds", "[sim][time]") {
    CHECK(Time::ns(1).picoseconds() == 1'000);
    CHECK(Time::us(2).picoseconds() == 2'000'000);
    CHECK(Time::ms(3).picoseconds() == 3'000'000'000);
    CHECK(Time::s(1).picoseconds() == 1'000'000'000'000);
    CHECK(Time::us(2) + Time::ns(500) == Time::ns(2500));
    CHECK(Time::ms(1) - Time::us(1) == Time::us(999));
    CHECK(Time::us(3) * 4 == Time::us(12));
    CHECK(Time::us(12) / 4 == Time::us(3));
    CHECK(Time::ms(1) / Time::us(250) == Approx(4.0));
    CHECK(Time::us(1) < Time::us(2));
    CHECK(sim::max(Time::us(1), Time::us(2)) == Time::us(2));
    CHECK(Time::from_seconds(1.5e-6) == Time::ns(1500));
    CHECK(Time::from_seconds(2.0).seconds() == Approx(2.0));
    // Rounding up never makes a completion early.
    CHECK(Time::from_seconds_ceil(1.01e-12) == Time::ps(2));
    CHECK(Time::from_seconds_ceil(1e-12) == Time::ps(1));
    CHECK(Time::from_seconds(1e30) == Time::max());
}

TEST_CASE("units: sizes", "[sim][units]") {
    CHECK(base::parse_bytes("4096") == 4096);
    CHECK(base::parse_bytes("4096B") == 4096);
    CHECK(base::parse_bytes("1KiB") == 1024);
    CHECK(base::parse_bytes("1GiB") == 1073741824);
    CHECK(base::parse_bytes("1.5 GiB") == 1610612736);
    CHECK(base::parse_bytes("100MB") == 100'000'000);
    CHECK(base::parse_bytes("80GB") == 80'000'000'000);
    // Bare K/M/G are binary, as nccl-tests parses -b/-e.
    CHECK(base::parse_bytes("100M") == 100 * 1024 * 1024);
    CHECK(base::parse_bytes("8G") == std::int64_t{8} << 30);
}

TEST_CASE("units: rates, times and FLOP rates", "[sim][units]") {
    CHECK(base::parse_bandwidth("900GB/s") == Approx(9e11));
    CHECK(base::parse_bandwidth("400Gb/s") == Approx(5e10));
    CHECK(base::parse_bandwidth("200Gbps") == Approx(2.5e10));
    CHECK(base::parse_bandwidth("1.6TB/s") == Approx(1.6e12));
    CHECK(base::parse_bandwidth("1GiB/s") == Approx(1073741824.0));
    CHECK(base::parse_time("2us") == Time::us(2));
    CHECK(base::parse_time("2\xC2\xB5s") == Time::us(2));
    CHECK(base::parse_time("1.5ms") == Time::us(1500));
    CHECK(base::parse_time("130ns") == Time::ns(130));
    CHECK(base::parse_time("7ps") == Time::ps(7));
    CHECK(base::parse_time("1s") == Time::s(1));
    CHECK(base::parse_flop_rate("989TFLOPS") == Approx(9.89e14));
    CHECK(base::parse_flop_rate("19.5 TFLOP/s") == Approx(1.95e13));
    CHECK(base::parse_flop_rate("1PFLOPS") == Approx(1e15));
}

TEST_CASE("units: bad input is a UnitsError with the text and an example", "[sim][units]") {
    SECTION("empty") {
        CHECK_THROWS_AS(base::parse_bytes(""), UnitsError);
    }
    SECTION("no number") {
        CHECK_THROWS_WITH(base::parse_bytes("GiB"),
                          Catch::Contains("'GiB'") && Catch::Contains("1GiB"));
    }
    SECTION("negative size") {
        CHECK_THROWS_WITH(base::parse_bytes("-1GiB"), Catch::Contains("negative"));
    }
    SECTION("unknown size unit") {
        CHECK_THROWS_WITH(base::parse_bytes("3 parsecs"), Catch::Contains("unknown unit"));
    }
    SECTION("a rate without /s") {
        CHECK_THROWS_WITH(base::parse_bandwidth("900GB"), Catch::Contains("B/s"));
    }
    SECTION("a time without unit") {
        CHECK_THROWS_AS(base::parse_time("12"), UnitsError);
    }
    SECTION("a time unit that is not one") {
        CHECK_THROWS_AS(base::parse_time("2 hours"), UnitsError);
    }
    SECTION("a FLOP rate with a binary prefix") {
        CHECK_THROWS_AS(base::parse_flop_rate("1TiFLOPS"), UnitsError);
    }
    SECTION("not finite") {
        CHECK_THROWS_AS(base::parse_bandwidth("infGB/s"), UnitsError);
        CHECK_THROWS_AS(base::parse_bytes("nan"), UnitsError);
    }
    SECTION("too large") {
        CHECK_THROWS_AS(base::parse_bytes("100000000PB"), UnitsError);
    }
}

TEST_CASE("units: formatting", "[sim][units]") {
    CHECK(base::format_bytes(1073741824) == "1 GiB");
    CHECK(base::format_bytes(100 * 1024 * 1024) == "100 MiB");
    CHECK(base::format_bytes(80'000'000'000) == "80 GB");
    CHECK(base::format_bytes(4096) == "4 KiB");
    CHECK(base::format_bytes(12) == "12 B");
    CHECK(base::format_bandwidth(4.5e11) == "450 GB/s");
    CHECK(base::format_bandwidth(3.35e12) == "3.35 TB/s");
    CHECK(base::format_time(Time::us(2110)) == "2.11 ms");
    CHECK(base::format_time(Time::ns(12300)) == "12.3 us");
    CHECK(base::format_time(Time::zero()) == "0");
    CHECK(base::format_flop_rate(9.894e14) == "989 TFLOP/s");
}

TEST_CASE("units: values that overflow and huge inputs are clean errors", "[units]") {
    using namespace clustersim;
    CHECK_THROWS_WITH(base::parse_bandwidth("1e300GB/s"), "bandwidth '1e300GB/s' is too large");
    CHECK_THROWS_WITH(base::parse_flop_rate("1e300PFLOPS"), "FLOP rate '1e300PFLOPS' is too large");
    const std::string huge(1 << 20, '9');
    try {
        base::parse_bandwidth(huge + "GB/s");
        FAIL("accepted");
    } catch (const UnitsError& e) {
        CHECK(std::string(e.what()).size() < 200);
    }
}
