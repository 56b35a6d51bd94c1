#pragma once
/// \file
/// Writing output files: whole or not at all.

#include "config/input_record.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim::app {

/// Writes `content` to `path` through a temporary file in the same directory, fsync'ed, and a
/// rename, so a reader never sees a half-written file; SIGINT, SIGTERM and SIGXFSZ (a file
/// past `ulimit -f`) remove the temporary. A file this command has read is refused
/// (config::refuse_if_read), however it was named.
/// A symbolic link stays a link (its target is replaced); a device or FIFO (`/dev/null`, a
/// pipe) is written through, never replaced. Throws InputError when the path cannot be written.
void write_file_atomically(const std::string& path, std::string_view content);

/// Throws InputError when an output path names one of the inputs (the same file, through any
/// path or link): `run X.yaml --trace X.yaml` must not destroy X.yaml. `option` names the
/// output's flag in the message ("--trace"). Empty paths are ignored.
void refuse_output_over_input(const std::string& output, const std::string& option,
                              const std::vector<std::string>& inputs);

/// Throws InputError when two outputs of one command (option, path) name one file
/// (`--trace X --timeline X`). Empty paths are ignored.
void refuse_same_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

using config::same_file;

/// What a planner's `--out` writes, by its extension.
enum class OutKind { none, csv, json };
/// The kind of `--out` by its extension; throws InputError for another.
OutKind output_kind(const std::string& path);

/// A planner's outputs checked before anything runs (scale, bubble, compare-hardware): `format`
/// is table, json or csv; `out` ends in .csv or .json (or is empty); neither `out` nor `plot`
/// names the experiment file. Returns the kind of `out`; throws InputError naming the flag.
OutKind check_planner_outputs(const std::string& format, const std::string& out,
                              const std::string& plot, const std::string& experiment);

/// Writes a planner's `--out` (scale, bubble): F.json is `record`; F.csv is `csv`, with `record`
/// less its `rows_key` (the rows the CSV holds) beside it in F.csv.json, so that the CSV itself
/// is one header and rows. Nothing for OutKind::none.
void write_table_output(const std::string& path, OutKind kind, const std::string& csv,
                        const nlohmann::ordered_json& record, const std::string& rows_key);

} // namespace clustersim::app
