#include "base/error.h"
#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/schedule_timing.h"

#include <catch2/catch.hpp>

#include <algorithm>
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
    // A pass holds its chunk in 16 bits.
    CHECK_THROWS_WITH(pipeline_order(PipelineSchedule::interleaved_1f1b, {2, 2, 65536, false}),
                      Catch::Contains("65535"));
}

namespace {
/// Stages of unequal durations (stage vs: forward 1 + vs/4 s, backward twice that, W a third of
/// it where split), transfers of 0.1 s, sends blocking or not.
PassDurations uneven_stages(bool blocking) {
    PassDurations d;
    d.pass = [](PassKind k, int vs) {
        const double f = 1 + 0.25 * vs;
        switch (k) {
        case PassKind::forward:
            return sim::Time::from_seconds(f);
        case PassKind::backward:
            return sim::Time::from_seconds(2 * f);
        case PassKind::backward_input:
            return sim::Time::from_seconds(2 * f - f * 2 / 3);
        case PassKind::weight:
            break;
        }
        return sim::Time::from_seconds(f * 2 / 3);
    };
    d.first_forward = [](int vs) { return sim::Time::from_seconds(1.5 + 0.25 * vs); };
    d.transfer = [](PassKind, int) { return sim::Time::from_seconds(0.1); };
    d.blocking_sends = blocking;
    return d;
}

/// The full timing with `extra` (time_schedule reading it through PassDurations::extra) and
/// the retimed one agree on every pass, the busy times and the makespan.
void check_retime_matches(const std::vector<std::vector<PipePass>>& orders,
                          const PipelineShape& shape, PassDurations d, const PassExtras& extra) {
    TimingState state;
    ScheduleTiming retimed = time_schedule(orders, shape, d, state);
    retime_with_extras(retimed, state, orders, shape, extra);
    d.extra = [&extra](int p, std::size_t i) {
        const auto& e = extra[static_cast<std::size_t>(p)];
        return i < e.size() ? e[i] : sim::Time::zero();
    };
    TimingState full_state;
    const ScheduleTiming full = time_schedule(orders, shape, d, full_state);
    // The ends it keeps for a further timing as well.
    CHECK(state.fwd_end == full_state.fwd_end);
    CHECK(state.bwd_end == full_state.bwd_end);
    REQUIRE(retimed.ranks() == full.ranks());
    for (std::size_t p = 0; p < full.ranks(); ++p) {
        REQUIRE(retimed.rank(p).size() == full.rank(p).size());
        for (std::size_t i = 0; i < full.rank(p).size(); ++i) {
            const PassTime& a = retimed.rank(p)[i];
            const PassTime& b = full.rank(p)[i];
            INFO("rank " << p << " pass " << i);
            CHECK(a.start == b.start);
            CHECK(a.end == b.end);
        }
        CHECK(retimed.busy[p] == full.busy[p]);
    }
    CHECK(retimed.makespan == full.makespan);
}
} // namespace

TEST_CASE("schedules: retiming with extra time only where passes can move equals timing all "
          "passes again",
          "[strategies][pipeline]") {
    struct Case {
        PipelineSchedule s;
        int P, m, v;
    };
    const std::vector<Case> cases{
        {PipelineSchedule::gpipe, 4, 8, 1},       {PipelineSchedule::one_f_one_b, 4, 16, 1},
        {PipelineSchedule::one_f_one_b, 1, 4, 1}, {PipelineSchedule::interleaved_1f1b, 4, 8, 3},
        {PipelineSchedule::zb_h1, 4, 12, 1},      {PipelineSchedule::zb_v, 4, 8, 1},
        {PipelineSchedule::dualpipe, 4, 8, 1}};
    for (const Case& c : cases) {
        const PipelineShape shape{c.P, c.m, chunks_per_rank(c.s, c.v), false, placement_of(c.s)};
        const auto orders = pipeline_order(c.s, shape);
        for (bool blocking : {false, true}) {
            const PassDurations d = uneven_stages(blocking);
            INFO(to_string(c.s) << " P=" << c.P << " m=" << c.m << " blocking=" << blocking);
            // Where the gradient reductions put it: the last pass of every rank, 0.3 s.
            PassExtras last(orders.size());
            for (std::size_t p = 0; p < orders.size(); ++p) {
                last[p].assign(orders[p].size(), sim::Time::zero());
                last[p].back() = sim::Time::from_seconds(0.3);
            }
            check_retime_matches(orders, shape, d, last);
            // Anywhere: every seventh pass of every rank, of different lengths, and a rank
            // with no extras at all (an empty vector).
            PassExtras spread(orders.size());
            for (std::size_t p = 0; p < orders.size(); ++p) {
                if (orders.size() > 1 && p + 1 == orders.size())
                    continue; // the last rank: none
                spread[p].assign(orders[p].size(), sim::Time::zero());
                for (std::size_t i = p % 7; i < orders[p].size(); i += 7)
                    spread[p][i] = sim::Time::from_seconds(0.05 * static_cast<double>(1 + i % 5));
            }
            check_retime_matches(orders, shape, d, spread);
            // On the very first pass: nothing can be kept.
            PassExtras first(orders.size());
            first[0] = {sim::Time::from_seconds(0.2)};
            check_retime_matches(orders, shape, d, first);
        }
    }
}

