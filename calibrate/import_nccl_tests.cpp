// Importing nccl-tests logs (the output of all_reduce_perf and its siblings).
//
// A log is a sequence of comment lines ('#') and table rows. Before each table nccl-tests
// prints the test's parameters (`# nThread 1 nGpus 8 ...`), one `#  Rank N Group G Pid P on
// HOST device D [BUS] NAME` line per GPU (every process's, in MPI runs), a column header and a
// units line; after it `# Out of bounds values` and `# Avg bus bandwidth`. Versions differ in
// the columns (`redop`/`root` or not, `#wrong` or the old `error`), so the header drives the
// parsing.
#include "calibrate/import.h"

#include "base/error.h"
#include "base/text.h"
#include "calibrate/import_util.h"
#include "calibrate/line_scan.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

namespace clustersim::calibrate {
namespace {

using detail::Line;
using detail::LineScan;

// The patterns of the log, each read by a LineScan (see line_scan.h for why not std::regex).
// Each comment gives the regular expression it reads; `find_*` search the line (leftmost
// match), `read_*` match at its start.

/// `[N,M]<stdout>:` (mpirun --tag-output) or `\s*N: ` (srun --label) at the start: its length.
std::size_t launcher_tag_length(std::string_view text) {
    LineScan s(text);
    if (s.one('[') && !s.digits().empty() && s.one(',') && !s.digits().empty() &&
        s.literal("]<std") && (s.literal("out") || s.literal("err")) && s.literal(">:"))
        return s.pos();
    LineScan l(text);
    l.spaces();
    if (!l.digits().empty() && l.literal(": "))
        return l.pos();
    return 0;
}

/// `PREFIX(DIGITS)`, the leftmost PREFIX followed by a digit: the digits.
std::optional<std::string_view> find_number_after(std::string_view text, std::string_view prefix) {
    for (std::size_t at = text.find(prefix); at != std::string_view::npos;
         at = text.find(prefix, at + 1)) {
        LineScan s(text, at + prefix.size());
        if (const auto d = s.digits(); !d.empty())
            return d;
    }
    return std::nullopt;
}

/// `NCCL version (\d+\.\d+\.\d+)`
std::optional<std::string_view> find_nccl_version(std::string_view text) {
    constexpr std::string_view prefix = "NCCL version ";
    for (std::size_t at = text.find(prefix); at != std::string_view::npos;
         at = text.find(prefix, at + 1)) {
        LineScan s(text, at + prefix.size());
        const std::size_t start = s.pos();
        if (!s.digits().empty() && s.one('.') && !s.digits().empty() && s.one('.') &&
            !s.digits().empty())
            return text.substr(start, s.pos() - start);
    }
    return std::nullopt;
}

/// `^Avg bus bandwidth\s*:\s*(\S+)`
std::optional<std::string_view> read_footer(std::string_view body) {
    LineScan s(body);
    if (!s.literal("Avg bus bandwidth"))
        return std::nullopt;
    s.spaces();
    if (!s.one(':'))
        return std::nullopt;
    s.spaces();
    const auto w = s.word();
    return w.empty() ? std::nullopt : std::optional(w);
}

/// `(?:^|[^A-Za-z_])([A-Za-z_]+)_perf(?:_mpi)?\b`: the test's name ("all_reduce").
std::optional<std::string_view> find_perf(std::string_view body) {
    const auto boundary = [&](std::size_t i) {
        return i >= body.size() || !detail::is_word_char(body[i]);
    };
    std::size_t i = 0;
    while (i < body.size()) {
        if (!detail::is_letter_or_underscore(body[i])) {
            ++i;
            continue;
        }
        // A run of [A-Za-z_]: the longest name in it followed by _perf and a word boundary.
        const std::size_t start = i;
        while (i < body.size() && detail::is_letter_or_underscore(body[i]))
            ++i;
        const std::string_view run = body.substr(start, i - start);
        for (std::size_t p = run.rfind("_perf"); p != std::string_view::npos && p > 0;
             p = run.rfind("_perf", p - 1)) {
            const std::size_t after = start + p + 5;
            if ((body.substr(after, 4) == "_mpi" && boundary(after + 4)) || boundary(after))
                return run.substr(0, p);
        }
    }
    return std::nullopt;
}

/// `(?:\s|^)(?:SHORT|LONG)\s*=?\s*(\d+)`: a count given on the command line (`-g 8`).
std::optional<std::string_view> find_flag(std::string_view body, std::string_view short_flag,
                                          std::string_view long_flag) {
    for (std::size_t i = 0; i < body.size(); ++i) {
        if (i > 0 && !detail::is_space(body[i - 1]))
            continue;
        LineScan s(body, i);
        if (!s.literal(short_flag) && !s.literal(long_flag))
            continue;
        s.spaces();
        s.one('=');
        s.spaces();
        if (const auto d = s.digits(); !d.empty())
            return d;
    }
    return std::nullopt;
}

/// `^KEY:\s*(VALUE)\s*$` where VALUE is read by `value` (digits or letters).
template <typename Value>
std::optional<std::string_view> read_header_key(std::string_view body, std::string_view key,
                                                Value value) {
    LineScan s(body);
    if (!s.literal(key))
        return std::nullopt;
    s.spaces();
    const auto v = value(s);
    s.spaces();
    if (v.empty() || !s.at_end())
        return std::nullopt;
    return v;
}

/// `NCCL_ALGO=([A-Za-z_]+)(,[A-Za-z]|[:;^])?` where the second group did not match: the one
/// algorithm NCCL was forced to run (a list or a per-op setting forces no single one).
std::optional<std::string_view> find_forced_algorithm(std::string_view body) {
    constexpr std::string_view prefix = "NCCL_ALGO=";
    for (std::size_t at = body.find(prefix); at != std::string_view::npos;
         at = body.find(prefix, at + 1)) {
        LineScan s(body, at + prefix.size());
        const auto name = s.letters();
        if (name.empty())
            continue;
        const auto next = s.rest();
        const bool more = !next.empty() && (next[0] == ':' || next[0] == ';' || next[0] == '^' ||
                                            (next[0] == ',' && next.size() > 1 && next[1] != '_' &&
                                             detail::is_letter_or_underscore(next[1])));
        if (more)
            return std::nullopt;
        return name;
    }
    return std::nullopt;
}

/// `^nThread\s+(\d+)\s+nGpus\s+(\d+)`
std::optional<std::pair<std::string_view, std::string_view>> read_nthread(std::string_view body) {
    LineScan s(body);
    if (!s.literal("nThread") || !s.spaces())
        return std::nullopt;
    const auto threads = s.digits();
    if (threads.empty() || !s.spaces() || !s.literal("nGpus") || !s.spaces())
        return std::nullopt;
    const auto gpus = s.digits();
    if (gpus.empty())
        return std::nullopt;
    return std::pair(threads, gpus);
}

/// `^Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+
/// \[[^\]]*\]\s+(.*\S)`: the host and the device name.
std::optional<std::pair<std::string_view, std::string_view>> read_rank(std::string_view body) {
    LineScan s(body);
    const auto key_number = [&](std::string_view key) {
        return s.literal(key) && s.spaces() && !s.digits().empty() && s.spaces();
    };
    if (!key_number("Rank"))
        return std::nullopt;
    if (const LineScan before = s; !key_number("Group"))
        s = before;
    if (!key_number("Pid") || !s.literal("on") || !s.spaces())
        return std::nullopt;
    const auto host = s.word();
    if (host.empty() || !s.spaces() || !key_number("device") || !s.one('['))
        return std::nullopt;
    s.take_while([](char c) { return c != ']'; });
    if (!s.one(']') || !s.spaces())
        return std::nullopt;
    std::string_view name = s.rest();
    while (!name.empty() && detail::is_space(name.back()))
        name.remove_suffix(1);
    if (name.empty())
        return std::nullopt;
    return std::pair(host, name);
}

/// One column set of a table: out-of-place, then in-place.
struct Group {
    int time = -1;
    int algbw = -1;
    int busbw = -1;
    int wrong = -1;
    bool wrong_is_count = true; ///< `#wrong` counts elements; the old `error` is a max error
    double seconds_per_time_unit = 1e-6;
};

/// What the comment lines before a table said about it.
struct Preamble {
    std::optional<std::string> perf; ///< "all_reduce" from "all_reduce_perf"
    int perf_line = 0;
    std::optional<int> gpus_per_process; ///< -g x -t on the command line, or nThread x nGpus
    std::string gpus_per_process_from;
    int ranks = 0;
    std::string algorithm; ///< from NCCL_ALGO=X in the comments ("" when not forced)
    std::set<std::string> devices;
    std::set<std::string> hosts;
};

struct Table {
    int header_line = 0;
    std::vector<std::string> columns;
    int size = -1;
    int type = -1;
    int redop = -1;
    std::vector<Group> groups;
    bool units_seen = false;
    CollectiveOp op = CollectiveOp::all_reduce;
    int gpus = 0;
    std::vector<double> printed_busbw;
    int rows = 0;
    int zero_size_rows = 0;
    int not_measured = 0;
    int other_redops = 0;
};

class LogImporter {
public:
    LogImporter(const std::string& name, const ImportOptions& options)
        : name_(name)
        , options_(options) {
        result_.measurements.environment = detail::initial_environment(options);
    }

