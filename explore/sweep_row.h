#pragma once
/// \file
/// The schema of a sweep's CSV: its columns, one configuration's row, and reading a row back
/// (for --resume and the table of the best rows). Numbers are written with fixed formats and no
/// locale ("{:.9g}" for seconds and rates, integers for bytes), so a row's bytes depend only on
/// the outcome: the same on every thread count, MPI rank and run, which is what lets resume
/// compare files and the tests compare a row with `run --format json`.

#include "explore/evaluator.h"
#include "explore/grid.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::explore {

/// How a result column's fields read (an empty field: no value, in a row that cannot run).
enum class ColumnType { integer, real, boolean, text };
/// The columns after the varied keys, in order.
const std::vector<std::string>& result_columns();
/// The type of result column `name`; nullopt for a name that is not one.
std::optional<ColumnType> result_column_type(std::string_view name);
/// int, float, bool or string: the names the sweep's sidecar (F.csv.json) gives them.
std::string_view to_string(ColumnType type);
/// "config", the varied keys, then result_columns().
std::vector<std::string> csv_columns(const std::vector<Axis>& axes);
/// One row (without the newline).
std::string csv_row(std::int64_t index, const std::vector<std::string>& values, const Outcome& o);
/// A real number as the CSVs write it: nine significant digits, and always with a decimal point
/// or an exponent ("0.0", not "0"), so that a reader that infers types (pandas) types a column
/// of seconds as floats whatever its values.
std::string csv_number(double v);
/// A field quoted as RFC 4180 wants when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& text);
/// Splits one line of the sweep CSV into its fields, byte for byte as csv_field wrote them
/// (config::split_csv_line, exact). Throws InputError when malformed.
std::vector<std::string> split_csv(const std::string& line);

/// A row as the ranking needs it, read back from the CSV.
struct RowSummary {
    std::int64_t index = 0;
    bool valid = false;
    bool oom = false;
    double tokens_per_s = 0;
    std::vector<std::string> fields;
};
/// Reads one row of a CSV with `columns` columns. Throws std::logic_error when the row has
/// another number of fields (rows are written by csv_row, so that is a bug).
RowSummary parse_row(const std::string& row, std::size_t columns);
/// The index of result column `name` in a row of `columns` fields (result columns are counted
/// from the end: the varied keys before them differ from sweep to sweep).
std::size_t result_column(std::size_t columns, const std::string& name);
/// A result field as a number: empty (an invalid row) or unreadable reads as 0.
double result_number(const std::string& field);

/// Best first: valid rows that fit in memory by tokens/s, then valid rows out of memory by
/// tokens/s (they would need more memory than the GPU has), ties in configuration order;
/// invalid rows never. At most `k`.
std::vector<RowSummary> top_rows(std::vector<RowSummary> rows, std::size_t k);

} // namespace clustersim::explore
