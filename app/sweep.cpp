#include "app/sweep.h"

#include "base/error.h"
#include "base/units.h"
#include "sim/time.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <fstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace clustersim::app::sweep {

namespace sp = strategies::parallel;

// ---------------------------------------------------------------------------------------------
// Axes and grids

Axis parse_axis(const std::string& flag, const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw InputError(flag + ": expected KEY=V1,V2,... like parallel.tp=1,2,4,8, got '" + text +
                         "'");
    Axis a;
    a.key = text.substr(0, eq);
    const std::string list = text.substr(eq + 1);
    if (list.empty())
        throw InputError(flag + " " + a.key + ": the list of values is empty");
    for (std::size_t pos = 0;;) {
        const auto comma = list.find(',', pos);
        std::string v = list.substr(pos, comma == std::string::npos ? comma : comma - pos);
        if (v.empty())
            throw InputError(flag + " " + a.key + ": empty value in '" + list + "'");
        if (std::find(a.values.begin(), a.values.end(), v) != a.values.end())
            throw InputError(flag + " " + a.key + ": value '" + v + "' given twice");
        a.values.push_back(std::move(v));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    return a;
}

std::int64_t parse_max_memory(const std::string& text) {
    if (text.empty())
        return 0;
    std::int64_t bytes = 0;
    try {
        bytes = base::parse_bytes(text);
    } catch (const InputError& e) {
        throw InputError(std::string("--max-memory: ") + e.what());
    }
    if (bytes <= 0)
        throw InputError("--max-memory: expected a positive size like 40GiB, got '" + text + "'");
    return bytes;
}

std::vector<std::int64_t> parse_int_list(const std::string& flag, const std::string& text) {
    std::vector<std::string> items;
    for (std::size_t pos = 0;;) {
        const auto comma = text.find(',', pos);
        items.push_back(text.substr(pos, comma == std::string::npos ? comma : comma - pos));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    auto number = [&](const std::string& s) {
        std::int64_t v = 0;
        std::size_t used = 0;
        try {
            v = std::stoll(s, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != s.size() || s.empty() || v <= 0)
            throw InputError(flag + ": expected positive whole numbers like 8,16,...,4096, got '" +
                             s + "' in '" + text + "'");
        return v;
    };
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (items[i] != "...") {
            const std::int64_t v = number(items[i]);
            if (!out.empty() && v <= out.back())
                throw InputError(flag + ": the numbers must increase, got '" + text + "'");
            out.push_back(v);
            continue;
        }
        if (out.size() < 2 || i + 1 >= items.size() || items[i + 1] == "...")
            throw InputError(flag +
                             ": '...' needs two numbers before it and one after, as in "
                             "8,16,...,4096; got '" +
                             text + "'");
        const std::int64_t a = out[out.size() - 2], b = out.back();
        const std::int64_t last = number(items[i + 1]);
        const bool geometric = b % a == 0 && b / a > 1;
        for (std::int64_t v = geometric ? b * (b / a) : b + (b - a); v < last;
             v = geometric ? v * (b / a) : v + (b - a))
            out.push_back(v);
    }
    if (out.empty())
        throw InputError(flag + ": the list is empty");
    return out;
}

Grid::Grid(std::vector<Axis> axes)
    : axes_(std::move(axes)) {
    for (const Axis& a : axes_) {
        if (a.values.empty())
            throw std::invalid_argument("Grid: axis without values");
        size_ *= static_cast<std::int64_t>(a.values.size());
    }
}

std::vector<std::string> Grid::values(std::int64_t index) const {
    std::vector<std::string> v(axes_.size());
    for (std::size_t k = axes_.size(); k-- > 0;) {
        const auto n = static_cast<std::int64_t>(axes_[k].values.size());
        v[k] = axes_[k].values[static_cast<std::size_t>(index % n)];
        index /= n;
    }
    return v;
}

Settings Grid::settings(std::int64_t index) const {
    const auto v = values(index);
    Settings s;
    for (std::size_t k = 0; k < axes_.size(); ++k)
        s.emplace_back(axes_[k].key, v[k]);
    return s;
}

// ---------------------------------------------------------------------------------------------
// Evaluation

std::string strip_path(const std::string& message, const std::string& path) {
    if (path.empty() || message.rfind(path, 0) != 0)
        return message;
    std::size_t i = path.size();
    // ":LINE:COL" after the path, then ": ".
    while (i < message.size() && message[i] == ':' && i + 1 < message.size() &&
           std::isdigit(static_cast<unsigned char>(message[i + 1]))) {
        ++i;
        while (i < message.size() && std::isdigit(static_cast<unsigned char>(message[i])))
            ++i;
    }
    if (message.compare(i, 2, ": ") == 0)
        return message.substr(i + 2);
    return message;
}

struct Evaluator::Slot {
    std::once_flag once;
    std::unique_ptr<sp::StepSimulator> simulator;
};

void keep_freed_memory() {
    static std::once_flag once;
    std::call_once(once, [] {
#if defined(__GLIBC__)
        // A step of a long pipeline allocates and frees megabytes (a pass record per
        // micro-batch and stage). glibc's defaults give memory above 128 KiB back to the system
        // on free and fault it in again on the next configuration: in a sweep of Turing-530B
        // that kernel work took more time than the simulations (perf: page faults 30% of the
        // samples; 16 s of system time in 44 s). Keep freed memory in the process instead:
        // blocks up to 32 MiB (glibc's largest mmap threshold) from the heap, the heap's top
        // trimmed only above 1 GiB, grown 64 MiB at a time.
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        mallopt(M_TOP_PAD, 64 << 20);
#endif
    });
}

Evaluator::Evaluator(const ExperimentVariants& variants, EvalOptions options)
    : variants_(variants)
    , options_(options) {
    keep_freed_memory();
}

Evaluator::~Evaluator() = default;

Settings Evaluator::with_gpus(const Settings& overrides) const {
    if (options_.gpus <= 0)
        return overrides;
    Settings s;
    s.reserve(overrides.size() + 1);
    s.emplace_back("gpus", std::to_string(options_.gpus));
    s.insert(s.end(), overrides.begin(), overrides.end());
    return s;
}

ExperimentSpec Evaluator::experiment(const Settings& overrides) const {
    ExperimentSpec e = variants_.read(with_gpus(overrides));
    if (options_.derive_dp)
        e.parallel.dp = 0;
    if (options_.max_memory > 0)
        e.cluster.node.gpu.hbm_bytes = options_.max_memory;
    sp::validate_experiment(e);
    return e;
}

const sp::StepSimulator& Evaluator::simulator(const Settings& overrides,
                                              const ExperimentSpec& e) const {
    // The cluster depends only on the keys that re-read the hardware (and the model, which
    // does not matter here but keeps the key simple).
    Settings key;
    for (const auto& kv : with_gpus(overrides)) {
        if (sp::is_heavy_key(kv.first))
            key.push_back(kv);
    }
    std::shared_ptr<Slot> slot;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& s = simulators_[key];
        if (!s)
            s = std::make_shared<Slot>();
        slot = s;
    }
    std::call_once(slot->once,
                   [&] { slot->simulator = std::make_unique<sp::StepSimulator>(e.cluster); });
    return *slot->simulator;
}

Outcome Evaluator::evaluate(const Settings& overrides) const {
    Outcome o;
    try {
        const ExperimentSpec e = experiment(overrides);
        sp::StepOptions so;
        so.fidelity = options_.fidelity;
        so.oom_advice = false; // a sweep reports OOM; searching a fix would cost 5 more steps
        o.result = simulator(overrides, e).simulate(e, so);
        o.valid = true;
        o.gpus = e.gpus;
        o.tp = e.parallel.tp;
        o.pp = e.parallel.pp;
        o.dp = e.parallel.dp;
        o.micro_batch = e.training.micro_batch;
        o.micro_batches = e.micro_batches();
        o.virtual_stages = e.parallel.virtual_stages;
        o.schedule = std::string(sp::to_string(e.parallel.schedule));
        o.recompute = std::string(sp::to_string(e.parallel.recompute));
    } catch (const InputError& err) {
        o.valid = false;
        o.reason = strip_path(err.what(), variants_.path());
    }
    return o;
}

// ---------------------------------------------------------------------------------------------
// CSV

const std::vector<std::string>& result_columns() {
    static const std::vector<std::string> columns{"gpus",
                                                  "tp",
                                                  "pp",
                                                  "dp",
                                                  "micro_batch",
                                                  "micro_batches",
                                                  "virtual_stages",
                                                  "schedule",
                                                  "recompute",
                                                  "step_time_s",
                                                  "tokens_per_s",
                                                  "mfu",
                                                  "bubble_fraction",
                                                  "compute_s",
                                                  "recompute_s",
                                                  "host_s",
                                                  "tp_comm_exposed_s",
                                                  "pp_bubble_s",
                                                  "pp_comm_exposed_s",
                                                  "dp_comm_exposed_s",
                                                  "optimizer_s",
                                                  "peak_bytes",
                                                  "capacity_bytes",
                                                  "oom",
                                                  "oom_stage",
                                                  "oom_excess_bytes",
                                                  "invalid_reason"};
    return columns;
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
    std::vector<std::string> fields;
    std::string cur;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < line.size() && line[i + 1] == '"') {
                    cur += '"';
                    ++i;
                } else {
                    quoted = false;
                }
            } else {
                cur += c;
            }
        } else if (c == '"') {
            if (!cur.empty())
                throw InputError("a quote inside an unquoted field");
            quoted = true;
        } else if (c == ',') {
            fields.push_back(std::move(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (quoted)
        throw InputError("a quoted field without its closing quote");
    fields.push_back(std::move(cur));
    return fields;
}

namespace {

/// Doubles with nine significant digits: exact enough to compare, the same bytes every time.
std::string num(double v) {
    return fmt::format("{:.9g}", v);
}

} // namespace

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
    s += fmt::format(",{},{},{},{},{},{},{},{},{}", o.gpus, o.tp, o.pp, o.dp, o.micro_batch,
                     o.micro_batches, o.virtual_stages, o.schedule, o.recompute);
    for (double v : {r.step_time_s, r.tokens_per_s, r.mfu, r.bubble_fraction, b.compute_s,
                     b.recompute_s, b.host_s, b.tp_comm_exposed_s, b.pp_bubble_s,
                     b.pp_comm_exposed_s, b.dp_comm_exposed_s, b.optimizer_s})
        s += "," + num(v);
    s += fmt::format(",{},{},{},{},{},", r.peak_bytes_max, r.capacity_bytes,
                     r.oom ? "true" : "false", r.oom ? std::to_string(r.oom_stage) : "",
                     r.oom ? std::to_string(r.oom_excess_bytes) : "");
    return s;
}

std::uint64_t file_hash(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(path + ": cannot open the file");
    std::uint64_t h = 14695981039346656037ull;
    char buf[1 << 14];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        for (std::streamsize i = 0; i < in.gcount(); ++i) {
            h ^= static_cast<unsigned char>(buf[i]);
            h *= 1099511628211ull;
        }
    }
    return h;
}

