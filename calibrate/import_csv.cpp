// Importing CSV tables: collective sweeps (nccl-tests columns, or one busbw column per device)
// and training steps (Megatron knob names as columns).
//
// Read by config::CsvTable: the header is the line just before the first data row (a row whose
// first field is a number); it may itself start with '#' ("# GPUs,global batch,..."), since '#'
// also means "number of". Other lines starting with '#' are comments. Units come from the header
// ("time(ns)", "busbw(GB/s)", "iteration time (ms)").
#include "calibrate/import.h"

#include "base/error.h"
#include "base/text.h"
#include "calibrate/import_util.h"
#include "calibrate/line_scan.h"
#include "config/csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace clustersim::calibrate {
namespace {

using detail::Line;

/// A table as config::CsvTable reads it, with the column names normalized for matching.
struct CsvTable {
    int header_line = 0;
    std::vector<std::string> columns;    ///< as written
    std::vector<std::string> normalized; ///< lower case, '#' and spaces folded
    std::vector<config::CsvTable::Row> rows;
};

/// "# GPUs" -> "gpus", "iteration time (ms)" -> "iteration_time_(ms)", "size(B)" -> "size(b)".
std::string normalize(std::string_view column) {
    std::string s = detail::lower(detail::trim(column));
    if (!s.empty() && s.front() == '#' && s != "#wrong")
        s = std::string(detail::trim(s.substr(1)));
    std::string out;
    for (char c : s) {
        if (c == ' ' || c == '-')
            out += out.empty() || out.back() == '_' ? "" : "_";
        else
            out += c;
    }
    // "time _(ms)" never happens; "time (ms)" became "time_(ms)", keep "time(ms)" the same.
    const auto pos = out.find("_(");
    if (pos != std::string::npos)
        out.erase(pos, 1);
    return out;
}

CsvTable read_table(std::string_view text, const std::string& name) {
    config::CsvTable csv =
        config::CsvTable::parse(text, name, config::CsvTable::Header::before_first_number);
    CsvTable t;
    t.header_line = csv.header_line();
    t.columns = csv.columns();
    for (const auto& c : t.columns)
        t.normalized.push_back(normalize(c));
    t.rows = csv.rows();
    return t;
}

// ---------------------------------------------------------------------------------------------
// Training steps
// ---------------------------------------------------------------------------------------------

struct StepColumn {
    std::vector<std::string_view> names; ///< normalized spellings
    std::string_view section;            ///< "", "model", "training", "parallel"
    std::string_view key;                ///< "gpus", "time", "preset" or a setting key
    double seconds = 0;                  ///< for times: seconds per unit
};

const std::vector<StepColumn>& step_columns() {
    static const std::vector<StepColumn> columns{
        {{"gpus", "num_gpus", "world_size"}, "", "gpus"},
        {{"model"}, "", "preset"},
        {{"global_batch", "global_batch_size"}, "training", "global_batch"},
        {{"micro_batch", "micro_batch_size"}, "training", "micro_batch"},
        {{"hidden_size", "hidden"}, "model", "hidden"},
        {{"attention_heads", "heads", "num_attention_heads"}, "model", "heads"},
        {{"layers", "num_layers"}, "model", "layers"},
        {{"sequence_length", "seq", "seq_length"}, "model", "seq"},
        {{"ffn", "ffn_hidden_size"}, "model", "ffn"},
        {{"vocab", "vocab_size"}, "model", "vocab"},
        {{"tensor_parallelism", "tp", "tensor_model_parallel_size"}, "parallel", "tp"},
        {{"pipeline_parallelism", "pp", "pipeline_model_parallel_size"}, "parallel", "pp"},
        {{"data_parallelism", "dp", "data_parallel_size"}, "parallel", "dp"},
        {{"iteration_time(ms)", "step_time(ms)", "time(ms)", "time_ms", "step_time_ms",
          "iteration_time_ms", "elapsed_time_per_iteration(ms)"},
         "",
         "time",
         1e-3},
        {{"iteration_time(s)", "step_time(s)", "time(s)", "step_time_s", "time_s"}, "", "time", 1},
    };
    return columns;
}

/// The step column a normalized name is, or nullptr.
const StepColumn* step_column(const std::string& n) {
    for (const auto& c : step_columns()) {
        if (std::find(c.names.begin(), c.names.end(), n) != c.names.end())
            return &c;
    }
    return nullptr;
}

bool is_size_column(const std::string& n) {
    return n == "size(b)" || n == "size" || n == "bytes" || n == "size_bytes";
}

/// A table of steps has a step time and no size column ("time(ms)" alone is ambiguous).
bool is_step_table(const CsvTable& t) {
    if (std::any_of(t.normalized.begin(), t.normalized.end(), is_size_column))
        return false;
    for (const auto& n : t.normalized) {
        for (const auto& c : step_columns()) {
            if (c.key == "time" && std::find(c.names.begin(), c.names.end(), n) != c.names.end())
                return true;
        }
    }
    return false;
}

ImportResult import_steps(const CsvTable& t, const std::string& name,
                          const ImportOptions& options) {
    std::vector<const StepColumn*> map;
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
        const StepColumn* found = nullptr;
        for (const auto& c : step_columns()) {
            if (std::find(c.names.begin(), c.names.end(), t.normalized[i]) != c.names.end())
                found = &c;
        }
        if (found == nullptr) {
            std::vector<std::string> names;
            for (const auto& c : step_columns())
                names.emplace_back(c.names.front());
            const std::string known = base::join(names, ", ");
            throw InputError(fmt::format("{}:{}: unknown column '{}' in a table of training "
                                         "steps (known: {})",
                                         name, t.header_line, base::excerpt(t.columns[i]), known));
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (map[j]->key == found->key && map[j]->section == found->section)
                throw InputError(fmt::format("{}:{}: columns '{}' and '{}' say the same thing",
                                             name, t.header_line, t.columns[j], t.columns[i]));
        }
        map.push_back(found);
    }
    auto has = [&](std::string_view key) {
        return std::any_of(map.begin(), map.end(),
                           [&](const StepColumn* c) { return c->key == key; });
    };
    if (!has("time"))
        throw InputError(fmt::format("{}:{}: no step time column", name, t.header_line));
    if (options.gpus && *options.gpus > kMaxMeasurementGpus)
        throw InputError(fmt::format("--gpus {}: more than the {} GPUs a measurement may name",
                                     *options.gpus, kMaxMeasurementGpus));

