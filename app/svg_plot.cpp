// The building blocks of the SVG charts (plot_detail in app/svg_plot.h): ticks on linear and
// log axes, their labels, XML escaping, coordinates and text widths. The charts themselves are
// drawn in svg_plot_line.cpp and svg_plot_gantt.cpp on the canvas of svg_canvas.h.
#include "app/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>

namespace clustersim::app {

namespace plot_detail {

namespace {

/// Slack for comparisons of tick indices computed in floating point.
constexpr double kEps = 1e-9;

/// A step m * 10^e with m in {1, 2, 5} (and 2.5 where allowed); ticks are computed from
/// integers so that 0.3 is the double nearest to 0.3 rather than 3 * 0.1.
struct DecimalStep {
    int tenths = 10; ///< m * 10: 10, 20, 25 or 50
    int exponent = 0;
    bool quarter = false; ///< the sequence includes 2.5

    double value() const { return tick(1); }
    double tick(long long i) const {
        const double n = static_cast<double>(i) * tenths;
        const int e = exponent - 1;
        return e >= 0 ? n * std::pow(10.0, e) : n / std::pow(10.0, -e);
    }
    /// The next larger step in the 1-2-5 (or 1-2-2.5-5) sequence.
    DecimalStep next() const {
        if (tenths == 10)
            return {20, exponent, quarter};
        if (tenths == 20)
            return {quarter ? 25 : 50, exponent, quarter};
        if (tenths == 25)
            return {50, exponent, quarter};
        return {10, exponent + 1, quarter};
    }
};

DecimalStep step_at_or_below(double raw, bool quarter = false) {
    const int e = static_cast<int>(std::floor(std::log10(raw)));
    DecimalStep s{10, e, quarter};
    for (DecimalStep c = s; c.value() <= raw * (1 + kEps); c = c.next())
        s = c;
    return s;
}

long long floor_index(double v, double step) {
    return static_cast<long long>(std::floor(v / step + kEps));
}
long long ceil_index(double v, double step) {
    return static_cast<long long>(std::ceil(v / step - kEps));
}

/// Widens an empty range so that it has ticks.
std::pair<double, double> widen(double lo, double hi) {
    if (hi > lo)
        return {lo, hi};
    const double d = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    return {lo - d, hi + d};
}

void check_range(double lo, double hi, const char* what) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
        throw std::invalid_argument(std::string(what) + ": invalid range");
}

DecimalStep best_step(double lo, double hi, int target) {
    const DecimalStep start = step_at_or_below((hi - lo) / target);
    DecimalStep s{start.tenths, start.exponent - 1};
    DecimalStep best = s;
    long long best_diff = std::numeric_limits<long long>::max();
    for (int i = 0; i < 7; ++i, s = s.next()) {
        const double v = s.value();
        const long long n = ceil_index(hi, v) - floor_index(lo, v);
        const long long diff = std::llabs(n - target);
        // Ties go to the larger step: fewer labels read better.
        if (diff <= best_diff) {
            best_diff = diff;
            best = s;
        }
    }
    return best;
}

std::string fixed(double v, int decimals) {
    std::string s = fmt::format("{:.{}f}", v, decimals);
    if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-')
        s.erase(0, 1);
    return s;
}

/// Decimals needed to write multiples of `step` exactly (at most 6).
int decimals_for(double step) {
    for (int d = 0; d < 6; ++d) {
        const double scaled = step * std::pow(10.0, d);
        if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled))
            return d;
    }
    return 6;
}

/// Shortest of up to `sig` significant digits, no trailing zeros ("1.5", "32", "0.125").
std::string short_number(double v, int sig = 3) {
    if (v == 0)
        return "0";
    return fmt::format("{:.{}g}", v, sig);
}

constexpr std::array<const char*, 6> kByteUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
constexpr std::array<const char*, 5> kSiSuffix{"", "k", "M", "G", "T"};
constexpr std::array<const char*, 5> kBinarySuffix{"", "K", "M", "G", "T"};

