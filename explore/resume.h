#pragma once
/// \file
/// What lets a killed sweep continue where it stopped (`--resume`): an identity kept beside the
/// CSV (the experiment file's hash, the fixed settings, the axes and the options that change
/// results, then a hash of all that), reading back the complete rows of a file
/// with that header, and a writer that appends each row in a single write(2). Because rows
/// are written whole and in configuration order, a file is always a prefix of the finished
/// one plus at most one partial last line, which is dropped on resume.

#include "explore/grid.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace clustersim::explore {

/// What makes a sweep the same sweep, for --resume: the experiment file (its bytes), the fixed
/// settings, the axes, and the options that change results.
struct Identity {
    std::string experiment;            ///< the path as given
    std::uint64_t experiment_hash = 0; ///< FNV-1a 64 of the file's bytes
    Settings fixed;
    std::vector<Axis> axes;
    int gpus = 0;
    std::int64_t max_memory = 0;
    std::string fidelity;
};

/// FNV-1a 64 of a file's bytes (InputError when it cannot be read).
std::uint64_t file_hash(const std::string& path);

/// What makes a file the rows of this sweep: lines "KEY: VALUE\n" (the experiment and its hash,
/// each fixed setting, each axis, the options), ending with "sweep-id: HEX" (a hash of the
/// lines before it). The CSV holds only its column line and rows, so that a plain
/// `pandas.read_csv(path)` reads it; this text goes beside it (the sweep's F.csv.json).
std::string sweep_identity(const Identity& id);

/// The CSV's first line, its columns, with the newline.
std::string csv_header(const std::vector<std::string>& columns);

/// Refuses to resume when `found` (the identity stored beside the CSV at `where`) is not
/// `expected`: says which line differs.
void check_identity(const std::string& where, const std::string& expected,
                    const std::string& found);

/// Rows already in a sweep's CSV, for --resume.
struct Existing {
    std::set<std::int64_t> done;   ///< configurations with a complete row
    std::int64_t keep_bytes = 0;   ///< the file up to its last complete line
    bool in_order = true;          ///< rows are exactly configurations 0, 1, 2, ... in order
    std::vector<std::string> rows; ///< the complete rows, as in the file
};

/// Reads `path` for --resume. Throws InputError when it is not the CSV of this sweep (another
/// experiment, other axes or options: says which line differs) or a complete row is malformed.
/// A last line without its newline (the sweep was killed while writing it) is not a row.
Existing read_existing(const std::string& path, const std::string& header, std::int64_t configs);

/// The CSV's text with its rows sorted by configuration number (after resuming a file whose
/// rows were not in order, edited by hand): `header`, then the rows of `text` after it.
std::string sorted_csv(const std::string& text, const std::string& header);

/// Appends whole lines to a file: each line goes out in one write(2) of the full line, so that
/// a reader (or a killed process) never leaves half a line behind but the last one, which
/// read_existing drops. The file is locked (flock, advisory) while the writer lives, so that
/// two sweeps given one --out cannot interleave their rows: the second is refused.
class LineWriter {
public:
    /// Opens `path` (created empty when missing, nothing truncated yet) and locks it. Throws
    /// InputError when it cannot be written, or when another process (or another writer in
    /// this one) holds the lock. Where the file system has no locks, it writes unlocked.
    explicit LineWriter(const std::string& path);
    /// Starts the file: truncated and starting with `header` when `fresh`, else truncated to
    /// `keep_bytes` and appended to. Throws InputError when it cannot be written.
    void start(bool fresh, const std::string& header, std::int64_t keep_bytes);
    /// Both at once.
    LineWriter(const std::string& path, bool fresh, const std::string& header,
               std::int64_t keep_bytes);
    ~LineWriter();
    LineWriter(const LineWriter&) = delete;
    LineWriter& operator=(const LineWriter&) = delete;
    /// Writes `line` and a newline.
    void write_line(const std::string& line);

private:
    void write_all(const std::string& data);
    std::string path_;
    int fd_ = -1;
};

} // namespace clustersim::explore
