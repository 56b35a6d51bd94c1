#include "sim/flow_network.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <random>

using namespace clustersim;
using sim::Engine;
using sim::FlowNetwork;
using sim::FlowSpec;
using sim::Time;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Completion times of flows by id.
struct Recorder {
    Engine& engine;
    std::map<sim::FlowId, Time> done;
    std::function<void(sim::FlowId)> cb() {
        return [this](sim::FlowId id) { done[id] = engine.now(); };
    }
};

/// Checks max-min fairness after every recomputation: no resource above capacity, and every
/// flow is either at its own cap or crosses a saturated resource on which no flow is faster.
void check_max_min(const FlowNetwork& net,
                   const std::vector<std::pair<sim::FlowId, FlowSpec>>& flows) {
    for (sim::ResourceId r = 0; r < net.resource_count(); ++r)
        REQUIRE(net.load(r) <= net.capacity(r) * (1 + 1e-9));
    for (const auto& [id, spec] : flows) {
        const double rate = net.rate(id);
        if (rate == 0)
            continue; // not active now
        if (rate >= spec.max_rate * (1 - 1e-9))
            continue;
        bool bottlenecked = false;
        for (sim::ResourceId r : spec.path) {
            const bool saturated = net.load(r) >= net.capacity(r) * (1 - 1e-9);
            bool fastest = true;
            for (const auto& [other, other_spec] : flows) {
                if (std::find(other_spec.path.begin(), other_spec.path.end(), r) !=
                        other_spec.path.end() &&
                    net.rate(other) > rate * (1 + 1e-9))
                    fastest = false;
            }
            if (saturated && fastest)
                bottlenecked = true;
        }
        REQUIRE(bottlenecked);
    }
}
} // namespace

TEST_CASE("FlowNetwork: one flow takes latency + bytes / capacity", "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    auto id = net.start(FlowSpec{1e9, {link}, Time::us(1), kInf, rec.cb()});
    engine.run();
    CHECK(rec.done.at(id) == Time::s(1) + Time::us(1));
    CHECK(net.bytes_carried(link) == Approx(1e9));
    CHECK(net.flows_in_flight() == 0);
}

TEST_CASE("FlowNetwork: two flows sharing one link get half each", "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    auto a = net.start(FlowSpec{1e9, {link}, Time::zero(), kInf, rec.cb()});
    auto b = net.start(FlowSpec{1e9, {link}, Time::zero(), kInf, rec.cb()});
    engine.run_until(Time::ms(1));
    CHECK(net.rate(a) == Approx(0.5e9));
    CHECK(net.rate(b) == Approx(0.5e9));
    engine.run();
    CHECK(rec.done.at(a) == Time::s(2));
    CHECK(rec.done.at(b) == Time::s(2));
    CHECK(net.reshares() == 2); // both starts batched into one pass, then one at completion
}

TEST_CASE("FlowNetwork: a finished flow hands its share to the other", "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    auto a = net.start(FlowSpec{1e9, {link}, Time::zero(), kInf, rec.cb()});
    auto b = net.start(FlowSpec{0.5e9, {link}, Time::zero(), kInf, rec.cb()});
    engine.run();
    // Both at 0.5 GB/s until b ends at 1 s; then a alone moves its last 0.5 GB at 1 GB/s.
    CHECK(rec.done.at(b) == Time::s(1));
    CHECK(rec.done.at(a) == Time::ms(1500));
}

TEST_CASE("FlowNetwork: a flow bottlenecked elsewhere leaves the rest to the other",
          "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto shared = net.add_resource(10e9, "shared");
    auto narrow = net.add_resource(4e9, "narrow");
    auto x = net.start(FlowSpec{1e12, {shared, narrow}, Time::zero(), kInf, {}});
    auto y = net.start(FlowSpec{1e12, {shared}, Time::zero(), kInf, {}});
    engine.run_until(Time::us(1));
    CHECK(net.rate(x) == Approx(4e9));
    CHECK(net.rate(y) == Approx(6e9));
    CHECK(net.load(shared) == Approx(10e9));
}

