#pragma once
/// \file
/// Reading one JSON object of a measurement file key by key, internal to calibrate/: each
/// getter checks the value's type and range and names the file and the JSON path in its error
/// (`M.json: collectives[3].time_us: expected a positive number, got -1`); `finish()` refuses
/// the keys no getter asked for. Used by the reader (measurements_read.cpp) and by the fields
/// read by functions of their own (measurement_fields.cpp).

#include "base/error.h"
#include "base/text.h"
#include "calibrate/measurements.h"
#include "sim/time.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate::measurements_detail {

/// A short excerpt of a value for an error message: at most 40 characters, however long or
/// deep the value.
std::string show(const nlohmann::json& v);

/// A step's section of settings (the experiment file's keys of `section`), each checked by
/// check_setting; `preset`, when not null, takes the model's "preset" key.
Settings read_settings(const nlohmann::json& j, std::string_view section, const std::string& file,
                       const std::string& path, std::string* preset);

/// Reads one JSON object's keys, each getter naming its JSON path in errors; `finish()`
/// refuses keys no getter asked for.
class ObjectReader {
public:
    ObjectReader(const nlohmann::json& j, const std::string& file, std::string path)
        : j_(j)
        , file_(file)
        , path_(std::move(path)) {
        if (!j_.is_object())
            fail_here(fmt::format("expected an object, got {}", show(j_)));
    }

    [[noreturn]] void fail(std::string_view key, const std::string& what) const {
        throw InputError(fmt::format("{}: {}: {}", file_, sub(key), what));
    }
    [[noreturn]] void fail_here(const std::string& what) const {
        throw InputError(fmt::format("{}: {}: {}", file_, path_.empty() ? "(top)" : path_, what));
    }
    std::string sub(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }
    const std::string& path() const { return path_; }
    const std::string& file() const { return file_; }

    bool has(std::string_view key) {
        seen_.insert(std::string(key));
        return j_.contains(key);
    }
    const nlohmann::json& get(std::string_view key) {
        if (!has(key))
            fail_here(fmt::format("missing key '{}'", base::excerpt(key)));
        return j_.at(std::string(key));
    }
    std::string str(std::string_view key) {
        const nlohmann::json& v = get(key);
        if (!v.is_string())
            fail(key, fmt::format("expected a string, got {}", show(v)));
        return v.get<std::string>();
    }
    std::string str_or(std::string_view key, std::string fallback) {
        return has(key) ? str(key) : std::move(fallback);
    }
    std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) {
        const nlohmann::json& v = get(key);
        if (!v.is_number_integer())
            fail(key, fmt::format("expected an integer, got {}", show(v)));
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
            fail(key, fmt::format("expected an integer from {} to {}, got {}", min, max, show(v)));
        const auto x = v.get<std::int64_t>();
        if (x < min || x > max)
            fail(key, fmt::format("expected an integer from {} to {}, got {}", min, max, x));
        return x;
    }
    int small_int(std::string_view key, int min, int max) {
        return static_cast<int>(integer(key, min, max));
    }
    double positive_number(std::string_view key) {
        const nlohmann::json& v = get(key);
        if (!v.is_number())
            fail(key, fmt::format("expected a positive number, got {}", show(v)));
        const double x = v.get<double>();
        if (!(x > 0) || !std::isfinite(x))
            fail(key, fmt::format("expected a positive number, got {}", show(v)));
        return x;
    }
    bool boolean(std::string_view key) {
        const nlohmann::json& v = get(key);
        if (!v.is_boolean())
            fail(key, fmt::format("expected true or false, got {}", show(v)));
        return v.get<bool>();
    }
    /// A time in `unit_seconds` units: positive, finite, and representable.
    sim::Time time(std::string_view key, double unit_seconds) {
        const double x = positive_number(key);
        const sim::Time t = sim::Time::from_seconds(x * unit_seconds);
        if (t <= sim::Time::zero())
            fail(key, fmt::format("expected a time of at least one picosecond, got {}", x));
        if (t == sim::Time::max())
            fail(key, fmt::format("time {} is out of range", x));
        return t;
    }
    /// A derived rate, when written, must agree with the one computed from the time.
    void check_rate(std::string_view key, double computed, std::string_view from) {
        if (!has(key))
            return;
        const double given = positive_or_zero(key);
        if (std::abs(given - computed) > 0.01 * computed + 0.005)
            fail(key, fmt::format("{} disagrees with {} = {:.6g}: derived rates are checked "
                                  "against the time (fix the time, or drop the key)",
                                  given, from, computed));
    }
    void finish() {
        for (const auto& [key, value] : j_.items()) {
            if (seen_.count(key) == 0)
                fail_here(
                    fmt::format("unknown key '{}' (valid: {})", base::excerpt(key), join_seen()));
        }
    }

private:
    double positive_or_zero(std::string_view key) {
        const nlohmann::json& v = get(key);
        if (!v.is_number() || !(v.get<double>() >= 0))
            fail(key, fmt::format("expected a non-negative number, got {}", show(v)));
        return v.get<double>();
    }
    std::string join_seen() const {
        return base::join(std::vector<std::string>(seen_.begin(), seen_.end()), ", ");
    }

    const nlohmann::json& j_;
    const std::string& file_;
    std::string path_;
    std::set<std::string> seen_;
};

} // namespace clustersim::calibrate::measurements_detail
