#include "base/error.h"
#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/schedule_timing.h"

#include <catch2/catch.hpp>

#include <set>
#include <utility>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

namespace {
/// Equal stages: a forward of a whole stage takes tf, a backward tb; chunks split them by v.
ScheduleTiming equal_stages(PipelineSchedule s, PipelineShape shape, double tf, double tb,
                            double xfer = 0) {
    const auto orders = pipeline_order(s, shape);
    PassDurations d;
    d.pass = [&](PassKind k, int) {
        return sim::Time::from_seconds((k == PassKind::forward ? tf : tb) / shape.virtual_stages);
    };
    d.transfer = [xfer](PassKind, int) { return sim::Time::from_seconds(xfer); };
    return time_schedule(orders, shape, d);
}
} // namespace

TEST_CASE("schedules: every rank runs every pass exactly once, forward before backward",
          "[strategies][pipeline]") {
    for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                   PipelineSchedule::interleaved_1f1b}) {
        for (int P : {1, 2, 4, 8}) {
            for (int m : {P, 2 * P, 4 * P, 3 * P}) {
                const int v = s == PipelineSchedule::interleaved_1f1b ? 3 : 1;
                if (s == PipelineSchedule::interleaved_1f1b && P == 1)
                    continue;
                const auto orders = pipeline_order(s, {P, m, v, false});
                REQUIRE(orders.size() == std::size_t(P));
                for (const auto& order : orders) {
                    REQUIRE(order.size() == std::size_t(2 * m * v));
                    std::set<std::tuple<int, int, int>> seen;
                    for (const auto& pass : order) {
                        REQUIRE(seen.insert({int(pass.kind), pass.micro_batch, pass.chunk}).second);
                        if (pass.kind == PassKind::backward)
                            REQUIRE(
                                seen.count({int(PassKind::forward), pass.micro_batch, pass.chunk}));
                    }
                }
            }
        }
    }
}

TEST_CASE("schedules: bubble fraction (p-1)/(m+p-1) for GPipe and 1F1B with equal stages",
          "[strategies][pipeline]") {
    for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
        for (int P : {2, 4, 8}) {
            for (int m : {1, 4, 8, 32}) {
                const PipelineShape shape{P, m, 1, false};
                const double tf = 1.0, tb = 2.0;
                const auto t = equal_stages(s, shape, tf, tb);
                const double ideal = m * (tf + tb);
                INFO(to_string(s) << " P=" << P << " m=" << m);
                CHECK(t.makespan.seconds() == Approx((m + P - 1) * (tf + tb)));
                CHECK(1 - ideal / t.makespan.seconds() == Approx(double(P - 1) / (m + P - 1)));
                CHECK(1 - ideal / t.makespan.seconds() == Approx(ideal_bubble_fraction(s, shape)));
            }
        }
    }
}

TEST_CASE("schedules: interleaving divides the bubble by v: (p-1)/(v m + p - 1)",
          "[strategies][pipeline]") {
    for (int P : {2, 4, 8}) {
        for (int v : {2, 3, 4}) {
            for (int k : {1, 2, 4}) {
                const int m = k * P;
                const PipelineShape shape{P, m, v, false};
                const double tf = 1.0, tb = 2.0;
                const auto t = equal_stages(PipelineSchedule::interleaved_1f1b, shape, tf, tb);
                INFO("P=" << P << " v=" << v << " m=" << m);
                CHECK(t.makespan.seconds() == Approx(m * (tf + tb) + (P - 1) * (tf + tb) / v));
                CHECK(1 - m * (tf + tb) / t.makespan.seconds() ==
                      Approx(ideal_bubble_fraction(PipelineSchedule::interleaved_1f1b, shape)));
            }
        }
    }
}

