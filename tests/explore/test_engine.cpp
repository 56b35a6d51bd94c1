// The sweep engine's own pieces without a simulation: the reorder buffer emits in order
// whatever the order rows arrive in, the pool runs every configuration once and rethrows the
// first error (and, bounded by scratch, never holds more at once than its largest job and a
// tenth), the split among ranks covers every configuration exactly once, the plan and
// row messages read back as written, and the progress meter's last report is final.
#include "explore/distribute.h"
#include "explore/grid.h"
#include "explore/ordered_sink.h"
#include "explore/progress.h"
#include "explore/thread_pool.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

using namespace clustersim::explore;

TEST_CASE("explore: the grid numbers configurations with the last axis fastest",
          "[explore][grid]") {
    const Grid grid({{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}});
    CHECK(grid.size() == 6);
    CHECK(grid.values(0) == std::vector<std::string>{"1", "x"});
    CHECK(grid.values(1) == std::vector<std::string>{"1", "y"});
    CHECK(grid.values(5) == std::vector<std::string>{"2", "z"});
    CHECK(grid.settings(4) == Settings{{"a", "2"}, {"b", "y"}});
}

TEST_CASE("explore: the ordered sink emits rows in the given order", "[explore][sink]") {
    std::vector<std::int64_t> emitted;
    OrderedSink sink({3, 5, 7, 9}, [&](std::int64_t i, const std::string& row) {
        emitted.push_back(i);
        CHECK(row == std::to_string(i));
    });
    sink.submit(7, "7");
    sink.submit(9, "9");
    CHECK(emitted.empty());
    CHECK(sink.pending() == 2);
    sink.submit(3, "3");
    CHECK(emitted == std::vector<std::int64_t>{3});
    sink.submit(5, "5");
    CHECK(emitted == std::vector<std::int64_t>{3, 5, 7, 9});
    CHECK(sink.emitted() == 4);
    CHECK(sink.pending() == 0);
}

TEST_CASE("explore: the pool runs every index once and rethrows the first error",
          "[explore][pool]") {
    std::vector<std::int64_t> indices(200);
    for (std::size_t i = 0; i < indices.size(); ++i)
        indices[i] = static_cast<std::int64_t>(i);
    std::vector<std::int64_t> emitted;
    OrderedSink sink(indices, [&](std::int64_t i, const std::string&) { emitted.push_back(i); });
    std::atomic<int> calls{0};
    run_pool(
        indices, 4,
        [&](std::int64_t i) {
            ++calls;
            return std::to_string(i);
        },
        sink);
    CHECK(calls == 200);
    CHECK(emitted == indices);

    OrderedSink sink2(indices, [](std::int64_t, const std::string&) {});
    CHECK_THROWS_WITH(run_pool(
                          indices, 4,
                          [](std::int64_t i) -> std::string {
                              if (i == 17)
                                  throw std::runtime_error("seventeen");
                              return "";
                          },
                          sink2),
                      "seventeen");
    CHECK(default_jobs() >= 1);
}

