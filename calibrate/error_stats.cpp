#include "calibrate/error_stats.h"

#include <algorithm>
#include <cmath>

namespace clustersim::calibrate {

ErrorStats error_stats(const std::vector<double>& errors) {
    ErrorStats s;
    s.points = static_cast<int>(errors.size());
    if (errors.empty())
        return s;
    double sum = 0, sum_abs = 0;
    for (const double e : errors) {
        sum += e;
        sum_abs += std::abs(e);
        s.max_abs = std::max(s.max_abs, std::abs(e));
    }
    s.mean = sum / static_cast<double>(errors.size());
    s.mean_abs = sum_abs / static_cast<double>(errors.size());
    return s;
}

} // namespace clustersim::calibrate
