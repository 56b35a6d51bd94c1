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

/// The number of threads `--jobs 0` means: every core.
int default_jobs();

} // namespace clustersim::explore
