#pragma once
/// \file
/// The machinery of `clustersim sweep`, `scale` and `bubble`: configurations of one experiment
/// file, simulated on a pool of threads, their rows in configuration order, the sweep's CSV
/// (identity header, streaming, resume) and the table of the best ones.
///
/// Order: configurations are numbered in the order of the Cartesian product of the `--vary`
/// axes as given, the last axis varying fastest (nested loops). Rows are written in that order:
/// threads finish out of order, and a reorder buffer holds a finished row until every row
/// before it has been written. The CSV is therefore always a prefix of the final file, the same
/// bytes whatever the number of threads or MPI ranks, and `--resume` only has to skip the rows
/// already there.

#include "strategies/parallel/experiment_variants.h"
#include "strategies/parallel/step_simulator.h"
#include "strategies/parallel/training_step.h"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace clustersim::app::sweep {

using strategies::parallel::ExperimentSpec;
using strategies::parallel::ExperimentVariants;
using strategies::parallel::Settings;
using strategies::parallel::StepResult;

/// One `--vary KEY=V1,V2,...`.
struct Axis {
    std::string key;
    std::vector<std::string> values;
};

/// Parses "KEY=V1,V2,..." given to `flag`. Throws InputError (naming the flag) for a missing
/// '=', an empty key, an empty list or an empty value.
Axis parse_axis(const std::string& flag, const std::string& text);

/// "1,2,4,...,64" -> 1 2 4 8 16 32 64: a list of positive integers where "..." continues the
/// progression of the two numbers before it (geometric when the second is a whole multiple of
/// the first, else arithmetic) up to the number after it. Throws InputError naming `flag`.
std::vector<std::int64_t> parse_int_list(const std::string& flag, const std::string& text);
/// `--max-memory`: a positive size such as 40GiB; 0 when `text` is empty (the GPU's HBM).
std::int64_t parse_max_memory(const std::string& text);

/// The Cartesian product of the axes; the last axis varies fastest.
class Grid {
public:
    explicit Grid(std::vector<Axis> axes);
    const std::vector<Axis>& axes() const { return axes_; }
    std::int64_t size() const { return size_; }
    /// The value of each axis in configuration `index`.
    std::vector<std::string> values(std::int64_t index) const;
    /// The same as settings ("key" -> value).
    Settings settings(std::int64_t index) const;

private:
    std::vector<Axis> axes_;
    std::int64_t size_ = 1;
};

/// How every configuration is built and simulated.
struct EvalOptions {
    int gpus = 0;                ///< 0: the experiment's (or the configuration's `gpus`)
    std::int64_t max_memory = 0; ///< bytes per GPU; 0: the GPU's HBM
    bool derive_dp = false;      ///< dp = gpus / (tp x pp) in every configuration
    strategies::parallel::Fidelity fidelity = strategies::parallel::Fidelity::analytic;
};

/// What one configuration gave: a step, or the reason it cannot run.
struct Outcome {
    bool valid = false;
    std::string reason; ///< when invalid: validation's message, without the file name
    int gpus = 0, tp = 0, pp = 0, dp = 0, micro_batch = 0, micro_batches = 0, virtual_stages = 0;
    std::string schedule;
    std::string recompute;
    StepResult result;
};

/// Tunes the C library's allocator, once per process, to keep freed memory rather than give it
/// back to the system after every configuration (see sweep.cpp: the page faults cost more than
/// the simulations). Evaluator's constructor calls it.
void keep_freed_memory();

/// Builds and simulates configurations of one experiment file. Simulators (the cluster's graph
/// and its communicators) are built once per cluster and shared. Thread-safe.
class Evaluator {
public:
    Evaluator(const ExperimentVariants& variants, EvalOptions options);
    ~Evaluator();
    const EvalOptions& options() const { return options_; }

    /// The experiment of `overrides` (with --gpus, derived dp and --max-memory applied),
    /// validated. Throws InputError with the reason it cannot run.
    ExperimentSpec experiment(const Settings& overrides) const;
    /// Reads, validates and simulates; never throws InputError (an invalid configuration is an
    /// outcome).
    Outcome evaluate(const Settings& overrides) const;

private:
    Settings with_gpus(const Settings& overrides) const;
    const strategies::parallel::StepSimulator& simulator(const Settings& overrides,
                                                         const ExperimentSpec& e) const;

    const ExperimentVariants& variants_;
    EvalOptions options_;
    struct Slot;
    mutable std::mutex mutex_;
    mutable std::map<Settings, std::shared_ptr<Slot>> simulators_;
};

