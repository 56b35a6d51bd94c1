#pragma once
/// \file
/// Splitting measurements into a fitting set and a validation set, reproducibly
/// (`clustersim calibrate split`): of each kind's n points, the round(fraction x n) whose
/// splitmix64(seed + index) is smallest (index = position in the file's list, from 0; ties by
/// index) are chosen, the rest are held out. Both keep the file's order and environment. The
/// same file, fraction and seed give the same split on every machine.

#include "calibrate/measurements.h"

#include <cstdint>

namespace clustersim::calibrate {

struct MeasurementSplit {
    MeasurementFile chosen; ///< round(fraction x n) points of each kind
    MeasurementFile rest;   ///< the others
};

/// splitmix64 (Steele, Lea, Flood 2014): the hash the split ranks points by.
std::uint64_t splitmix64(std::uint64_t x);

/// Throws InputError unless 0 < fraction < 1.
MeasurementSplit split_measurements(const MeasurementFile& file, double fraction,
                                    std::uint64_t seed);

} // namespace clustersim::calibrate
