#pragma once
/// \file
/// The one family of text helpers for numbers in reports and files: percentages, significant
/// digits, joined lists. Every report and writer formats through these, so one quantity reads
/// the same everywhere; each takes the precision it needs rather than hiding it in its name.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::base {

/// A fraction as a percentage: percent(0.1234) = "12.3%", percent(0.1234, 2) = "12.34%".
std::string percent(double fraction, int decimals = 1);
/// The same with its sign always written: "+12.3%", "-4.0%".
std::string signed_percent(double fraction, int decimals = 1);
/// A fraction as a bare percentage number, no sign: percent_number(0.1234, 2) = "12.34".
std::string percent_number(double fraction, int decimals);

/// `x` rounded to `digits` significant decimal digits (0, inf and nan unchanged), so that a
/// value written to a file reads back as exactly what was printed.
double round_significant(double x, int digits);
/// `x` in scientific notation with `digits` significant digits: "1.23e+09" for digits 3.
std::string scientific(double x, int digits);

/// The items separated by `separator`: join({"a", "b"}, ", ") = "a, b".
std::string join(const std::vector<std::string>& items, std::string_view separator);

/// Input quoted back in an error message, made safe to print: control characters become '?',
/// and text longer than `max_bytes` is cut (at a character boundary) and marked with its
/// length, so that a 20 MB value gives a one-line message: "aaaa... (20971520 bytes)".
std::string excerpt(std::string_view text, std::size_t max_bytes = 60);

} // namespace clustersim::base
