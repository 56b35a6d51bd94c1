// The schedules that split the backward (ZB-H1, ZB-V: Qi et al. 2023, "Zero Bubble Pipeline
// Parallelism", arXiv 2401.10241) and DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437;
// github.com/deepseek-ai/DualPipe): their orders are valid, and with equal stages and free
// transfers their bubbles and in-flight micro-batches are the published closed forms.
#include "base/error.h"
#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/schedule_timing.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <tuple>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

namespace {

PipelineShape shape_of(PipelineSchedule s, int P, int m) {
    return PipelineShape{P, m, chunks_per_rank(s, 1), false, placement_of(s)};
}

/// Equal stages: a stage's forward takes f, its whole backward b, of which w the weight
/// gradients; under the V placement a chunk is half a stage.
ScheduleTiming equal_stages(PipelineSchedule s, const PipelineShape& shape, double f, double b,
                            double w, double xfer = 0) {
    const auto orders = pipeline_order(s, shape);
    const double k = shape.placement == Placement::v_shape ? 0.5 : 1.0;
    PassDurations d;
    d.pass = [=](PassKind kind, int) {
        const double t = kind == PassKind::forward          ? f
                         : kind == PassKind::backward       ? b
                         : kind == PassKind::backward_input ? b - w
                                                            : w;
        return sim::Time::from_seconds(t * k);
    };
    d.transfer = [xfer](PassKind, int) { return sim::Time::from_seconds(xfer); };
    return time_schedule(orders, shape, d);
}

const std::vector<PipelineSchedule> kSplit{PipelineSchedule::zb_h1, PipelineSchedule::zb_v,
                                           PipelineSchedule::dualpipe};

} // namespace

TEST_CASE("zero bubble: every micro-batch runs F, then B, then W (or one whole backward) on "
          "each of its stages, once",
          "[strategies][pipeline][zero-bubble]") {
    for (auto s : kSplit) {
        for (int P : {2, 4, 6, 8}) {
            for (int m : {2 * P, 2 * P + 2, 4 * P, 3 * P + 1}) {
                if (s == PipelineSchedule::dualpipe && m % 2 != 0)
                    continue;
                const PipelineShape shape = shape_of(s, P, m);
                const auto orders = pipeline_order(s, shape);
                INFO(to_string(s) << " P=" << P << " m=" << m);
                REQUIRE(orders.size() == std::size_t(P));
                // (micro-batch, virtual stage) -> kinds run, in order.
                std::map<std::pair<int, int>, std::vector<PassKind>> runs;
                for (int p = 0; p < P; ++p)
                    for (const PipePass& pass : orders[std::size_t(p)])
                        runs[{pass.micro_batch, virtual_stage(pass.chunk, p, shape)}].push_back(
                            pass.kind);
                // Each micro-batch visits one route: all 2P stages in a V, P of the 2P in
                // DualPipe (the first half of the micro-batches forward, the rest in reverse).
                const int per_mb = s == PipelineSchedule::zb_v ? 2 * P : P;
                REQUIRE(runs.size() == std::size_t(m * per_mb));
                for (const auto& [key, kinds] : runs) {
                    const auto [j, vs] = key;
                    if (s == PipelineSchedule::dualpipe)
                        CHECK((vs < P) == (j < m / 2));
                    REQUIRE(kinds.size() >= 2);
                    CHECK(kinds[0] == PassKind::forward);
                    if (kinds.size() == 2) {
                        CHECK(s == PipelineSchedule::dualpipe);
                        CHECK(kinds[1] == PassKind::backward);
                    } else {
                        REQUIRE(kinds.size() == 3);
                        CHECK(kinds[1] == PassKind::backward_input);
                        CHECK(kinds[2] == PassKind::weight);
                    }
                }
                // Dependencies across stages hold in the timed schedule (it would throw on a
                // deadlock): a forward after the previous stage's, a B after the next stage's.
                const auto t = equal_stages(s, shape, 1.0, 2.0, 1.0, 0.1);
                std::map<std::tuple<int, int, int>, std::pair<sim::Time, sim::Time>> when;
                for (int p = 0; p < P; ++p)
                    for (std::size_t i = 0; i < t.rank(std::size_t(p)).size(); ++i) {
                        // A timing's passes are its orders', in order.
                        const PipePass& pass = orders[std::size_t(p)][i];
                        const PassTime& x = t.rank(std::size_t(p))[i];
                        when[{int(is_input_backward(pass.kind) ? PassKind::backward : pass.kind),
                              pass.micro_batch, virtual_stage(pass.chunk, p, shape)}] = {x.start,
                                                                                         x.end};
                    }
                for (const auto& [key, se] : when) {
                    const auto [kind, j, vs] = key;
                    if (kind == int(PassKind::forward) && !route_start(vs, shape))
                        CHECK(se.first >= when.at({kind, j, vs - 1}).second);
                    if (kind == int(PassKind::backward)) {
                        CHECK(se.first >= when.at({int(PassKind::forward), j, vs}).second);
                        if (!route_end(vs, shape))
                            CHECK(se.first >= when.at({kind, j, vs + 1}).second);
                    }
                    if (kind == int(PassKind::weight))
                        CHECK(se.first >= when.at({int(PassKind::backward), j, vs}).second);
                }
            }
        }
    }
}

