#include "app/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

namespace clustersim::app {

namespace {

using OJson = nlohmann::ordered_json;

/// Picoseconds to nanoseconds, rounded half away from zero.
sim::Time::rep to_ns(sim::Time t) {
    const sim::Time::rep ps = t.picoseconds();
    return ps >= 0 ? (ps + 500) / 1000 : -((-ps + 500) / 1000);
}

/// Nanoseconds as the format's microseconds: the double nearest to ns/1000, which the
/// shortest round-trip printer writes with at most three decimals.
double ns_to_us(sim::Time::rep ns) {
    return static_cast<double>(ns) / 1000.0;
}

OJson object_args(const nlohmann::json& args, const char* what) {
    if (args.is_null())
        return OJson::object();
    if (!args.is_object())
        throw std::invalid_argument(std::string("chrome trace: ") + what +
                                    ": args must be an object");
    return OJson(args);
}

} // namespace

const char* trace_stream_name(TraceStream stream) {
    switch (stream) {
    case TraceStream::compute:
        return "compute";
    case TraceStream::tp_comm:
        return "TP comm";
    case TraceStream::pp_comm:
        return "PP comm";
    case TraceStream::dp_comm:
        return "DP comm";
    case TraceStream::ep_comm:
        return "EP comm";
    }
    return "stream";
}

void ChromeTrace::set_process(int pid, const std::string& name, int sort_index) {
    std::erase_if(metadata_, [pid](const Metadata& m) { return m.pid == pid && m.tid == -1; });
    metadata_.push_back({pid, -1, 0,
                         OJson{{"name", "process_name"},
                               {"ph", "M"},
                               {"pid", pid},
                               {"args", OJson{{"name", name}}}}});
    metadata_.push_back({pid, -1, 1,
                         OJson{{"name", "process_sort_index"},
                               {"ph", "M"},
                               {"pid", pid},
                               {"args", OJson{{"sort_index", sort_index}}}}});
}

void ChromeTrace::set_thread(int pid, int tid, const std::string& name, int sort_index) {
    std::erase_if(metadata_,
                  [pid, tid](const Metadata& m) { return m.pid == pid && m.tid == tid; });
    metadata_.push_back({pid, tid, 0,
                         OJson{{"name", "thread_name"},
                               {"ph", "M"},
                               {"pid", pid},
                               {"tid", tid},
                               {"args", OJson{{"name", name}}}}});
    metadata_.push_back({pid, tid, 1,
                         OJson{{"name", "thread_sort_index"},
                               {"ph", "M"},
                               {"pid", pid},
                               {"tid", tid},
                               {"args", OJson{{"sort_index", sort_index}}}}});
}

void ChromeTrace::complete(int pid, int tid, const std::string& name, const std::string& category,
                           sim::Time start, sim::Time end, const nlohmann::json& args) {
    if (end < start)
        throw std::invalid_argument("chrome trace: event '" + name + "' ends before it starts");
    const auto s = to_ns(start);
    const auto e = to_ns(end);
    OJson j{{"name", name},           {"cat", category}, {"ph", "X"}, {"ts", ns_to_us(s)},
            {"dur", ns_to_us(e - s)}, {"pid", pid},      {"tid", tid}};
    OJson a = object_args(args, "complete");
    if (!a.empty())
        j["args"] = std::move(a);
    events_.push_back({s, std::move(j)});
}

void ChromeTrace::counter(int pid, const std::string& name, sim::Time at,
                          const nlohmann::json& values) {
    if (!values.is_object() || values.empty())
        throw std::invalid_argument("chrome trace: counter '" + name +
                                    "': values must be a non-empty object");
    for (const auto& [key, v] : values.items()) {
        if (!v.is_number() || (v.is_number_float() && !std::isfinite(v.get<double>())))
            throw std::invalid_argument("chrome trace: counter '" + name + "': value '" + key +
                                        "' is not a finite number");
    }
    const auto t = to_ns(at);
    events_.push_back({t, OJson{{"name", name},
                                {"ph", "C"},
                                {"ts", ns_to_us(t)},
                                {"pid", pid},
                                {"args", OJson(values)}}});
}

void ChromeTrace::instant(int pid, int tid, const std::string& name, const std::string& category,
                          sim::Time at, InstantScope scope, const nlohmann::json& args) {
    const auto t = to_ns(at);
    const char* s = scope == InstantScope::thread    ? "t"
                    : scope == InstantScope::process ? "p"
                                                     : "g";
    OJson j{{"name", name}, {"cat", category}, {"ph", "i"}, {"ts", ns_to_us(t)},
            {"pid", pid},   {"tid", tid},      {"s", s}};
    OJson a = object_args(args, "instant");
    if (!a.empty())
        j["args"] = std::move(a);
    events_.push_back({t, std::move(j)});
}

void ChromeTrace::flow(const std::string& name, const std::string& category, int from_pid,
                       int from_tid, sim::Time from, int to_pid, int to_tid, sim::Time to) {
    if (to < from)
        throw std::invalid_argument("chrome trace: flow '" + name + "' arrives before it leaves");
    const long long id = next_flow_id_++;
    const auto f = to_ns(from);
    const auto t = to_ns(to);
    events_.push_back({f, OJson{{"name", name},
                                {"cat", category},
                                {"ph", "s"},
                                {"id", id},
                                {"ts", ns_to_us(f)},
                                {"pid", from_pid},
                                {"tid", from_tid}}});
    // "bp": "e" binds the arrow's head to the slice enclosing it, not to the next one.
    events_.push_back({t, OJson{{"name", name},
                                {"cat", category},
                                {"ph", "f"},
                                {"bp", "e"},
                                {"id", id},
                                {"ts", ns_to_us(t)},
                                {"pid", to_pid},
                                {"tid", to_tid}}});
}

void ChromeTrace::set_metadata(const std::string& key, const nlohmann::json& value) {
    other_data_[key] = OJson(value);
}

std::string ChromeTrace::dump() const {
    std::vector<const Metadata*> meta;
    meta.reserve(metadata_.size());
    for (const auto& m : metadata_)
        meta.push_back(&m);
    std::stable_sort(meta.begin(), meta.end(), [](const Metadata* a, const Metadata* b) {
        return std::tie(a->pid, a->tid, a->order) < std::tie(b->pid, b->tid, b->order);
    });
    std::vector<const Event*> events;
    events.reserve(events_.size());
    for (const auto& e : events_)
        events.push_back(&e);
    std::stable_sort(events.begin(), events.end(),
                     [](const Event* a, const Event* b) { return a->ts_ns < b->ts_ns; });

    const auto dump_one = [](const OJson& j) {
        return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    };
    std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":";
    out += dump_one(other_data_);
    out += ",\"traceEvents\":[";
    bool first = true;
    const auto append = [&](const OJson& j) {
        out += first ? "\n" : ",\n";
        first = false;
        out += dump_one(j);
    };
    for (const auto* m : meta)
        append(m->json);
    for (const auto* e : events)
        append(e->json);
    out += "\n]}\n";
    return out;
}

} // namespace clustersim::app
