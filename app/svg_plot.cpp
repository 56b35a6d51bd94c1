#include "app/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
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

namespace {

using plot_detail::AxisTicks;
using plot_detail::coord;
using plot_detail::text_width;
using plot_detail::Tick;
using plot_detail::xml_escape;

// Okabe & Ito's colour-blind-safe palette, yellow last (weak on white as a line colour).
constexpr std::array<const char*, 8> kPalette{"#0072B2", "#D55E00", "#009E73", "#E69F00",
                                              "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
constexpr const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";
constexpr const char* kTextColor = "#222222";
constexpr const char* kMutedColor = "#555555";
constexpr const char* kGridColor = "#e3e3e3";
constexpr const char* kAxisColor = "#444444";
constexpr double kTitleFont = 20;
constexpr double kSubtitleFont = 14;
constexpr double kAxisLabelFont = 14;
constexpr double kTickFont = 12;
constexpr double kLegendFont = 13;
constexpr double kFootnoteFont = 12;

/// Appends SVG elements to a string.
class Svg {
public:
    Svg(double width, double height) {
        out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        out_ += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                            "width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                            "font-family=\"{2}\">\n",
                            coord(width), coord(height), kFont);
        out_ += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
                            coord(width), coord(height));
    }

    void raw(std::string_view s) { out_ += s; }

    void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
              std::string_view extra = {}) {
        out_ +=
            fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                        "stroke-width=\"{}\"{}/>\n",
                        coord(x1), coord(y1), coord(x2), coord(y2), stroke, coord(width), extra);
    }

    void rect(double x, double y, double w, double h, std::string_view fill,
              std::string_view extra = {}) {
        out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>\n",
                            coord(x), coord(y), coord(w), coord(h), fill, extra);
    }

    /// `anchor`: start, middle or end. `extra`: further attributes, already formatted.
    void text(double x, double y, std::string_view content, double size, std::string_view anchor,
              std::string_view fill = kTextColor, std::string_view extra = {}) {
        out_ +=
            fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\" "
                        "fill=\"{}\"{}>{}</text>\n",
                        coord(x), coord(y), coord(size), anchor, fill, extra, xml_escape(content));
    }

    std::string finish() {
        out_ += "</svg>\n";
        return std::move(out_);
    }

private:
    std::string out_;
};

/// Maps data values to pixels along one axis.
struct Mapper {
    double d0 = 0, d1 = 1; // data range
    double p0 = 0, p1 = 1; // pixel range
    bool log = false;

    double operator()(double v) const {
        const double t = log ? (std::log(v) - std::log(d0)) / (std::log(d1) - std::log(d0))
                             : (v - d0) / (d1 - d0);
        return p0 + t * (p1 - p0);
    }
    bool contains(double v) const {
        const double lo = std::min(d0, d1), hi = std::max(d0, d1);
        const double slack = (log ? std::log(hi / lo) : hi - lo) * 1e-9;
        return log ? std::log(v / lo) >= -slack && std::log(hi / v) >= -slack
                   : v >= lo - slack && v <= hi + slack;
    }
};

bool usable(double v, const Axis& axis) {
    return std::isfinite(v) && (axis.scale == AxisScale::linear || v > 0);
}

struct Extent {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    bool empty() const { return !(lo <= hi); }
    void add(double v) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
};

/// The ticks of one axis from its data extent and its settings. `align_intervals` > 0 aligns a
/// linear axis whose range is not forced with another axis's grid.
AxisTicks axis_ticks(const Axis& axis, Extent data, int target, int align_intervals,
                     const char* name) {
    const auto bad = [name](const std::string& why) {
        return std::invalid_argument(std::string("line chart: ") + name + " axis: " + why);
    };
    if ((axis.min && !std::isfinite(*axis.min)) || (axis.max && !std::isfinite(*axis.max)))
        throw bad("forced range is not finite");
    if (axis.min && axis.max && !(*axis.min < *axis.max))
        throw bad("forced range is empty");
    if (axis.scale != AxisScale::linear) {
        if ((axis.min && *axis.min <= 0) || (axis.max && *axis.max <= 0))
            throw bad("forced range of a log axis must be positive");
        double lo = axis.min.value_or(data.empty() ? 1.0 : data.lo);
        double hi = axis.max.value_or(data.empty() ? 10.0 : data.hi);
        if (hi < lo) // one end forced beyond the data
            (axis.min ? hi : lo) = axis.min ? lo * 10 : hi / 10;
        AxisTicks t =
            plot_detail::log_ticks(lo, hi, axis.scale == AxisScale::log2 ? 2 : 10, axis.format);
        if (axis.min || axis.max) {
            if (axis.min)
                t.lo = *axis.min;
            if (axis.max)
                t.hi = *axis.max;
            std::erase_if(t.ticks, [&](const Tick& k) {
                return k.value < t.lo * (1 - 1e-9) || k.value > t.hi * (1 + 1e-9);
            });
        }
        return t;
    }
    double lo = data.empty() ? 0.0 : data.lo;
    double hi = data.empty() ? 1.0 : data.hi;
    if (axis.include_zero) {
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
    }
    if (axis.min)
        lo = *axis.min;
    if (axis.max)
        hi = *axis.max;
    if (hi < lo)
        (axis.min ? hi : lo) = axis.min ? lo + 1 : hi - 1;
    AxisTicks t = align_intervals > 0 && !axis.min && !axis.max
                      ? plot_detail::aligned_linear_ticks(lo, hi, align_intervals, axis.format)
                      : plot_detail::linear_ticks(lo, hi, axis.format, target);
    if (axis.min || axis.max) {
        if (axis.min)
            t.lo = *axis.min;
        if (axis.max)
            t.hi = *axis.max;
        const double slack = (t.hi - t.lo) * 1e-9;
        std::erase_if(t.ticks, [&](const Tick& k) {
            return k.value < t.lo - slack || k.value > t.hi + slack;
        });
    }
    return t;
}