    ImportResult result;
    result.measurements.environment = detail::initial_environment(options);
    std::map<std::string, int> seen;
    for (const auto& [number, fields] : t.rows) {
        const std::string where = fmt::format("{}:{}", name, number);
        StepMeasurement s;
        s.source = where;
        for (std::size_t i = 0; i < fields.size(); ++i) {
            const StepColumn& c = *map[i];
            const std::string& f = fields[i];
            if (c.key == "preset") {
                s.model_preset = f;
                continue;
            }
            if (c.key == "time") {
                const auto v = detail::parse_number(f);
                if (!v)
                    throw InputError(
                        fmt::format("{}: {}: expected a number, got '{}'", where, t.columns[i], f));
                if (!(*v > 0))
                    throw InputError(fmt::format("{}: {}: the step time must be positive, got {}",
                                                 where, t.columns[i], f));
                s.time = sim::Time::from_seconds(*v * c.seconds);
                continue;
            }
            const auto v = detail::parse_integer(f);
            if (!v || *v < 1)
                throw InputError(fmt::format("{}: {}: expected a positive integer, got '{}'", where,
                                             t.columns[i], f));
            if (c.key == "gpus") {
                // The measurement reader's bound: what imports, `validate` reads.
                if (*v > kMaxMeasurementGpus)
                    throw InputError(fmt::format("{}: {}: {} GPUs, more than the {} a measurement "
                                                 "may name",
                                                 where, t.columns[i], f, kMaxMeasurementGpus));
                s.gpus = static_cast<int>(*v);
                continue;
            }
            const std::string key(c.key);
            check_setting(c.section, key, SettingValue{*v},
                          fmt::format("{}: {}", where, t.columns[i]));
            Settings& target = c.section == "model"      ? s.model
                               : c.section == "training" ? s.training
                                                         : s.parallel;
            target[key] = *v;
        }
        for (const auto& assignment : options.step_settings) {
            // A setting the file has a column for is not overridden: the two would disagree.
            const auto dot = assignment.find('.');
            const auto eq = assignment.find('=');
            if (dot != std::string::npos && eq != std::string::npos && dot < eq) {
                const std::string section = assignment.substr(0, dot);
                const std::string key = assignment.substr(dot + 1, eq - dot - 1);
                const Settings* existing = section == "model"      ? &s.model
                                           : section == "training" ? &s.training
                                           : section == "parallel" ? &s.parallel
                                                                   : nullptr;
                if (existing != nullptr && existing->count(key) != 0)
                    throw InputError(fmt::format("--set {}: {} already has a column for {}.{}",
                                                 assignment, name, section, key));
            }
            apply_setting(s, assignment, "--set");
        }
        if (s.model_preset.empty() && s.model.count("kind") == 0)
            s.model["kind"] = std::string("transformer");
        if (s.gpus == 0) {
            // Without a GPU column: --gpus, or the product of the parallel sizes.
            std::int64_t n = 1;
            int sizes = 0;
            for (const char* k : {"tp", "pp", "dp"}) {
                auto it = s.parallel.find(k);
                if (it != s.parallel.end() && std::holds_alternative<std::int64_t>(it->second)) {
                    // Each size is positive; capped so that the product cannot overflow.
                    n = std::min<std::int64_t>(n * std::get<std::int64_t>(it->second),
                                               std::int64_t{kMaxMeasurementGpus} + 1);
                    ++sizes;
                }
            }
            if (!options.gpus && sizes == 3 && n > kMaxMeasurementGpus)
                throw InputError(fmt::format("{}: tp x pp x dp is more than the {} GPUs a "
                                             "measurement may name",
                                             where, kMaxMeasurementGpus));
            if (options.gpus)
                s.gpus = *options.gpus;
            else if (sizes == 3)
                s.gpus = static_cast<int>(n);
            else
                throw InputError(fmt::format("{}: no GPU count: add a GPUs column, or tp, pp "
                                             "and dp columns, or pass --gpus",
                                             where));
        }
        // One file's duplicates are reported with their lines; check_measurements would name
        // only their positions.
        MeasurementFile probe;
        probe.steps.push_back(s);
        check_measurements(probe, where);
        std::string key = std::to_string(s.gpus) + "|" + s.model_preset;
        for (const auto& o : s.overrides())
            key += "|" + o;
        const auto [it, inserted] = seen.emplace(key, number);
        if (!inserted)
            throw InputError(fmt::format("{}: duplicate step (same model, batch and parallel "
                                         "settings as line {})",
                                         where, it->second));
        result.measurements.steps.push_back(std::move(s));
    }
    if (result.measurements.steps.empty())
        throw InputError(name + ": no training steps in the table");
    int most = 0;
    for (const auto& s : result.measurements.steps)
        most = std::max(most, s.gpus);
    result.measurements.environment.device_count = most;
    detail::warn_unknown_device(result, name, result.warnings);
    return result;
}