TEST_CASE("explore: the pool bounded by scratch runs every index once, in order out, and never "
          "more at once than the largest job plus a tenth",
          "[explore][pool]") {
    std::vector<std::int64_t> indices(300);
    for (std::size_t i = 0; i < indices.size(); ++i)
        indices[i] = static_cast<std::int64_t>(i);
    // Mostly small jobs, a big one every 37th (the largest: 1,000), medium ones every 11th, and
    // a run of big ones at the end (as a long pipeline's block closes a sweep's grid).
    auto weigh = [](std::int64_t i) -> std::int64_t {
        if (i % 37 == 0 || i >= 290)
            return 1000;
        return i % 11 == 0 ? 400 : 1 + i % 5;
    };
    for (const int jobs : {1, 2, 4}) {
        std::vector<std::int64_t> emitted;
        OrderedSink sink(indices,
                         [&](std::int64_t i, const std::string&) { emitted.push_back(i); });
        std::mutex m;
        std::int64_t in_flight = 0, most = 0;
        std::vector<int> calls(indices.size(), 0);
        run_pool(
            indices, jobs,
            [&](std::int64_t i) {
                {
                    std::lock_guard<std::mutex> lock(m);
                    ++calls[static_cast<std::size_t>(i)];
                    in_flight += weigh(i);
                    most = std::max(most, in_flight);
                }
                std::this_thread::sleep_for(std::chrono::microseconds(weigh(i) > 100 ? 200 : 20));
                std::lock_guard<std::mutex> lock(m);
                in_flight -= weigh(i);
                return std::to_string(i);
            },
            weigh, 16, sink);
        INFO("jobs " << jobs);
        CHECK(emitted == indices);
        CHECK(std::all_of(calls.begin(), calls.end(), [](int c) { return c == 1; }));
        CHECK(most <= 1100);
    }
    // Jobs all alike run side by side: the median job fits once per thread.
    {
        std::vector<std::int64_t> emitted;
        OrderedSink sink(indices,
                         [&](std::int64_t i, const std::string&) { emitted.push_back(i); });
        std::mutex m;
        std::int64_t in_flight = 0, most = 0;
        run_pool(
            indices, 2,
            [&](std::int64_t i) {
                {
                    std::lock_guard<std::mutex> lock(m);
                    in_flight += 1000;
                    most = std::max(most, in_flight);
                }
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                std::lock_guard<std::mutex> lock(m);
                in_flight -= 1000;
                return std::to_string(i);
            },
            [](std::int64_t) -> std::int64_t { return 1000; }, 16, sink);
        CHECK(emitted == indices);
        CHECK(most == 2000);
    }
    // Errors of a job or of its weighing stop the pool and come back.
    OrderedSink sink(indices, [](std::int64_t, const std::string&) {});
    CHECK_THROWS_WITH(run_pool(
                          indices, 2,
                          [](std::int64_t i) -> std::string {
                              if (i == 17)
                                  throw std::runtime_error("seventeen");
                              return "";
                          },
                          weigh, 16, sink),
                      "seventeen");
    OrderedSink sink2(indices, [](std::int64_t, const std::string&) {});
    CHECK_THROWS_WITH(run_pool(
                          indices, 2, [](std::int64_t) { return std::string(); },
                          [](std::int64_t i) -> std::int64_t {
                              if (i == 5)
                                  throw std::runtime_error("five");
                              return 1;
                          },
                          16, sink2),
                      "five");
}

TEST_CASE("explore: the ranks' shares cover every configuration once", "[explore][distribute]") {
    const std::vector<std::int64_t> todo{0, 2, 3, 5, 8, 9, 10};
    for (int ranks = 1; ranks <= 4; ++ranks) {
        std::vector<std::int64_t> all;
        for (int r = 0; r < ranks; ++r) {
            const auto mine = rank_share(todo, r, ranks);
            all.insert(all.end(), mine.begin(), mine.end());
        }
        std::sort(all.begin(), all.end());
        CHECK(all == todo);
    }
    CHECK(rank_share(todo, 1, 3) == std::vector<std::int64_t>{2, 8});

    const Plan ok = decode_plan(encode_plan({1, 4, 6}));
    CHECK(ok.error.empty());
    CHECK(ok.done == std::set<std::int64_t>{1, 4, 6});
    CHECK(decode_plan(encode_plan({})).done.empty());
    CHECK(decode_plan(encode_plan_error("x.csv:3: bad")).error == "x.csv:3: bad");

    const auto rows = split_rows(join_rows({"4,a,\"b,c\"", "12,d"}));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0] == std::pair<std::int64_t, std::string>{4, "4,a,\"b,c\""});
    CHECK(rows[1] == std::pair<std::int64_t, std::string>{12, "12,d"});
}

TEST_CASE("explore: progress reports end with one final report", "[explore][progress]") {
    std::vector<ProgressReport> reports;
    ProgressMeter meter(10, [&](const ProgressReport& r) { reports.push_back(r); });
    meter.update(1);
    meter.update(2); // within 0.1 s of the last: not reported (unless the machine stalled)
    meter.update(10);
    meter.finish();
    meter.finish(); // once only
    REQUIRE(reports.size() >= 4);
    REQUIRE(reports.size() <= 5);
    CHECK(reports.front().done == 1);
    const auto& last = reports.back();
    CHECK(last.final);
    CHECK(last.done == 10);
    CHECK(last.total == 10);
    const auto& before = reports[reports.size() - 2];
    CHECK_FALSE(before.final);
    CHECK(before.done == 10); // done == total is always reported
    CHECK(std::count_if(reports.begin(), reports.end(),
                        [](const ProgressReport& r) { return r.final; }) == 1);

    int disabled = 0;
    ProgressMeter off(
        10, [&](const ProgressReport&) { ++disabled; }, false);
    off.update(10);
    off.finish();
    CHECK(disabled == 0);
}