TEST_CASE("FlowNetwork: the textbook max-min example", "[sim][flow]") {
    // Links A (cap 1) and B (cap 2); flow 0 on A, flow 1 on A and B, flows 2 and 3 on B.
    // A's fair share 1/2 is the smallest: flows 0 and 1 get 0.5; B then has 1.5 for flows 2
    // and 3: 0.75 each.
    Engine engine;
    FlowNetwork net(engine);
    auto A = net.add_resource(1.0, "A");
    auto B = net.add_resource(2.0, "B");
    std::vector<sim::FlowId> f;
    f.push_back(net.start(FlowSpec{100, {A}, Time::zero(), kInf, {}}));
    f.push_back(net.start(FlowSpec{100, {A, B}, Time::zero(), kInf, {}}));
    f.push_back(net.start(FlowSpec{100, {B}, Time::zero(), kInf, {}}));
    f.push_back(net.start(FlowSpec{100, {B}, Time::zero(), kInf, {}}));
    engine.run_until(Time::ms(1));
    CHECK(net.rate(f[0]) == Approx(0.5));
    CHECK(net.rate(f[1]) == Approx(0.5));
    CHECK(net.rate(f[2]) == Approx(0.75));
    CHECK(net.rate(f[3]) == Approx(0.75));
}

TEST_CASE("FlowNetwork: a flow's own cap is respected and frees capacity", "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(10e9, "link");
    auto capped = net.start(FlowSpec{1e12, {link}, Time::zero(), 2e9, {}});
    auto free = net.start(FlowSpec{1e12, {link}, Time::zero(), kInf, {}});
    engine.run_until(Time::us(1));
    CHECK(net.rate(capped) == Approx(2e9));
    CHECK(net.rate(free) == Approx(8e9));
}

TEST_CASE("FlowNetwork: a rate change never lets a stale completion fire", "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    auto a = net.start(FlowSpec{1e9, {link}, Time::zero(), kInf, rec.cb()});
    // Alone, a would finish at 1 s. A second flow joins at 0.5 s and halves a's rate.
    sim::FlowId b = 0;
    engine.at(Time::ms(500), [&] {
        b = net.start(FlowSpec{1e9, {link}, Time::zero(), kInf, rec.cb()});
    });
    engine.run();
    // a: 0.5 GB alone, then 0.5 GB at 0.5 GB/s -> 1.5 s. b: 0.5 GB by 1.5 s, then 0.5 GB alone -> 2
    // s.
    CHECK(rec.done.at(a) == Time::ms(1500));
    CHECK(rec.done.at(b) == Time::s(2));
    CHECK(net.bytes_carried(link) == Approx(2e9));
}

TEST_CASE("FlowNetwork: zero-byte flows complete after their latency", "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    auto a = net.start(FlowSpec{0, {link}, Time::us(3), kInf, rec.cb()});
    engine.run();
    CHECK(rec.done.at(a) == Time::us(3));
}

TEST_CASE("FlowNetwork: random workloads stay max-min fair and conserve bytes", "[sim][flow]") {
    for (unsigned seed = 1; seed <= 5; ++seed) {
        Engine engine;
        FlowNetwork net(engine);
        std::mt19937 rng(seed);
        for (int r = 0; r < 12; ++r)
            net.add_resource(1e9 * (1 + rng() % 8), "r" + std::to_string(r));
        std::vector<std::pair<sim::FlowId, FlowSpec>> flows;
        std::vector<double> expected(net.resource_count(), 0);
        int completed = 0;
        for (int i = 0; i < 60; ++i) {
            FlowSpec spec;
            spec.bytes = 1e6 * (1 + rng() % 1000);
            std::vector<sim::ResourceId> all(net.resource_count());
            std::iota(all.begin(), all.end(), 0);
            std::shuffle(all.begin(), all.end(), rng);
            spec.path.assign(all.begin(), all.begin() + 1 + rng() % 4);
            spec.latency = Time::us(rng() % 50);
            if (rng() % 4 == 0)
                spec.max_rate = 1e8 * (1 + rng() % 20);
            for (auto r : spec.path)
                expected[r] += spec.bytes;
            const Time at = Time::us(rng() % 2000);
            engine.at(at, [&, spec] {
                FlowSpec s = spec;
                s.on_complete = [&](sim::FlowId) { ++completed; };
                flows.emplace_back(net.start(s), spec);
            });
        }
        net.on_rates_changed.connect([&] { check_max_min(net, flows); });
        engine.run();
        CHECK(completed == 60);
        for (sim::ResourceId r = 0; r < net.resource_count(); ++r)
            CHECK(net.bytes_carried(r) == Approx(expected[r]));
    }
}