TEST_CASE("schedules: retiming keeps the passes that start before the first pass given time, "
          "and no other",
          "[strategies][pipeline]") {
    // 1F1B, P = 8, m = 64: the gradient reductions lengthen the last backward of each rank.
    const PipelineShape shape{8, 64, 1, false};
    const auto orders = pipeline_order(PipelineSchedule::one_f_one_b, shape);
    const PassDurations d = uneven_stages(false);
    const ScheduleTiming timing = time_schedule(orders, shape, d);
    PassExtras last(orders.size());
    sim::Time first = sim::Time::max();
    for (std::size_t p = 0; p < orders.size(); ++p) {
        last[p].assign(orders[p].size(), sim::Time::zero());
        last[p].back() = sim::Time::from_seconds(0.3);
        first = std::min(first, timing.rank(p).back().start);
    }
    const auto from = first_movable(timing, last);
    REQUIRE(from.size() == orders.size());
    std::size_t kept = 0, total = 0;
    for (std::size_t p = 0; p < orders.size(); ++p) {
        INFO("rank " << p);
        // A prefix: every kept pass starts before the first lengthened one, the next does not.
        for (std::size_t i = 0; i < from[p]; ++i)
            CHECK(timing.rank(p)[i].start < first);
        REQUIRE(from[p] < orders[p].size()); // the lengthened last pass is never kept
        CHECK(timing.rank(p)[from[p]].start >= first);
        kept += from[p];
        total += orders[p].size();
    }
    // Only the cool-down moves: at most P passes per rank of the 2 m.
    CHECK(total - kept <= orders.size() * orders.size());
    CHECK(kept > 0);

    // Extra time on rank 0's first pass (it starts at 0): every pass may move, none is kept.
    PassExtras at_start(orders.size());
    at_start[0] = {sim::Time::from_seconds(0.2)};
    for (std::size_t n : first_movable(timing, at_start))
        CHECK(n == 0);
    // No extra time anywhere: every pass is kept.
    const auto none = first_movable(timing, PassExtras(orders.size()));
    for (std::size_t p = 0; p < orders.size(); ++p)
        CHECK(none[p] == orders[p].size());
}

TEST_CASE("shared pipeline orders: pipeline_order's, one copy per schedule and shape",
          "[strategies][pipeline]") {
    auto same = [](const PassOrders& a, const PassOrders& b) {
        if (a.size() != b.size())
            return false;
        for (std::size_t p = 0; p < a.size(); ++p) {
            if (a[p].size() != b[p].size())
                return false;
            for (std::size_t i = 0; i < a[p].size(); ++i)
                if (a[p][i].kind != b[p][i].kind || a[p][i].micro_batch != b[p][i].micro_batch ||
                    a[p][i].chunk != b[p][i].chunk || a[p][i].joint != b[p][i].joint)
                    return false;
        }
        return true;
    };
    const PipelineShape interleaved{4, 8, 2, false,
                                    placement_of(PipelineSchedule::interleaved_1f1b)};
    const auto a = shared_pipeline_order(PipelineSchedule::interleaved_1f1b, interleaved);
    CHECK(same(*a, pipeline_order(PipelineSchedule::interleaved_1f1b, interleaved)));
    // The same key: the same orders, not a copy.
    CHECK(shared_pipeline_order(PipelineSchedule::interleaved_1f1b, interleaved) == a);
    // Anything of the key changed: other orders.
    const PipelineShape one_f_one_b{4, 8, 1, false, placement_of(PipelineSchedule::one_f_one_b)};
    const auto b = shared_pipeline_order(PipelineSchedule::one_f_one_b, one_f_one_b);
    CHECK(b != a);
    CHECK(same(*b, pipeline_order(PipelineSchedule::one_f_one_b, one_f_one_b)));
    const auto g = shared_pipeline_order(PipelineSchedule::gpipe, one_f_one_b);
    CHECK(g != b);
    CHECK(same(*g, pipeline_order(PipelineSchedule::gpipe, one_f_one_b)));
    PipelineShape forward_only = one_f_one_b;
    forward_only.forward_only = true;
    CHECK(same(*shared_pipeline_order(PipelineSchedule::one_f_one_b, forward_only),
               pipeline_order(PipelineSchedule::one_f_one_b, forward_only)));
    // A shape the schedule refuses is refused as pipeline_order refuses it.
    CHECK_THROWS_AS(shared_pipeline_order(PipelineSchedule::interleaved_1f1b, one_f_one_b),
                    InputError);
}
