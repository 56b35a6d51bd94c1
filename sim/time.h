#pragma once
/// \file
/// Simulated time: a strong type over int64 picoseconds (about 106 days of range).
///
/// Integer time makes event order exact and runs reproducible; doubles appear only at the
/// edges (closed-form formulas, printed output) through `from_seconds` and `seconds`.

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace clustersim::sim {

class Time {
public:
    using rep = std::int64_t;

    constexpr Time() = default;

    static constexpr Time ps(rep v) { return Time(v); }
    static constexpr Time ns(rep v) { return Time(v * 1'000); }
    static constexpr Time us(rep v) { return Time(v * 1'000'000); }
    static constexpr Time ms(rep v) { return Time(v * 1'000'000'000); }
    static constexpr Time s(rep v) { return Time(v * 1'000'000'000'000); }
    static constexpr Time zero() { return Time(0); }
    /// A time later than any event; used as "never".
    static constexpr Time max() { return Time(std::numeric_limits<rep>::max()); }

    /// Seconds to time, rounded to the nearest picosecond; saturates at max().
    static Time from_seconds(double seconds) {
        const double ps_value = std::round(seconds * 1e12);
        if (!(ps_value < static_cast<double>(std::numeric_limits<rep>::max())))
            return max();
        return Time(static_cast<rep>(ps_value));
    }
    /// Seconds to time, rounded up: a completion computed this way is never early.
    static Time from_seconds_ceil(double seconds) {
        const double ps_value = std::ceil(seconds * 1e12 - 1e-6);
        if (!(ps_value < static_cast<double>(std::numeric_limits<rep>::max())))
            return max();
        return Time(static_cast<rep>(ps_value));
    }

    constexpr rep picoseconds() const { return ps_; }
    /// This duration times `k`, rounded to the nearest picosecond as from_seconds rounds (a
    /// share of a pass, a stretch by a slowdown); saturates at max().
    Time scaled(double k) const { return from_seconds(seconds() * k); }
    constexpr double seconds() const { return static_cast<double>(ps_) / 1e12; }
    constexpr double microseconds() const { return static_cast<double>(ps_) / 1e6; }
    constexpr double milliseconds() const { return static_cast<double>(ps_) / 1e9; }

    constexpr Time& operator+=(Time o) {
        ps_ += o.ps_;
        return *this;
    }
    constexpr Time& operator-=(Time o) {
        ps_ -= o.ps_;
        return *this;
    }
    friend constexpr Time operator+(Time a, Time b) { return Time(a.ps_ + b.ps_); }
    friend constexpr Time operator-(Time a, Time b) { return Time(a.ps_ - b.ps_); }
    friend constexpr Time operator*(Time a, rep k) { return Time(a.ps_ * k); }
    friend constexpr Time operator*(rep k, Time a) { return Time(a.ps_ * k); }
    friend constexpr Time operator/(Time a, rep k) { return Time(a.ps_ / k); }
    /// The ratio of two durations (dimensionless).
    friend constexpr double operator/(Time a, Time b) {
        return static_cast<double>(a.ps_) / static_cast<double>(b.ps_);
    }
    friend constexpr auto operator<=>(Time, Time) = default;

private:
    constexpr explicit Time(rep ps)
        : ps_(ps) {}
    rep ps_ = 0;
};

constexpr Time max(Time a, Time b) {
    return a < b ? b : a;
}
constexpr Time min(Time a, Time b) {
    return a < b ? a : b;
}

} // namespace clustersim::sim
