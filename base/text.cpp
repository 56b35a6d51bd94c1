#include "base/text.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace clustersim::base {

std::string percent(double fraction, int decimals) {
    return fmt::format("{:.{}f}%", 100.0 * fraction, decimals);
}

std::string signed_percent(double fraction, int decimals) {
    return fmt::format("{:+.{}f}%", 100.0 * fraction, decimals);
}

std::string percent_number(double fraction, int decimals) {
    return fmt::format("{:.{}f}", 100.0 * fraction, decimals);
}

double round_significant(double x, int digits) {
    if (x == 0 || !std::isfinite(x))
        return x;
    // "%.{d-1}e" keeps exactly `digits` significant digits whatever the magnitude; parsing
    // the text back gives the double nearest to what a reader of the file sees.
    return std::stod(scientific(x, digits));
}

std::string scientific(double x, int digits) {
    return fmt::format("{:.{}e}", x, digits > 1 ? digits - 1 : 0);
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0)
            out += separator;
        out += items[i];
    }
    return out;
}

} // namespace clustersim::base
