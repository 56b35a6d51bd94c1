#pragma once
/// \file
/// The one reader of comma-separated tables, as the reference data (data/reference) and
/// measurement tables write them: `#` comment lines, one header line of column names, then
/// rows with as many fields as the header. Fields are trimmed; a field may be quoted ("a, b",
/// with "" for a quote). Every error is an InputError that starts with `FILE:LINE` and carries
/// the same place as a SourceLocation.

#include "base/error.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::config {

class CsvTable {
public:
    /// Which line holds the column names.
    enum class Header {
        /// The first line that is neither empty nor a comment.
        first_line,
        /// The last non-empty line before the first row whose first field is a number; it may
        /// itself start with '#' ("# GPUs,global batch,..."), since '#' also means "number
        /// of". Lines above it must be comments.
        before_first_number,
    };

    struct Row {
        int line = 0; ///< 1-based line number in the file
        std::vector<std::string> fields;
    };

    /// Parses `text`; `name` (the file's path) starts every error. Throws InputError when
    /// there is no header or no data row, or a row's width differs from the header's.
    static CsvTable parse(std::string_view text, std::string name,
                          Header header = Header::first_line);
    /// Reads and parses the file at `path`. Throws InputError ("PATH: cannot open the file").
    static CsvTable read(const std::string& path, Header header = Header::first_line);

    const std::string& name() const { return name_; }
    int header_line() const { return header_line_; }
    /// The column names as written (trimmed).
    const std::vector<std::string>& columns() const { return columns_; }
    /// The comment lines above the header, as written (trimmed, '#' kept).
    const std::vector<std::string>& comments() const { return comments_; }
    const std::vector<Row>& rows() const { return rows_; }
    std::size_t size() const { return rows_.size(); }

    /// The index of the first column named `column`; nullopt when there is none.
    std::optional<std::size_t> find_column(std::string_view column) const;
    /// The same, or an InputError naming the file and the header line.
    std::size_t column(std::string_view column) const;

    /// "FILE:LINE" of a row.
    std::string where(std::size_t row) const;
    /// The place of a row (and a column's name as the key, when given).
    SourceLocation location(std::size_t row, std::string_view column = {}) const;
    /// Throws InputError "FILE:LINE: message" at a row.
    [[noreturn]] void fail(std::size_t row, const std::string& message) const;

    /// The field of `row` in `column` (by name).
    const std::string& text(std::size_t row, std::string_view column) const;
    /// The field as a whole decimal number, else InputError "FILE:LINE: column 'C': expected a
    /// number, got 'X'".
    double number(std::size_t row, std::string_view column) const;
    /// The same for a field by index (tables whose columns repeat a name).
    double number_at(std::size_t row, std::size_t index) const;

private:
    std::string name_;
    int header_line_ = 0;
    std::vector<std::string> columns_;
    std::vector<std::string> comments_;
    std::vector<Row> rows_;
};

/// What split_csv_line keeps of a field's text.
enum class CsvFieldText {
    trimmed, ///< white space around a field dropped (files people write and edit)
    exact,   ///< every byte as written (files a program writes and reads back: the sweep CSV)
};

/// Splits one line at commas outside quotes (RFC 4180: "" inside quotes is a quote). Throws
/// InputError (without a location: the caller knows the file and line) for a quote that is
/// never closed, or one that opens after other text of its field.
std::vector<std::string> split_csv_line(std::string_view line,
                                        CsvFieldText text = CsvFieldText::trimmed);

/// A whole-string finite decimal number ("40.12", "+1e-3", " 7 " trimmed); nullopt otherwise
/// ("12 GB", "", "inf"). Exactly the value strtod gives.
std::optional<double> parse_number(std::string_view text);

/// `text` without leading and trailing spaces and tabs.
std::string_view trim(std::string_view text);

/// One line of a text file, with its 1-based number.
struct TextLine {
    int number = 0;
    std::string_view text;
};
/// Splits text into lines (without '\n' or a trailing '\r'), views into `text`.
std::vector<TextLine> split_lines(std::string_view text);

} // namespace clustersim::config