    ImportResult run(std::string_view text) {
        const auto lines = detail::split_lines(text);
        for (const auto& line : lines)
            handle(line.number, strip_prefix(line.text));
        if (table_)
            fail(lines.empty() ? 1 : lines.back().number,
                 fmt::format("the table that starts at line {} has no '# Avg bus bandwidth' line "
                             "after it: the log looks truncated",
                             table_->header_line));
        if (tables_ == 0 && text.find("elapsed time per iteration (ms):") != std::string_view::npos)
            throw InputError(fmt::format(
                "{}: a Megatron-LM training log (it prints 'elapsed time per iteration (ms)'), "
                "not an nccl-tests log; clustersim imports training steps as a CSV table, a row "
                "per run with columns such as gpus, tp, pp, dp, global_batch, micro_batch and "
                "iteration_time(ms)",
                name_));
        if (tables_ == 0)
            throw InputError(fmt::format(
                "{}: no nccl-tests table found (expected a '#  size  count  type ... time  algbw  "
                "busbw' header followed by rows)",
                name_));
        if (result_.measurements.collectives.empty())
            throw InputError(name_ + ": the nccl-tests tables hold no measured point");
        detail::warn_unknown_device(result_, name_, result_.warnings);
        return std::move(result_);
    }

private:
    [[noreturn]] void fail(int line, const std::string& what) const {
        throw InputError(fmt::format("{}:{}: {}", name_, line, what));
    }