// ---------------------------------------------------------------------------------------------
// Collective sweeps
// ---------------------------------------------------------------------------------------------

struct SweepGroup {
    int time = -1;
    double seconds_per_unit = 0;
    int algbw = -1;
    int busbw = -1;
    int wrong = -1;
};

// The column names of a sweep, read by LineScan (see line_scan.h for why not std::regex; a
// 100 kB `..._busbw` header crashed std::regex_match).

/// `^time\s*(?:\((\S+)\)|_(ns|us|ms|s))$`: the unit of a time column ("us" of "time(us)").
std::optional<std::string_view> time_column_unit(std::string_view n) {
    detail::LineScan s(n);
    if (!s.literal("time"))
        return std::nullopt;
    const auto after_time = s;
    s.spaces();
    if (s.one('(')) {
        const auto unit = s.word(); // \S+ takes the closing parenthesis too
        if (unit.size() >= 2 && unit.back() == ')' && s.at_end())
            return unit.substr(0, unit.size() - 1);
        return std::nullopt;
    }
    s = after_time;
    if (!s.one('_'))
        return std::nullopt;
    const auto unit = s.rest();
    if (unit == "ns" || unit == "us" || unit == "ms" || unit == "s")
        return unit;
    return std::nullopt;
}

/// `^(algbw|busbw)\s*(?:\(gb/s\)|_gbps)$`: which rate.
std::optional<std::string_view> rate_column(std::string_view n) {
    detail::LineScan s(n);
    const std::string_view rate = n.substr(0, 5);
    if (!s.literal("algbw") && !s.literal("busbw"))
        return std::nullopt;
    const auto after_rate = s;
    s.spaces();
    if (s.literal("(gb/s)") && s.at_end())
        return rate;
    s = after_rate;
    if (s.literal("_gbps") && s.at_end())
        return rate;
    return std::nullopt;
}

