#pragma once
/// \file
/// How much memory this process may still take: the least of the machine's physical memory,
/// the address-space limit (`ulimit -v`, RLIMIT_AS, less what the process has already mapped)
/// and its cgroup's limit (cgroup v2 memory.max, v1 memory.limit_in_bytes). A size check that
/// compared with physical memory alone accepted graphs that then died of bad_alloc under `ulimit
/// -v` or in a container.

#include <string>

namespace clustersim::hardware {

struct MemoryLimit {
    double bytes = 0;  ///< 0: unknown (no check)
    std::string which; ///< "physical memory", "ulimit -v (RLIMIT_AS)", "cgroup memory.max"
};

/// The tightest of the limits above. Physical memory and the cgroup's limit are read on the
/// first call and kept; RLIMIT_AS and what is mapped are asked on every call.
MemoryLimit memory_limit();

/// What this process may still take under `limit`: under RLIMIT_AS (whose figure is already
/// what is left) all of it; under physical memory or a cgroup's limit, less the process's
/// resident set (/proc/self/statm).
double memory_left(const MemoryLimit& limit);

/// Throws InputError when `bytes`, with what the process holds, would pass 80% of the tightest
/// limit: "{what} needs about N GiB; {limit} leaves M GiB to this process: {ways_out}".
void refuse_if_over_memory(double bytes, const std::string& what, const std::string& ways_out);

} // namespace clustersim::hardware