std::string csv_header(const Identity& id, const std::vector<std::string>& columns) {
    std::string h = "# clustersim sweep (CSV; rows in configuration order; --resume continues "
                    "this file)\n";
    h += fmt::format("# experiment: {} (fnv1a64 {:016x})\n", id.experiment, id.experiment_hash);
    for (const auto& [k, v] : id.fixed)
        h += "# set: " + k + "=" + v + "\n";
    for (const Axis& a : id.axes) {
        std::string values;
        for (const auto& v : a.values)
            values += (values.empty() ? "" : ",") + v;
        h += "# vary: " + a.key + "=" + values + "\n";
    }
    h += fmt::format("# options: gpus={} max_memory={} fidelity={}\n",
                     id.gpus > 0 ? std::to_string(id.gpus) : std::string("experiment"),
                     id.max_memory > 0 ? std::to_string(id.max_memory) : std::string("hbm"),
                     id.fidelity);
    std::uint64_t hash = 14695981039346656037ull;
    for (char c : h) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ull;
    }
    h += fmt::format("# sweep-id: {:016x}\n", hash);
    std::string line;
    for (const auto& c : columns)
        line += (line.empty() ? "" : ",") + c;
    return h + line + "\n";
}

Existing read_existing(const std::string& path, const std::string& header, std::int64_t configs) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(path + ": cannot open the file to resume");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.compare(0, header.size(), header) != 0) {
        // Say which line differs.
        std::istringstream a(header), b(text);
        std::string la, lb;
        int line = 0;
        while (std::getline(a, la)) {
            ++line;
            if (!std::getline(b, lb) || la != lb)
                break;
        }
        throw InputError(fmt::format(
            "{}:{}: --resume: this CSV is from a different sweep (expected '{}', found '{}'); "
            "resume only with the same experiment file, --vary, --set, --gpus, --max-memory "
            "and --fidelity, or write to another --out",
            path, line, la, lb));
    }
    Existing ex;
    const std::size_t last_line = header.rfind('\n', header.size() - 2) + 1;
    const std::size_t columns =
        split_csv(header.substr(last_line, header.size() - 1 - last_line)).size();
    std::size_t pos = header.size();
    int line_no = static_cast<int>(std::count(header.begin(), header.end(), '\n'));
    std::int64_t expected = 0;
    while (pos < text.size()) {
        const auto nl = text.find('\n', pos);
        if (nl == std::string::npos)
            break; // a partial last line: the sweep was stopped while writing it
        ++line_no;
        const std::string row = text.substr(pos, nl - pos);
        std::vector<std::string> f;
        try {
            f = split_csv(row);
        } catch (const InputError& e) {
            throw InputError(
                fmt::format("{}:{}: --resume: malformed row: {}", path, line_no, e.what()));
        }
        std::int64_t index = -1;
        try {
            std::size_t used = 0;
            index = std::stoll(f[0], &used);
            if (used != f[0].size())
                index = -1;
        } catch (const std::exception&) {
            index = -1;
        }
        if (f.size() != columns || index < 0 || index >= configs)
            throw InputError(fmt::format("{}:{}: --resume: malformed row (expected {} fields "
                                         "starting with a configuration number below {})",
                                         path, line_no, columns, configs));
        if (!ex.done.insert(index).second)
            throw InputError(fmt::format("{}:{}: --resume: configuration {} appears twice", path,
                                         line_no, index));
        ex.in_order = ex.in_order && index == expected;
        ++expected;
        ex.rows.push_back(row);
        pos = nl + 1;
    }
    ex.keep_bytes = static_cast<std::int64_t>(pos);
    return ex;
}

