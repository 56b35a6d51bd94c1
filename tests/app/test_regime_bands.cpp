// Collectives' uncertainty bands by regime and GPU count (results/uncertainty.h): which band a
// prediction takes (its own, the nearest GPU count's, the kind's), what it says about it, and
// how the hardware file's `collective_bands:` list loads (strategies/parallel/provenance_loader.h),
// old files without it included.
#include "results/uncertainty.h"
#include "strategies/parallel/platform.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <string>

using namespace clustersim;
using namespace clustersim::results;
using clustersim::test::input_error_of;
using strategies::parallel::MessageRegime;
using strategies::parallel::RegimeBand;
using strategies::parallel::ResidualBand;
using strategies::parallel::Uncertainty;

namespace {

Uncertainty bands() {
    Uncertainty u;
    u.basis = "held-out";
    u.collectives = {100, -0.02, 0.0, 0.02};
    // As the loader orders them: by regime, then GPU count.
    u.collective_bands = {{MessageRegime::latency, 4, {16, -0.10, 0.0, 0.20}},
                          {MessageRegime::latency, 8, {5, -0.50, 0.0, 0.50}}, // under 10
                          {MessageRegime::latency, 16, {12, -0.30, 0.0, 0.40}},
                          {MessageRegime::bandwidth, 4, {84, -0.01, 0.0, 0.01}}};
    return u;
}

} // namespace

TEST_CASE("regime bands: a collective takes its regime and GPU count's band, with its points",
          "[app][uncertainty]") {
    const Uncertainty u = bands();
    const auto b = time_band(u, PredictionKind::collective, 100e-6, {MessageRegime::latency, 4});
    REQUIRE(b);
    CHECK(b->source == BandSource::regime);
    CHECK(b->points == 16);
    CHECK(b->low_s == Approx(90e-6));
    CHECK(b->high_s == Approx(120e-6));
    CHECK(band_text(u, "hw", PredictionKind::collective, 100e-6, {MessageRegime::latency, 4}) ==
          "p10-p90 90.0 us - 120 us (16 held-out latency-bound collectives on 4 GPUs)");
    const auto j = band_json(u, PredictionKind::collective, 100e-6, {MessageRegime::latency, 4});
    CHECK(j["points"] == 16);
    CHECK(j["band"]["regime"] == "latency");
    CHECK(j["band"]["gpus"] == 4);
    CHECK(j["band"]["nearest"] == false);
    const auto w = time_band(u, PredictionKind::collective, 1.0, {MessageRegime::bandwidth, 4});
    REQUIRE(w);
    CHECK(w->points == 84);
    CHECK(w->low_s == Approx(0.99));
}

TEST_CASE("regime bands: too few points fall back to the nearest GPU count of the regime, then "
          "to the kind's band",
          "[app][uncertainty]") {
    const Uncertainty u = bands();
    // 8 GPUs has 5 latency points (under kMinRegimeBandPoints): 4 and 16 are as near (a factor
    // of 2), the smaller wins.
    const auto b8 = time_band(u, PredictionKind::collective, 1e-4, {MessageRegime::latency, 8});
    REQUIRE(b8);
    CHECK(b8->source == BandSource::regime_nearest);
    CHECK(b8->gpus == 4);
    CHECK(b8->points == 16);
    CHECK(band_text(u, "hw", PredictionKind::collective, 1e-4, {MessageRegime::latency, 8}) ==
          "p10-p90 90.0 us - 120 us (16 held-out latency-bound collectives on 4 GPUs, the "
          "nearest GPU count with 10 points)");
    CHECK(band_json(u, PredictionKind::collective, 1e-4,
                    {MessageRegime::latency, 8})["band"]["nearest"] == true);
    // 32 GPUs: 16 is a factor of 2 away, 4 a factor of 8.
    const auto b32 = time_band(u, PredictionKind::collective, 1e-4, {MessageRegime::latency, 32});
    REQUIRE(b32);
    CHECK(b32->gpus == 16);
    CHECK(b32->points == 12);
    // The bandwidth regime has 4 GPUs only.
    CHECK(time_band(u, PredictionKind::collective, 1.0, {MessageRegime::bandwidth, 64})->gpus == 4);
    // No regime known, or no band of the regime with enough points: the kind's band.
    const auto any = time_band(u, PredictionKind::collective, 1.0, {});
    REQUIRE(any);
    CHECK(any->source == BandSource::kind);
    CHECK(any->points == 100);
    CHECK(band_text(u, "hw", PredictionKind::collective, 1.0, {}) ==
          "p10-p90 980 ms - 1.02 s (100 held-out collectives)");
    CHECK(band_json(u, PredictionKind::collective, 1.0, {})["band"] == "all");
    Uncertainty thin = u;
    thin.collective_bands = {{MessageRegime::latency, 8, {9, -0.5, 0.0, 0.5}}};
    const auto k = time_band(thin, PredictionKind::collective, 1.0, {MessageRegime::latency, 8});
    REQUIRE(k);
    CHECK(k->source == BandSource::kind);
    CHECK(k->points == 100);
    // Regime bands are the collectives': a GEMM's scope is ignored.
    Uncertainty g = u;
    g.gemms = {40, -0.05, 0.0, 0.05};
    CHECK(time_band(g, PredictionKind::gemm, 1.0, {MessageRegime::latency, 4})->points == 40);
    // A file without a collectives band is uncalibrated for collectives, regime or not.
    Uncertainty none;
    none.gemms = g.gemms;
    CHECK_FALSE(time_band(none, PredictionKind::collective, 1.0, {MessageRegime::latency, 4}));
}