/// The span a free linear axis must show: the data, with zero when the axis includes it.
double data_span(const Axis& axis, Extent data) {
    double lo = data.empty() ? 0.0 : data.lo;
    double hi = data.empty() ? 1.0 : data.hi;
    if (axis.include_zero) {
        lo = std::min(lo, 0.0);
        hi = std::max(hi, 0.0);
    }
    return hi - lo;
}

double max_label_width(const AxisTicks& t, double font) {
    double w = 0;
    for (const auto& k : t.ticks)
        w = std::max(w, text_width(k.label, font));
    return w;
}

/// The font size at which `text` fits in `width` pixels: `font`, or smaller down to 9 px.
double fitted_font(std::string_view text, double font, double width) {
    const double w = text_width(text, font);
    return w <= width ? font : std::max(9.0, std::floor(font * width / w * 10) / 10);
}

/// `text` cut at a character boundary and ended with an ellipsis where it is wider than
/// `width` at `font` pixels.
std::string fitted_text(std::string_view text, double font, double width) {
    if (text_width(text, font) <= width)
        return std::string(text);
    const std::string_view ellipsis = "\xE2\x80\xA6";
    std::size_t n = text.size();
    while (n > 0) {
        --n;
        while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0u) == 0x80u)
            --n; // not inside a multi-byte character
        if (text_width(text.substr(0, n), font) + text_width(ellipsis, font) <= width)
            break;
    }
    return std::string(text.substr(0, n)) + std::string(ellipsis);
}

/// One line of heading text at `x`, shrunk and then cut to end before `right`.
void heading(Svg& svg, double x, double y, double right, std::string_view text, double font,
             std::string_view color, std::string_view extra = {}) {
    const double size = fitted_font(text, font, right - x);
    svg.text(x, y, fitted_text(text, size, right - x), size, "start", color, extra);
}

/// Hides the labels of a horizontal axis that would touch their neighbours: keeps every k-th
/// labelled tick for the smallest k that leaves a gap (the ticks stay, as minor ones).
void thin_labels(std::vector<Tick>& ticks, const Mapper& m) {
    std::vector<std::size_t> labelled;
    for (std::size_t i = 0; i < ticks.size(); ++i)
        if (!ticks[i].label.empty() && m.contains(ticks[i].value))
            labelled.push_back(i);
    const auto fits = [&](std::size_t k) {
        for (std::size_t j = 0; j + k < labelled.size(); j += k) {
            const Tick& a = ticks[labelled[j]];
            const Tick& b = ticks[labelled[j + k]];
            const double gap =
                std::abs(m(b.value) - m(a.value)) -
                (text_width(a.label, kTickFont) + text_width(b.label, kTickFont)) / 2;
            if (gap < 8)
                return false;
        }
        return true;
    };
    std::size_t k = 1;
    while (k < labelled.size() && !fits(k))
        ++k;
    for (std::size_t j = 0; j < labelled.size(); ++j)
        if (j % k != 0) {
            ticks[labelled[j]].label.clear();
            ticks[labelled[j]].major = false;
        }
}

struct Box {
    double x0, y0, x1, y1;
};

/// Whether the segment (ax, ay)-(bx, by) meets the box (Liang-Barsky clipping).
bool segment_hits(double ax, double ay, double bx, double by, const Box& b) {
    double t0 = 0, t1 = 1;
    const double dx = bx - ax, dy = by - ay;
    const std::array<std::pair<double, double>, 4> pq{
        {{-dx, ax - b.x0}, {dx, b.x1 - ax}, {-dy, ay - b.y0}, {dy, b.y1 - ay}}};
    for (const auto& [p, q] : pq) {
        if (p == 0) {
            if (q < 0)
                return false;
            continue;
        }
        const double r = q / p;
        if (p < 0)
            t0 = std::max(t0, r);
        else
            t1 = std::min(t1, r);
        if (t0 > t1)
            return false;
    }
    return true;
}

/// A series in pixels: runs of consecutive usable points.
using Polyline = std::vector<std::pair<double, double>>;

std::string marker_svg(int shape, double x, double y, std::string_view color) {
    const double r = 4;
    const std::string common =
        fmt::format(" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"1\"", color);
    switch (shape % 5) {
    case 0:
        return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\"{}/>", coord(x), coord(y), coord(r),
                           common);
    case 1:
        return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}/>",
                           coord(x - r * 0.9), coord(y - r * 0.9), coord(r * 1.8), coord(r * 1.8),
                           common);
    case 2:
        return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\"{}/>", coord(x), coord(y - r * 1.2),
                           coord(x + r * 1.1), coord(y + r * 0.8), coord(x - r * 1.1),
                           coord(y + r * 0.8), common);
    case 3:
        return fmt::format("<path d=\"M{} {}L{} {}L{} {}L{} {}Z\"{}/>", coord(x),
                           coord(y - r * 1.25), coord(x + r * 1.25), coord(y), coord(x),
                           coord(y + r * 1.25), coord(x - r * 1.25), coord(y), common);
    default:
        return fmt::format("<path d=\"M{} {}L{} {}L{} {}Z\"{}/>", coord(x), coord(y + r * 1.2),
                           coord(x + r * 1.1), coord(y - r * 0.8), coord(x - r * 1.1),
                           coord(y - r * 0.8), common);
    }
}

