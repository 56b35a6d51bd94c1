#include "explore/resume.h"

#include "base/error.h"
#include "base/text.h"
#include "config/input_record.h"
#include "explore/sweep_row.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace clustersim::explore {

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

std::string sweep_identity(const Identity& id) {
    std::string h = "clustersim sweep (rows in configuration order; --resume continues it)\n";
    h += fmt::format("experiment: {} (fnv1a64 {:016x})\n", id.experiment, id.experiment_hash);
    for (const auto& [k, v] : id.fixed)
        h += "set: " + k + "=" + v + "\n";
    for (const Axis& a : id.axes) {
        h += "vary: " + a.key + "=" + base::join(a.values, ",") + "\n";
    }
    h += fmt::format("options: gpus={} max_memory={} fidelity={}\n",
                     id.gpus > 0 ? std::to_string(id.gpus) : std::string("experiment"),
                     id.max_memory > 0 ? std::to_string(id.max_memory) : std::string("hbm"),
                     id.fidelity);
    std::uint64_t hash = 14695981039346656037ull;
    for (char c : h) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ull;
    }
    return h + fmt::format("sweep-id: {:016x}\n", hash);
}

std::string csv_header(const std::vector<std::string>& columns) {
    return base::join(columns, ",") + "\n";
}

namespace {

/// The first line where `found` departs from `expected`: its number and the two lines.
struct LineDifference {
    int line = 0;
    std::string expected, found;
};

LineDifference first_difference(const std::string& expected, const std::string& found) {
    std::istringstream a(expected), b(found);
    LineDifference d;
    while (std::getline(a, d.expected)) {
        ++d.line;
        if (!std::getline(b, d.found) || d.expected != d.found)
            break;
    }
    return d;
}

} // namespace

void check_identity(const std::string& where, const std::string& expected,
                    const std::string& found) {
    if (found == expected)
        return;
    const auto [line, la, lb] = first_difference(expected, found);
    throw InputError(fmt::format(
        "{}: --resume: this CSV is from a different sweep (line {} of its identity: expected "
        "'{}', found '{}'); resume only with the same experiment file, --vary, --set, --gpus, "
        "--max-memory and --fidelity, or write to another --out",
        where, line, la, lb));
}

Existing read_existing(const std::string& path, const std::string& header, std::int64_t configs) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(path + ": cannot open the file to resume");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.compare(0, header.size(), header) != 0) {
        // Say which line differs.
        const auto [line, la, lb] = first_difference(header, text);
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

std::string sorted_csv(const std::string& text, const std::string& header) {
    std::vector<std::pair<std::int64_t, std::string>> rows;
    std::istringstream lines(text.substr(header.size()));
    for (std::string line; std::getline(lines, line);)
        rows.emplace_back(std::stoll(line.substr(0, line.find(','))), line);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string sorted = header;
    for (const auto& r : rows)
        sorted += r.second + "\n";
    return sorted;
}

LineWriter::LineWriter(const std::string& path)
    : path_(path) {
    // Before O_CREAT: `--out model.yaml` where the experiment reads that model.
    config::refuse_if_read(path, "--out");
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
        throw InputError(path + ": cannot write: " + std::strerror(errno));
    // Non-blocking: a sweep that waited for another to finish would then overwrite its rows.
    // Only a held lock refuses; a file system without locks (ENOLCK, EINVAL) writes unlocked.
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        ::close(fd_);
        fd_ = -1;
        throw InputError(path +
                         ": another sweep is writing this file (it is locked); wait for it to "
                         "finish or give another --out");
    }
}

LineWriter::LineWriter(const std::string& path, bool fresh, const std::string& header,
                       std::int64_t keep_bytes)
    : LineWriter(path) {
    start(fresh, header, keep_bytes);
}

void LineWriter::start(bool fresh, const std::string& header, std::int64_t keep_bytes) {
    struct stat st {};
    // A device or FIFO (/dev/null, a pipe) cannot be truncated: write through it.
    const bool regular = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
    if (regular && (::ftruncate(fd_, fresh ? 0 : keep_bytes) != 0 || ::lseek(fd_, 0, SEEK_END) < 0))
        throw InputError(path_ + (fresh ? ": cannot write: " : ": cannot resume: ") +
                         std::strerror(errno));
    if (fresh)
        write_all(header);
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

} // namespace clustersim::explore
