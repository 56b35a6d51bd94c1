#pragma once
/// \file
/// Splitting measurements into a fitting set and a validation set, reproducibly
/// (`clustersim calibrate split`): of each kind's n points, the round(fraction x n) whose
/// splitmix64(seed + index) is smallest (index = position in the file's list, from 0; ties by
/// index) are chosen, the rest are held out. Both keep the file's order and environment. The
/// same file, fraction and seed give the same split on every machine.

#include "calibrate/measurements.h"

#include <cstdint>
#include <string>

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

/// The group a point belongs to when splitting by shape: what is held out together.
/// A profiler trace's kernels, whole step and training step: the trace (one model
/// configuration); a GEMM: m x n x k; a collective: op, GPUs and bytes; a copy or transfer: its
/// bytes; a launch point: its method; a training step: its model and batch settings.
std::string shape_group(const CollectiveMeasurement& c);
std::string shape_group(const GemmMeasurement& g);
std::string shape_group(const CopyMeasurement& c);
std::string shape_group(const P2pMeasurement& p);
std::string shape_group(const LaunchMeasurement& l);
std::string shape_group(const StepMeasurement& s);
std::string shape_group(const KernelMeasurement& k);
std::string shape_group(const TraceStepMeasurement& t);

/// Splitting by shape (`calibrate split --by-shape`): the points are grouped by shape_group
/// across all kinds, and round(fraction x groups) groups whose splitmix64(seed + FNV-1a(group))
/// is smallest are chosen; a group is never on both sides, so what is held out are shapes the
/// fit never saw. Throws InputError unless 0 < fraction < 1, or when there are fewer than two
/// groups.
MeasurementSplit split_measurements_by_shape(const MeasurementFile& file, double fraction,
                                             std::uint64_t seed);

} // namespace clustersim::calibrate
