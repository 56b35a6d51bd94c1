#include "sim/callback.h"
#include "sim/engine.h"
#include "sim/event_queue.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <stdexcept>
#include <vector>

using namespace clustersim;
using sim::EventQueue;

namespace {
struct Later {
    bool operator()(const EventQueue::Entry& a, const EventQueue::Entry& b) const {
        return a.time != b.time ? a.time > b.time : a.key > b.key;
    }
};
} // namespace

TEST_CASE("EventQueue: entries come out in (time, key) order, as from a binary heap",
          "[sim][engine]") {
    // A simulation's pattern: take the smallest out, put in a few at or after its time (ties
    // at the same instant among them), with delays from none to the whole 64-bit range.
    for (unsigned seed : {1U, 2U, 3U}) {
        std::mt19937_64 rng(seed);
        EventQueue q;
        std::priority_queue<EventQueue::Entry, std::vector<EventQueue::Entry>, Later> ref;
        std::uint64_t key = 0;
        std::uint64_t now = 0;
        auto delay = [&]() -> std::uint64_t {
            switch (rng() % 5) {
            case 0:
                return 0;
            case 1:
                return rng() % 4;
            case 2:
                return rng() % 1'000'000;
            case 3:
                return rng() % (std::uint64_t{1} << 40);
            default: {
                const std::uint64_t room =
                    (std::uint64_t{1} << 62) - std::min(now, std::uint64_t{1} << 62);
                return room == 0 ? 0 : (rng() >> 2) % room;
            }
            }
        };
        for (int i = 0; i < 200; ++i) {
            const EventQueue::Entry e{now + delay(), key++};
            q.push(e);
            ref.push(e);
        }
        std::size_t taken = 0;
        while (!ref.empty()) {
            REQUIRE(q.size() == ref.size());
            const auto top = q.top();
            const auto e = q.pop();
            REQUIRE(top.time == e.time);
            REQUIRE(top.key == e.key);
            REQUIRE(e.time == ref.top().time);
            REQUIRE(e.key == ref.top().key);
            ref.pop();
            now = e.time;
            ++taken;
            if (taken < 20'000) {
                for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
                    const EventQueue::Entry n{now + delay(), key++};
                    q.push(n);
                    ref.push(n);
                }
            }
        }
        CHECK(q.empty());
        CHECK(taken > 20'000);
    }
}

TEST_CASE("EventQueue: putting in before the last taken out is refused", "[sim][engine]") {
    EventQueue q;
    q.push({10, 0});
    q.push({20, 1});
    CHECK(q.pop().time == 10);
    CHECK_THROWS_AS(q.push({9, 2}), std::logic_error);
    q.push({10, 3}); // at the base: fine
    CHECK(q.pop().key == 3);
}

TEST_CASE("Engine: a cancelled event beyond the clock does not stop earlier ones",
          "[sim][engine]") {
    // step() drops a cancelled event later than anything that ran; what comes next may be
    // scheduled before it.
    sim::Engine engine;
    std::vector<int> seen;
    const auto late = engine.at(sim::Time::us(50), [&] { seen.push_back(50); });
    engine.at(sim::Time::us(1), [&] { seen.push_back(1); });
    engine.cancel(late);
    engine.run();
    CHECK(engine.now() == sim::Time::us(1));
    engine.at(sim::Time::us(2), [&] { seen.push_back(2); });
    // run_until drops a cancelled event before the limit, stops before a live one after it,
    // and events scheduled between the limit and that one still run first.
    const auto c = engine.at(sim::Time::us(3), [&] { seen.push_back(3); });
    engine.at(sim::Time::us(9), [&] { seen.push_back(9); });
    engine.cancel(c);
    engine.run_until(sim::Time::us(5));
    CHECK(engine.now() == sim::Time::us(5));
    engine.at(sim::Time::us(6), [&] { seen.push_back(6); });
    engine.at(sim::Time::us(5), [&] { seen.push_back(5); });
    engine.run();
    CHECK(seen == std::vector<int>{1, 2, 5, 6, 9});
}

TEST_CASE("Callback: small callables inline, large or non-trivial ones kept alive and freed",
          "[sim][engine]") {
    auto counter = std::make_shared<int>(0);
    {
        // Captures over the inline size, and a shared_ptr (not trivially copyable).
        std::array<double, 8> big{1, 2, 3, 4, 5, 6, 7, 8};
        sim::Callback a = [counter, big] { *counter += static_cast<int>(big[7]); };
        sim::Callback b = [counter] { *counter += 1; };
        CHECK(counter.use_count() == 3);
        sim::Callback c = std::move(a);
        CHECK_FALSE(a);
        c();
        b();
        CHECK(*counter == 9);
        b = std::move(c); // the small one is destroyed, the large one moves in
        CHECK(counter.use_count() == 2);
        b();
        CHECK(*counter == 17);
        std::function<void()> f = [counter] { *counter += 100; };
        sim::Callback d = f;
        d();
        CHECK(*counter == 117);
    }
    CHECK(counter.use_count() == 1);
    sim::Engine engine;
    CHECK_THROWS_AS(engine.at(sim::Time::zero(), sim::Callback{}), std::invalid_argument);
}
