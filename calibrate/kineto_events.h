#pragma once
/// \file
/// The events of a PyTorch profiler trace as the importer keeps them (kineto.h): the streaming
/// (SAX) reader of the Chrome trace-event JSON, which keeps of each event only what the
/// importer uses, interning names and shapes. Internal to calibrate/kineto.cpp.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace clustersim::calibrate::kineto_detail {

/// What an event is, by its "cat" (Kineto's names, and the older profiler's).
enum class Cat : std::uint8_t {
    other,
    kernel,
    memcpy,
    memset,
    cpu_op,
    user_annotation,
    python_function,
    runtime,
};

/// One event, as much of it as the importer uses.
struct Event {
    Cat cat = Cat::other;
    char ph = 0;
    int name = -1;
    std::int64_t pid = -1, tid = -1;
    std::int64_t ts = 0, dur = -1; // nanoseconds
    std::int64_t external_id = -1, correlation = -1, stream = -1, device = -1, seq = -1;
    std::int64_t bytes = -1, in_nelems = -1, out_nelems = -1, group_size = -1;
    int collective = -1, nccl_dtype = -1;
    int dims = -1;     // index into Parsed::dims
    int types = -1;    // index into Parsed::string_lists
    int strides = -1;  // index into Parsed::dims
    int concrete = -1; // index into Parsed::string_lists
    std::size_t index = 0;
    bool time_overflows = false; ///< ts or dur a number past what nanoseconds hold
};

/// The largest tensor dimension read; a larger (or negative) one is read as unknown (-1).
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

using Dims = std::vector<std::vector<std::int64_t>>;

/// The events read, with their names and shapes interned, and the trace's metadata.
struct Parsed {
    std::vector<Event> events;
    std::vector<std::string> names;
    std::unordered_map<std::string, int> name_ids;
    std::vector<Dims> dims;
    std::vector<std::vector<int>> string_lists;
    bool has_schema = false;
    bool has_trace_events = false;
    bool clustersim = false;
    std::map<std::int64_t, std::string> devices; // deviceProperties: id -> name
    std::int64_t world_size = 0;
    std::int64_t cuda_runtime = 0;
    std::size_t skipped_times = 0;
    /// Of those, times that are numbers too large for nanoseconds in 63 bits (17-digit
    /// microsecond timestamps): said by name when nothing else is left.
    std::size_t overflowing_times = 0;
    /// Tensor dimensions that are numbers but negative or past kMaxDim (read as unknown).
    std::size_t bad_dims = 0;

    int intern(const std::string& s) {
        auto [it, inserted] = name_ids.emplace(s, static_cast<int>(names.size()));
        if (inserted)
            names.push_back(s);
        return it->second;
    }
};

/// Reads the trace-event JSON `text` into `p`. Returns false with `error` set (the JSON
/// parser's message, or a nesting too deep) when it is not well-formed.
bool parse_events(std::string_view text, Parsed& p, std::string& error);

} // namespace clustersim::calibrate::kineto_detail