const char* dash_attr(LineStyle s) {
    switch (s) {
    case LineStyle::dashed:
        return " stroke-dasharray=\"8 5\"";
    case LineStyle::dotted:
        return " stroke-dasharray=\"1.5 4\" stroke-linecap=\"round\"";
    case LineStyle::solid:
        break;
    }
    return "";
}

struct LegendEntry {
    std::string text;
    std::string color;
    int shape;
    LineStyle line;
    bool markers;
};

constexpr double kLegendRow = 20;
constexpr double kLegendSample = 30;

void draw_legend_entry(Svg& svg, const LegendEntry& e, double x, double y_mid) {
    svg.line(x, y_mid, x + kLegendSample, y_mid, e.color, 2.5, dash_attr(e.line));
    if (e.markers)
        svg.raw(marker_svg(e.shape, x + kLegendSample / 2, y_mid, e.color) + "\n");
    svg.text(x + kLegendSample + 7, y_mid + kLegendFont * 0.35, e.text, kLegendFont, "start");
}

} // namespace

std::string render_svg(const LineChart& chart) {
    if (chart.width < 200 || chart.height < 150)
        throw std::invalid_argument("line chart: too small (at least 200x150)");
    for (const auto& s : chart.series)
        if (s.x.size() != s.y.size())
            throw std::invalid_argument("line chart: series '" + s.name +
                                        "': x and y differ in length");
    const bool has_y2 = chart.y2.has_value();
    const Axis y2_axis = chart.y2.value_or(Axis{});

    // Colours and marker shapes by group, in order of first appearance.
    std::map<std::string, int> group_index;
    std::vector<int> series_group;
    for (const auto& s : chart.series) {
        const std::string key = s.group.empty() ? "\x01" + s.name : s.group;
        const auto [it, inserted] = group_index.emplace(key, static_cast<int>(group_index.size()));
        series_group.push_back(it->second);
    }

    Extent xe, ye, y2e;
    for (const auto& s : chart.series) {
        const Axis& ya = s.right_axis && has_y2 ? y2_axis : chart.y;
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (!usable(s.x[i], chart.x) || !usable(s.y[i], ya))
                continue;
            xe.add(s.x[i]);
            (s.right_axis && has_y2 ? y2e : ye).add(s.y[i]);
        }
    }
    const int y_target = std::clamp((chart.height - 200) / 60, 3, 8);
    const int x_target = std::clamp((chart.width - 200) / 110, 3, 10);
    AxisTicks xt = axis_ticks(chart.x, xe, x_target, 0, "x");
    AxisTicks yt = axis_ticks(chart.y, ye, y_target, 0, "y");
    AxisTicks y2t;
    if (has_y2) {
        const auto free_linear = [](const Axis& a) {
            return a.scale == AxisScale::linear && !a.min && !a.max;
        };
        if (free_linear(chart.y) && free_linear(y2_axis)) {
            // Both axes share the grid lines: pick the number of intervals that wastes the
            // least of both ranges (a 0-100% axis should not run to 140%).
            double best = std::numeric_limits<double>::infinity();
            for (int n = 3; n <= 8; ++n) {
                AxisTicks a = axis_ticks(chart.y, ye, y_target, n, "y");
                AxisTicks b = axis_ticks(y2_axis, y2e, y_target, n, "y2");
                const double waste = 2 - data_span(chart.y, ye) / (a.hi - a.lo) -
                                     data_span(y2_axis, y2e) / (b.hi - b.lo) +
                                     0.02 * std::abs(n - y_target);
                if (waste < best) {
                    best = waste;
                    yt = std::move(a);
                    y2t = std::move(b);
                }
            }
        } else {
            // Aligned only when the left ticks span its whole range (a forced end off the
            // tick grid leaves nothing to align with).
            const bool align = chart.y.scale == AxisScale::linear && yt.ticks.size() > 1 &&
                               yt.ticks.front().value == yt.lo && yt.ticks.back().value == yt.hi;
            y2t = axis_ticks(y2_axis, y2e, y_target,
                             align ? static_cast<int>(yt.ticks.size()) - 1 : 0, "y2");
        }
    }

    // Legend entries (in series order).
    std::vector<LegendEntry> legend;
    for (std::size_t i = 0; i < chart.series.size(); ++i) {
        const auto& s = chart.series[i];
        const int g = series_group[i];
        std::string text = s.name;
        if (has_y2 && s.right_axis)
            text += " (right axis)";
        legend.push_back(
            {text, kPalette[static_cast<std::size_t>(g) % kPalette.size()], g, s.line, s.markers});
    }
    double legend_text_w = 0;
    for (const auto& e : legend)
        legend_text_w = std::max(legend_text_w, text_width(e.text, kLegendFont));
    const double legend_box_w = 12 + kLegendSample + 7 + legend_text_w + 12;
    const double legend_box_h = 8 + kLegendRow * static_cast<double>(legend.size()) + 4;

    // Layout, outside in.
    const double W = chart.width, H = chart.height;
    double top = 16;
    const double title_y = top + kTitleFont;
    if (!chart.title.empty())
        top = title_y + 8;
    const double subtitle_y = top + kSubtitleFont;
    if (!chart.subtitle.empty())
        top = subtitle_y + 8;
    top += 14;
    const double y_label_w = chart.y.label.empty() ? 0 : kAxisLabelFont + 12;
    const double left = 14 + y_label_w + max_label_width(yt, kTickFont) + 10;
    double right_margin = 24;
    if (has_y2)
        right_margin = 10 + max_label_width(y2t, kTickFont) +
                       (y2_axis.label.empty() ? 0 : 12 + kAxisLabelFont) + 14;
    // The last x label is centred on the right edge and must not be cut.
    if (!xt.ticks.empty())
        right_margin = std::max(right_margin, text_width(xt.ticks.back().label, kTickFont) / 2 + 8);
    const double right = W - right_margin;
    const double bottom_base = H - 12 - (chart.footnote.empty() ? 0 : kFootnoteFont + 8) -
                               (chart.x.label.empty() ? 0 : kAxisLabelFont + 10) - (kTickFont + 12);

    // A log x axis has no natural origin: its first and last points stay clear of the axes.
    const auto x_mapper = [&] {
        const bool log = chart.x.scale != AxisScale::linear;
        const double pad = log ? 14 : 0;
        return Mapper{xt.lo, xt.hi, left + pad, right - pad, log};
    };

    // The legend goes in a free corner of the plot area; failing that, in rows under the axis.
    const auto pixel_lines = [&](double plot_top, double plot_bottom) {
        const Mapper mx = x_mapper();
        std::vector<Polyline> lines;
        std::vector<std::size_t> owner;
        for (std::size_t si = 0; si < chart.series.size(); ++si) {
            const auto& s = chart.series[si];
            const bool r = s.right_axis && has_y2;
            const Axis& ya = r ? y2_axis : chart.y;
            const AxisTicks& ticks = r ? y2t : yt;
            Mapper my{ticks.lo, ticks.hi, plot_bottom, plot_top, ya.scale != AxisScale::linear};
            Polyline cur;
            for (std::size_t i = 0; i < s.x.size(); ++i) {
                if (usable(s.x[i], chart.x) && usable(s.y[i], ya)) {
                    cur.emplace_back(mx(s.x[i]), my(s.y[i]));
                } else if (!cur.empty()) {
                    lines.push_back(std::move(cur));
                    owner.push_back(si);
                    cur.clear();
                }
            }
            if (!cur.empty()) {
                lines.push_back(std::move(cur));
                owner.push_back(si);
            }
        }
        return std::make_pair(lines, owner);
    };

    double bottom = bottom_base;
    std::optional<Box> legend_inside;
    const double plot_h0 = bottom - top;
    if (!legend.empty() && legend_box_w < (right - left) * 0.5 && legend_box_h < plot_h0 * 0.6) {
        const auto [lines, owner] = pixel_lines(top, bottom);
        const double inset = 10;
        const std::array<Box, 4> corners{{
            {right - inset - legend_box_w, top + inset, right - inset, top + inset + legend_box_h},
            {left + inset, top + inset, left + inset + legend_box_w, top + inset + legend_box_h},
            {right - inset - legend_box_w, bottom - inset - legend_box_h, right - inset,
             bottom - inset},
            {left + inset, bottom - inset - legend_box_h, left + inset + legend_box_w,
             bottom - inset},
        }};
        for (const Box& c : corners) {
            const double pad = 6; // keeps markers and line width clear of the box
            const Box b{c.x0 - pad, c.y0 - pad, c.x1 + pad, c.y1 + pad};
            bool hit = false;
            for (const auto& pl : lines) {
                for (std::size_t i = 0; i < pl.size() && !hit; ++i) {
                    const auto [x, y] = pl[i];
                    if (x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1)
                        hit = true;
                    else if (i + 1 < pl.size())
                        hit = segment_hits(x, y, pl[i + 1].first, pl[i + 1].second, b);
                }
                if (hit)
                    break;
            }
            if (!hit) {
                legend_inside = c;
                break;
            }
        }
    }
    // Rows of legend entries under the chart when no corner is free.
    std::vector<std::vector<std::size_t>> legend_rows;
    if (!legend.empty() && !legend_inside) {
        double x = 0;
        legend_rows.emplace_back();
        for (std::size_t i = 0; i < legend.size(); ++i) {
            const double w = kLegendSample + 7 + text_width(legend[i].text, kLegendFont) + 24;
            if (x > 0 && x + w > right - left) {
                legend_rows.emplace_back();
                x = 0;
            }
            legend_rows.back().push_back(i);
            x += w;
        }
        bottom -= kLegendRow * static_cast<double>(legend_rows.size()) + 8;
    }
    if (bottom - top < 60)
        throw std::invalid_argument("line chart: too small for its legend and labels");

    const Mapper mx = x_mapper();
    const Mapper my{yt.lo, yt.hi, bottom, top, chart.y.scale != AxisScale::linear};
    const Mapper my2{y2t.lo, y2t.hi, bottom, top, y2_axis.scale != AxisScale::linear};
    thin_labels(xt.ticks, mx);

    Svg svg(W, H);
    // Headings start at the plot's left edge, or at the margin when that leaves too little room.
    const auto heading_x = [&](std::string_view text, double font) {
        return text_width(text, font) <= W - left - 10 ? left : 14.0;
    };
    if (!chart.title.empty())
        heading(svg, heading_x(chart.title, kTitleFont), title_y, W - 10, chart.title, kTitleFont,
                kTextColor, " font-weight=\"bold\"");
    if (!chart.subtitle.empty())
        heading(svg, heading_x(chart.subtitle, kSubtitleFont), subtitle_y, W - 10, chart.subtitle,
                kSubtitleFont, kMutedColor);

    // Grid lines at major ticks, then the axes over them.
    svg.raw("<g id=\"grid\">\n");
    for (const auto& k : yt.ticks)
        if (k.major && my.contains(k.value))
            svg.line(left, my(k.value), right, my(k.value), kGridColor, 1);
    for (const auto& k : xt.ticks)
        if (k.major && mx.contains(k.value))
            svg.line(mx(k.value), top, mx(k.value), bottom, kGridColor, 1);
    svg.raw("</g>\n<g id=\"axes\">\n");
    svg.line(left, bottom, right, bottom, kAxisColor, 1.2);
    svg.line(left, top, left, bottom, kAxisColor, 1.2);
    if (has_y2)
        svg.line(right, top, right, bottom, kAxisColor, 1.2);
    for (const auto& k : xt.ticks) {
        if (!mx.contains(k.value))
            continue;
        const double x = mx(k.value);
        svg.line(x, bottom, x, bottom + (k.major ? 5 : 3), kAxisColor, 1);
        if (!k.label.empty())
            svg.text(x, bottom + 8 + kTickFont, k.label, kTickFont, "middle");
    }
    for (const auto& k : yt.ticks) {
        if (!my.contains(k.value))
            continue;
        const double y = my(k.value);
        svg.line(left - (k.major ? 5 : 3), y, left, y, kAxisColor, 1);
        if (!k.label.empty())
            svg.text(left - 8, y + kTickFont * 0.35, k.label, kTickFont, "end");
    }
    if (has_y2) {
        for (const auto& k : y2t.ticks) {
            if (!my2.contains(k.value))
                continue;
            const double y = my2(k.value);
            svg.line(right, y, right + (k.major ? 5 : 3), y, kAxisColor, 1);
            if (!k.label.empty())
                svg.text(right + 8, y + kTickFont * 0.35, k.label, kTickFont, "start");
        }
    }
    const double mid_y = (top + bottom) / 2;
    // Axis titles fit along their axis: shrunk, then cut.
    const auto axis_title = [&](double x, double y, std::string_view text, double length,
                                std::string_view extra) {
        const double size = fitted_font(text, kAxisLabelFont, length);
        svg.text(x, y, fitted_text(text, size, length), size, "middle", kTextColor, extra);
    };
    if (!chart.x.label.empty())
        axis_title((left + right) / 2, bottom + 8 + kTickFont + 10 + kAxisLabelFont, chart.x.label,
                   right - left, {});
    if (!chart.y.label.empty())
        axis_title(14 + kAxisLabelFont, mid_y, chart.y.label, bottom - top,
                   fmt::format(" transform=\"rotate(-90 {} {})\"", coord(14 + kAxisLabelFont),
                               coord(mid_y)));
    if (has_y2 && !y2_axis.label.empty()) {
        const double x = W - 14 - kAxisLabelFont;
        axis_title(x, mid_y, y2_axis.label, bottom - top,
                   fmt::format(" transform=\"rotate(90 {} {})\"", coord(x), coord(mid_y)));
    }
    svg.raw("</g>\n");

    // Data, clipped to the plot area (forced ranges may cut lines); markers are drawn after
    // all lines so that no line hides a point.
    svg.raw(fmt::format("<defs><clipPath id=\"plot-area\"><rect x=\"{}\" y=\"{}\" width=\"{}\" "
                        "height=\"{}\"/></clipPath></defs>\n",
                        coord(left - 6), coord(top - 6), coord(right - left + 12),
                        coord(bottom - top + 12)));
    svg.raw("<g id=\"data\" clip-path=\"url(#plot-area)\">\n");
    const auto [lines, owner] = pixel_lines(top, bottom);
    for (std::size_t li = 0; li < lines.size(); ++li) {
        const auto& pl = lines[li];
        const auto& e = legend[owner[li]];
        if (pl.size() < 2)
            continue;
        std::string d;
        for (std::size_t i = 0; i < pl.size(); ++i)
            d +=
                fmt::format("{}{} {}", i == 0 ? "M" : "L", coord(pl[i].first), coord(pl[i].second));
        svg.raw(fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" "
                            "stroke-linejoin=\"round\"{}/>\n",
                            d, e.color, dash_attr(e.line)));
    }
    svg.raw("</g>\n<g id=\"markers\" clip-path=\"url(#plot-area)\">\n");
    for (std::size_t li = 0; li < lines.size(); ++li) {
        const auto& e = legend[owner[li]];
        if (!e.markers)
            continue;
        for (const auto& [x, y] : lines[li])
            svg.raw(marker_svg(e.shape, x, y, e.color) + "\n");
    }
    svg.raw("</g>\n");

    // Legend.
    svg.raw("<g id=\"legend\">\n");
    if (legend_inside) {
        const Box& b = *legend_inside;
        svg.rect(b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0, "#ffffff",
                 " fill-opacity=\"0.92\" stroke=\"#cccccc\" stroke-width=\"1\" rx=\"3\"");
        for (std::size_t i = 0; i < legend.size(); ++i)
            draw_legend_entry(svg, legend[i], b.x0 + 12,
                              b.y0 + 8 + kLegendRow * (static_cast<double>(i) + 0.5));
    } else {
        double y = bottom + 8 + kTickFont + 12 + (chart.x.label.empty() ? 0 : kAxisLabelFont + 10) +
                   kLegendRow / 2;
        for (const auto& row : legend_rows) {
            double x = left;
            for (std::size_t i : row) {
                draw_legend_entry(svg, legend[i], x, y);
                x += kLegendSample + 7 + text_width(legend[i].text, kLegendFont) + 24;
            }
            y += kLegendRow;
        }
    }
    svg.raw("</g>\n");
    if (!chart.footnote.empty())
        heading(svg, heading_x(chart.footnote, kFootnoteFont), H - 12, W - 10, chart.footnote,
                kFootnoteFont, kMutedColor);
    return svg.finish();
}

