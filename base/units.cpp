#include "base/units.h"

#include "base/error.h"
#include "base/text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace clustersim::base {
namespace {

struct Suffix {
    std::string_view text;
    double factor;
};

/// Splits "1.5 GiB" into 1.5 and "GiB"; refuses anything that is not a finite, non-negative
/// number followed by an optional unit.
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view what,
                                                 std::string_view example) {
    auto trim = [](std::string_view s) {
        while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
            s.remove_prefix(1);
        while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
            s.remove_suffix(1);
        return s;
    };
    const std::string_view s = trim(text);
    auto fail = [&](std::string_view why) -> UnitsError {
        return UnitsError("expected " + std::string(what) + " like '" + std::string(example) +
                          "', got '" + excerpt(text) + "'" +
                          (why.empty() ? "" : " (" + std::string(why) + ")"));
    };
    if (s.empty())
        throw fail("empty");
    double value = 0;
    const char* begin = s.data();
    const char* end = s.data() + s.size();
    if (*begin == '+')
        ++begin;
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec != std::errc() || ptr == begin)
        throw fail("no number");
    if (!std::isfinite(value))
        throw fail("not a finite number");
    if (value < 0 || (value == 0 && std::signbit(value)))
        throw fail("must not be negative");
    return {value, trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)))};
}

template <std::size_t N>
double lookup(const std::array<Suffix, N>& table, std::string_view unit, bool& found) {
    for (const auto& s : table) {
        if (s.text == unit) {
            found = true;
            return s.factor;
        }
    }
    found = false;
    return 0;
}

constexpr double kKi = 1024.0;
constexpr double kMi = kKi * 1024.0;
constexpr double kGi = kMi * 1024.0;
constexpr double kTi = kGi * 1024.0;
constexpr double kPi = kTi * 1024.0;

constexpr std::array<Suffix, 23> kSizeSuffixes{{
    {"", 1},      {"B", 1},     {"K", kKi},   {"M", kMi},   {"G", kGi},   {"T", kTi},
    {"KiB", kKi}, {"MiB", kMi}, {"GiB", kGi}, {"TiB", kTi}, {"PiB", kPi}, {"KB", 1e3},
    {"kB", 1e3},  {"MB", 1e6},  {"GB", 1e9},  {"TB", 1e12}, {"PB", 1e15}, {"Ki", kKi},
    {"Mi", kMi},  {"Gi", kGi},  {"Ti", kTi},  {"bytes", 1}, {"byte", 1},
}};

/// Prefix multipliers for rates and FLOP rates.
constexpr std::array<Suffix, 12> kPrefixes{{
    {"", 1},
    {"k", 1e3},
    {"K", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
    {"Ki", kKi},
    {"Mi", kMi},
    {"Gi", kGi},
    {"Ti", kTi},
}};

constexpr std::array<Suffix, 7> kTimeSuffixes{{
    {"ps", 1e-12},
    {"ns", 1e-9},
    {"us", 1e-6},
    {"\xC2\xB5s", 1e-6}, // µs
    {"ms", 1e-3},
    {"s", 1},
    {"sec", 1},
}};

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

} // namespace

std::int64_t parse_bytes(std::string_view text) {
    constexpr std::string_view what = "a size";
    constexpr std::string_view example = "1GiB', '100MB' or '4096";
    auto [value, unit] = split_number(text, what, example);
    bool found = false;
    const double factor = lookup(kSizeSuffixes, unit, found);
    if (!found)
        throw UnitsError("expected a size like '1GiB', '100MB' or '4096', got '" + excerpt(text) +
                         "' (unknown unit '" + excerpt(unit) +
                         "'; use B, KiB/MiB/GiB/TiB, KB/MB/GB/TB, or K/M/G/T as nccl-tests)");
    const double bytes = std::round(value * factor);
    if (bytes >= 9.2e18)
        throw UnitsError("size '" + excerpt(text) + "' is too large");
    return static_cast<std::int64_t>(bytes);
}

double parse_bandwidth(std::string_view text) {
    constexpr std::string_view example = "900GB/s' or '400Gb/s";
    auto [value, unit] = split_number(text, "a bandwidth", example);
    double per_unit = 0; // bytes per unit
    std::string_view prefix;
    for (auto [suffix, bytes] : std::array<std::pair<std::string_view, double>, 4>{
             {{"B/s", 1.0}, {"Bps", 1.0}, {"b/s", 0.125}, {"bps", 0.125}}}) {
        if (ends_with(unit, suffix)) {
            per_unit = bytes;
            prefix = unit.substr(0, unit.size() - suffix.size());
            break;
        }
    }
    bool found = false;
    const double scale = per_unit > 0 ? lookup(kPrefixes, prefix, found) : 0;
    if (!found)
        throw UnitsError("expected a bandwidth like '900GB/s' or '400Gb/s', got '" + excerpt(text) +
                         "' (the unit must end in B/s for bytes or b/s for bits)");
    const double rate = value * scale * per_unit;
    if (!std::isfinite(rate))
        throw UnitsError("bandwidth '" + excerpt(text) + "' is too large");
    return rate;
}