int binary_power(double v) {
    int j = 0;
    while (j + 1 < static_cast<int>(kByteUnits.size()) && std::abs(v) >= std::pow(1024.0, j + 1))
        ++j;
    return j;
}

} // namespace

double nice_step(double lo, double hi, int target) {
    check_range(lo, hi, "nice_step");
    if (target < 1)
        throw std::invalid_argument("nice_step: target must be positive");
    std::tie(lo, hi) = widen(lo, hi);
    return best_step(lo, hi, target).value();
}

AxisTicks linear_ticks(double lo, double hi, TickFormat format, int target) {
    check_range(lo, hi, "linear_ticks");
    std::tie(lo, hi) = widen(lo, hi);
    // Bytes step by 1-2-5 multiples of their binary unit (0, 16 GiB, 32 GiB), not of 10^k.
    const double unit = format == TickFormat::bytes
                            ? std::pow(1024.0, binary_power(std::max(std::abs(lo), std::abs(hi))))
                            : 1.0;
    lo /= unit;
    hi /= unit;
    const DecimalStep s = best_step(lo, hi, std::max(target, 1));
    const long long i0 = floor_index(lo, s.value());
    const long long i1 = ceil_index(hi, s.value());
    std::vector<double> values;
    for (long long i = i0; i <= i1; ++i)
        values.push_back(s.tick(i) * unit);
    AxisTicks t;
    t.lo = values.front();
    t.hi = values.back();
    const auto labels = linear_labels(values, s.value() * unit, format);
    for (std::size_t i = 0; i < values.size(); ++i)
        t.ticks.push_back({values[i], labels[i], true});
    return t;
}

AxisTicks aligned_linear_ticks(double lo, double hi, int intervals, TickFormat format) {
    check_range(lo, hi, "aligned_linear_ticks");
    if (intervals < 1)
        throw std::invalid_argument("aligned_linear_ticks: intervals must be positive");
    std::tie(lo, hi) = widen(lo, hi);
    const double unit = format == TickFormat::bytes
                            ? std::pow(1024.0, binary_power(std::max(std::abs(lo), std::abs(hi))))
                            : 1.0;
    lo /= unit;
    hi /= unit;
    // 2.5 is allowed here: with the number of intervals fixed, 0-25-50-75-100% often fits
    // where 1-2-5 steps would overshoot.
    DecimalStep s = step_at_or_below((hi - lo) / intervals, true);
    for (;; s = s.next()) {
        const long long i0 = floor_index(lo, s.value());
        if (s.tick(i0 + intervals) >= hi - kEps * s.value()) {
            std::vector<double> values;
            for (long long i = i0; i <= i0 + intervals; ++i)
                values.push_back(s.tick(i) * unit);
            AxisTicks t;
            t.lo = values.front();
            t.hi = values.back();
            const auto labels = linear_labels(values, s.value() * unit, format);
            for (std::size_t i = 0; i < values.size(); ++i)
                t.ticks.push_back({values[i], labels[i], true});
            return t;
        }
    }
}