/// The message of an InputError about `path`, without the leading "PATH: " or
/// "PATH:LINE:COL: " (every row of a sweep is about the same file).
std::string strip_path(const std::string& message, const std::string& path);

// ---------------------------------------------------------------------------------------------
// CSV

/// The columns after the varied keys, in order.
const std::vector<std::string>& result_columns();
/// "config", the varied keys, then result_columns().
std::vector<std::string> csv_columns(const std::vector<Axis>& axes);
/// One row (without the newline). Numbers are written with fixed formats (no locale), so the
/// bytes depend only on the outcome.
std::string csv_row(std::int64_t index, const std::vector<std::string>& values, const Outcome& o);
/// A field quoted as RFC 4180 wants when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& text);
/// Splits one CSV line into fields (RFC 4180 quotes). Throws InputError when malformed.
std::vector<std::string> split_csv(const std::string& line);

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

/// The comment lines that start the CSV (each "# ...\n"), ending with "# sweep-id: HEX", then
/// the column line. A file is from the same sweep when it starts with exactly this text.
std::string csv_header(const Identity& id, const std::vector<std::string>& columns);

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

/// Appends whole lines to a file: each line goes out in one write(2) of the full line, so that
/// a reader (or a killed process) never leaves half a line behind but the last one, which
/// read_existing drops.
class LineWriter {
public:
    /// Opens `path`: truncated and starting with `header` when `fresh`, else truncated to
    /// `keep_bytes` and appended to. Throws InputError when it cannot be written.
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

// ---------------------------------------------------------------------------------------------
// Running

/// Rows delivered out of order, emitted in configuration order. `emit` is called under the
/// sink's lock, by whichever thread completes the next row.
class OrderedSink {
public:
    OrderedSink(std::vector<std::int64_t> order,
                std::function<void(std::int64_t, const std::string&)> emit);
    /// Hands in the row of configuration `index` (which must be in the order list).
    void submit(std::int64_t index, std::string row);
    std::int64_t emitted() const;
    std::int64_t total() const { return static_cast<std::int64_t>(order_.size()); }
    /// Rows waiting for an earlier one (the reorder buffer's size).
    std::size_t pending() const;

private:
    std::vector<std::int64_t> order_;
    std::function<void(std::int64_t, const std::string&)> emit_;
    mutable std::mutex mutex_;
    std::map<std::int64_t, std::string> waiting_;
    std::size_t next_ = 0;
};

/// Runs `work(index)` for every index of `indices` on `jobs` threads (taken in order) and
/// submits each row to `sink`. The first exception a job throws stops the others and is
/// rethrown here.
void run_pool(const std::vector<std::int64_t>& indices, int jobs,
              const std::function<std::string(std::int64_t)>& work, OrderedSink& sink);

/// Evaluates every configuration of `configs` on `jobs` threads; the outcomes in the same order.
std::vector<Outcome> evaluate_all(const Evaluator& evaluator, const std::vector<Settings>& configs,
                                  int jobs);

/// The number of threads `--jobs 0` means: every core.
int default_jobs();

/// A progress bar on a terminal: "[#####     ] 512/1200 configurations, 3,400/s". Draws at
/// most ten times a second; nothing when disabled.
class Progress {
public:
    Progress(std::ostream& out, bool enabled, std::int64_t total, std::string what);
    void update(std::int64_t done);
    void finish();

private:
    std::ostream& out_;
    bool enabled_;
    std::int64_t total_;
    std::string what_;
    double start_ = 0;
    double last_draw_ = -1;
    std::mutex mutex_;
};

/// True when `err` is the process's standard error and that is a terminal.
bool is_terminal(const std::ostream& err);

// ---------------------------------------------------------------------------------------------
// The table of the best rows

/// A row as the top table needs it, parsed from the CSV.
struct RowSummary {
    std::int64_t index = 0;
    bool valid = false;
    bool oom = false;
    double tokens_per_s = 0;
    std::vector<std::string> fields;
};
RowSummary summarize(const std::string& row, std::size_t columns);

/// Best first: valid rows that fit in memory by tokens/s, then valid rows out of memory by
/// tokens/s (they would need more memory than the GPU has), ties in configuration order;
/// invalid rows never. At most `k`.
std::vector<RowSummary> top_rows(std::vector<RowSummary> rows, std::size_t k);

/// Prints the top table: rank, the varied keys, dp, step time, tokens/s, MFU, bubble, peak
/// memory and whether it fits.
void print_top(std::ostream& out, const std::vector<std::string>& columns,
               const std::vector<Axis>& axes, const std::vector<RowSummary>& rows);

} // namespace clustersim::app::sweep