TEST_CASE("schedules: interleaving with a heavier last chunk (the LM head's): "
          "m ((v-1)(f+b) + F + B) + (P-1)(f+b)",
          "[strategies][pipeline]") {
    // Chunk passes take f and b, but the last virtual stage (rank P-1's chunk v-1, which holds
    // the output layer and the loss) takes F and B. Rank P-1 does the most work,
    // W = m ((v-1)(f+b) + F + B); it cannot start before micro-batch 0 has crossed ranks
    // 0..P-2 on chunk 0, (P-1) f, and after its last pass the last backward still crosses
    // ranks P-2..0, (P-1) b: T >= W + (P-1)(f+b). Megatron's order keeps rank P-1 busy from
    // its first pass to its last, so the bound is the makespan: the heavier chunk adds
    // m (F + B - f - b) and leaves the other ranks that much idler, but no bubble of its own.
    const double f = 1.0, b = 2.0;
    for (int P : {2, 4, 8}) {
        for (int v : {2, 3, 12}) {
            for (int m : {P, 2 * P, 4 * P}) {
                for (const auto& heavy : {std::pair{1.0, 2.0}, std::pair{4.0, 5.0},
                                          std::pair{3.0, 2.0}, std::pair{10.0, 25.0}}) {
                    // Plain copies: a lambda may not capture a structured binding before C++20's
                    // P1091 (clang before 16 refuses it).
                    const double F = heavy.first, B = heavy.second;
                    const PipelineShape shape{P, m, v, false};
                    const int last = P * v - 1;
                    PassDurations d;
                    d.pass = [&](PassKind k, int vs) {
                        const bool fwd = k == PassKind::forward;
                        return sim::Time::from_seconds(vs == last ? (fwd ? F : B) : (fwd ? f : b));
                    };
                    d.transfer = [](PassKind, int) { return sim::Time::zero(); };
                    const auto t = time_schedule(
                        pipeline_order(PipelineSchedule::interleaved_1f1b, shape), shape, d);
                    INFO("P=" << P << " v=" << v << " m=" << m << " F=" << F << " B=" << B);
                    const double work = m * ((v - 1) * (f + b) + F + B);
                    CHECK(t.busy[static_cast<std::size_t>(P - 1)].seconds() == Approx(work));
                    CHECK(t.makespan.seconds() == Approx(work + (P - 1) * (f + b)));
                }
            }
        }
    }
}

TEST_CASE("schedules: 1F1B holds at most p micro-batches, GPipe holds m",
          "[strategies][pipeline]") {
    const int P = 4, m = 16;
    const auto gpipe = pipeline_order(PipelineSchedule::gpipe, {P, m, 1, false});
    const auto ofob = pipeline_order(PipelineSchedule::one_f_one_b, {P, m, 1, false});
    for (int p = 0; p < P; ++p) {
        CHECK(max_in_flight(gpipe[p]) == m);
        CHECK(max_in_flight(ofob[p]) == P - p);
    }
    // Interleaved: the first rank holds 2(P-1) + (v-1)P + 1 chunk passes, i.e. about
    // P (1 + (P-1)/(P v)) stages' worth of micro-batches.
    const int v = 2;
    const auto inter = pipeline_order(PipelineSchedule::interleaved_1f1b, {P, m, v, false});
    CHECK(max_in_flight(inter[0]) == 2 * (P - 1) + (v - 1) * P + 1);
}

TEST_CASE("schedules: transfers between stages add to the critical path",
          "[strategies][pipeline]") {
    // Forward-only synchronous pipeline (the lecture's): m micro-batches through P ranks.
    const int P = 2, m = 4;
    const double tf = 1.0, x = 0.25;
    const auto t = equal_stages(PipelineSchedule::gpipe, {P, m, 1, true}, tf, 0, x);
    CHECK(t.makespan.seconds() == Approx(m * tf + (P - 1) * (tf + x)));
}

TEST_CASE("schedules: invalid shapes are refused with what would fix them",
          "[strategies][pipeline]") {
    CHECK_THROWS_WITH(pipeline_order(PipelineSchedule::interleaved_1f1b, {4, 6, 2, false}),
                      Catch::Contains("multiple of the pipeline size") && Catch::Contains("use 8"));
    CHECK_THROWS_WITH(pipeline_order(PipelineSchedule::interleaved_1f1b, {4, 8, 1, false}),
                      Catch::Contains("virtual_stages >= 2"));
    CHECK_THROWS_WITH(pipeline_order(PipelineSchedule::one_f_one_b, {4, 8, 2, false}),
                      Catch::Contains("interleaved-1f1b"));
    CHECK_THROWS_AS(pipeline_order(PipelineSchedule::gpipe, {0, 8, 1, false}), InputError);
}
