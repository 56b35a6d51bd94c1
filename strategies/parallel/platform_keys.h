#pragma once
/// \file
/// The keys of the hardware file's sections that are not hardware (platform.h): framework:,
/// calibration: and uncertainty:, declared once (config/key_table.h) and read by these tables
/// (platform.cpp, provenance_loader.cpp); and every section of a hardware file, for
/// docs/hardware-files.md.

#include "config/key_table.h"
#include "strategies/parallel/framework_spec.h"
#include "strategies/parallel/provenance.h"

#include <vector>

namespace clustersim::strategies::parallel {

const std::vector<config::Key<FrameworkSpec>>& framework_keys();
/// One record of the calibration: list.
const std::vector<config::Key<CalibrationRecord>>& calibration_record_keys();
const std::vector<config::Key<Uncertainty>>& uncertainty_keys();
/// uncertainty.collectives, .gemms and .steps.
const std::vector<config::Key<ResidualBand>>& band_keys();
/// One record of uncertainty.collective_bands: regime and gpus, then band_keys()'s (read by
/// provenance_loader.cpp into RegimeBand::band).
const std::vector<config::Key<RegimeBand>>& regime_band_keys();

/// Every section of a hardware file in file order: the hardware's
/// (hardware::hardware_key_sections) and these.
const std::vector<config::KeySection>& hardware_sections();

} // namespace clustersim::strategies::parallel