    /// A count the log states (ranks, GPUs, threads; `product` of those already read, times
    /// this one): at most 2^24, else an error naming the line (std::stoi threw
    /// out_of_range on long digit runs and the products overflowed an int).
    int count_at(int line, const std::string& digits, std::string_view what,
                 std::int64_t product = 1) const {
        constexpr std::int64_t kMost = std::int64_t{1} << 24;
        const auto v = detail::parse_integer(digits);
        if (!v || *v > kMost || *v * product > kMost)
            fail(line,
                 fmt::format("{} {} is more than clustersim takes (at most {} GPUs)", what,
                             digits.size() > 20 ? digits.substr(0, 20) + "..." : digits, kMost));
        return static_cast<int>(*v * product);
    }

    /// `mpirun --tag-output` prefixes "[1,0]<stdout>:", `srun --label` prefixes "0: ".
    static std::string_view strip_prefix(std::string_view text) {
        text.remove_prefix(launcher_tag_length(text));
        return text;
    }

    static bool is_nccl_message(std::string_view text) {
        return text.find("NCCL INFO") != std::string_view::npos ||
               text.find("NCCL WARN") != std::string_view::npos;
    }

    void handle(int number, std::string_view text) {
        const std::string_view t = detail::trim(text);
        if (t.empty())
            return;
        note_versions(t);
        if (t.front() == '#') {
            comment(number, t);
            return;
        }
        const auto words = detail::split_words(t);
        const bool data = detail::parse_integer(words.front()).has_value();
        if (!table_) {
            if (data)
                fail(number, "a table row before any nccl-tests column header ('#  size  count  "
                             "type ...'): the log is cut at its start or garbled");
            return; // shell and launcher chatter outside the tables
        }
        if (!data) {
            if (is_nccl_message(t))
                return;
            fail(number, fmt::format("expected a table row (the table started at line {}), got "
                                     "'{}': the log is garbled",
                                     table_->header_line, t.substr(0, 60)));
        }
        row(number, words);
    }

