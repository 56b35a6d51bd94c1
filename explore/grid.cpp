#include "explore/grid.h"

#include "base/error.h"
#include "base/units.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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
        if (std::find(a.values.begin(), a.values.end(), v) != a.values.end())
            throw InputError(flag + " " + a.key + ": value '" + v + "' given twice");
        a.values.push_back(std::move(v));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    return a;
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

std::vector<std::int64_t> parse_int_list(const std::string& flag, const std::string& text) {
    std::vector<std::string> items;
    for (std::size_t pos = 0;;) {
        const auto comma = text.find(',', pos);
        items.push_back(text.substr(pos, comma == std::string::npos ? comma : comma - pos));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
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
        if (out.size() < 2 || i + 1 >= items.size() || items[i + 1] == "...")
            throw InputError(flag +
                             ": '...' needs two numbers before it and one after, as in "
                             "8,16,...,4096; got '" +
                             text + "'");
        const std::int64_t a = out[out.size() - 2], b = out.back();
        const std::int64_t last = number(items[i + 1]);
        const bool geometric = b % a == 0 && b / a > 1;
        const std::int64_t step = geometric ? b / a : b - a;
        // Counted before any is made (a geometric run has at most 63 terms; an arithmetic one
        // is (last - b) / step), so a huge list is refused at once and nothing overflows.
        const std::int64_t more = geometric ? 63 : (last - b) / step;
        if (static_cast<std::int64_t>(out.size()) + more > kMaxListValues && !geometric)
            throw InputError(fmt::format("{}: '{}' holds about {} values, more than the {} a "
                                         "list may hold; take a larger step",
                                         flag, text, static_cast<std::int64_t>(out.size()) + more,
                                         kMaxListValues));
        for (std::int64_t v = b;;) {
            if (geometric ? v > (last - 1) / step : v >= last - step)
                break; // the next term would reach `last` (or overflow)
            v = geometric ? v * step : v + step;
            out.push_back(v);
        }
    }
    if (out.empty())
        throw InputError(flag + ": the list is empty");
    if (static_cast<std::int64_t>(out.size()) > kMaxListValues)
        throw InputError(fmt::format("{}: {} values, more than the {} a list may hold", flag,
                                     out.size(), kMaxListValues));
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
