#pragma once
/// \file
/// What the key tables (config/key_table.h) are written out as: the experiment template that
/// `clustersim init` writes, and docs/experiments.md and docs/hardware-files.md
/// (`clustersim init --docs experiments|hardware`; scripts/gen-config-docs.sh writes and, in
/// CI, checks them), and the field tables of docs/measurements.md (`--docs measurements`).
/// Nothing here names a key: a key added to a table appears in all of them.

#include "config/key_table.h"

#include <string>
#include <vector>

namespace clustersim::app {

/// A commented experiment file with every key, its values, mirror and default; the keys'
/// examples are those of a small but real run, so that `clustersim run` on it works as written.
std::string experiment_template();

/// The reference of a file's keys as Markdown: `title`, `intro`, then per section a table.
std::string keys_markdown(std::string_view title, std::string_view intro,
                          const std::vector<config::KeySection>& sections);

/// docs/experiments.md and docs/hardware-files.md.
std::string experiments_markdown();
std::string hardware_markdown();

/// The fields of docs/measurements.md, from the measurement files' field tables
/// (calibrate/measurement_fields.h): the top level, the environment and each list of points,
/// a table each. scripts/gen-config-docs.sh puts it between the page's markers.
std::string measurement_fields_markdown();

} // namespace clustersim::app
