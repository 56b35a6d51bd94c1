#pragma once
/// \file
/// How far a sweep has come, reported to whoever shows it. explore prints nothing, so the
/// meter only counts, times and throttles (at most ten reports a second, and always the last
/// one), and hands a ProgressReport to a callback; the app draws the bar on a terminal.

#include <cstdint>
#include <functional>
#include <mutex>

namespace clustersim::explore {

/// One report: `done` of `total` after `elapsed_s` seconds; `final` for the last one.
struct ProgressReport {
    std::int64_t done = 0;
    std::int64_t total = 0;
    double elapsed_s = 0;
    bool final = false;
    /// Configurations per second so far (0 before any time has passed).
    double rate() const { return elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0; }
};

/// Counts finished configurations and reports them, throttled. Thread-safe; the callback runs
/// under the meter's lock. Disabled (or with no callback, or nothing to do) it reports nothing.
class ProgressMeter {
public:
    ProgressMeter(std::int64_t total, std::function<void(const ProgressReport&)> report,
                  bool enabled = true);
    /// `done` configurations are finished (reported unless the last report is under 0.1 s old,
    /// and always when done == total).
    void update(std::int64_t done);
    /// The final report (once; later calls do nothing).
    void finish();

private:
    std::int64_t total_;
    std::function<void(const ProgressReport&)> report_;
    bool enabled_;
    double start_ = 0;
    double last_ = -1;
    std::mutex mutex_;
};

} // namespace clustersim::explore