sim::Time parse_time(std::string_view text) {
    auto [value, unit] = split_number(text, "a time", "2us' or '1.5ms");
    bool found = false;
    const double factor = lookup(kTimeSuffixes, unit, found);
    if (!found)
        throw UnitsError("expected a time like '2us' or '1.5ms', got '" + excerpt(text) +
                         "' (units: ps, ns, us, ms, s)");
    const double seconds = value * factor;
    if (seconds * 1e12 >= 9.2e18)
        throw UnitsError("time '" + excerpt(text) + "' is too large (at most ~106 days)");
    return sim::Time::from_seconds(seconds);
}

double parse_flop_rate(std::string_view text) {
    auto [value, unit] = split_number(text, "a FLOP rate", "989TFLOPS");
    std::string_view prefix;
    bool has_unit = false;
    for (std::string_view suffix : {"FLOPS", "FLOP/s", "flops", "FLOPs", "flop/s"}) {
        if (ends_with(unit, suffix)) {
            prefix = unit.substr(0, unit.size() - suffix.size());
            has_unit = true;
            break;
        }
    }
    bool found = false;
    const double scale = has_unit ? lookup(kPrefixes, prefix, found) : 0;
    if (!found || prefix.find('i') != std::string_view::npos)
        throw UnitsError("expected a FLOP rate like '989TFLOPS' or '19.5 TFLOP/s', got '" +
                         excerpt(text) + "'");
    const double rate = value * scale;
    if (!std::isfinite(rate))
        throw UnitsError("FLOP rate '" + excerpt(text) + "' is too large");
    return rate;
}

namespace {
std::string printf_string(const char* fmt, double v, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v, unit);
    return buf;
}
/// Three significant digits, no trailing zeros beyond them.
std::string sig3(double v, const char* unit) {
    if (v >= 100 || v == 0)
        return printf_string("%.0f %s", v, unit);
    if (v >= 10)
        return printf_string("%.1f %s", v, unit);
    return printf_string("%.2f %s", v, unit);
}
} // namespace

std::string format_bytes(std::int64_t bytes) {
    struct Unit {
        std::int64_t size;
        const char* name;
    };
    // Exact binary units first (sizes of buffers), then exact decimal ones (datasheet
    // capacities such as 80 GB), else three significant digits in binary units.
    constexpr std::array<Unit, 4> binary{{{std::int64_t{1} << 40, "TiB"},
                                          {std::int64_t{1} << 30, "GiB"},
                                          {std::int64_t{1} << 20, "MiB"},
                                          {std::int64_t{1} << 10, "KiB"}}};
    constexpr std::array<Unit, 3> decimal{
        {{1'000'000'000'000, "TB"}, {1'000'000'000, "GB"}, {1'000'000, "MB"}}};
    for (const auto& u : binary) {
        if (u.size >= (std::int64_t{1} << 20) && bytes >= u.size && bytes % u.size == 0)
            return std::to_string(bytes / u.size) + " " + u.name;
    }
    for (const auto& u : decimal) {
        if (bytes >= u.size && bytes % u.size == 0)
            return std::to_string(bytes / u.size) + " " + u.name;
    }
    if (bytes >= 1024 && bytes % 1024 == 0 && bytes < (std::int64_t{1} << 20))
        return std::to_string(bytes / 1024) + " KiB";
    for (const auto& u : binary) {
        if (bytes >= u.size)
            return sig3(static_cast<double>(bytes) / static_cast<double>(u.size), u.name);
    }
    return std::to_string(bytes) + " B";
}

std::string format_bandwidth(double bps) {
    if (bps >= 1e12)
        return sig3(bps / 1e12, "TB/s");
    if (bps >= 1e9)
        return sig3(bps / 1e9, "GB/s");
    if (bps >= 1e6)
        return sig3(bps / 1e6, "MB/s");
    return sig3(bps, "B/s");
}

std::string format_time(sim::Time t) {
    if (t == sim::Time::zero())
        return "0";
    const double s = t.seconds();
    if (s >= 1)
        return sig3(s, "s");
    if (s >= 1e-3)
        return sig3(s * 1e3, "ms");
    if (s >= 1e-6)
        return sig3(s * 1e6, "us");
    if (s >= 1e-9)
        return sig3(s * 1e9, "ns");
    return std::to_string(t.picoseconds()) + " ps";
}

std::string format_flop_rate(double flops) {
    if (flops >= 1e15)
        return sig3(flops / 1e15, "PFLOP/s");
    if (flops >= 1e12)
        return sig3(flops / 1e12, "TFLOP/s");
    return sig3(flops / 1e9, "GFLOP/s");
}

} // namespace clustersim::base
