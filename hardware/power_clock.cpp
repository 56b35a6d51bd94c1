#include "hardware/power_clock.h"

#include <cmath>

namespace clustersim::hardware {

double power_limited_clock(double clock_mhz, double at_w, double to_w, double exponent) {
    return at_w > 0 && to_w > 0 ? clock_mhz * std::pow(to_w / at_w, exponent) : clock_mhz;
}

} // namespace clustersim::hardware
