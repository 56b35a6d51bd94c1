#include "explore/grid.h"

#include "base/error.h"
#include "base/units.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>

namespace clustersim::explore {

Axis parse_axis(const std::string& flag, const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw InputError(flag + ": expected KEY=V1,V2,... like parallel.tp=1,2,4,8, got '" + text +
                         "'");
    Axis a;
    a.key = text.substr(0, eq);
    const std::string list = text.substr(eq + 1);
    if (list.empty())
        throw InputError(flag + " " + a.key + ": the list of values is empty");
    for (std::size_t pos = 0;;) {
        const auto comma = list.find(',', pos);
        std::string v = list.substr(pos, comma == std::string::npos ? comma : comma - pos);
        if (v.empty())
            throw InputError(flag + " " + a.key + ": empty value in '" + list + "'");
        if (v != "..." && std::find(a.values.begin(), a.values.end(), v) != a.values.end())
            throw InputError(flag + " " + a.key + ": value '" + v + "' given twice");
        a.values.push_back(std::move(v));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    a.values = expand_value_list(flag + " " + a.key, a.values);
    return a;
}

std::vector<int> parse_gpu_counts(const std::string& flag, const std::string& text) {
    std::vector<int> out;
    for (std::int64_t n : parse_int_list(flag, text)) {
        if (n > (1 << 24))
            throw InputError(flag + ": " + std::to_string(n) +
                             " GPUs is more than clustersim builds (16,777,216)");
        out.push_back(static_cast<int>(n));
    }
    return out;
}

double parse_count(const std::string& flag, const std::string& text) {
    double scale = 1;
    std::string digits = text;
    if (!digits.empty()) {
        switch (digits.back()) {
        case 'K':
        case 'k':
            scale = 1e3;
            break;
        case 'M':
            scale = 1e6;
            break;
        case 'B':
        case 'G':
            scale = 1e9;
            break;
        case 'T':
            scale = 1e12;
            break;
        default:
            break;
        }
        if (scale != 1)
            digits.pop_back();
    }
    double v = 0;
    std::size_t used = 0;
    try {
        v = std::stod(digits, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (digits.empty() || used != digits.size() || !(v > 0) || !std::isfinite(v))
        throw InputError(flag + ": expected a positive count like 300B, 4M or 3.5T, got '" + text +
                         "'");
    return v * scale;
}

std::int64_t parse_max_memory(const std::string& text) {
    if (text.empty())
        return 0;
    std::int64_t bytes = 0;
    try {
        bytes = base::parse_bytes(text);
    } catch (const InputError& e) {
        throw InputError(std::string("--max-memory: ") + e.what());
    }
    if (bytes <= 0)
        throw InputError("--max-memory: expected a positive size like 40GiB, got '" + text + "'");
    return bytes;
}

const char* const kValueListRule =
    "'...' continues the numbers before it up to the number after it: after two numbers it "
    "multiplies by their ratio (8,16,...,4096 doubles), after three or more the last three fix "
    "the step (2048,2560,3072,...,4096 adds 512; 1,4,16,...,1024 multiplies by 4), and the last "
    "number must lie on the progression";

namespace {

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> items;
    for (std::size_t pos = 0;;) {
        const auto comma = text.find(',', pos);
        items.push_back(text.substr(pos, comma == std::string::npos ? comma : comma - pos));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    return items;
}

/// The progression "..." continues: `ratio` > 1 multiplies, else `step` adds.
struct Progression {
    std::int64_t ratio = 0, step = 0;
};

Progression progression(const std::string& flag, const std::string& text,
                        const std::vector<std::int64_t>& before) {
    const auto refuse = [&](const std::string& why) {
        return InputError(flag + ": " + why + " in '" + text + "'; " + kValueListRule);
    };
    const std::size_t k = before.size();
    if (k < 2)
        throw refuse("'...' needs at least two numbers before it");
    const std::int64_t a = before[k - 2], b = before[k - 1];
    if (k == 2) {
        if (b % a != 0)
            throw refuse(std::to_string(b) + " is not a whole multiple of " + std::to_string(a) +
                         " (for steps of " + std::to_string(b - a) + " give a third number, " +
                         std::to_string(a) + "," + std::to_string(b) + "," +
                         std::to_string(b + (b - a)) + ",...)");
        return {b / a, 0};
    }
    const std::int64_t z = before[k - 3];
    if (b - a == a - z)
        return {0, b - a};
    if (a % z == 0 && b % a == 0 && b / a == a / z)
        return {b / a, 0};
    throw refuse(std::to_string(z) + "," + std::to_string(a) + "," + std::to_string(b) +
                 " neither add nor multiply by the same step");
}

} // namespace

std::vector<std::int64_t> parse_int_list(const std::string& flag, const std::string& text) {
    const std::vector<std::string> items = split_commas(text);
    auto number = [&](const std::string& s) {
        std::int64_t v = 0;
        std::size_t used = 0;
        try {
            v = std::stoll(s, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != s.size() || s.empty() || v <= 0)
            throw InputError(flag + ": expected positive whole numbers like 8,16,...,4096, got '" +
                             s + "' in '" + text + "'");
        return v;
    };
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (items[i] != "...") {
            const std::int64_t v = number(items[i]);
            if (!out.empty() && v <= out.back())
                throw InputError(flag + ": the numbers must increase, got '" + text + "'");
            out.push_back(v);
            continue;
        }
        if (i + 1 >= items.size() || items[i + 1] == "...")
            throw InputError(flag + ": '...' needs a number after it, in '" + text + "'; " +
                             kValueListRule);
        const Progression p = progression(flag, text, out);
        const std::int64_t last = number(items[i + 1]);
        std::int64_t v = out.back();
        // Counted before any is made (a geometric run has at most 63 terms; an arithmetic one
        // (last - v) / step), so a huge list is refused at once and nothing overflows.
        if (p.ratio <= 1 && last > v &&
            static_cast<std::int64_t>(out.size()) + (last - v) / p.step > kMaxListValues)
            throw InputError(
                fmt::format("{}: '{}' holds about {} values, more than the {} a "
                            "list may hold; take a larger step",
                            flag, text, static_cast<std::int64_t>(out.size()) + (last - v) / p.step,
                            kMaxListValues));
        while (v < last) {
            // Overflow-safe: stop once the next value would pass `last`.
            if (p.ratio > 1 ? v > last / p.ratio : v > last - p.step)
                break;
            v = p.ratio > 1 ? v * p.ratio : v + p.step;
            if (v < last)
                out.push_back(v);
        }
        if (v != last)
            throw InputError(flag + ": " + std::to_string(last) + " is not on the progression " +
                             std::to_string(out[out.size() - 2]) + ", " +
                             std::to_string(out.back()) + ", ... in '" + text +
                             "' (end on a value of it, or list the numbers); " + kValueListRule);
        // The loop pushed the values below `last`; the number after "..." is the next item.
    }
    if (out.empty())
        throw InputError(flag + ": the list is empty");
    if (static_cast<std::int64_t>(out.size()) > kMaxListValues)
        throw InputError(fmt::format("{}: {} values, more than the {} a list may hold", flag,
                                     out.size(), kMaxListValues));
    return out;
}

std::vector<std::string> expand_value_list(const std::string& flag,
                                           const std::vector<std::string>& values) {
    if (std::find(values.begin(), values.end(), "...") == values.end())
        return values;
    std::string text;
    for (const std::string& v : values)
        text += (text.empty() ? "" : ",") + v;
    std::vector<std::string> out;
    for (std::int64_t v : parse_int_list(flag, text))
        out.push_back(std::to_string(v));
    return out;
}

void check_configuration_count(std::int64_t count, std::int64_t max, const std::string& shape,
                               const std::string& flag) {
    if (count <= max)
        return;
    throw InputError(fmt::format("{} configurations ({}) are more than {} {}: narrow the values, "
                                 "or raise the limit with {} N if you mean it",
                                 count, shape, flag, max, flag));
}

Grid::Grid(std::vector<Axis> axes)
    : axes_(std::move(axes)) {
    std::vector<std::string> sizes;
    for (const Axis& a : axes_) {
        if (a.values.empty())
            throw std::invalid_argument("Grid: axis without values");
        sizes.push_back(fmt::format("{} {}", a.values.size(), a.key));
        const auto n = static_cast<std::int64_t>(a.values.size());
        if (size_ > std::numeric_limits<std::int64_t>::max() / n)
            throw InputError(fmt::format("the grid ({}) has more than 2^63 configurations",
                                         fmt::join(sizes, " x ")));
        size_ *= n;
    }
}

std::vector<std::string> Grid::values(std::int64_t index) const {
    std::vector<std::string> v(axes_.size());
    for (std::size_t k = axes_.size(); k-- > 0;) {
        const auto n = static_cast<std::int64_t>(axes_[k].values.size());
        v[k] = axes_[k].values[static_cast<std::size_t>(index % n)];
        index /= n;
    }
    return v;
}

Settings Grid::settings(std::int64_t index) const {
    const auto v = values(index);
    Settings s;
    for (std::size_t k = 0; k < axes_.size(); ++k)
        s.emplace_back(axes_[k].key, v[k]);
    return s;
}

} // namespace clustersim::explore
