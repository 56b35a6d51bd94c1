#pragma once
/// \file
/// The one units parser of clustersim. Model code never multiplies by 1e12: every quantity
/// enters through here, as bytes, bytes per second, FLOP per second or `sim::Time`.
///
/// Conventions (documented in docs/ARCHITECTURE.md, "Units"):
/// - sizes: `4096`, `4096B`; binary `1KiB 1MiB 1GiB 1TiB`; decimal `1KB 1MB 1GB 1TB`; bare
///   `K M G T` are binary, as nccl-tests parses `-b 8 -e 128M`.
/// - rates: `900GB/s`, `1.6TB/s`, `25GiB/s` (bytes) and `400Gb/s`, `200Gbps` (bits; /8).
/// - times: `10ps 2ns 2us 2µs 1.5ms 1s`.
/// - FLOP rates: `989TFLOPS`, `19.5 TFLOP/s`, `1PFLOPS`.
/// Negative values and non-finite numbers are refused; zero is accepted here and refused by
/// the loaders where a quantity must be positive.

#include "sim/time.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim::base {

/// Bytes, e.g. "1GiB" -> 1073741824. Throws UnitsError.
std::int64_t parse_bytes(std::string_view text);
/// Bytes per second, e.g. "900GB/s" -> 9e11, "400Gb/s" -> 5e10. Throws UnitsError.
double parse_bandwidth(std::string_view text);
/// A duration, e.g. "2us". Throws UnitsError.
sim::Time parse_time(std::string_view text);
/// FLOP per second, e.g. "989TFLOPS" -> 9.89e14. Throws UnitsError.
double parse_flop_rate(std::string_view text);

/// "1 GiB", "100 MiB", "419430400 B": binary units when exact, bytes otherwise.
std::string format_bytes(std::int64_t bytes);
/// "900 GB/s", "46.9 GB/s": decimal GB as nccl-tests reports.
std::string format_bandwidth(double bytes_per_second);
/// "12.3 us", "2.11 ms", "1.02 s": three significant digits in the fitting unit.
std::string format_time(sim::Time t);
/// "989 TFLOP/s".
std::string format_flop_rate(double flops);

} // namespace clustersim::base
