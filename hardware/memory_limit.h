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

} // namespace clustersim::hardware
