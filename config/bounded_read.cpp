#include "config/bounded_read.h"

#include "base/error.h"
#include "config/input_record.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace clustersim::config {

std::string describe_limit(std::size_t bytes) {
    if (bytes >= (std::size_t{1} << 30) && bytes % (std::size_t{1} << 30) == 0)
        return fmt::format("{} GiB", bytes >> 30);
    return fmt::format("{} MiB", bytes >> 20);
}

BoundedFile::BoundedFile(const std::string& path, std::string_view what)
    : path_(path)
    , what_(what) {
    // POSIX read(2) rather than an ifstream: the errno says why a file cannot be read, and
    // nothing buffers past what we ask for.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
        throw InputError(fmt::format("{}: cannot read the file ({}); expected {}", path,
                                     std::strerror(errno), what_));
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw InputError(fmt::format("{}: is a directory, expected {}", path, what_));
    }
    note_input(path);
}

BoundedFile::~BoundedFile() {
    if (fd_ >= 0)
        ::close(fd_);
}

bool BoundedFile::read_up_to(std::size_t limit) {
    constexpr std::size_t kChunk = 1 << 16;
    while (!ended_ && text_.size() <= limit) {
        const std::size_t old = text_.size();
        const std::size_t want = std::min(kChunk, limit + 1 - old);
        text_.resize(old + want);
        const ssize_t n = ::read(fd_, text_.data() + old, want);
        if (n < 0 && errno == EINTR) {
            text_.resize(old);
            continue;
        }
        if (n < 0) {
            const int e = errno;
            text_.resize(old);
            throw InputError(fmt::format("{}: cannot read the file ({})", path_, std::strerror(e)));
        }
        text_.resize(old + static_cast<std::size_t>(n));
        if (n == 0)
            ended_ = true;
    }
    return text_.size() <= limit;
}

void BoundedFile::refuse(std::size_t limit) const {
    throw InputError(fmt::format("{}: larger than {}, the most clustersim reads as {} (is this "
                                 "the right file?)",
                                 path_, describe_limit(limit), what_));
}

std::string read_bounded(const std::string& path, std::size_t limit, std::string_view what) {
    BoundedFile file(path, what);
    if (!file.read_up_to(limit))
        file.refuse(limit);
    return file.take();
}

} // namespace clustersim::config
