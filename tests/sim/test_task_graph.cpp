#include "sim/flow_network.h"
#include "sim/task_graph.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using sim::Engine;
using sim::Task;
using sim::TaskExecutor;
using sim::TaskGraph;
using sim::Time;

TEST_CASE("TaskGraph: a stream runs its tasks in order, one at a time", "[sim][tasks]") {
    Engine engine;
    TaskGraph g;
    auto s = g.add_stream("compute");
    auto a = g.add_task(Task{"a", s, Time::us(3), {}});
    auto b = g.add_task(Task{"b", s, Time::us(2), {}});
    TaskExecutor ex(engine, g);
    ex.start();
    engine.run();
    ex.require_finished();
    CHECK(ex.start_time(a) == Time::zero());
    CHECK(ex.start_time(b) == Time::us(3));
    CHECK(ex.end_time(b) == Time::us(5));
}

TEST_CASE("TaskGraph: two streams overlap, dependencies cross streams", "[sim][tasks]") {
    // compute: F1 (4us) then B1 (4us); comm: AR (3us) waits for F1. AR overlaps B1.
    Engine engine;
    TaskGraph g;
    auto compute = g.add_stream("compute");
    auto comm = g.add_stream("comm");
    auto f1 = g.add_task(Task{"F1", compute, Time::us(4), {}});
    auto b1 = g.add_task(Task{"B1", compute, Time::us(4), {}});
    auto ar = g.add_task(Task{"AR", comm, Time::us(3), {}});
    g.add_dependency(f1, ar);
    TaskExecutor ex(engine, g);
    std::vector<std::string> log;
    ex.on_task_start.connect([&](sim::TaskId id, Time t) {
        log.push_back("start " + g.task(id).name + "@" +
                      std::to_string(t.picoseconds() / 1'000'000));
    });
    ex.on_task_end.connect([&](sim::TaskId id, Time t) {
        log.push_back("end " + g.task(id).name + "@" + std::to_string(t.picoseconds() / 1'000'000));
    });
    ex.start();
    engine.run();
    ex.require_finished();
    CHECK(ex.start_time(ar) == Time::us(4));
    CHECK(ex.start_time(b1) == Time::us(4));
    CHECK(ex.end_time(ar) == Time::us(7));
    CHECK(ex.end_time(b1) == Time::us(8));
    CHECK(log == std::vector<std::string>{"start F1@0", "end F1@4", "start B1@4", "start AR@4",
                                          "end AR@7", "end B1@8"});
}

TEST_CASE("TaskGraph: asynchronous actions end when they report done", "[sim][tasks]") {
    Engine engine;
    sim::FlowNetwork net(engine);
    auto link = net.add_resource(1e9, "link");
    TaskGraph g;
    auto s = g.add_stream("comm");
    auto send =
        g.add_task(Task{"send", s, Time::zero(), [&](sim::TaskId, std::function<void()> done) {
                            net.start(sim::FlowSpec{1e6,
                                                    {link},
                                                    Time::us(2),
                                                    std::numeric_limits<double>::infinity(),
                                                    [done](sim::FlowId) { done(); }});
                        }});
    auto after = g.add_task(Task{"after", s, Time::us(1), {}});
    TaskExecutor ex(engine, g);
    ex.start();
    engine.run();
    ex.require_finished();
    CHECK(ex.end_time(send) == Time::us(2) + Time::ms(1));
    CHECK(ex.end_time(after) == Time::us(3) + Time::ms(1));
}

TEST_CASE("TaskGraph: a dependency against stream order stalls and is reported", "[sim][tasks]") {
    Engine engine;
    TaskGraph g;
    auto s = g.add_stream("compute");
    auto first = g.add_task(Task{"first", s, Time::us(1), {}});
    auto second = g.add_task(Task{"second", s, Time::us(1), {}});
    g.add_dependency(second, first); // first waits for second, which waits behind first
    TaskExecutor ex(engine, g);
    ex.start();
    engine.run();
    CHECK_FALSE(ex.finished());
    CHECK_THROWS_WITH(ex.require_finished(),
                      Catch::Contains("stalled") && Catch::Contains("'first'"));
}

TEST_CASE("TaskGraph: bad construction is refused", "[sim][tasks]") {
    TaskGraph g;
    CHECK_THROWS_AS(g.add_task(Task{"x", 3, Time::zero(), {}}), std::invalid_argument);
    auto t = g.add_task(Task{"t", sim::kNoStream, Time::zero(), {}});
    CHECK_THROWS_AS(g.add_dependency(t, t), std::invalid_argument);
    CHECK_THROWS_AS(g.add_dependency(t, 7), std::invalid_argument);
}