TEST_CASE("FlowNetwork: completion time matches the closed form for staggered equal flows",
          "[sim][flow]") {
    // n flows of S bytes start together on one link of capacity C: all end at n*S/C.
    for (int n : {1, 2, 3, 7, 64}) {
        Engine engine;
        FlowNetwork net(engine);
        auto link = net.add_resource(25e9, "nic");
        Recorder rec{engine, {}};
        for (int i = 0; i < n; ++i)
            net.start(FlowSpec{1 << 20, {link}, Time::zero(), kInf, rec.cb()});
        engine.run();
        const double expect = n * double(1 << 20) / 25e9;
        for (auto& [id, t] : rec.done)
            CHECK(t.seconds() == Approx(expect).epsilon(1e-9));
    }
}

TEST_CASE("FlowNetwork: re-sharing the affected component gives the rates of a full recomputation "
          "bit for bit",
          "[sim][flow]") {
    for (unsigned seed = 1; seed <= 4; ++seed) {
        Engine engine;
        FlowNetwork net(engine);
        std::mt19937 rng(seed);
        // Six groups of eight resources; a flow stays within a group, so the network holds
        // several components at once and most changes leave most flows alone.
        for (int r = 0; r < 48; ++r)
            net.add_resource(1e9 * (1 + rng() % 8), "r" + std::to_string(r));
        std::vector<sim::FlowId> ids;
        int completed = 0;
        for (int i = 0; i < 120; ++i) {
            FlowSpec spec;
            spec.bytes = 1e6 * (1 + rng() % 1000);
            const auto group = static_cast<sim::ResourceId>(8 * (rng() % 6));
            std::vector<sim::ResourceId> all(8);
            std::iota(all.begin(), all.end(), group);
            std::shuffle(all.begin(), all.end(), rng);
            spec.path.assign(all.begin(), all.begin() + 1 + rng() % 3);
            spec.latency = Time::us(rng() % 50);
            if (rng() % 4 == 0)
                spec.max_rate = 1e8 * (1 + rng() % 20);
            engine.at(Time::us(rng() % 4000), [&, spec] {
                FlowSpec s = spec;
                s.on_complete = [&](sim::FlowId) { ++completed; };
                ids.push_back(net.start(s));
            });
        }
        bool checking = false;
        int compared = 0;
        net.on_rates_changed.connect([&] {
            if (checking)
                return;
            checking = true;
            std::vector<double> incremental;
            for (sim::FlowId id : ids)
                incremental.push_back(net.rate(id));
            net.reshare_now(); // every active flow
            for (std::size_t i = 0; i < ids.size(); ++i)
                REQUIRE(net.rate(ids[i]) == incremental[i]);
            ++compared;
            checking = false;
        });
        engine.run();
        CHECK(completed == 120);
        CHECK(compared > 100);
    }
}

TEST_CASE("FlowNetwork: a reshare recomputes only the flows connected to what changed",
          "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    const auto a = net.add_resource(1e9, "a");
    const auto b = net.add_resource(1e9, "b");
    // One long flow on a; 100 short ones on b, one after another.
    net.start(FlowSpec{1e12, {a}, Time::zero(), kInf, {}});
    for (int i = 0; i < 100; ++i)
        engine.at(Time::ms(i), [&] { net.start(FlowSpec{1e5, {b}, Time::zero(), kInf, {}}); });
    engine.run_until(Time::ms(200));
    // 201 reshares (the first start, 100 starts, 100 ends): a start recomputes its own flow, an
    // end nothing (b is empty then); the long flow's component is never touched again.
    CHECK(net.reshares() == 201);
    CHECK(net.flows_reshared() == 101);
}

