#pragma once
/// \file
/// Chrome trace-event JSON (the "JSON Object Format" that chrome://tracing, Perfetto UI and
/// trace_processor read), built in memory and returned as one string; the caller writes it
/// with `app::write_file_atomically`.
///
/// Mapping of a simulated step onto the format (what `run --trace` produces):
/// - one process per simulated GPU: pid = `trace_pid(rank)` = rank + 1 (Perfetto reserves
///   pid 0 and tid 0 for its idle "swapper" process), named "GPU <rank> (...)" by a
///   `process_name` metadata event, ordered by `process_sort_index` = rank;
/// - one thread per CUDA stream: tid = `trace_tid(stream)` = stream + 1, named by
///   `thread_name` ("compute", "TP comm", "PP comm", "DP comm"), ordered by
///   `thread_sort_index` = stream;
/// - a kernel or transfer is a complete event (`ph: X`), with `cat` its kind ("forward",
///   "backward", "recompute", "optimizer", "tp-comm", "pp-comm", "dp-comm") and `args` such as
///   micro-batch, layer, bytes;
/// - memory is a counter (`ph: C`) named "memory" on the GPU's process, one arg per category
///   in bytes (weights, gradients, optimizer, activations, buffers): Perfetto shows a counter
///   track per arg ("memory activations"), chrome://tracing stacks them;
/// - a point-to-point send/recv between stages may add a flow arrow (`ph: s` / `ph: f`).
///
/// Units: `ts` and `dur` are microseconds (the format's unit), from `sim::Time` rounded to the
/// nanosecond, so they print with at most three decimals. A duration is the difference of the
/// rounded end and start, so back-to-back events never overlap by a rounding error.
///
/// Determinism: metadata events come first (by pid, then tid), then all other events in a
/// stable sort by timestamp (ties keep the order of the calls); keys are written in a fixed
/// order and numbers by nlohmann-json's shortest round-trip formatting, which no locale
/// affects. Same calls, same bytes.

#include "sim/time.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace clustersim::app {

/// The process id of a simulated GPU.
constexpr int trace_pid(int gpu_rank) {
    return gpu_rank + 1;
}

/// Stream numbers of a simulated GPU, in display order.
enum class TraceStream : int { compute = 0, tp_comm = 1, pp_comm = 2, dp_comm = 3, ep_comm = 4 };

/// The thread id of a stream.
constexpr int trace_tid(int stream) {
    return stream + 1;
}
constexpr int trace_tid(TraceStream stream) {
    return static_cast<int>(stream) + 1;
}

/// The conventional thread name of a stream ("compute", "TP comm", "PP comm", "DP comm",
/// "EP comm").
const char* trace_stream_name(TraceStream stream);

/// Scope of an instant event: one thread, its process, or the whole trace.
enum class InstantScope { thread, process, global };

/// Builder of one trace. Programming errors (an end before its start, counter values that
/// are not numbers) throw std::invalid_argument.
class ChromeTrace {
public:
    /// Names a process and sets its position in the process list.
    void set_process(int pid, const std::string& name, int sort_index);
    /// Names a thread of a process and sets its position within the process.
    void set_thread(int pid, int tid, const std::string& name, int sort_index);

    /// A slice on a thread from `start` to `end` (`ph: X`). `args`: an object or null.
    void complete(int pid, int tid, const std::string& name, const std::string& category,
                  sim::Time start, sim::Time end, const nlohmann::json& args = nullptr);

    /// A counter sample on a process (`ph: C`): `values` is an object of numbers, e.g.
    /// {{"activations", 1073741824}, {"weights", 2147483648}}.
    void counter(int pid, const std::string& name, sim::Time at, const nlohmann::json& values);

    /// A point in time (`ph: i`).
    void instant(int pid, int tid, const std::string& name, const std::string& category,
                 sim::Time at, InstantScope scope = InstantScope::thread,
                 const nlohmann::json& args = nullptr);

    /// An arrow from a slice on one thread to a slice on another (flow events `s` and `f`;
    /// each end binds to the slice enclosing its time on its thread). Ids are assigned in
    /// call order.
    void flow(const std::string& name, const std::string& category, int from_pid, int from_tid,
              sim::Time from, int to_pid, int to_tid, sim::Time to);

    /// A key of the top-level "otherData" object (the experiment, the clustersim version).
    void set_metadata(const std::string& key, const nlohmann::json& value);

    /// Events added so far, metadata events included.
    std::size_t event_count() const { return metadata_.size() + events_.size(); }

    /// The whole trace: {"displayTimeUnit": "ms", "otherData": {...}, "traceEvents": [...]},
    /// one event per line. Invalid UTF-8 in names is replaced by U+FFFD.
    std::string dump() const;

private:
    struct Event {
        sim::Time::rep ts_ns;
        nlohmann::ordered_json json;
    };
    struct Metadata {
        int pid;
        int tid; // -1 for a process
        int order;
        nlohmann::ordered_json json;
    };

    std::vector<Metadata> metadata_;
    std::vector<Event> events_;
    nlohmann::ordered_json other_data_ = nlohmann::ordered_json::object();
    long long next_flow_id_ = 1;
};

} // namespace clustersim::app