TEST_CASE("zero bubble: ZB-H1's bubble is (p-1)(F+B-2W), a third of 1F1B's (p-1)(F+B) when "
          "F = B/2 = W",
          "[strategies][pipeline][zero-bubble]") {
    // Qi et al. 2023, section 2.1; the table of github.com/deepseek-ai/DualPipe's README (B the
    // whole backward). It holds while W is at most F (the deferred W's then fit the cool-down).
    for (int P : {2, 4, 8}) {
        for (int m : {P, 2 * P, 4 * P, 3 * P + 1}) {
            for (auto [f, b, w] :
                 {std::tuple{1.0, 2.0, 1.0}, {1.0, 2.2, 0.9}, {1.0, 1.8, 0.6}, {1.2, 2.0, 1.0}}) {
                const PipelineShape shape = shape_of(PipelineSchedule::zb_h1, P, m);
                const auto t = equal_stages(PipelineSchedule::zb_h1, shape, f, b, w);
                INFO("P=" << P << " m=" << m << " F=" << f << " B=" << b << " W=" << w);
                const double bubble = (P - 1) * (f + b - 2 * w);
                CHECK(t.makespan.seconds() == Approx(m * (f + b) + bubble));
                CHECK(ideal_bubble_fraction(PipelineSchedule::zb_h1, shape, {f, b, w}) ==
                      Approx(bubble / (m * (f + b) + bubble)));
                const auto one =
                    equal_stages(PipelineSchedule::one_f_one_b,
                                 shape_of(PipelineSchedule::one_f_one_b, P, m), f, b, w);
                if (f == 1.0 && b == 2.0 && w == 1.0)
                    CHECK(t.makespan.seconds() - m * (f + b) ==
                          Approx((one.makespan.seconds() - m * (f + b)) / 3));
            }
        }
    }
}

TEST_CASE("zero bubble: ZB-H1 holds what 1F1B's first rank holds, P micro-batches, on every "
          "rank",
          "[strategies][pipeline][zero-bubble]") {
    for (int P : {2, 4, 8}) {
        for (int m : {P, 2 * P, 5 * P}) {
            const auto zb =
                pipeline_order(PipelineSchedule::zb_h1, shape_of(PipelineSchedule::zb_h1, P, m));
            const auto one = pipeline_order(PipelineSchedule::one_f_one_b,
                                            shape_of(PipelineSchedule::one_f_one_b, P, m));
            int one_peak = 0;
            for (const auto& o : one)
                one_peak = std::max(one_peak, max_in_flight(o));
            for (int p = 0; p < P; ++p) {
                INFO("P=" << P << " m=" << m << " rank " << p);
                CHECK(max_in_flight(zb[std::size_t(p)]) == std::min(P, m));
                CHECK(max_in_flight(zb[std::size_t(p)]) <= one_peak);
            }
        }
    }
}