// ----------------------------------------------------------------------------------------------
// Gantt charts
// ----------------------------------------------------------------------------------------------

namespace {

struct KindStyle {
    std::string_view kind;
    std::string_view legend;
    const char* fill;
};

// Forward and backward in the two most distinct colours of the palette; communication in
// the cooler ones. Every fill is light or dark enough for black or white labels.
constexpr std::array<KindStyle, 8> kKinds{{
    {gantt_kind::forward, "forward", "#56B4E9"},
    {gantt_kind::backward, "backward", "#E69F00"},
    {gantt_kind::weight, "weight grad", "#F5C710"},
    {gantt_kind::recompute, "recompute", "#CC79A7"},
    {gantt_kind::optimizer, "optimizer", "#7f7f7f"},
    {gantt_kind::tp_comm, "TP comm", "#009E73"},
    {gantt_kind::pp_comm, "PP comm", "#0072B2"},
    {gantt_kind::dp_comm, "DP comm", "#D55E00"},
}};
constexpr std::array<const char*, 5> kExtraKindFills{"#F0E442", "#000000", "#9ecae1", "#b15928",
                                                     "#bdbdbd"};

/// Black or white, whichever reads better on `fill` (#rrggbb).
const char* label_color(std::string_view fill) {
    const auto channel = [&](std::size_t i) {
        return std::stoi(std::string(fill.substr(i, 2)), nullptr, 16) / 255.0;
    };
    const double lum = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
    return lum > 0.45 ? "#111111" : "#ffffff";
}

struct TimeUnit {
    double seconds;
    const char* name;
};

TimeUnit time_unit(double span_s) {
    if (span_s >= 2)
        return {1, "s"};
    if (span_s >= 2e-3)
        return {1e-3, "ms"};
    if (span_s >= 2e-6)
        return {1e-6, "\xC2\xB5s"};
    return {1e-9, "ns"};
}

} // namespace