TEST_CASE("FlowNetwork: a resource is named as given or else by the namer when asked",
          "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    net.reserve_resources(4);
    const auto unnamed = net.add_resource(1e9, "");
    const auto named = net.add_resource(1e9, "nvlink0");
    const auto after = net.add_resource(1e9, "");
    CHECK(net.resource_count() == 3);
    CHECK(net.name(unnamed).empty()); // no namer yet
    CHECK(net.name(named) == "nvlink0");
    int asked = 0;
    net.set_namer([&asked](sim::ResourceId r) {
        ++asked;
        return "edge" + std::to_string(r);
    });
    CHECK(net.name(unnamed) == "edge0");
    CHECK(net.name(named) == "nvlink0");
    CHECK(net.name(after) == "edge2");
    CHECK(asked == 2);
    CHECK_THROWS_AS(net.name(3), std::out_of_range);
    // A refused capacity names the resource in its error, by the namer where it has no name.
    CHECK_THROWS_WITH(net.add_resource(0, ""), Catch::Contains("'edge3'"));
    CHECK_THROWS_WITH(net.add_resource(-1, "pcie"), Catch::Contains("'pcie'"));
    CHECK(net.resource_count() == 3);
}

TEST_CASE("FlowNetwork: flows waiting for one instant start together, in the order started",
          "[sim][flow]") {
    // The flows of a round share one activation event; a flow started meanwhile at another
    // instant, or after another event was queued, waits on its own, and a zero-byte flow that
    // completes on activation may start flows from its callback.
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    auto a = net.start(FlowSpec{1e6, {link}, Time::us(2), kInf, rec.cb()});
    auto b = net.start(FlowSpec{1e6, {link}, Time::us(2), kInf, rec.cb()});
    auto c = net.start(FlowSpec{1e6, {link}, Time::us(1), kInf, rec.cb()});
    sim::FlowId late = 0;
    auto zero =
        net.start(FlowSpec{0, {link}, Time::us(2), kInf, [&](sim::FlowId id) {
                               rec.done[id] = engine.now();
                               late = net.start(FlowSpec{1e6, {link}, Time::us(1), kInf, rec.cb()});
                           }});
    bool other_ran = false;
    engine.at(Time::us(2), [&] { other_ran = true; });
    auto d = net.start(FlowSpec{1e6, {link}, Time::us(2), kInf, rec.cb()});
    engine.run();
    CHECK(other_ran);
    CHECK(rec.done.at(zero) == Time::us(2));
    // c moves alone from 1 us, a, b and d join it at 2 us (c is 1e3 bytes ahead), the late
    // flow at 3 us.
    CHECK(rec.done.at(a) == rec.done.at(b));
    CHECK(rec.done.at(a) == rec.done.at(d));
    CHECK(rec.done.at(c) < rec.done.at(a));
    // 5 MB in all: the link is busy from 1 us to 5.001 ms, the late flow last (each completion
    // rounds up to a picosecond).
    const Time end = Time::us(1) + Time::from_seconds(5e6 / 1e9);
    CHECK(rec.done.at(late) >= end);
    CHECK((rec.done.at(late) - end).picoseconds() <= 8);
    CHECK(net.flows_in_flight() == 0);
}

TEST_CASE("FlowNetwork: a flow's cap changed in flight, and a copy under a cap of its own",
          "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    // 1 GB capped at 0.25 GB/s for 1 s (0.25 GB moved), then uncapped: 0.75 GB at 1 GB/s.
    auto a = net.start(FlowSpec{1e9, {link}, Time::zero(), 0.25e9, rec.cb()});
    engine.at(Time::s(1), [&] { CHECK(net.set_max_rate(a, kInf)); });
    engine.run();
    CHECK(rec.done.at(a) == Time::ms(1750));
    CHECK_FALSE(net.set_max_rate(a, 1e9)); // done: nothing to change
    CHECK_THROWS_AS(net.set_max_rate(a, 0), std::invalid_argument);

    // A copy of a capped flow, given a cap of its own: from 2 s, b (0.875 GB left after 0.25 s
    // at 0.5 GB/s) keeps its 0.5 GB/s and the copy, with as much left, moves at its 0.25 GB/s.
    auto b = net.start(FlowSpec{1e9, {link}, Time::zero(), 0.5e9, rec.cb()});
    sim::FlowId c = 0;
    engine.at(Time::s(2), [&] { c = net.start_copy(b, {link}, rec.cb(), 0.25e9); });
    engine.run();
    CHECK(rec.done.at(b) == Time::ms(3750));
    CHECK(rec.done.at(c) == Time::ms(5500));
}