    void note_versions(std::string_view t) {
        auto& env = result_.measurements.environment;
        if (const auto version = find_nccl_version(t)) {
            env.nccl_version = std::string(*version);
        } else if (const auto library = find_number_after(t, "nccl-library=");
                   library && env.nccl_version.empty()) {
            // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
            // A code too long to be one is left out, as a line without it.
            const auto parsed = detail::parse_integer(*library);
            if (!parsed || *parsed > 99'99'99)
                return;
            const auto code = static_cast<int>(*parsed);
            env.nccl_version = fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
        }
    }

    void comment(int number, std::string_view t) {
        const std::string_view body = detail::trim(t.substr(1));
        const auto words = detail::split_words(body);
        if (!words.empty() && detail::lower(words.front()) == "size") {
            header(number, words);
            return;
        }
        if (table_ && !table_->units_seen && table_->rows == 0 && !words.empty() &&
            words.front().front() == '(') {
            units(number, words);
            return;
        }
        if (const auto average = read_footer(body)) {
            end_table(number, std::string(*average));
            return;
        }
        if (body.find("Out of bounds values") != std::string_view::npos &&
            body.find("FAILED") != std::string_view::npos)
            result_.warnings.push_back(
                fmt::format("{}:{}: nccl-tests reports out-of-bounds values (FAILED): rows with "
                            "#wrong > 0 were skipped",
                            name_, number));
        preamble(number, body);
    }

    void preamble(int number, std::string_view body) {
        // Curated logs (data/reference) state the whole job in header comments: `nranks: 16`,
        // `op: all_reduce`; they hold for every table of the file. NCCL_ALGO=X names the
        // algorithm NCCL was forced to run (auto and a list of several force nothing).
        if (const auto n =
                read_header_key(body, "nranks:", [](LineScan& s) { return s.digits(); })) {
            file_ranks_ = count_at(number, std::string(*n), "nranks:");
            file_ranks_line_ = number;
            return;
        }
        if (const auto op = read_header_key(body, "op:", [](LineScan& s) { return s.letters(); })) {
            file_op_ = strategies::collectives::parse_op(*op);
            if (!file_op_)
                fail(number, fmt::format("op: '{}' is not a collective clustersim models ({})", *op,
                                         strategies::collectives::op_names()));
            file_op_line_ = number;
            return;
        }
        if (const auto forced = find_forced_algorithm(body)) {
            const auto a = strategies::collectives::parse_algorithm(*forced);
            if (a && *a != strategies::collectives::Algorithm::automatic)
                pre_.algorithm = std::string(strategies::collectives::to_string(*a));
        }
        if (const auto rank = read_rank(body)) {
            ++pre_.ranks;
            pre_.hosts.emplace(rank->first);
            pre_.devices.emplace(rank->second);
            return;
        }
        if (const auto nthread = read_nthread(body)) {
            const std::string threads(nthread->first);
            const std::string gpus(nthread->second);
            pre_.gpus_per_process =
                count_at(number, gpus, "nGpus", count_at(number, threads, "nThread"));
            pre_.gpus_per_process_from =
                fmt::format("line {} says nThread {} nGpus {}", number, threads, gpus);
            return;
        }
        if (const auto perf = find_perf(body)) {
            pre_.perf = std::string(*perf);
            pre_.perf_line = number;
            if (const auto g = find_flag(body, "-g", "--ngpus"); g && !pre_.gpus_per_process) {
                int threads = 1;
                if (const auto t = find_flag(body, "-t", "--nthreads"))
                    threads = count_at(number, std::string(*t), "-t");
                pre_.gpus_per_process = count_at(number, std::string(*g), "-g", threads);
                pre_.gpus_per_process_from = fmt::format("the command line at line {} runs {} GPUs",
                                                         number, *pre_.gpus_per_process);
            }
        }
    }

