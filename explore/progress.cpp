#include "explore/progress.h"

#include <chrono>
#include <utility>

namespace clustersim::explore {

namespace {
double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
} // namespace

ProgressMeter::ProgressMeter(std::int64_t total, std::function<void(const ProgressReport&)> report,
                             bool enabled)
    : total_(total)
    , report_(std::move(report))
    , enabled_(enabled && total > 0 && report_)
    , start_(enabled_ ? now_seconds() : 0) {
}

void ProgressMeter::update(std::int64_t done) {
    if (!enabled_)
        return;
    std::lock_guard<std::mutex> lock(mutex_);
    const double t = now_seconds();
    if (done < total_ && t - last_ < 0.1)
        return;
    last_ = t;
    report_({done, total_, t - start_, false});
}

void ProgressMeter::finish() {
    if (!enabled_)
        return;
    update(total_);
    std::lock_guard<std::mutex> lock(mutex_);
    report_({total_, total_, now_seconds() - start_, true});
    enabled_ = false;
}

} // namespace clustersim::explore