AxisTicks log_ticks(double lo, double hi, int base, TickFormat format, int max_labels) {
    check_range(lo, hi, "log_ticks");
    if (!(lo > 0))
        throw std::invalid_argument("log_ticks: range must be positive");
    if (base != 2 && base != 10)
        throw std::invalid_argument("log_ticks: base must be 2 or 10");
    const auto log_b = [base](double v) { return base == 2 ? std::log2(v) : std::log10(v); };
    const auto power = [base](int e) { return std::pow(static_cast<double>(base), e); };
    AxisTicks t;
    if (base == 10) {
        // Rounded out to 1, 2 or 5 times a power of ten (5k..1M, not 1k..1M); labels at the
        // powers, and also at 2x and 5x when that makes at most `max_labels`.
        const int e0 = static_cast<int>(std::floor(log_b(lo) + kEps));
        t.lo = power(e0);
        for (int m : {2, 5})
            if (m * power(e0) <= lo * (1 + kEps))
                t.lo = m * power(e0);
        const int eh = static_cast<int>(std::floor(log_b(hi) - kEps));
        t.hi = 10 * power(eh);
        for (int m : {5, 2, 1})
            if (m * power(eh) >= hi * (1 - kEps))
                t.hi = m * power(eh);
        if (!(t.hi > t.lo * (1 + kEps)))
            t.hi = t.lo * 10;
        const int e1 = static_cast<int>(std::ceil(log_b(t.hi) - kEps));
        int k = 1;
        while ((e1 - e0) / k + 1 > max_labels)
            ++k;
        const double decades = std::log10(t.hi / t.lo);
        const bool one_two_five = k == 1 && std::floor(decades) * 3 + 3 <= max_labels;
        for (int e = e0; e <= e1; ++e) {
            for (int m = 1; m <= 9; ++m) {
                const double v = m * power(e);
                if (v < t.lo * (1 - kEps) || v > t.hi * (1 + kEps))
                    continue;
                const bool major = (m == 1 && e % k == 0) || (one_two_five && (m == 2 || m == 5));
                if (major || (m == 1) || (k == 1 && decades <= 6))
                    t.ticks.push_back({v, major ? log_label(v, format) : std::string(), major});
            }
        }
        return t;
    }

    const int e0 = static_cast<int>(std::floor(log_b(lo) + kEps));
    int e1 = static_cast<int>(std::ceil(log_b(hi) - kEps));
    if (e1 <= e0)
        e1 = e0 + 1;
    t.lo = power(e0);
    t.hi = power(e1);
    // Label every k-th power of two. Byte and binary-count axes use k dividing 10 so that
    // labels stay on KiB/MiB boundaries (32 B, 1 KiB, 32 KiB, 1 MiB, ...).
    const bool binary_units = format == TickFormat::bytes || format == TickFormat::count_binary;
    const std::vector<int> steps =
        binary_units ? std::vector<int>{1, 2, 5, 10, 20} : std::vector<int>{1, 2, 3, 4, 5, 10, 20};
    const auto floor_div = [](int a, int c) { return a >= 0 ? a / c : -((-a + c - 1) / c); };
    int k = steps.back();
    for (int c : steps) {
        const int first = -floor_div(-e0, c); // ceil(e0 / c)
        const int last = floor_div(e1, c);
        if (last - first + 1 <= max_labels) {
            k = c;
            break;
        }
    }
    for (int e = e0; e <= e1; ++e) {
        const double p = power(e);
        const bool major = e % k == 0;
        t.ticks.push_back({p, major ? log_label(p, format) : std::string(), major});
    }
    return t;
}

std::vector<std::string> linear_labels(const std::vector<double>& values, double step,
                                       TickFormat format) {
    double max_abs = 0;
    for (double v : values)
        max_abs = std::max(max_abs, std::abs(v));
    std::vector<std::string> out;
    out.reserve(values.size());
    switch (format) {
    case TickFormat::percent: {
        const int d = decimals_for(step * 100);
        for (double v : values)
            out.push_back(fixed(v * 100, d) + "%");
        return out;
    }
    case TickFormat::bytes: {
        const int j = binary_power(max_abs);
        const double unit = std::pow(1024.0, j);
        const int d = std::min(decimals_for(step / unit), 3);
        for (double v : values)
            out.push_back(fixed(v / unit, d) + " " + kByteUnits[static_cast<std::size_t>(j)]);
        return out;
    }
    case TickFormat::number:
    case TickFormat::integer:
    case TickFormat::count_binary: {
        // One SI suffix for the whole axis, from 10,000 up: 0, 5k, 10k, 15k.
        std::size_t j = 0;
        if (max_abs >= 1e4 && format != TickFormat::integer)
            while (j + 1 < kSiSuffix.size() && max_abs >= std::pow(1000.0, j + 1))
                ++j;
        const double unit = std::pow(1000.0, static_cast<double>(j));
        const int d = decimals_for(step / unit);
        for (double v : values)
            out.push_back(fixed(v / unit, d) + (v == 0 ? "" : kSiSuffix[j]));
        return out;
    }
    }
    return out;
}

