#include "app/output.h"

#include "base/error.h"
#include "base/text.h"
#include "config/input_record.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace clustersim::app {

namespace {

namespace fs = std::filesystem;

// The temporary file being written, so that SIGINT, SIGTERM or SIGXFSZ does not leave it
// behind. A signal handler may only touch lock-free atomics and call async-signal-safe
// functions (unlink, signal, raise), hence a fixed buffer and a flag instead of a std::string.
char pending_temp[4096];
std::atomic<bool> temp_pending{false};

extern "C" void remove_temp_and_reraise(int sig) {
    if (temp_pending.load())
        ::unlink(pending_temp);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void install_cleanup_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        // SIGXFSZ: a write past `ulimit -f` kills the process; the temporary goes first.
        for (int sig : {SIGINT, SIGTERM, SIGXFSZ}) {
            // Only where nobody else handles the signal (an MPI runtime may).
            struct sigaction old {};
            if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL)
                std::signal(sig, remove_temp_and_reraise);
        }
    });
}

/// Writes all of `content` to `fd`; false on error (errno set).
bool write_all(int fd, std::string_view content) {
    while (!content.empty()) {
        const ssize_t n = ::write(fd, content.data(), content.size());
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        content.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

std::string error_text(int err) {
    return std::strerror(err);
}

/// A device, FIFO or socket (`--trace /dev/null`, a pipe): nothing there can be replaced
/// atomically, and replacing it by a regular file would be damage; write through it.
void write_through(const std::string& path, std::string_view content) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        throw InputError(path + ": cannot write: " + error_text(errno));
    const bool ok = write_all(fd, content);
    const int err = errno;
    ::close(fd);
    if (!ok)
        throw InputError(path + ": write failed: " + error_text(err));
}

} // namespace

void write_file_atomically(const std::string& path, std::string_view content) {
    if (path.empty())
        throw InputError("an output path is empty: give a file name");
    // Whatever named it (an experiment's hardware, an extends: chain), a file this command
    // read is never replaced by one it writes.
    config::refuse_if_read(path);
    fs::path target(path);
    std::error_code ec;
    // A symbolic link stays a link: the file it points to is the one replaced.
    if (fs::is_symlink(fs::symlink_status(target, ec))) {
        const fs::path resolved = fs::weakly_canonical(target, ec);
        if (ec)
            throw InputError(path + ": cannot resolve the link: " + ec.message());
        target = resolved;
    }
    const fs::file_status status = fs::status(target, ec);
    if (fs::exists(status)) {
        if (fs::is_directory(status))
            throw InputError(path + ": is a directory; give a file name");
        if (!fs::is_regular_file(status)) {
            write_through(target.string(), content);
            return;
        }
    }
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir))
        throw InputError(path + ": cannot write: directory '" + dir.string() + "' does not exist");
    // Built by appends: GCC 12 warns falsely (-Wrestrict) on the chained operator+ form.
    std::string tmp_name = ".";
    tmp_name.append(target.filename().string()).append(".tmp.").append(std::to_string(::getpid()));
    const std::string tmp = (dir / tmp_name).string();
    if (tmp.size() >= sizeof pending_temp)
        throw InputError(path + ": cannot write: the path is too long");

    install_cleanup_handlers();
    std::memcpy(pending_temp, tmp.c_str(), tmp.size() + 1);
    temp_pending.store(true);
    auto fail = [&](const std::string& what) {
        ::unlink(tmp.c_str());
        temp_pending.store(false);
        throw InputError(path + ": " + what);
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        const int err = errno;
        temp_pending.store(false);
        throw InputError(path + ": cannot write: " + error_text(err));
    }
    // fsync before the rename: after a crash the target is the old file or the new one whole,
    // never a new name over data not yet on disk.
    const bool written = write_all(fd, content) && ::fsync(fd) == 0;
    const int err = errno;
    if (::close(fd) != 0 || !written)
        fail("write failed: " + error_text(written ? errno : err));
    if (::rename(tmp.c_str(), target.c_str()) != 0)
        fail("cannot write: " + error_text(errno));
    temp_pending.store(false);
}

void refuse_output_over_input(const std::string& output, const std::string& option,
                              const std::vector<std::string>& inputs) {
    if (output.empty())
        return;
    for (const std::string& input : inputs) {
        if (!input.empty() && same_file(output, input))
            throw InputError(option + " " + output + ": is an input of this command (" + input +
                             "); writing it would destroy it: give another file");
    }
}

void refuse_same_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            const auto& [option_a, a] = outputs[j];
            const auto& [option_b, b] = outputs[i];
            if (!a.empty() && !b.empty() && same_file(a, b))
                throw InputError(fmt::format("{} {} and {} {}: one file for two outputs; the "
                                             "second would replace the first: give two names",
                                             option_a, a, option_b, b));
        }
    }
}

OutKind check_planner_outputs(const std::string& format, const std::string& out,
                              const std::string& plot, const std::string& experiment) {
    if (format != "table" && format != "json" && format != "csv")
        throw InputError("--format: expected table, json or csv, got '" + base::excerpt(format) +
                         "'");
    const OutKind kind = output_kind(out);
    refuse_output_over_input(out, "--out", {experiment});
    refuse_output_over_input(plot, "--plot", {experiment});
    return kind;
}

OutKind output_kind(const std::string& path) {
    if (path.empty())
        return OutKind::none;
    const auto ends = [&](const char* ext) {
        const std::string e(ext);
        return path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
    };
    if (ends(".csv"))
        return OutKind::csv;
    if (ends(".json"))
        return OutKind::json;
    throw InputError("--out: expected a file ending in .csv or .json, got '" + base::excerpt(path) +
                     "'");
}

void write_table_output(const std::string& path, OutKind kind, const std::string& csv,
                        const nlohmann::ordered_json& record, const std::string& rows_key) {
    if (kind == OutKind::json) {
        write_file_atomically(path, record.dump(2) + "\n");
    } else if (kind == OutKind::csv) {
        nlohmann::ordered_json meta = record;
        meta.erase(rows_key);
        write_file_atomically(path + ".json", meta.dump(2) + "\n");
        write_file_atomically(path, csv);
    }
}

} // namespace clustersim::app