TEST_CASE("regime bands: the hardware file's collective_bands list loads, old files keep the "
          "kind's band",
          "[app][uncertainty][strategies]") {
    using strategies::parallel::parse_platform_yaml;
    const std::string head = "extends: dgx-a100\nuncertainty:\n  basis: held-out\n"
                             "  collectives: {points: 100, p10: -0.02, p50: 0.0, p90: 0.02}\n";
    // Written before the bands: the kind's band serves every size, as it did.
    const auto old = parse_platform_yaml(head, "old.yaml");
    CHECK(old.provenance.uncertainty.collective_bands.empty());
    const auto ob = time_band(old.provenance.uncertainty, PredictionKind::collective, 1.0,
                              {MessageRegime::latency, 4});
    REQUIRE(ob);
    CHECK(ob->source == BandSource::kind);
    CHECK(band_text(old.provenance.uncertainty, "old", PredictionKind::collective, 1.0,
                    {MessageRegime::latency, 4}) ==
          "p10-p90 980 ms - 1.02 s (100 held-out collectives)");

    const std::string text =
        head + "  collective_bands:\n"
               "    - {regime: bandwidth, gpus: 4, points: 84, p10: -0.01, p50: 0.0, p90: 0.01}\n"
               "    - {regime: latency, gpus: 8, points: 12, p10: -0.3, p50: 0.0, p90: 0.4}\n"
               "    - {regime: latency, gpus: 4, points: 16, p10: -0.1, p50: 0.0, p90: 0.2}\n";
    const auto p = parse_platform_yaml(text, "new.yaml");
    const auto& bs = p.provenance.uncertainty.collective_bands;
    REQUIRE(bs.size() == 3);
    // Ordered by regime, then GPU count.
    CHECK((bs[0].regime == MessageRegime::latency && bs[0].gpus == 4 && bs[0].band.points == 16));
    CHECK((bs[1].regime == MessageRegime::latency && bs[1].gpus == 8));
    CHECK((bs[2].regime == MessageRegime::bandwidth && bs[2].band.p90 == Approx(0.01)));

    // A layer that gives its own collectives band drops the inherited regime bands (they come
    // from another validation); one that gives none keeps them.
    const test::TempDir tmp("regime-bands");
    const std::string dir = tmp.path.string();
    tmp.write("new.yaml", text);
    const auto kept =
        parse_platform_yaml("extends: " + dir + "/new.yaml\nnodes: 2\n", dir + "/l1.yaml");
    CHECK(kept.provenance.uncertainty.collective_bands.size() == 3);
    const auto dropped = parse_platform_yaml(
        "extends: " + dir +
            "/new.yaml\nuncertainty:\n  collectives: {points: 50, p10: -0.1, p50: 0, p90: 0.1}\n",
        dir + "/l2.yaml");
    CHECK(dropped.provenance.uncertainty.collective_bands.empty());
    CHECK(dropped.provenance.uncertainty.collectives.points == 50);

    SECTION("an unknown regime") {
        CHECK_THAT(input_error_of([&] {
                       (void)parse_platform_yaml(
                           head + "  collective_bands:\n    - {regime: medium, gpus: 4, points: "
                                  "16, p10: -0.1, p50: 0, p90: 0.2}\n",
                           "b.yaml");
                   }),
                   Catch::StartsWith("b.yaml:6:") && Catch::Contains("regime") &&
                       Catch::Contains("latency") && Catch::Contains("bandwidth"));
    }
    SECTION("the same regime and GPU count twice") {
        CHECK_THAT(input_error_of([&] {
                       (void)parse_platform_yaml(
                           head + "  collective_bands:\n"
                                  "    - {regime: latency, gpus: 4, points: 16, p10: -0.1, p50: "
                                  "0, p90: 0.2}\n"
                                  "    - {regime: latency, gpus: 4, points: 20, p10: -0.1, p50: "
                                  "0, p90: 0.2}\n",
                           "b.yaml");
                   }),
                   Catch::Contains("a second band of regime latency on 4 GPUs"));
    }
    SECTION("a band out of order, a missing GPU count, an unknown key, not a list") {
        CHECK_THAT(input_error_of([&] {
                       (void)parse_platform_yaml(
                           head + "  collective_bands:\n    - {regime: latency, gpus: 4, points: "
                                  "16, p10: 0.3, p50: 0, p90: 0.2}\n",
                           "b.yaml");
                   }),
                   Catch::Contains("p10 <= p50 <= p90"));
        CHECK_THAT(input_error_of([&] {
                       (void)parse_platform_yaml(
                           head + "  collective_bands:\n    - {regime: latency, points: 16, "
                                  "p10: -0.1, p50: 0, p90: 0.2}\n",
                           "b.yaml");
                   }),
                   Catch::Contains("gpus"));
        CHECK_THAT(input_error_of([&] {
                       (void)parse_platform_yaml(
                           head + "  collective_bands:\n    - {regime: latency, gpus: 4, "
                                  "bytes: 8, points: 16, p10: -0.1, p50: 0, p90: 0.2}\n",
                           "b.yaml");
                   }),
                   Catch::Contains("unknown key") && Catch::Contains("bytes"));
        CHECK_THAT(input_error_of([&] {
                       (void)parse_platform_yaml(head + "  collective_bands: 3\n", "b.yaml");
                   }),
                   Catch::Contains("collective_bands") && Catch::Contains("expected a list"));
    }
}
