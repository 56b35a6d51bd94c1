#include "app/chrome_trace.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <stdexcept>

using namespace clustersim::app;
using clustersim::sim::Time;
using nlohmann::json;

namespace {

/// Two GPUs of a two-stage pipeline, two streams each: what `run --trace` will write.
ChromeTrace two_stage_trace() {
    ChromeTrace t;
    // Declared out of order on purpose: the output orders metadata by pid and tid.
    for (int rank : {1, 0}) {
        const int pid = trace_pid(rank);
        t.set_process(pid, "GPU " + std::to_string(rank) + " (stage " + std::to_string(rank) + ")",
                      rank);
        for (TraceStream s : {TraceStream::pp_comm, TraceStream::compute})
            t.set_thread(pid, trace_tid(s), trace_stream_name(s), static_cast<int>(s));
    }
    const int c = trace_tid(TraceStream::compute), pp = trace_tid(TraceStream::pp_comm);
    // Stage 1's forward is added before stage 0's, though it starts later.
    t.complete(trace_pid(1), c, "F0", "forward", Time::ns(2300), Time::ns(4300),
               {{"micro_batch", 0}});
    t.complete(trace_pid(0), c, "F0", "forward", Time::zero(), Time::ns(2000),
               {{"micro_batch", 0}});
    t.complete(trace_pid(0), pp, "send F0", "pp-comm", Time::ns(2000), Time::ns(2300),
               {{"bytes", 25165824}});
    t.flow("activations", "pp-comm", trace_pid(0), pp, Time::ns(2000), trace_pid(1), c,
           Time::ns(2300));
    t.counter(trace_pid(0), "memory", Time::zero(),
              {{"weights", 2147483648LL}, {"activations", 0}});
    t.counter(trace_pid(0), "memory", Time::ns(2000),
              {{"weights", 2147483648LL}, {"activations", 402653184}});
    t.instant(trace_pid(0), c, "optimizer step", "optimizer", Time::ns(4300),
              InstantScope::process);
    t.set_metadata("experiment", "two-stage sample");
    return t;
}

} // namespace

TEST_CASE("chrome trace: structure, metadata order, units", "[app][trace]") {
    const ChromeTrace t = two_stage_trace();
    const json doc = json::parse(t.dump());
    CHECK(doc["displayTimeUnit"] == "ms");
    CHECK(doc["otherData"]["experiment"] == "two-stage sample");
    const json& ev = doc["traceEvents"];
    REQUIRE(ev.is_array());
    // 2 processes x (name + sort) + 4 threads x (name + sort) = 12 metadata events;
    // 3 slices + 2 flow ends + 2 counters + 1 instant = 8.
    CHECK(ev.size() == 20);
    CHECK(t.event_count() == 20);

    // Metadata first, by pid then tid: GPU 0 before GPU 1, compute before PP comm.
    for (std::size_t i = 0; i < 12; ++i)
        CHECK(ev[i]["ph"] == "M");
    CHECK(ev[0]["name"] == "process_name");
    CHECK(ev[0]["pid"] == 1);
    CHECK(ev[0]["args"]["name"] == "GPU 0 (stage 0)");
    CHECK(ev[1]["name"] == "process_sort_index");
    CHECK(ev[1]["args"]["sort_index"] == 0);
    CHECK(ev[2]["name"] == "thread_name");
    CHECK(ev[2]["tid"] == 1);
    CHECK(ev[2]["args"]["name"] == "compute");
    CHECK(ev[4]["tid"] == 3);
    CHECK(ev[4]["args"]["name"] == "PP comm");
    CHECK(ev[5]["args"]["sort_index"] == 2);
    CHECK(ev[6]["pid"] == 2);

    // Then by time, ties in call order; ts and dur in microseconds.
    double last = -1;
    int slices = 0, counters = 0, flows = 0, instants = 0;
    for (std::size_t i = 12; i < ev.size(); ++i) {
        const json& e = ev[i];
        CHECK(e["ts"].get<double>() >= last);
        last = e["ts"].get<double>();
        CHECK(e.contains("pid"));
        const std::string ph = e["ph"];
        slices += ph == "X";
        counters += ph == "C";
        flows += ph == "s" || ph == "f";
        instants += ph == "i";
        if (ph == "X") {
            CHECK(e.contains("tid"));
            CHECK(e.contains("cat"));
            CHECK(e["dur"].get<double>() >= 0);
        }
    }
    CHECK(slices == 3);
    CHECK(counters == 2);
    CHECK(flows == 2);
    CHECK(instants == 1);
    const json& first = ev[12];
    CHECK(first["ph"] == "X");
    CHECK(first["pid"] == 1);
    CHECK(first["ts"] == 0.0);
    CHECK(first["dur"] == 2.0); // 2000 ns
    CHECK(first["args"]["micro_batch"] == 0);
    // Stage 1's forward comes after stage 0's send although it was added first.
    bool seen_send = false;
    for (std::size_t i = 12; i < ev.size(); ++i) {
        if (ev[i]["name"] == "send F0")
            seen_send = true;
        if (ev[i]["name"] == "F0" && ev[i]["pid"] == 2) {
            CHECK(seen_send);
            CHECK(ev[i]["ts"] == 2.3);
            CHECK(ev[i]["dur"] == 2.0);
        }
        if (ev[i]["ph"] == "C" && ev[i]["ts"] == 2.0)
            CHECK(ev[i]["args"]["activations"] == 402653184);
        if (ev[i]["ph"] == "i") {
            CHECK(ev[i]["s"] == "p");
            CHECK(ev[i]["ts"] == 4.3);
        }
    }
    // The two ends of the flow share an id; the head binds to its enclosing slice.
    json s, f;
    for (const auto& e : ev) {
        if (e["ph"] == "s")
            s = e;
        if (e["ph"] == "f")
            f = e;
    }
    CHECK(s["id"] == f["id"]);
    CHECK(f["bp"] == "e");
    CHECK(s["pid"] == 1);
    CHECK(f["pid"] == 2);
}