/// `^(.+)_busbw$`: the device of a per-device busbw column ('.' is no line break).
std::optional<std::string_view> device_busbw_column(std::string_view n) {
    constexpr std::string_view suffix = "_busbw";
    if (n.size() <= suffix.size() || n.substr(n.size() - suffix.size()) != suffix)
        return std::nullopt;
    const auto device = n.substr(0, n.size() - suffix.size());
    if (device.find_first_of("\n\r") != std::string_view::npos)
        return std::nullopt;
    return device;
}

/// The columns of a collective sweep: the size, the type, the column sets (out-of-place,
/// in-place) and the per-device busbw columns.
struct SweepColumns {
    int size = -1;
    int type = -1;
    std::vector<SweepGroup> groups = std::vector<SweepGroup>(1);
    std::vector<std::pair<std::string, int>> device_columns;
};

SweepColumns sweep_columns(const CsvTable& t, const std::string& where) {
    SweepColumns cols;
    int& size = cols.size;
    int& type = cols.type;
    std::vector<SweepGroup>& groups = cols.groups;
    std::vector<std::pair<std::string, int>>& device_columns = cols.device_columns;
    // A column already set in the current group starts the next group (the in-place set).
    auto put = [&](int SweepGroup::*field, int col) {
        if (groups.back().*field >= 0)
            groups.emplace_back();
        groups.back().*field = col;
    };
    for (std::size_t i = 0; i < t.normalized.size(); ++i) {
        const std::string& n = t.normalized[i];
        const int col = static_cast<int>(i);
        if (is_size_column(n) && size < 0) {
            size = col;
        } else if ((n == "type" || n == "dtype") && type < 0) {
            type = col;
        } else if (n == "count" || n == "count(elements)" || n == "redop" || n == "root") {
            continue;
        } else if (const auto unit = time_column_unit(n)) {
            const auto s = detail::seconds_per_unit(*unit);
            if (!s)
                throw InputError(fmt::format("{}: column '{}': unknown time unit '{}' (ns, us, "
                                             "ms or s)",
                                             where, base::excerpt(t.columns[i]),
                                             base::excerpt(*unit)));
            put(&SweepGroup::time, col);
            groups.back().seconds_per_unit = *s;
        } else if (n == "time") {
            throw InputError(fmt::format("{}: column '{}' has no unit: write time(ns), time(us) "
                                         "or time(ms)",
                                         where, t.columns[i]));
        } else if (const auto rate = rate_column(n)) {
            put(*rate == "algbw" ? &SweepGroup::algbw : &SweepGroup::busbw, col);
        } else if (n == "#wrong" || n == "wrong") {
            put(&SweepGroup::wrong, col);
        } else if (const auto device = device_busbw_column(n)) {
            device_columns.emplace_back(std::string(*device), col);
        } else if (step_column(n) != nullptr && size < 0) {
            throw InputError(fmt::format("{}: this looks like a table of training steps (column "
                                         "'{}') but has no step time column (iteration_time(ms), "
                                         "time(ms), elapsed_time_per_iteration(ms) or "
                                         "iteration_time(s)); a table of collectives would have "
                                         "a size(B) column first",
                                         where, base::excerpt(t.columns[i])));
        } else {
            throw InputError(fmt::format("{}: unknown column '{}' (known: size(B), count, type, "
                                         "time(ns|us|ms), algbw(GB/s), busbw(GB/s), #wrong, or "
                                         "DEVICE_busbw)",
                                         where, base::excerpt(t.columns[i])));
        }
    }
    if (size < 0)
        throw InputError(where + ": no size column (size(B) or bytes)");
    return cols;
}