LineWriter::LineWriter(const std::string& path, bool fresh, const std::string& header,
                       std::int64_t keep_bytes)
    : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | (fresh ? O_TRUNC : 0), 0644);
    if (fd_ < 0)
        throw InputError(path + ": cannot write: " + std::strerror(errno));
    if (fresh) {
        write_all(header);
    } else {
        if (::ftruncate(fd_, keep_bytes) != 0 || ::lseek(fd_, 0, SEEK_END) < 0) {
            const std::string why = std::strerror(errno);
            ::close(fd_);
            throw InputError(path + ": cannot resume: " + why);
        }
    }
}

LineWriter::~LineWriter() {
    if (fd_ >= 0)
        ::close(fd_);
}

void LineWriter::write_all(const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            throw InputError(path_ + ": write failed: " + std::strerror(errno));
        }
        done += static_cast<std::size_t>(n);
    }
}

void LineWriter::write_line(const std::string& line) {
    write_all(line + "\n");
}

// ---------------------------------------------------------------------------------------------
// Running

OrderedSink::OrderedSink(std::vector<std::int64_t> order,
                         std::function<void(std::int64_t, const std::string&)> emit)
    : order_(std::move(order))
    , emit_(std::move(emit)) {
}

void OrderedSink::submit(std::int64_t index, std::string row) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (next_ < order_.size() && index == order_[next_]) {
        emit_(index, row);
        ++next_;
    } else {
        waiting_.emplace(index, std::move(row));
    }
    for (auto it = waiting_.begin();
         next_ < order_.size() && it != waiting_.end() && it->first == order_[next_];
         it = waiting_.erase(it), ++next_)
        emit_(it->first, it->second);
}