std::string log_label(double value, TickFormat format) {
    switch (format) {
    case TickFormat::percent:
        return short_number(value * 100, 4) + "%";
    case TickFormat::bytes: {
        const int j = binary_power(value);
        return short_number(value / std::pow(1024.0, j)) + " " +
               kByteUnits[static_cast<std::size_t>(j)];
    }
    case TickFormat::count_binary: {
        const int j = std::min(binary_power(value), static_cast<int>(kBinarySuffix.size()) - 1);
        return short_number(value / std::pow(1024.0, j)) +
               kBinarySuffix[static_cast<std::size_t>(j)];
    }
    case TickFormat::integer:
        return value == std::round(value) ? fixed(value, 0) : short_number(value, 6);
    case TickFormat::number:
        // From 1000 up, powers of two read best in binary units (4K, 256K, 1M GPUs or
        // elements) and anything else in SI units (5k, 20k, 1M tokens/s).
        if (std::abs(value) >= 1000 && std::fmod(value, 1024.0) == 0)
            return log_label(value, TickFormat::count_binary);
        if (std::abs(value) >= 1000) {
            std::size_t j = 0;
            while (j + 1 < kSiSuffix.size() && std::abs(value) >= std::pow(1000.0, j + 1))
                ++j;
            return short_number(value / std::pow(1000.0, static_cast<double>(j))) + kSiSuffix[j];
        }
        if (value == std::round(value))
            return fixed(value, 0);
        return short_number(value, 6);
    }
    return {};
}

std::string xml_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n;) {
        const unsigned char c = s[i];
        if (c < 0x80) {
            switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                // XML 1.0 allows tab, newline and carriage return among the control characters.
                if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r')
                    out += static_cast<char>(c);
                break;
            }
            ++i;
            continue;
        }
        // A well-formed UTF-8 sequence is copied; anything else becomes U+FFFD.
        std::size_t len = 0;
        std::uint32_t cp = 0;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1Fu;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0Fu;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07u;
        }
        bool ok = len > 0 && i + len <= n;
        for (std::size_t k = 1; ok && k < len; ++k) {
            if ((s[i + k] & 0xC0u) != 0x80u)
                ok = false;
            else
                cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        // Overlong forms, surrogates, beyond U+10FFFF and the XML-forbidden U+FFFE/U+FFFF.
        if (ok && ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
                   (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF || cp == 0xFFFE || cp == 0xFFFF))
            ok = false;
        if (ok) {
            out.append(text.substr(i, len));
            i += len;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

std::string coord(double v) {
    if (!std::isfinite(v))
        throw std::invalid_argument("svg: non-finite coordinate");
    std::string s = fmt::format("{:.2f}", v);
    while (s.back() == '0')
        s.pop_back();
    if (s.back() == '.')
        s.pop_back();
    if (s == "-0")
        s = "0";
    return s;
}

double text_width(std::string_view text, double font_px) {
    // Advance widths of DejaVu Sans / Helvetica, in ems, rounded up by character class.
    double em = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c & 0xC0u) == 0x80u)
            continue; // continuation byte of a multi-byte character
        if (c >= 0x80)
            em += 0.65;
        else if (std::string_view(" .,:;'|!il[]()/").find(static_cast<char>(c)) !=
                 std::string_view::npos)
            em += 0.34;
        else if (std::string_view("mwMW%@").find(static_cast<char>(c)) != std::string_view::npos)
            em += 0.95;
        else if (c >= 'A' && c <= 'Z')
            em += 0.72;
        else if (c >= '0' && c <= '9')
            em += 0.64;
        else
            em += 0.6;
    }
    return em * font_px;
}

} // namespace plot_detail

} // namespace clustersim::app
