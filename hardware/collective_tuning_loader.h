#pragma once
/// \file
/// Reads the `collectives:` section of a hardware file (used by hardware_loader.cpp only).

#include "hardware/collective_tuning.h"

namespace clustersim::config {
class YamlMap;
} // namespace clustersim::config

namespace clustersim::hardware {

/// Applies the keys present in `m` onto `tuning` (a file that extends another changes only the
/// keys it names). Efficiencies must be in (0, 1], latencies >= 0, chunks positive.
void apply_collectives(config::YamlMap m, CollectiveTuning& tuning);

} // namespace clustersim::hardware
