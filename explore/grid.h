#pragma once
/// \file
/// The configurations of a sweep: the `--vary` axes and their Cartesian product, numbered so
/// that the last axis varies fastest (nested loops). The numbering is the identity of a row in
/// the CSV, in resume and across MPI ranks, so it is computed here, in one place, from the
/// index alone (no grid is ever materialised: a sweep of 10^6 configurations costs nothing to
/// enumerate).

#include "strategies/parallel/experiment_variants.h"

#include <cstdint>
#include <string>
#include <vector>

namespace clustersim::explore {

using strategies::parallel::Settings;

/// One `--vary KEY=V1,V2,...`.
struct Axis {
    std::string key;
    std::vector<std::string> values;
};

/// Parses "KEY=V1,V2,..." given to `flag`. Throws InputError (naming the flag) for a missing
/// '=', an empty key, an empty list or an empty value.
Axis parse_axis(const std::string& flag, const std::string& text);

/// The rule every command states for "..." in a list of numbers (kValueListRule is its text,
/// for the help of every flag that takes such a list): "..." continues the numbers before it up
/// to the number after it, which must lie on the progression.
/// - two numbers before it multiply: 8,16,...,4096 is 8 16 32 ... 4096 (the ratio 16/8 = 2,
///   a whole number);
/// - three or more: the last three fix the step, equal differences adding
///   (2048,2560,3072,...,4096 steps by 512) and equal ratios multiplying (1,4,16,...,1024).
/// Anything else (one number before it, two not a whole ratio apart, three neither, an end off
/// the progression) is refused with the rule.
extern const char* const kValueListRule;

/// "1,2,...,64" -> 1 2 4 8 16 32 64: a list of increasing positive integers with "..." as
/// kValueListRule says. Throws InputError naming `flag` (and stating the rule for "...").
std::vector<std::int64_t> parse_int_list(const std::string& flag, const std::string& text);
/// `values` with every "..." expanded as parse_int_list does, for lists of values that may be
/// numbers or words (a sweep's `--vary` axis): returned unchanged when there is no "...".
std::vector<std::string> expand_value_list(const std::string& flag,
                                           const std::vector<std::string>& values);
/// `--max-memory`: a positive size such as 40GiB; 0 when `text` is empty (the GPU's HBM).
std::int64_t parse_max_memory(const std::string& text);
/// A list of GPU counts (`parse_int_list`), each at most what clustersim builds (2^24).
std::vector<int> parse_gpu_counts(const std::string& flag, const std::string& text);
/// "300B", "3.5T", "2e12", "1000000", "4M": a positive count (K, M, B or G, T: powers of 1000);
/// InputError naming `flag` otherwise.
double parse_count(const std::string& flag, const std::string& text);

/// A value list (`parse_int_list`) holds at most this many values: a study plots or tabulates
/// each one, and 10,000 points are more than a plot can show. Counted before any is made, so
/// `8,16,...,8000000` is refused at once rather than after minutes and gigabytes.
inline constexpr std::int64_t kMaxListValues = 10'000;

/// Without `--max-configurations`, a sweep runs at most this many configurations: 10^6 take
/// minutes on a laptop in analytic fidelity (bench/'s sweep rate) and are a CSV of some
/// hundreds of MB; beyond that the user says so.
inline constexpr std::int64_t kDefaultMaxConfigurations = 1'000'000;

/// Refuses `count` configurations of a study above `max` (InputError with the count, how it
/// arises (`shape`: "1000 parallel.tp x 1000 parallel.pp") and the flag that raises the limit).
void check_configuration_count(std::int64_t count, std::int64_t max, const std::string& shape,
                               const std::string& flag);

/// The Cartesian product of the axes; the last axis varies fastest.
class Grid {
public:
    /// Throws InputError when the product overflows 64 bits (it is refused long before,
    /// check_configuration_count, but must first be counted).
    explicit Grid(std::vector<Axis> axes);
    const std::vector<Axis>& axes() const { return axes_; }
    std::int64_t size() const { return size_; }
    /// The value of each axis in configuration `index`.
    std::vector<std::string> values(std::int64_t index) const;
    /// The same as settings ("key" -> value).
    Settings settings(std::int64_t index) const;

private:
    std::vector<Axis> axes_;
    std::int64_t size_ = 1;
};

} // namespace clustersim::explore
