#include "hardware/power_clock.h"

namespace clustersim::hardware {

double power_limited_clock(double clock_mhz, double at_w, double to_w) {
    return at_w > 0 && to_w > 0 ? clock_mhz * to_w / at_w : clock_mhz;
}

} // namespace clustersim::hardware