/// Checks the column sets; with per-device busbw columns, the one --column chooses becomes the
/// busbw of the only set. Returns the device chosen ("" without such columns).
std::string check_column_sets(SweepColumns& cols, const ImportOptions& options,
                              const std::string& where) {
    std::vector<SweepGroup>& groups = cols.groups;
    const std::vector<std::pair<std::string, int>>& device_columns = cols.device_columns;
    std::string device;
    if (!device_columns.empty()) {
        if (groups.size() > 1 || groups.front().time >= 0 || groups.front().busbw >= 0)
            throw InputError(where + ": a table has either per-device busbw columns or time and "
                                     "busbw columns, not both");
        std::vector<std::string> devices;
        for (const auto& [d, c] : device_columns)
            devices.push_back(d);
        const std::string names = base::join(devices, ", ");
        const std::string want = detail::lower(options.column);
        int chosen = -1;
        for (const auto& [d, c] : device_columns) {
            if (want == d || want == d + "_busbw")
                chosen = c, device = d;
        }
        if (chosen < 0 && device_columns.size() == 1 && want.empty())
            chosen = device_columns.front().second, device = device_columns.front().first;
        if (chosen < 0)
            throw InputError(fmt::format("{}: the table has busbw for {}: choose one with "
                                         "--column{}",
                                         where, names,
                                         want.empty() ? "" : " (not '" + options.column + "')"));
        groups.front().busbw = chosen;
    } else if (!options.column.empty()) {
        throw InputError(where + ": --column chooses among DEVICE_busbw columns; this table has "
                                 "none");
    }
    if (groups.size() > 2)
        throw InputError(where + ": more than two column sets (out-of-place, in-place)");
    for (const auto& g : groups) {
        if (g.time < 0 && g.busbw < 0 && g.algbw < 0)
            throw InputError(where + ": a column set has neither a time nor a bandwidth column");
    }
    if (options.in_place && groups.size() == 2)
        throw InputError(where + ": --in-place is for tables with one column set; this one has "
                                 "out-of-place and in-place columns");

    return device;
}

/// The collective and the GPU count of a sweep: from the options or the file name, which must
/// not disagree.
std::pair<CollectiveOp, int> sweep_target(const std::string& name, const ImportOptions& options) {
    const auto op = detail::agree<CollectiveOp>(
        {{options.op, fmt::format("--op says {}", options.op ? to_string(*options.op) : "")},
         {detail::op_from_file_name(name),
          fmt::format("the file name says {}", detail::op_from_file_name(name)
                                                   ? to_string(*detail::op_from_file_name(name))
                                                   : "")}},
        name, "the collective from --op and from the file name");
    if (!op)
        throw InputError(fmt::format("{}: cannot tell the collective: pass --op ({})", name,
                                     strategies::collectives::op_names()));
    const auto gpus = detail::agree<int>(
        {{options.gpus, fmt::format("--gpus says {}", options.gpus.value_or(0))},
         {detail::gpus_from_file_name(name),
          fmt::format("the file name says {}", detail::gpus_from_file_name(name).value_or(0))}},
        name, "GPU counts from --gpus and from the file name");
    if (!gpus)
        throw InputError(name + ": cannot tell the GPU count: name it in the file name "
                                "(...-8gpu.csv) or pass --gpus");
    return {op->first, gpus->first};
}

/// What every row of a sweep shares.
struct SweepContext {
    const CsvTable& t;
    const std::string& name;
    const ImportOptions& options;
    const SweepColumns& cols;
    CollectiveOp op;
    int gpus;
    double factor; ///< bus bandwidth over algorithm bandwidth
};

