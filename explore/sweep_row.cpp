#include "explore/sweep_row.h"

#include "base/error.h"
#include "config/csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace clustersim::explore {

namespace sp = strategies::parallel;

namespace {

/// The result columns with their types, in order: one list for the CSV's header, its sidecar's
/// types and the Python module's values.
struct ResultColumn {
    const char* name;
    ColumnType type;
};

const std::vector<ResultColumn>& result_table() {
    static const std::vector<ResultColumn> table{
        {"gpus", ColumnType::integer},
        {"tp", ColumnType::integer},
        {"pp", ColumnType::integer},
        {"dp", ColumnType::integer},
        {"cp", ColumnType::integer},
        {"ep", ColumnType::integer},
        {"micro_batch", ColumnType::integer},
        {"micro_batches", ColumnType::integer},
        {"virtual_stages", ColumnType::integer},
        {"schedule", ColumnType::text},
        {"recompute", ColumnType::text},
        {"step_time_s", ColumnType::real},
        {"tokens_per_s", ColumnType::real},
        {"mfu", ColumnType::real},
        {"bubble_fraction", ColumnType::real},
        {"compute_s", ColumnType::real},
        {"recompute_s", ColumnType::real},
        {"host_s", ColumnType::real},
        {"tp_comm_exposed_s", ColumnType::real},
        {"pp_bubble_s", ColumnType::real},
        {"pp_comm_exposed_s", ColumnType::real},
        {"dp_comm_exposed_s", ColumnType::real},
        {"ep_comm_exposed_s", ColumnType::real},
        {"optimizer_s", ColumnType::real},
        {"peak_bytes", ColumnType::integer},
        {"capacity_bytes", ColumnType::integer},
        {"oom", ColumnType::boolean},
        {"oom_stage", ColumnType::integer},
        {"oom_excess_bytes", ColumnType::integer},
        {"invalid_reason", ColumnType::text},
    };
    return table;
}

} // namespace

const std::vector<std::string>& result_columns() {
    static const std::vector<std::string> columns = [] {
        std::vector<std::string> names;
        for (const ResultColumn& c : result_table())
            names.emplace_back(c.name);
        return names;
    }();
    return columns;
}

std::optional<ColumnType> result_column_type(std::string_view name) {
    for (const ResultColumn& c : result_table()) {
        if (name == c.name)
            return c.type;
    }
    return std::nullopt;
}

std::string_view to_string(ColumnType type) {
    switch (type) {
    case ColumnType::integer:
        return "int";
    case ColumnType::real:
        return "float";
    case ColumnType::boolean:
        return "bool";
    case ColumnType::text:
        return "string";
    }
    return "string";
}

std::vector<std::string> csv_columns(const std::vector<Axis>& axes) {
    std::vector<std::string> c{"config"};
    for (const Axis& a : axes)
        c.push_back(a.key);
    const auto& r = result_columns();
    c.insert(c.end(), r.begin(), r.end());
    return c;
}

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos)
        return text;
    std::string q = "\"";
    for (char c : text) {
        if (c == '"')
            q += '"';
        q += c == '\n' || c == '\r' ? ' ' : c;
    }
    return q + "\"";
}

std::vector<std::string> split_csv(const std::string& line) {
    return config::split_csv_line(line, config::CsvFieldText::exact);
}

std::string csv_number(double v) {
    // Nine significant digits: exact enough to compare, the same bytes every time.
    std::string s = fmt::format("{:.9g}", v);
    if (s.find_first_of(".eEn") == std::string::npos) // "n": nan and inf stay as they are
        s += ".0";
    return s;
}

std::string csv_row(std::int64_t index, const std::vector<std::string>& values, const Outcome& o) {
    std::string s = std::to_string(index);
    for (const auto& v : values)
        s += "," + csv_field(v);
    if (!o.valid) {
        // Every result column empty but the reason.
        s.append(result_columns().size() - 1, ',');
        s += "," + csv_field(o.reason);
        return s;
    }
    const StepResult& r = o.result;
    const auto& b = r.breakdown;
    s += fmt::format(",{},{},{},{},{},{},{},{},{},{},{}", o.gpus, o.tp, o.pp, o.dp, o.cp, r.ep,
                     o.micro_batch, o.micro_batches, o.virtual_stages, sp::to_string(o.schedule),
                     sp::to_string(o.recompute));
    for (double v : {r.step_time_s, r.tokens_per_s, r.mfu, r.bubble_fraction, b.compute_s,
                     b.recompute_s, b.host_s, b.tp_comm_exposed_s, b.pp_bubble_s,
                     b.pp_comm_exposed_s, b.dp_comm_exposed_s, b.ep_comm_exposed_s, b.optimizer_s})
        s += "," + csv_number(v);
    s += fmt::format(",{},{},{},{},{},", r.peak_bytes_max, r.capacity_bytes,
                     r.oom ? "true" : "false", r.oom ? std::to_string(r.oom->stage) : "",
                     r.oom ? std::to_string(r.oom->excess_bytes) : "");
    return s;
}

namespace {

std::size_t column_of(const std::vector<std::string>& columns, const std::string& name) {
    const auto it = std::find(columns.begin(), columns.end(), name);
    if (it == columns.end())
        throw std::logic_error("sweep: no column " + name);
    return static_cast<std::size_t>(it - columns.begin());
}

} // namespace

double result_number(const std::string& field) {
    try {
        return field.empty() ? 0.0 : std::stod(field);
    } catch (const std::exception&) {
        return 0.0;
    }
}

std::size_t result_column(std::size_t columns, const std::string& name) {
    const auto& r = result_columns();
    return columns - r.size() + column_of(r, name);
}

RowSummary parse_row(const std::string& row, std::size_t columns) {
    RowSummary s;
    s.fields = split_csv(row);
    if (s.fields.size() != columns)
        throw std::logic_error("sweep: a row with " + std::to_string(s.fields.size()) +
                               " fields, expected " + std::to_string(columns));
    s.index = std::stoll(s.fields[0]);
    s.valid = s.fields[result_column(columns, "invalid_reason")].empty();
    s.oom = s.fields[result_column(columns, "oom")] == "true";
    s.tokens_per_s = result_number(s.fields[result_column(columns, "tokens_per_s")]);
    return s;
}

std::vector<RowSummary> top_rows(std::vector<RowSummary> rows, std::size_t k) {
    rows.erase(
        std::remove_if(rows.begin(), rows.end(), [](const RowSummary& r) { return !r.valid; }),
        rows.end());
    std::stable_sort(rows.begin(), rows.end(), [](const RowSummary& a, const RowSummary& b) {
        if (a.oom != b.oom)
            return !a.oom;
        if (a.tokens_per_s != b.tokens_per_s)
            return a.tokens_per_s > b.tokens_per_s;
        return a.index < b.index;
    });
    if (rows.size() > k)
        rows.resize(k);
    return rows;
}

} // namespace clustersim::explore
