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

std::string excerpt(std::string_view text, std::size_t max_bytes) {
    std::size_t keep = text.size();
    if (keep > max_bytes) {
        keep = max_bytes;
        // Back off to the start of a UTF-8 character (continuation bytes are 10xxxxxx).
        while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80)
            --keep;
    }
    std::string out;
    out.reserve(keep + 24);
    for (std::size_t i = 0; i < keep; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        out += c < 0x20 || c == 0x7F ? '?' : static_cast<char>(c);
    }
    if (keep < text.size())
        out += fmt::format("... ({} bytes)", text.size());
    return out;
}

} // namespace clustersim::base