std::string render_svg(const GanttChart& chart) {
    if (chart.width < 300)
        throw std::invalid_argument("gantt chart: too narrow (at least 300)");
    for (std::size_t l = 0; l < chart.lanes.size(); ++l)
        if (chart.lanes[l].streams.empty())
            throw std::invalid_argument("gantt chart: lane '" + chart.lanes[l].name +
                                        "' has no streams");
    double first = std::numeric_limits<double>::infinity();
    double last = -std::numeric_limits<double>::infinity();
    for (const auto& b : chart.bars) {
        if (b.lane >= chart.lanes.size() || b.stream >= chart.lanes[b.lane].streams.size())
            throw std::invalid_argument("gantt chart: bar '" + b.label + "' on no lane/stream");
        if (!std::isfinite(b.start_s) || !std::isfinite(b.end_s) || b.end_s < b.start_s)
            throw std::invalid_argument("gantt chart: bar '" + b.label +
                                        "' has a bad time interval");
        first = std::min(first, b.start_s);
        last = std::max(last, b.end_s);
    }
    double t0 = chart.start_s.value_or(chart.bars.empty() ? 0.0 : std::min(0.0, first));
    double t1 = chart.end_s.value_or(chart.bars.empty() ? 1e-3 : last);
    if (!std::isfinite(t0) || !std::isfinite(t1))
        throw std::invalid_argument("gantt chart: non-finite time range");
    if (!(t1 > t0)) {
        if (chart.start_s && chart.end_s)
            throw std::invalid_argument("gantt chart: empty time range");
        t1 = t0 + 1e-3;
    }
    const TimeUnit unit = time_unit(t1 - t0);

    // Colours by kind: the standard kinds, then others in order of first appearance.
    std::map<std::string, std::string> kind_fill;
    std::vector<std::pair<std::string, std::string>> legend; // (text, fill)
    {
        std::vector<std::string> present;
        for (const auto& b : chart.bars)
            if (std::find(present.begin(), present.end(), b.kind) == present.end())
                present.push_back(b.kind);
        for (const auto& k : kKinds)
            if (std::find(present.begin(), present.end(), k.kind) != present.end()) {
                kind_fill[std::string(k.kind)] = k.fill;
                legend.emplace_back(std::string(k.legend), k.fill);
            }
        std::size_t extra = 0;
        for (const auto& p : present)
            if (!kind_fill.count(p)) {
                const char* fill = kExtraKindFills[extra++ % kExtraKindFills.size()];
                kind_fill[p] = fill;
                legend.emplace_back(p.empty() ? "other" : p, fill);
            }
    }
    bool any_hatch = false;
    bool any_named_stream = false;
    double lane_w = 0, stream_w = 0;
    for (const auto& lane : chart.lanes) {
        lane_w = std::max(lane_w, text_width(lane.name, 13));
        for (const auto& s : lane.streams) {
            any_hatch = any_hatch || s.hatch_idle;
            if (!s.name.empty()) {
                any_named_stream = true;
                stream_w = std::max(stream_w, text_width(s.name, 11));
            }
        }
    }

    // Idle fraction per lane: the first hatched row, the busy time a union of its bars.
    const double span = t1 - t0;
    std::vector<std::optional<double>> lane_idle(chart.lanes.size());
    for (std::size_t l = 0; l < chart.lanes.size(); ++l) {
        const auto& streams = chart.lanes[l].streams;
        const auto it = std::find_if(streams.begin(), streams.end(),
                                     [](const GanttStream& s) { return s.hatch_idle; });
        if (it == streams.end())
            continue;
        const auto row = static_cast<std::size_t>(it - streams.begin());
        std::vector<std::pair<double, double>> iv;
        for (const auto& b : chart.bars)
            if (b.lane == l && b.stream == row)
                iv.emplace_back(std::max(b.start_s, t0), std::min(b.end_s, t1));
        std::sort(iv.begin(), iv.end());
        double busy = 0, reach = t0;
        for (const auto& [a, e] : iv) {
            const double s = std::max(a, reach);
            if (e > s) {
                busy += e - s;
                reach = e;
            }
        }
        lane_idle[l] = std::clamp(1 - busy / span, 0.0, 1.0);
    }
    const bool idle_column = chart.show_idle_percent && any_hatch;

    // Layout.
    const double W = chart.width;
    double top = 16;
    const double title_y = top + kTitleFont;
    if (!chart.title.empty())
        top = title_y + 8;
    const double subtitle_y = top + kSubtitleFont;
    if (!chart.subtitle.empty())
        top = subtitle_y + 8;
    top += 12;
    const double left = 14 + lane_w + (any_named_stream ? 14 + stream_w : 0) + 10;
    const double idle_w = idle_column ? text_width("idle 100.0%", 12) + 14 : 0;
    const double right = W - 20 - idle_w;
    if (right - left < 100)
        throw std::invalid_argument("gantt chart: labels leave no room for the time axis");
    const double lane_gap = 8;
    std::vector<double> lane_top, row_h;
    double y = top;
    for (const auto& lane : chart.lanes) {
        lane_top.push_back(y);
        const double h = lane.streams.size() == 1 ? 30 : 20;
        row_h.push_back(h);
        y += h * static_cast<double>(lane.streams.size()) + lane_gap;
    }
    const double rows_bottom = chart.lanes.empty() ? top + 30 : y - lane_gap;
    const double axis_y = rows_bottom + 6;
    const double axis_label_y = axis_y + 8 + kTickFont + 8 + kAxisLabelFont;
    const double legend_y = axis_label_y + 14 + kLegendRow / 2;
    // Legend rows, wrapped to the plot width.
    std::vector<std::vector<std::size_t>> legend_rows(1);
    {
        double x = 0;
        const std::size_t n = legend.size() + (any_hatch ? 1 : 0);
        for (std::size_t i = 0; i < n; ++i) {
            const std::string text = i < legend.size() ? legend[i].first : "idle (bubble)";
            const double w = 14 + 6 + text_width(text, kLegendFont) + 22;
            if (x > 0 && x + w > W - 2 * 14) {
                legend_rows.emplace_back();
                x = 0;
            }
            legend_rows.back().push_back(i);
            x += w;
        }
    }
    const double H = legend_y + kLegendRow * static_cast<double>(legend_rows.size()) + 6;
    const Mapper mt{t0, t1, left, right, false};

    Svg svg(W, H);
    svg.raw("<defs><pattern id=\"idle-hatch\" patternUnits=\"userSpaceOnUse\" width=\"7\" "
            "height=\"7\" patternTransform=\"rotate(45)\"><rect x=\"0\" y=\"0\" width=\"7\" "
            "height=\"7\" fill=\"#f6f6f6\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"7\" "
            "stroke=\"#c4c4c4\" stroke-width=\"2.5\"/></pattern></defs>\n");
    if (!chart.title.empty())
        heading(svg, 14, title_y, W - 14, chart.title, kTitleFont, kTextColor,
                " font-weight=\"bold\"");
    if (!chart.subtitle.empty())
        heading(svg, 14, subtitle_y, W - 14, chart.subtitle, kSubtitleFont, kMutedColor);

    // Time ticks: the range itself is exact (the bubble ends where the step ends).
    AxisTicks tt =
        plot_detail::linear_ticks(t0 / unit.seconds, t1 / unit.seconds, TickFormat::number,
                                  std::clamp(static_cast<int>((right - left) / 90), 3, 12));
    thin_labels(tt.ticks, Mapper{t0 / unit.seconds, t1 / unit.seconds, left, right, false});
    std::vector<double> tick_s;
    std::vector<std::string> tick_label;
    for (const auto& k : tt.ticks) {
        if (k.label.empty())
            continue;
        const double s = k.value * unit.seconds;
        if (s >= t0 - span * 1e-9 && s <= t1 + span * 1e-9) {
            tick_s.push_back(std::clamp(s, t0, t1));
            tick_label.push_back(k.label);
        }
    }

    // Lanes: labels, row backgrounds (hatched where idle counts), then grid lines.
    svg.raw("<g id=\"lanes\">\n");
    for (std::size_t l = 0; l < chart.lanes.size(); ++l) {
        const auto& lane = chart.lanes[l];
        const double lt = lane_top[l];
        const double lh = row_h[l] * static_cast<double>(lane.streams.size());
        svg.text(14, lt + lh / 2 + 13 * 0.35, lane.name, 13, "start");
        for (std::size_t s = 0; s < lane.streams.size(); ++s) {
            const double rt = lt + row_h[l] * static_cast<double>(s);
            if (!lane.streams[s].name.empty())
                svg.text(left - 8, rt + row_h[l] / 2 + 11 * 0.35, lane.streams[s].name, 11, "end",
                         kMutedColor);
            if (lane.streams[s].hatch_idle)
                svg.rect(left, rt + 1, right - left, row_h[l] - 2, "url(#idle-hatch)");
            else
                svg.rect(left, rt + 1, right - left, row_h[l] - 2, "#fbfbfb");
        }
        svg.rect(left, lt, right - left, lh, "none", " stroke=\"#bbbbbb\" stroke-width=\"1\"");
        if (idle_column && lane_idle[l])
            svg.text(right + 8, lt + lh / 2 + 12 * 0.35,
                     fmt::format("idle {:.1f}%", *lane_idle[l] * 100), 12, "start", kMutedColor);
    }
    for (double s : tick_s)
        svg.line(mt(s), top, mt(s), rows_bottom, "#000000", 1, " stroke-opacity=\"0.08\"");
    svg.raw("</g>\n<g id=\"bars\">\n");

    // Bars, clipped to the time range; the label only where it fits.
    for (const auto& b : chart.bars) {
        const double s = std::max(b.start_s, t0), e = std::min(b.end_s, t1);
        if (e < s)
            continue;
        const double h = row_h[b.lane];
        double x = mt(s), w = std::max(mt(e) - x, 0.0);
        // Narrower than a pixel: widened to one, as trace viewers do, so that a short transfer
        // stays visible. The white separator between neighbours is kept only where it leaves
        // the fill visible.
        if (w < 1) {
            x = std::min(x, right - 1);
            w = 1;
        }
        const char* separator = w >= 3 ? " stroke=\"#ffffff\" stroke-width=\"0.75\"" : "";
        const double by = lane_top[b.lane] + h * static_cast<double>(b.stream) + 2;
        const std::string& fill = kind_fill[b.kind];
        svg.raw(fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}>"
                            "<title>{}{}: {:.3f}-{:.3f} {}</title></rect>\n",
                            coord(x), coord(by), coord(w), coord(h - 4), fill, separator,
                            xml_escape(b.label.empty() ? "" : b.label + " "), xml_escape(b.kind),
                            b.start_s / unit.seconds, b.end_s / unit.seconds, unit.name));
        const double font = h >= 24 ? 11 : 10;
        if (!b.label.empty() && text_width(b.label, font) + 4 <= w)
            svg.text(x + w / 2, by + (h - 4) / 2 + font * 0.36, b.label, font, "middle",
                     label_color(fill));
    }
    svg.raw("</g>\n<g id=\"axis\">\n");
    svg.line(left, axis_y, right, axis_y, kAxisColor, 1.2);
    for (std::size_t i = 0; i < tick_s.size(); ++i) {
        const double x = mt(tick_s[i]);
        svg.line(x, axis_y, x, axis_y + 5, kAxisColor, 1);
        svg.text(x, axis_y + 8 + kTickFont, tick_label[i], kTickFont, "middle");
    }
    svg.text((left + right) / 2, axis_label_y, fmt::format("time ({})", unit.name), kAxisLabelFont,
             "middle");
    svg.raw("</g>\n<g id=\"legend\">\n");
    double ly = legend_y;
    for (const auto& row : legend_rows) {
        double x = 14;
        for (std::size_t i : row) {
            const bool idle = i >= legend.size();
            const std::string text = idle ? "idle (bubble)" : legend[i].first;
            svg.rect(x, ly - 7, 14, 14, idle ? "url(#idle-hatch)" : legend[i].second,
                     idle ? " stroke=\"#bbbbbb\" stroke-width=\"1\"" : "");
            svg.text(x + 20, ly + kLegendFont * 0.35, text, kLegendFont, "start");
            x += 14 + 6 + text_width(text, kLegendFont) + 22;
        }
        ly += kLegendRow;
    }
    svg.raw("</g>\n");
    return svg.finish();
}

} // namespace clustersim::app