/// One row: a measurement per column set, skipped where elements were wrong. `seen` maps each
/// point to its line (duplicates are errors); `derived` counts times derived from a bandwidth.
void import_sweep_row(const SweepContext& x, const config::CsvTable::Row& row, ImportResult& result,
                      std::map<std::string, int>& seen, int& derived) {
    const CsvTable& t = x.t;
    const std::string& name = x.name;
    const ImportOptions& options = x.options;
    const int size = x.cols.size;
    const int type = x.cols.type;
    const std::vector<SweepGroup>& groups = x.cols.groups;
    const double factor = x.factor;
    // Not a structured binding: the lambda below uses `fields`, and clang 14 (the
    // sanitizer build's compiler) cannot capture structured bindings.
    const int number = row.line;
    const std::vector<std::string>& fields = row.fields;
    const std::string at = fmt::format("{}:{}", name, number);
    const auto bytes = detail::parse_integer(fields[static_cast<std::size_t>(size)]);
    if (!bytes || *bytes <= 0)
        throw InputError(fmt::format("{}: {}: expected a positive byte count, got '{}'", at,
                                     t.columns[static_cast<std::size_t>(size)],
                                     fields[static_cast<std::size_t>(size)]));
    hardware::Dtype dtype = options.dtype.value_or(hardware::Dtype::fp32);
    if (type >= 0) {
        const auto d = detail::dtype_from_type_name(fields[static_cast<std::size_t>(type)]);
        if (!d)
            throw InputError(fmt::format("{}: type '{}' is not one clustersim models (float, "
                                         "half, bfloat16, double, f8e4m3)",
                                         at, fields[static_cast<std::size_t>(type)]));
        dtype = *d;
    }
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
        const SweepGroup& g = groups[gi];
        auto number_at = [&](int col, bool positive) -> std::optional<double> {
            if (col < 0 || fields[static_cast<std::size_t>(col)] == "N/A")
                return std::nullopt;
            const auto v = detail::parse_number(fields[static_cast<std::size_t>(col)]);
            if (!v || (positive ? !(*v > 0) : *v < 0))
                throw InputError(fmt::format("{}: {}: expected a {} number, got '{}'", at,
                                             t.columns[static_cast<std::size_t>(col)],
                                             positive ? "positive" : "non-negative",
                                             fields[static_cast<std::size_t>(col)]));
            return v;
        };
        const auto time = number_at(g.time, true);
        const auto algbw = number_at(g.algbw, false);
        const auto busbw = number_at(g.busbw, false);
        CollectiveMeasurement c;
        c.op = x.op;
        c.gpus = x.gpus;
        c.bytes = *bytes;
        c.dtype = dtype;
        c.in_place = groups.size() == 2 ? gi == 1 : options.in_place;
        c.source = at;
        if (time) {
            c.time = sim::Time::from_seconds(*time * g.seconds_per_unit);
        } else {
            // No time column: the time follows from a bandwidth, to the precision it is
            // printed with.
            double alg = algbw.value_or(0);
            if (!algbw && busbw && factor > 0)
                alg = *busbw / factor;
            if (!(alg > 0))
                throw InputError(fmt::format("{}: no time and a zero bandwidth: the time "
                                             "cannot be derived",
                                             at));
            c.time = sim::Time::from_seconds(static_cast<double>(*bytes) / (alg * 1e9));
            ++derived;
        }
        if (time) {
            const double alg = c.algbw() / 1e9;
            std::string e;
            if (algbw)
                e = detail::check_printed_rate("algbw", *algbw, alg);
            if (e.empty() && busbw)
                e = detail::check_printed_rate("busbw", *busbw, alg * factor);
            if (!e.empty())
                throw InputError(fmt::format("{}: {} for {} on {} GPUs: are the times in the "
                                             "unit the header says, and the GPU count right?",
                                             at, e, to_string(c.op), c.gpus));
        }
        if (g.wrong >= 0 && fields[static_cast<std::size_t>(g.wrong)] != "N/A") {
            const auto w = detail::parse_integer(fields[static_cast<std::size_t>(g.wrong)]);
            if (!w || *w < 0)
                throw InputError(fmt::format("{}: #wrong: expected a count or N/A, got '{}'", at,
                                             fields[static_cast<std::size_t>(g.wrong)]));
            c.wrong = *w;
            if (*w > 0) {
                result.warnings.push_back(fmt::format("{}: skipped {}: {} wrong elements", at,
                                                      detail::describe_point(c), *w));
                continue;
            }
        }
        const std::string key = detail::describe_point(c);
        const auto [it, inserted] = seen.emplace(key, number);
        if (!inserted)
            throw InputError(
                fmt::format("{}: duplicate point ({}): first at line {}", at, key, it->second));
        result.measurements.collectives.push_back(c);
    }
}

ImportResult import_sweep(const CsvTable& t, const std::string& name,
                          const ImportOptions& options) {
    const std::string where = fmt::format("{}:{}", name, t.header_line);
    SweepColumns cols = sweep_columns(t, where);
    const std::string device = check_column_sets(cols, options, where);
    const auto [op, gpus] = sweep_target(name, options);
    const double factor = strategies::collectives::bus_factor(op, gpus);

    ImportResult result;
    result.measurements.environment = detail::initial_environment(options);
    if (options.device.empty() && !device.empty())
        result.measurements.environment.device = device;
    result.measurements.environment.device_count = gpus;
    std::map<std::string, int> seen;
    int derived = 0;
    const SweepContext x{t, name, options, cols, op, gpus, factor};
    for (const auto& row : t.rows)
        import_sweep_row(x, row, result, seen, derived);
    if (derived > 0)
        result.warnings.push_back(fmt::format(
            "{}: no time column: {} times derived from the printed bandwidth (as precise as its "
            "digits)",
            name, derived));
    detail::warn_unknown_device(result, name, result.warnings);
    return result;
}
} // namespace

ImportResult import_csv(std::string_view text, const std::string& name,
                        const ImportOptions& options) {
    const CsvTable t = read_table(text, name);
    if (is_step_table(t))
        return import_steps(t, name, options);
    return import_sweep(t, name, options);
}

} // namespace clustersim::calibrate