TEST_CASE("chrome trace: rounding to the nanosecond, no exponents, no overlap", "[app][trace]") {
    ChromeTrace t;
    // 1.4996 us and 2.5004 us: rounded to 1.5 and 2.5; the next slice starts where this ends.
    t.complete(1, 1, "a", "forward", Time::ps(1'499'600), Time::ps(2'500'400));
    t.complete(1, 1, "b", "forward", Time::ps(2'500'400), Time::ps(2'500'900));
    t.complete(1, 1, "c", "forward", Time::ns(1), Time::ns(2));
    const std::string out = t.dump();
    CHECK(out.find("e-") == std::string::npos);
    CHECK(out.find("\"ts\":0.001") != std::string::npos);
    const json ev = json::parse(out)["traceEvents"];
    REQUIRE(ev.size() == 3);
    CHECK(ev[1]["ts"] == 1.5);
    CHECK(ev[1]["dur"] == 1.0);
    CHECK(ev[2]["ts"] == 2.5);
    CHECK(ev[2]["dur"] == 0.001);
    CHECK(ev[1]["ts"].get<double>() + ev[1]["dur"].get<double>() == ev[2]["ts"].get<double>());
    // Microseconds of a long step keep their nanoseconds.
    ChromeTrace u;
    u.complete(1, 1, "step", "forward", Time::ms(1234), Time::ms(1234) + Time::ns(1));
    CHECK(u.dump().find("\"ts\":1234000.0") != std::string::npos);
}

TEST_CASE("chrome trace: same calls, same bytes, names sanitised", "[app][trace]") {
    CHECK(two_stage_trace().dump() == two_stage_trace().dump());
    ChromeTrace t;
    t.set_process(1, "GPU \xFF", 0); // invalid UTF-8 becomes U+FFFD, the JSON stays valid
    t.set_process(1, "GPU 0", 0);    // naming again replaces the name
    const json ev = json::parse(t.dump())["traceEvents"];
    REQUIRE(ev.size() == 2);
    CHECK(ev[0]["args"]["name"] == "GPU 0");
    ChromeTrace u;
    u.set_thread(1, 1, "compute \xFF", 0);
    CHECK_NOTHROW(json::parse(u.dump()));
}

TEST_CASE("chrome trace: programming errors are refused", "[app][trace]") {
    ChromeTrace t;
    CHECK_THROWS_AS(t.complete(1, 1, "x", "forward", Time::ns(2), Time::ns(1)),
                    std::invalid_argument);
    CHECK_THROWS_AS(t.counter(1, "memory", Time::zero(), json::object()), std::invalid_argument);
    CHECK_THROWS_AS(t.counter(1, "memory", Time::zero(), {{"weights", "a lot"}}),
                    std::invalid_argument);
    CHECK_THROWS_AS(t.complete(1, 1, "x", "forward", Time::zero(), Time::ns(1), json::array()),
                    std::invalid_argument);
    CHECK_THROWS_AS(t.flow("x", "pp-comm", 1, 1, Time::ns(5), 2, 1, Time::ns(4)),
                    std::invalid_argument);
    CHECK(t.event_count() == 0);
}

TEST_CASE("chrome trace: the GPU and stream mapping", "[app][trace]") {
    CHECK(trace_pid(0) == 1);
    CHECK(trace_tid(TraceStream::compute) == 1);
    CHECK(trace_tid(TraceStream::dp_comm) == 4);
    CHECK(std::string(trace_stream_name(TraceStream::tp_comm)) == "TP comm");
}
