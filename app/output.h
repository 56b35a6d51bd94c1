#pragma once
/// \file
/// Writing output files: whole or not at all.

#include <string>
#include <string_view>
#include <vector>

namespace clustersim::app {

/// Writes `content` to `path` through a temporary file in the same directory, fsync'ed, and a
/// rename, so a reader never sees a half-written file; SIGINT and SIGTERM remove the temporary.
/// A symbolic link stays a link (its target is replaced); a device or FIFO (`/dev/null`, a
/// pipe) is written through, never replaced. Throws InputError when the path cannot be written.
void write_file_atomically(const std::string& path, std::string_view content);

/// Throws InputError when an output path names one of the inputs (the same file, through any
/// path or link): `run X.yaml --trace X.yaml` must not destroy X.yaml. `option` names the
/// output's flag in the message ("--trace"). Empty paths are ignored.
void refuse_output_over_input(const std::string& output, const std::string& option,
                              const std::vector<std::string>& inputs);

/// Whether two paths name one file: the same inode where both exist, else the same normalised
/// absolute path.
bool same_file(const std::string& a, const std::string& b);

} // namespace clustersim::app