TEST_CASE("FlowNetwork: a flow standing for k identical flows moves as they do", "[sim][flow]") {
    // Random workloads, each run twice: flows of count k, and the same with each of them k
    // flows of count 1. Max-min gives identical flows identical rates, so every flow ends when
    // its k copies do, to the picosecond: the charges k x rate and k times rate differ in their
    // last bits, which moves a completion that falls on a whole picosecond (these round sizes
    // and capacities make most do) to the next one at most. The resources carry the same bytes.
    std::mt19937 rng(11);
    for (int trial = 0; trial < 100; ++trial) {
        struct Made {
            double bytes;
            std::vector<sim::ResourceId> path;
            Time latency;
            double cap;
            std::uint32_t count;
        };
        std::vector<Made> made;
        const int resources = 2 + static_cast<int>(rng() % 5);
        const int flows = 1 + static_cast<int>(rng() % 8);
        for (int f = 0; f < flows; ++f) {
            Made m{1e8 * static_cast<double>(1 + rng() % 4),
                   {},
                   Time::us(rng() % 3),
                   rng() % 4 == 0 ? 3e9 : kInf,
                   1 + static_cast<std::uint32_t>(rng() % 4)};
            for (sim::ResourceId r = 0; r < static_cast<sim::ResourceId>(resources); ++r)
                if (rng() % 2 == 0)
                    m.path.push_back(r);
            if (m.path.empty())
                m.path.push_back(0);
            made.push_back(m);
        }
        auto run = [&](bool expand, std::vector<double>& carried) {
            Engine engine;
            FlowNetwork net(engine);
            for (int r = 0; r < resources; ++r)
                net.add_resource(1e10 * static_cast<double>(1 + r % 3), "");
            std::vector<Time> end(made.size());
            for (std::size_t f = 0; f < made.size(); ++f) {
                const Made& m = made[f];
                for (std::uint32_t k = 0; k < (expand ? m.count : 1); ++k)
                    net.start({m.bytes, m.path, m.latency, m.cap,
                               [&end, &engine, f](sim::FlowId) { end[f] = engine.now(); },
                               expand ? 1 : m.count});
            }
            engine.run();
            for (int r = 0; r < resources; ++r)
                carried.push_back(net.bytes_carried(static_cast<sim::ResourceId>(r)));
            return end;
        };
        std::vector<double> carried_one, carried_all;
        const auto one = run(false, carried_one);
        const auto all = run(true, carried_all);
        INFO("trial " << trial);
        for (std::size_t f = 0; f < made.size(); ++f)
            CHECK(std::abs(one[f].picoseconds() - all[f].picoseconds()) <= 1);
        for (std::size_t r = 0; r < carried_one.size(); ++r)
            CHECK(carried_one[r] == Approx(carried_all[r]).epsilon(1e-12));
    }
    Engine engine;
    FlowNetwork net(engine);
    net.add_resource(1e9, "link");
    CHECK_THROWS_AS(net.start({1e6, {0}, Time::zero(), kInf, {}, 0}), std::invalid_argument);
}

TEST_CASE("FlowNetwork: a flow moved onto a path in flight shares it from then on", "[sim][flow]") {
    Engine engine;
    FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    Recorder rec{engine, {}};
    // a on no resource at its cap of 1 GB/s, b alone on the link; at 0.5 s a joins the link:
    // both then have 0.5 GB left and move at 0.5 GB/s, ending together at 1.5 s.
    auto a = net.start(FlowSpec{1e9, {}, Time::zero(), 1e9, rec.cb()});
    auto b = net.start(FlowSpec{1e9, {link}, Time::zero(), kInf, rec.cb()});
    engine.at(Time::ms(500), [&] { CHECK(net.set_path(a, {link})); });
    engine.run();
    CHECK(rec.done.at(a) == Time::ms(1500));
    CHECK(rec.done.at(b) == Time::ms(1500));
    CHECK_FALSE(net.set_path(a, {})); // done
    // A flow still waiting for its latency takes the path when it starts.
    auto c = net.start(FlowSpec{1e9, {}, Time::s(1), 4e9, rec.cb()});
    CHECK(net.set_path(c, {link}));
    CHECK_THROWS_AS(net.set_path(c, {7}), std::invalid_argument);
    engine.run();
    CHECK(rec.done.at(c) == Time::ms(3500)); // 1 GB at the link's 1 GB/s, after 1 s
}
