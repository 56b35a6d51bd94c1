#include "sim/engine.h"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace clustersim;
using sim::Engine;
using sim::Time;

TEST_CASE("Engine: events run in (time, insertion) order", "[sim][engine]") {
    Engine engine;
    std::vector<int> order;
    engine.at(Time::us(2), [&] { order.push_back(3); });
    engine.at(Time::us(1), [&] { order.push_back(1); });
    engine.at(Time::us(1), [&] { order.push_back(2); }); // same time: after the first
    engine.at(Time::us(5), [&] {
        order.push_back(4);
        engine.after(Time::zero(), [&] { order.push_back(5); }); // same instant, runs next
    });
    engine.run();
    CHECK(order == std::vector<int>{1, 2, 3, 4, 5});
    CHECK(engine.now() == Time::us(5));
    CHECK(engine.events_processed() == 5);
    CHECK(engine.pending() == 0);
}

TEST_CASE("Engine: cancelled events never run, cancelling twice is harmless", "[sim][engine]") {
    Engine engine;
    int ran = 0;
    auto a = engine.at(Time::us(1), [&] { ran += 1; });
    engine.at(Time::us(2), [&] { ran += 10; });
    engine.cancel(a);
    engine.cancel(a);
    CHECK(engine.pending() == 1);
    engine.run();
    CHECK(ran == 10);
    // The slot of the cancelled event is reused; the stale id must not cancel the new event.
    auto b = engine.at(Time::us(3), [&] { ran += 100; });
    engine.cancel(a);
    engine.run();
    CHECK(ran == 110);
    (void)b;
}

TEST_CASE("Engine: run_until stops at the limit and moves the clock there", "[sim][engine]") {
    Engine engine;
    std::vector<int> seen;
    engine.at(Time::us(1), [&] { seen.push_back(1); });
    auto c = engine.at(Time::us(2), [&] { seen.push_back(2); });
    engine.at(Time::us(3), [&] { seen.push_back(3); });
    engine.cancel(c);
    engine.run_until(Time::us(2));
    CHECK(seen == std::vector<int>{1});
    CHECK(engine.now() == Time::us(2));
    engine.run_until(Time::us(10));
    CHECK(seen == std::vector<int>{1, 3});
    CHECK(engine.now() == Time::us(10));
}

TEST_CASE("Engine: scheduling in the past is a logic error", "[sim][engine]") {
    Engine engine;
    engine.at(Time::us(5), [] {});
    engine.run();
    CHECK_THROWS_AS(engine.at(Time::us(4), [] {}), std::logic_error);
}

namespace {
std::string random_run(unsigned seed) {
    Engine engine;
    std::mt19937 rng(seed);
    std::string log;
    std::function<void(int)> spawn = [&](int depth) {
        log += std::to_string(engine.now().picoseconds()) + ":" + std::to_string(depth) + ";";
        if (depth < 6) {
            for (int i = 0; i < 2; ++i)
                engine.after(Time::ps(static_cast<long>(rng() % 5)),
                             [&, depth] { spawn(depth + 1); });
        }
    };
    for (int i = 0; i < 5; ++i)
        engine.at(Time::ps(static_cast<long>(rng() % 3)), [&] { spawn(0); });
    engine.run();
    return log;
}
} // namespace

TEST_CASE("Engine: identical inputs give identical event logs", "[sim][engine][determinism]") {
    const std::string a = random_run(42);
    const std::string b = random_run(42);
    CHECK(a.size() > 1000);
    CHECK(a == b);
    CHECK(random_run(43) != a);
}