std::int64_t OrderedSink::emitted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::int64_t>(next_);
}

std::size_t OrderedSink::pending() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_.size();
}

void run_pool(const std::vector<std::int64_t>& indices, int jobs,
              const std::function<std::string(std::int64_t)>& work, OrderedSink& sink) {
    const std::size_t n = indices.size();
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto worker = [&] {
        while (!stop) {
            const std::size_t i = next.fetch_add(1);
            if (i >= n)
                return;
            try {
                sink.submit(indices[i], work(indices[i]));
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error)
                    error = std::current_exception();
                stop = true;
            }
        }
    };
    const std::size_t threads =
        std::min<std::size_t>(static_cast<std::size_t>(std::max(1, jobs)), n);
    if (threads <= 1) {
        worker();
    } else {
        std::vector<std::thread> pool;
        for (std::size_t t = 0; t < threads; ++t)
            pool.emplace_back(worker);
        for (auto& t : pool)
            t.join();
    }
    if (error)
        std::rethrow_exception(error);
}

std::vector<Outcome> evaluate_all(const Evaluator& evaluator, const std::vector<Settings>& configs,
                                  int jobs) {
    std::vector<Outcome> out(configs.size());
    std::vector<std::int64_t> indices(configs.size());
    for (std::size_t i = 0; i < configs.size(); ++i)
        indices[i] = static_cast<std::int64_t>(i);
    OrderedSink sink(indices, [](std::int64_t, const std::string&) {});
    run_pool(
        indices, jobs,
        [&](std::int64_t i) {
            out[static_cast<std::size_t>(i)] =
                evaluator.evaluate(configs[static_cast<std::size_t>(i)]);
            return std::string();
        },
        sink);
    return out;
}