    void header(int number, const std::vector<std::string_view>& words) {
        if (table_)
            fail(number, fmt::format("a new table header before the table of line {} ended with "
                                     "'# Avg bus bandwidth': the log looks truncated",
                                     table_->header_line));
        Table t;
        t.header_line = number;
        Group g;
        auto set = [&](int& slot, int col) {
            if (slot >= 0) {
                t.groups.push_back(g);
                g = Group{};
            }
            slot = col;
        };
        for (std::size_t i = 0; i < words.size(); ++i) {
            const std::string w = detail::lower(words[i]);
            const int col = static_cast<int>(i);
            t.columns.push_back(w);
            if (w == "size" && t.size < 0)
                t.size = col;
            else if (w == "type" && t.type < 0)
                t.type = col;
            else if (w == "redop" && t.redop < 0)
                t.redop = col;
            else if (w == "count" || w == "root")
                continue;
            else if (w == "time")
                set(g.time, col);
            else if (w == "algbw")
                set(g.algbw, col);
            else if (w == "busbw")
                set(g.busbw, col);
            else if (w == "#wrong" || w == "wrong") {
                set(g.wrong, col);
                g.wrong_is_count = true;
            } else if (w == "error") {
                set(g.wrong, col);
                g.wrong_is_count = false;
            } else
                fail(number, fmt::format("unknown column '{}' in the nccl-tests header (known: "
                                         "size, count, type, redop, root, time, algbw, busbw, "
                                         "#wrong, error)",
                                         base::excerpt(words[i])));
        }
        t.groups.push_back(g);
        if (t.groups.size() > 2)
            fail(number, "the header has more than two column sets (out-of-place, in-place)");
        for (const auto& grp : t.groups) {
            if (grp.time < 0)
                fail(number, "a column set of the header has no 'time' column");
        }
        t.op = choose_op(number);
        t.gpus = choose_gpus(number);
        choose_device(number);
        table_ = t;
        ++tables_;
    }

    void units(int number, const std::vector<std::string_view>& words) {
        std::vector<double> time_units;
        for (auto w : words) {
            if (w.size() < 3 || w.front() != '(' || w.back() != ')')
                fail(number, fmt::format("expected a units line like '(B) (elements) (us) (GB/s)', "
                                         "got '{}'",
                                         w));
            const std::string_view u = w.substr(1, w.size() - 2);
            if (const auto s = detail::seconds_per_unit(u))
                time_units.push_back(*s);
            else if (detail::lower(u) != "b" && detail::lower(u) != "elements" &&
                     detail::lower(u) != "gb/s")
                fail(number, fmt::format("unknown unit '{}' (times in ns, us, ms or s; sizes in "
                                         "B; rates in GB/s)",
                                         w));
        }
        if (time_units.size() != table_->groups.size())
            fail(number, fmt::format("the units line names {} time units for the {} time columns "
                                     "of the header",
                                     time_units.size(), table_->groups.size()));
        for (std::size_t i = 0; i < time_units.size(); ++i)
            table_->groups[i].seconds_per_time_unit = time_units[i];
        table_->units_seen = true;
    }

