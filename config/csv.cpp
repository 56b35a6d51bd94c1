#include "config/csv.h"

#include "config/bounded_read.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace clustersim::config {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

std::optional<double> parse_number(std::string_view s) {
    s = trim(s);
    if (s.empty())
        return std::nullopt;
    if (s.front() == '+')
        s.remove_prefix(1);
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::vector<std::string> split_csv_line(std::string_view line, CsvFieldText text) {
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    auto finish = [&] {
        fields.push_back(text == CsvFieldText::trimmed ? std::string(trim(field)) : field);
        field.clear();
    };
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                field += c;
            }
        } else if (c == '"') {
            // A quote opens a field only at its start (after white space, when trimmed).
            const bool at_start =
                text == CsvFieldText::trimmed ? trim(field).empty() : field.empty();
            if (!at_start)
                throw InputError("a quote inside an unquoted field");
            quoted = true;
        } else if (c == ',') {
            finish();
        } else {
            field += c;
        }
    }
    if (quoted)
        throw InputError("a quoted field without its closing quote");
    finish();
    return fields;
}

namespace {

SourceLocation at(const std::string& file, int line = 0) {
    SourceLocation where;
    where.file = file;
    where.line = line;
    return where;
}

bool skipped(std::string_view line) {
    return line.empty() || line.front() == '#';
}

SourceLocation location_of(const std::string& file, int line, std::string_view column) {
    SourceLocation where = at(file, line);
    where.key = std::string(column);
    return where;
}

} // namespace

CsvTable CsvTable::parse(std::string_view text, std::string name, Header header) {
    CsvTable t;
    t.name_ = std::move(name);
    auto lines = split_lines(text);
    // A malformed line's error, at its file and line.
    auto fields_of = [&t](const TextLine& line) {
        try {
            return split_csv_line(line.text);
        } catch (const InputError& e) {
            throw InputError(fmt::format("{}:{}: {}", t.name_, line.number, e.what()),
                             at(t.name_, line.number));
        }
    };
    for (TextLine& line : lines)
        line.text = trim(line.text);
    std::size_t first_data = lines.size();
    std::size_t head = lines.size();
    if (header == Header::first_line) {
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (!skipped(lines[i].text)) {
                head = i;
                break;
            }
        }
        if (head == lines.size())
            throw InputError(t.name_ + ": no header line", at(t.name_));
        first_data = head + 1;
    } else {
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (skipped(lines[i].text))
                continue;
            if (parse_number(fields_of(lines[i]).front())) {
                first_data = i;
                break;
            }
        }
        if (first_data == lines.size())
            throw InputError(t.name_ +
                                 ": no data rows (rows start with a number after a header line)",
                             at(t.name_));
        // The header: the last non-empty line before the first row.
        head = first_data;
        while (head > 0 && lines[--head].text.empty()) {
        }
        if (head == first_data || lines[head].text.empty())
            throw InputError(fmt::format("{}:{}: a data row with no header line before it", t.name_,
                                         lines[first_data].number),
                             at(t.name_, lines[first_data].number));
    }
    t.header_line_ = lines[head].number;
    t.columns_ = fields_of(lines[head]);
    for (std::size_t i = 0; i < head; ++i) {
        const std::string_view s = lines[i].text;
        if (s.empty())
            continue;
        if (s.front() != '#')
            throw InputError(fmt::format("{}:{}: expected a comment ('#') or the header before "
                                         "the data, got '{}'",
                                         t.name_, lines[i].number, s.substr(0, 60)),
                             at(t.name_, lines[i].number));
        t.comments_.emplace_back(s);
    }
    for (std::size_t i = first_data; i < lines.size(); ++i) {
        if (skipped(lines[i].text))
            continue;
        auto fields = fields_of(lines[i]);
        if (fields.size() != t.columns_.size())
            throw InputError(fmt::format("{}:{}: expected {} fields as the header at line {} "
                                         "says, got {}: the row is cut or garbled",
                                         t.name_, lines[i].number, t.columns_.size(),
                                         t.header_line_, fields.size()),
                             at(t.name_, lines[i].number));
        t.rows_.push_back(Row{lines[i].number, std::move(fields)});
    }
    if (t.rows_.empty())
        throw InputError(t.name_ + ": no data rows", at(t.name_));
    return t;
}

CsvTable CsvTable::read(const std::string& path, Header header) {
    if (!std::ifstream(path))
        throw InputError(path + ": cannot open the file", at(path));
    try {
        return parse(read_bounded(path, kMaxDataFileBytes, "a CSV table"), path, header);
    } catch (const InputError& e) {
        if (e.where())
            throw;
        throw InputError(e.what(), at(path));
    }
}

std::optional<std::size_t> CsvTable::find_column(std::string_view column) const {
    const auto it = std::find(columns_.begin(), columns_.end(), column);
    if (it == columns_.end())
        return std::nullopt;
    return static_cast<std::size_t>(it - columns_.begin());
}

std::size_t CsvTable::column(std::string_view column) const {
    if (const auto i = find_column(column))
        return *i;
    throw InputError(location_of(name_, header_line_, column),
                     fmt::format("no column '{}'", column), InputError::KeyShown::no);
}

std::string CsvTable::where(std::size_t row) const {
    return fmt::format("{}:{}", name_, rows_.at(row).line);
}

SourceLocation CsvTable::location(std::size_t row, std::string_view column) const {
    return location_of(name_, rows_.at(row).line, column);
}

void CsvTable::fail(std::size_t row, const std::string& message) const {
    throw InputError(location(row), message);
}

const std::string& CsvTable::text(std::size_t row, std::string_view column) const {
    return rows_.at(row).fields[this->column(column)];
}

double CsvTable::number(std::size_t row, std::string_view column) const {
    const std::string& t = text(row, column);
    if (const auto v = parse_number(t))
        return *v;
    throw InputError(location(row, column),
                     fmt::format("column '{}': expected a number, got '{}'", column, t),
                     InputError::KeyShown::no);
}

double CsvTable::number_at(std::size_t row, std::size_t index) const {
    const std::string& t = rows_.at(row).fields.at(index);
    if (const auto v = parse_number(t))
        return *v;
    throw InputError(location(row, columns_.at(index)),
                     fmt::format("column {} ('{}'): expected a number, got '{}'", index + 1,
                                 columns_.at(index), t),
                     InputError::KeyShown::no);
}

std::vector<TextLine> split_lines(std::string_view text) {
    std::vector<TextLine> lines;
    int number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        lines.push_back(TextLine{++number, line});
        start = end + 1;
    }
    return lines;
}

} // namespace clustersim::config