int default_jobs() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

namespace {
double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
} // namespace

bool is_terminal(const std::ostream& err) {
    return &err == &std::cerr && ::isatty(STDERR_FILENO) != 0;
}

Progress::Progress(std::ostream& out, bool enabled, std::int64_t total, std::string what)
    : out_(out)
    , enabled_(enabled && total > 0)
    , total_(total)
    , what_(std::move(what))
    , start_(enabled ? now_seconds() : 0) {
}

void Progress::update(std::int64_t done) {
    if (!enabled_)
        return;
    std::lock_guard<std::mutex> lock(mutex_);
    const double t = now_seconds();
    if (done < total_ && t - last_draw_ < 0.1)
        return;
    last_draw_ = t;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / total_);
    const double rate = t > start_ ? static_cast<double>(done) / (t - start_) : 0;
    fmt::print(
        out_, "\r[{}{}] {}/{} {}, {:.0f}/s ", std::string(static_cast<std::size_t>(filled), '#'),
        std::string(static_cast<std::size_t>(kWidth - filled), ' '), done, total_, what_, rate);
    out_.flush();
}

void Progress::finish() {
    if (!enabled_)
        return;
    update(total_);
    std::lock_guard<std::mutex> lock(mutex_);
    const double t = now_seconds() - start_;
    fmt::print(out_, "\r{}\rdone: {} {} in {:.2f} s ({:.0f}/s)\n", std::string(80, ' '), total_,
               what_, t, t > 0 ? static_cast<double>(total_) / t : 0.0);
    enabled_ = false;
}