    CollectiveOp choose_op(int number) {
        std::optional<CollectiveOp> from_log;
        if (pre_.perf) {
            from_log = strategies::collectives::parse_op(*pre_.perf);
            if (!from_log)
                fail(pre_.perf_line,
                     fmt::format("the log runs {}_perf, which is not a collective clustersim "
                                 "models ({})",
                                 base::excerpt(*pre_.perf), strategies::collectives::op_names()));
        }
        if (file_op_)
            from_log = from_log.value_or(*file_op_);
        const auto chosen = detail::agree<CollectiveOp>(
            {{from_log,
              fmt::format("line {} runs {}_perf", pre_.perf_line, pre_.perf.value_or(""))},
             {options_.op,
              fmt::format("--op says {}", options_.op ? to_string(*options_.op) : "")}},
            fmt::format("{}:{}", name_, number), "the log and --op");
        if (chosen)
            return chosen->first;
        if (const auto op = detail::op_from_file_name(name_))
            return *op;
        fail(number, "cannot tell which collective this table measures: the log names no "
                     "*_perf test and neither does the file name; pass --op");
    }

    int choose_gpus(int number) {
        std::optional<int> ranks;
        std::string ranks_from = fmt::format("the log lists {} '# Rank' lines", pre_.ranks);
        if (pre_.ranks > 0) {
            ranks = pre_.ranks;
        } else if (file_ranks_ > 0) {
            ranks = file_ranks_;
            ranks_from = fmt::format("line {} says nranks: {}", file_ranks_line_, file_ranks_);
        }
        // With `# Rank` lines (or an nranks header) the count is the whole job's; the
        // per-process counts (-g, nGpus) then say nothing about other processes.
        const auto chosen = detail::agree<int>(
            {{ranks, ranks_from},
             {options_.gpus, fmt::format("--gpus says {}", options_.gpus.value_or(0))},
             {ranks ? std::nullopt : pre_.gpus_per_process, pre_.gpus_per_process_from}},
            fmt::format("{}:{}", name_, number), "GPU counts");
        if (chosen)
            return chosen->first;
        if (const auto g = detail::gpus_from_file_name(name_))
            return *g;
        fail(number, "cannot tell how many GPUs ran this table: the log has no '# Rank' lines, "
                     "no -g, no nGpus, and the file name has no '8gpu'; pass --gpus");
    }

    void choose_device(int number) {
        auto& env = result_.measurements.environment;
        if (pre_.devices.size() > 1)
            fail(number, fmt::format("the '# Rank' lines name different GPUs ({} and {}): one "
                                     "measurement file describes one GPU model",
                                     *pre_.devices.begin(), *pre_.devices.rbegin()));
        if (pre_.devices.size() == 1) {
            const std::string& d = *pre_.devices.begin();
            if (!options_.device.empty() && options_.device != d)
                fail(number,
                     fmt::format("the log ran on '{}' but --device says '{}'", d, options_.device));
            if (env.device != "unknown" && env.device != d)
                fail(number,
                     fmt::format("this table ran on '{}', an earlier one on '{}'", d, env.device));
            env.device = d;
        }
        if (!pre_.hosts.empty()) {
            if (env.host.empty())
                env.host =
                    base::join(std::vector<std::string>(pre_.hosts.begin(), pre_.hosts.end()), ",");
        }
    }