TEST_CASE("zero bubble: ZB-V leaves only the first micro-batch's fill, (p-1) F/2, when F = B/2 "
          "= W, and holds 1F1B's activation memory",
          "[strategies][pipeline][zero-bubble]") {
    // Qi et al. 2023, section 6: with T_F = T_B = T_W the V schedule has no bubble in its steady
    // state and cool-down; what is left is the last rank waiting for the first micro-batch to
    // come down p-1 half-stage chunks (PyTorch's schedule starts rank p after p slots).
    for (int P : {2, 4, 8}) {
        for (int m : {2 * P, 4 * P, 3 * P + 1}) {
            const double f = 1.0, b = 2.0, w = 1.0;
            const PipelineShape shape = shape_of(PipelineSchedule::zb_v, P, m);
            const auto v = equal_stages(PipelineSchedule::zb_v, shape, f, b, w);
            const auto h1 = equal_stages(PipelineSchedule::zb_h1,
                                         shape_of(PipelineSchedule::zb_h1, P, m), f, b, w);
            INFO("P=" << P << " m=" << m);
            CHECK(v.makespan.seconds() == Approx(m * (f + b) + (P - 1) * f / 2));
            CHECK(v.makespan < h1.makespan);
            const double bubble = (P - 1) * f / 2;
            CHECK(ideal_bubble_fraction(PipelineSchedule::zb_v, shape, {f, b, w}) ==
                  Approx(bubble / (m * (f + b) + bubble)));
            // Activations: chunks are half a stage; a rank holds at most 2P chunk-micro-batches
            // = P stage-micro-batches, 1F1B's first rank's.
            for (const auto& o : pipeline_order(PipelineSchedule::zb_v, shape))
                CHECK(max_in_flight(o) <= 2 * P);
        }
    }
}

TEST_CASE("zero bubble: DualPipe's bubble is (P/2-1)(F&B+B-3W) with F&B = F+B when F = B/2 = "
          "W, and it holds P+1 micro-batches",
          "[strategies][pipeline][zero-bubble]") {
    // The table of github.com/deepseek-ai/DualPipe's README (DeepSeek-V3 report, table 2), for
    // the equal F, B and W it is drawn with. A forward-backward pair waits for both inputs
    // (dualpipe.py receives them in one batch); without expert all-to-all to hide, the pair
    // runs as F then B.
    for (int P : {2, 4, 6, 8}) {
        for (int m : {2 * P, 3 * P, 4 * P}) {
            if (m % 2 != 0)
                continue;
            const PipelineShape shape = shape_of(PipelineSchedule::dualpipe, P, m);
            const double f = 1.0, b = 2.0, w = 1.0;
            const auto t = equal_stages(PipelineSchedule::dualpipe, shape, f, b, w);
            INFO("P=" << P << " m=" << m);
            const double bubble = (P / 2 - 1) * ((f + b) + b - 3 * w);
            CHECK(t.makespan.seconds() == Approx(m * (f + b) + bubble));
            CHECK(ideal_bubble_fraction(PipelineSchedule::dualpipe, shape, {f, b, w}) ==
                  Approx(bubble / (m * (f + b) + bubble)));
            for (const auto& o : pipeline_order(PipelineSchedule::dualpipe, shape))
                CHECK(max_in_flight(o) == P + 1);
        }
    }
}

TEST_CASE("zero bubble: shapes the schedules cannot run are refused",
          "[strategies][pipeline][zero-bubble]") {
    CHECK_THROWS_AS(
        pipeline_order(PipelineSchedule::dualpipe, shape_of(PipelineSchedule::dualpipe, 3, 12)),
        InputError);
    CHECK_THROWS_AS(
        pipeline_order(PipelineSchedule::dualpipe, shape_of(PipelineSchedule::dualpipe, 4, 6)),
        InputError);
    CHECK_THROWS_AS(
        pipeline_order(PipelineSchedule::dualpipe, shape_of(PipelineSchedule::dualpipe, 4, 9)),
        InputError);
    // ZB-V with the looped placement is a programming error caught as bad input.
    CHECK_THROWS_AS(pipeline_order(PipelineSchedule::zb_v, PipelineShape{4, 8, 2, false}),
                    InputError);
}
