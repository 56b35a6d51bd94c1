#pragma once
/// \file
/// Writing output files: whole or not at all.

#include <string>
#include <string_view>

namespace clustersim::app {

/// Writes `content` to `path` through a temporary file in the same directory, fsync'ed, and a
/// rename, so a reader never sees a half-written file; SIGINT and SIGTERM remove the temporary.
/// A symbolic link stays a link (its target is replaced); a device or FIFO (`/dev/null`, a
/// pipe) is written through, never replaced. Throws InputError when the path cannot be written.
void write_file_atomically(const std::string& path, std::string_view content);

} // namespace clustersim::app