// ---------------------------------------------------------------------------------------------
// Top table

namespace {

std::size_t column_of(const std::vector<std::string>& columns, const std::string& name) {
    const auto it = std::find(columns.begin(), columns.end(), name);
    if (it == columns.end())
        throw std::logic_error("sweep: no column " + name);
    return static_cast<std::size_t>(it - columns.begin());
}

/// Result columns counted from the end of a row.
std::size_t result_column(std::size_t columns, const std::string& name) {
    const auto& r = result_columns();
    return columns - r.size() + column_of(r, name);
}

double to_double(const std::string& s) {
    try {
        return s.empty() ? 0.0 : std::stod(s);
    } catch (const std::exception&) {
        return 0.0;
    }
}

} // namespace

RowSummary summarize(const std::string& row, std::size_t columns) {
    RowSummary s;
    s.fields = split_csv(row);
    if (s.fields.size() != columns)
        throw std::logic_error("sweep: a row with " + std::to_string(s.fields.size()) +
                               " fields, expected " + std::to_string(columns));
    s.index = std::stoll(s.fields[0]);
    s.valid = s.fields[result_column(columns, "invalid_reason")].empty();
    s.oom = s.fields[result_column(columns, "oom")] == "true";
    s.tokens_per_s = to_double(s.fields[result_column(columns, "tokens_per_s")]);
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

void print_top(std::ostream& out, const std::vector<std::string>& columns,
               const std::vector<Axis>& axes, const std::vector<RowSummary>& rows) {
    const std::size_t n = columns.size();
    std::vector<std::string> head{"#", "config"};
    for (const Axis& a : axes)
        head.push_back(a.key);
    for (const char* h :
         {"tp x pp x dp", "mb x m", "step time", "tokens/s", "MFU", "bubble", "peak GB", "fits"})
        head.push_back(h);
    std::vector<std::vector<std::string>> table;
    int rank = 0;
    for (const RowSummary& r : rows) {
        const auto& f = r.fields;
        auto at = [&](const char* name) { return f[result_column(n, name)]; };
        std::vector<std::string> line{std::to_string(++rank), f[0]};
        for (std::size_t k = 0; k < axes.size(); ++k)
            line.push_back(f[1 + k]);
        line.push_back(at("tp") + " x " + at("pp") + " x " + at("dp"));
        line.push_back(at("micro_batch") + " x " + at("micro_batches"));
        line.push_back(base::format_time(sim::Time::from_seconds(to_double(at("step_time_s")))));
        line.push_back(fmt::format("{:.0f}", r.tokens_per_s));
        line.push_back(fmt::format("{:.1f}%", 100 * to_double(at("mfu"))));
        line.push_back(fmt::format("{:.1f}%", 100 * to_double(at("bubble_fraction"))));
        line.push_back(fmt::format("{:.1f}", to_double(at("peak_bytes")) / 1e9));
        line.push_back(r.oom ? "OOM" : "yes");
        table.push_back(std::move(line));
    }
    std::vector<std::size_t> width(head.size());
    for (std::size_t c = 0; c < head.size(); ++c) {
        width[c] = head[c].size();
        for (const auto& line : table)
            width[c] = std::max(width[c], line[c].size());
    }
    auto print_line = [&](const std::vector<std::string>& cells) {
        std::string s;
        for (std::size_t c = 0; c < cells.size(); ++c)
            s += (c == 0 ? "" : "  ") + fmt::format("{:>{}}", cells[c], width[c]);
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        out << s << "\n";
    };
    print_line(head);
    for (const auto& line : table)
        print_line(line);
}

} // namespace clustersim::app::sweep
