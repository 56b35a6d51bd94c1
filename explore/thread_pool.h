#pragma once
/// \file
/// The sweep's pool of threads: a shared counter hands out configurations in order (no queue,
/// no task objects: a configuration takes microseconds, so scheduling must cost less), each
/// result goes to an OrderedSink, and the first exception stops the other threads and is
/// rethrown to the caller, so an error in one configuration is not lost among thousands.

#include "explore/ordered_sink.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace clustersim::explore {

/// Runs `work(index)` for every index of `indices` on `jobs` threads (taken in order) and
/// submits each row to `sink`. The first exception a job throws stops the others and is
/// rethrown here.
void run_pool(const std::vector<std::int64_t>& indices, int jobs,
              const std::function<std::string(std::int64_t)>& work, OrderedSink& sink);

/// The same, with the memory of what runs at once bounded: `weigh(index)` is the scratch
/// (bytes) a job holds while it runs; every job is weighed first (side by side). A job starts
/// when nothing runs, or when what runs and it together hold at most the largest job's scratch
/// plus a tenth (at least `floor`, and at least the median job's scratch once per thread, so
/// that a sweep of alike jobs runs them side by side); one that does not fit waits, and the
/// thread takes the
/// next. Jobs waiting start first, the earliest first, as soon as they fit; jobs of over half
/// the bound start ahead of their turn, one at a time, so that small ones run beside them
/// (their rows wait in the sink, a row each). What runs at once then holds about what one
/// thread holds for the largest job, not that once per thread. What the allocator keeps after
/// a job ends is not bounded here: the programs that sweep use one jemalloc arena for all
/// threads, so that what one thread frees the others reuse (app/allocator.cpp).
void run_pool(const std::vector<std::int64_t>& indices, int jobs,
              const std::function<std::string(std::int64_t)>& work,
              const std::function<std::int64_t(std::int64_t)>& weigh, std::int64_t floor,
              OrderedSink& sink);

/// The number of threads `--jobs 0` means: every core.
int default_jobs();

} // namespace clustersim::explore