    void row(int number, const std::vector<std::string_view>& words) {
        Table& t = *table_;
        if (words.size() != t.columns.size())
            fail(number, fmt::format("expected {} columns as the header at line {} says, got {}: "
                                     "the row is cut or garbled",
                                     t.columns.size(), t.header_line, words.size()));
        ++t.rows;
        const auto size = detail::parse_integer(words[static_cast<std::size_t>(t.size)]);
        if (!size || *size < 0)
            fail(number, fmt::format("size: expected a byte count, got '{}'",
                                     words[static_cast<std::size_t>(t.size)]));
        if (t.redop >= 0) {
            // `-o all` runs every reduction; the measurement format describes sums (and the
            // non-reducing collectives, whose redop is "none").
            const std::string op = detail::lower(words[static_cast<std::size_t>(t.redop)]);
            if (op != "sum" && op != "none" && op != "-") {
                ++t.other_redops;
                for (const Group& g : t.groups) {
                    // Still part of the footer's average.
                    if (g.busbw < 0)
                        continue;
                    if (const auto v =
                            detail::parse_number(words[static_cast<std::size_t>(g.busbw)]))
                        t.printed_busbw.push_back(*v);
                }
                return;
            }
        }
        hardware::Dtype dtype = options_.dtype.value_or(hardware::Dtype::fp32);
        if (t.type >= 0) {
            const auto name = words[static_cast<std::size_t>(t.type)];
            const auto d = detail::dtype_from_type_name(name);
            if (!d)
                fail(number, fmt::format("type '{}' is not one clustersim models (float, half, "
                                         "bfloat16, double, f8e4m3)",
                                         name));
            dtype = *d;
        }
        for (std::size_t gi = 0; gi < t.groups.size(); ++gi) {
            const Group& g = t.groups[gi];
            auto word = [&](int col) { return words[static_cast<std::size_t>(col)]; };
            auto rate = [&](int col, std::string_view what) -> std::optional<double> {
                if (col < 0 || word(col) == "N/A")
                    return std::nullopt;
                const auto v = detail::parse_number(word(col));
                if (!v || *v < 0)
                    fail(number, fmt::format("{}: expected a non-negative number, got '{}'", what,
                                             word(col)));
                return v;
            };
            const auto algbw = rate(g.algbw, "algbw");
            const auto busbw = rate(g.busbw, "busbw");
            if (busbw)
                t.printed_busbw.push_back(*busbw);
            if (*size == 0) {
                t.zero_size_rows += gi == 0 ? 1 : 0;
                continue;
            }
            if (word(g.time) == "N/A") {
                ++t.not_measured;
                continue;
            }
            const auto time = detail::parse_number(word(g.time));
            if (!time)
                fail(number, fmt::format("time: expected a number, got '{}'", word(g.time)));
            if (!(*time > 0))
                fail(number, fmt::format("time must be positive, got {}", word(g.time)));

            CollectiveMeasurement c;
            c.op = t.op;
            c.gpus = t.gpus;
            c.bytes = *size;
            c.dtype = dtype;
            c.in_place = gi == 1;
            c.time = sim::Time::from_seconds(*time * g.seconds_per_time_unit);
            c.source = fmt::format("{}:{}", name_, number);
            c.algorithm = pre_.algorithm;
            check_rates(number, c, algbw, busbw);

            if (g.wrong >= 0 && word(g.wrong) != "N/A") {
                if (g.wrong_is_count) {
                    const auto wrong = detail::parse_integer(word(g.wrong));
                    if (!wrong || *wrong < 0)
                        fail(number, fmt::format("#wrong: expected a count or N/A, got '{}'",
                                                 word(g.wrong)));
                    c.wrong = *wrong;
                } else if (!detail::parse_number(word(g.wrong))) {
                    fail(number,
                         fmt::format("error: expected a number or N/A, got '{}'", word(g.wrong)));
                }
            }
            if (c.wrong && *c.wrong > 0) {
                result_.warnings.push_back(
                    fmt::format("{}:{}: skipped {}: nccl-tests found {} wrong elements", name_,
                                number, detail::describe_point(c), *c.wrong));
                continue;
            }
            const std::string key = detail::describe_point(c);
            const auto [it, inserted] = seen_.emplace(key, number);
            if (!inserted && it->second >= t.header_line)
                fail(number,
                     fmt::format("duplicate point ({}): first at line {}", key, it->second));
            if (!inserted) { // another run of the same point, in an earlier table: keep the first
                result_.warnings.push_back(fmt::format(
                    "{}:{}: skipped {}: the table of line {} measured it already (line {})", name_,
                    number, key, t.header_line, it->second));
                continue;
            }
            result_.measurements.collectives.push_back(c);
        }
    }

