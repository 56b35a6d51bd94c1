#include "hardware/memory_limit.h"

#include "base/error.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

namespace clustersim::hardware {

namespace {

/// The first number in a file (memory.max holds "max" when unlimited: 0 then).
double read_number(const std::string& path) {
    std::ifstream in(path);
    double v = 0;
    if (!(in >> v))
        return 0;
    return v;
}

/// This process's cgroup v2 folder ("/sys/fs/cgroup" + the path in /proc/self/cgroup's
/// "0::/path" line), or "" when not on cgroup v2.
std::string cgroup_v2_dir() {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) == 0)
            return "/sys/fs/cgroup" + line.substr(3);
    }
    return "";
}

void tighten(MemoryLimit& m, double bytes, const char* which) {
    if (bytes > 0 && (m.bytes == 0 || bytes < m.bytes))
        m = {bytes, which};
}

/// The limits that hold for the whole process: physical memory and the cgroup's limit, read
/// once. A Topology is built for every simulated step, and reading /proc/self/cgroup and
/// memory.max each time (four system calls, two file opens) cost 15% of an analytic GPT-3 step
/// on 64 GPUs. A cgroup limit changed while the process runs is not seen (the check is an
/// estimate against bad_alloc, not an accounting).
MemoryLimit fixed_limit() {
    MemoryLimit m;
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0)
        m = {static_cast<double>(pages) * static_cast<double>(page), "physical memory"};
    if (const std::string dir = cgroup_v2_dir(); !dir.empty()) {
        // The group's limit itself, not less its use: that counts the page cache, which
        // the kernel gives back before it refuses an allocation.
        tighten(m, read_number(dir + "/memory.max"), "cgroup memory.max");
    } else {
        // cgroup v1: an unlimited group reads as a huge number (about 2^63), which tightens
        // nothing.
        tighten(m, read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
                "cgroup memory.limit_in_bytes");
    }
    return m;
}

} // namespace

MemoryLimit memory_limit() {
    static const MemoryLimit fixed = fixed_limit();
    MemoryLimit m = fixed;
    // RLIMIT_AS is asked each time (one system call): a process may lower it as it runs, and
    // what is left of it shrinks with what is mapped.
    rlimit as{};
    if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        // Less what is mapped already (the binary, its libraries, the allocator's arenas).
        const long page = ::sysconf(_SC_PAGE_SIZE);
        double mapped = 0;
        std::ifstream statm("/proc/self/statm");
        if (statm >> mapped && page > 0)
            mapped *= static_cast<double>(page);
        const double left = static_cast<double>(as.rlim_cur) - mapped;
        tighten(m, left > 1 ? left : 1, "ulimit -v (RLIMIT_AS)");
    }
    return m;
}

double memory_left(const MemoryLimit& limit) {
    if (limit.which == "ulimit -v (RLIMIT_AS)")
        return limit.bytes;
    const long page = ::sysconf(_SC_PAGE_SIZE);
    double size = 0, resident = 0;
    std::ifstream statm("/proc/self/statm");
    if (!(statm >> size >> resident) || page <= 0)
        return limit.bytes;
    return limit.bytes - resident * static_cast<double>(page);
}

void refuse_if_over_memory(double bytes, const std::string& what, const std::string& ways_out) {
    const MemoryLimit limit = memory_limit();
    if (limit.bytes <= 0)
        return;
    const double left = memory_left(limit);
    if (bytes + (limit.bytes - left) <= 0.8 * limit.bytes)
        return;
    throw InputError(fmt::format("{} needs about {:.1f} GiB; {} leaves {:.1f} GiB to this "
                                 "process: {}",
                                 what, bytes / (1 << 30), limit.which, left / (1 << 30), ways_out));
}

} // namespace clustersim::hardware