    void check_rates(int number, const CollectiveMeasurement& c, std::optional<double> algbw,
                     std::optional<double> busbw) {
        const double alg = c.algbw() / 1e9;
        const double factor = strategies::collectives::bus_factor(c.op, c.gpus);
        if (algbw) {
            const std::string e = detail::check_printed_rate("algbw", *algbw, alg);
            if (!e.empty())
                fail(number, e + ": are the times in the unit the header says?");
        }
        if (busbw) {
            const std::string e = detail::check_printed_rate("busbw", *busbw, alg * factor);
            if (!e.empty()) {
                std::string hint;
                if (algbw && *algbw >= 1 && factor != 1.0) {
                    // busbw / algbw is nccl-tests' factor, which names the GPU count.
                    const double f = *busbw / *algbw;
                    const double n = c.op == CollectiveOp::all_reduce ? 2 / (2 - f) : 1 / (1 - f);
                    if (std::isfinite(n) && n >= 1.5 && std::abs(n - std::round(n)) < 0.1)
                        hint = fmt::format(" (busbw/algbw = {:.3f} is the factor for {} GPUs, not "
                                           "{})",
                                           f, std::lround(n), c.gpus);
                }
                fail(number,
                     fmt::format("{} for {} on {} GPUs{}", e, to_string(c.op), c.gpus, hint));
            }
        }
    }

    void end_table(int number, const std::string& avg_text) {
        if (!table_)
            fail(number, "'# Avg bus bandwidth' without a table before it");
        Table& t = *table_;
        if (t.rows == 0)
            fail(number, fmt::format("the table of line {} has no rows", t.header_line));
        const auto avg = detail::parse_number(avg_text);
        if (avg && !t.printed_busbw.empty() &&
            t.printed_busbw.size() == t.groups.size() * static_cast<std::size_t>(t.rows)) {
            double sum = 0;
            for (double b : t.printed_busbw)
                sum += b;
            const double mean = sum / static_cast<double>(t.printed_busbw.size());
            if (std::abs(mean - *avg) > 0.01 + 0.002 * *avg)
                fail(number, fmt::format("the rows' busbw average {:.4f} GB/s but this footer "
                                         "says {}: rows are missing or were edited",
                                         mean, avg_text));
        }
        if (t.zero_size_rows > 0)
            result_.warnings.push_back(
                fmt::format("{}:{}: skipped {} rows of size 0 (too small to split over {} GPUs)",
                            name_, t.header_line, t.zero_size_rows, t.gpus));
        if (t.other_redops > 0)
            result_.warnings.push_back(fmt::format(
                "{}:{}: skipped {} rows with a reduction other than sum (prod, max, min, avg)",
                name_, t.header_line, t.other_redops));
        if (t.not_measured > 0)
            result_.warnings.push_back(
                fmt::format("{}:{}: skipped {} column sets whose time is N/A", name_, t.header_line,
                            t.not_measured));
        auto& env = result_.measurements.environment;
        env.device_count = std::max(env.device_count, t.gpus);
        table_.reset();
        pre_ = Preamble{};
    }

    const std::string& name_;
    const ImportOptions& options_;
    ImportResult result_;
    Preamble pre_;
    std::optional<Table> table_;
    int tables_ = 0;
    std::map<std::string, int> seen_;
    int file_ranks_ = 0; ///< `nranks:` of a curated log's header, for all its tables
    int file_ranks_line_ = 0;
    std::optional<CollectiveOp> file_op_;
    int file_op_line_ = 0;
};

} // namespace

ImportResult import_nccl_tests_log(std::string_view text, const std::string& name,
                                   const ImportOptions& options) {
    return LogImporter(name, options).run(text);
}

} // namespace clustersim::calibrate
