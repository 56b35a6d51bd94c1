#pragma once
/// \file
/// Reading an input file whole, up to a stated size. Every file a user hands clustersim is
/// untrusted: `/dev/zero`, a 10 GB log or a FIFO given by mistake must end in an error that
/// says the bound, not in 2 GiB of memory and `bad_alloc`. The file is read in chunks and
/// refused one byte past the limit, so a small file costs what it holds and a large one at
/// most the limit. One home for the limits of the data files (the YAML readers keep their own
/// 16 MiB, config/yaml_map.h).

#include <cstddef>
#include <string>
#include <string_view>

namespace clustersim::config {

/// Measurement JSON, nccl-tests logs and CSV tables (collective sweeps, step tables). The
/// largest such file a user makes is a few MiB (a measurement file of 100,000 points is
/// about 30 MiB); 64 MiB leaves room and keeps a parse's memory within a laptop's.
inline constexpr std::size_t kMaxDataFileBytes = std::size_t{64} << 20;
/// PyTorch profiler traces, as read and after gunzip: a traced step of a large model is some
/// hundreds of MiB of JSON.
inline constexpr std::size_t kMaxTraceFileBytes = std::size_t{1} << 30;

/// "64 MiB", "1 GiB": a limit as messages state it.
std::string describe_limit(std::size_t bytes);

/// An input file being read in chunks, never past a limit the caller raises as it learns
/// what the file is (an import reads the head, then allows a trace more than a log).
class BoundedFile {
public:
    /// Opens `path`; a directory or an unreadable file is an InputError saying what was
    /// expected (`what`: "a measurement file").
    BoundedFile(const std::string& path, std::string_view what);
    /// Reads until the file ends or `limit` + 1 bytes are held; true when it ended within
    /// `limit`.
    bool read_up_to(std::size_t limit);
    const std::string& text() const { return text_; }
    std::string take() { return std::move(text_); }
    /// The InputError of a file past `limit` (read_up_to returned false).
    [[noreturn]] void refuse(std::size_t limit) const;

    ~BoundedFile();
    BoundedFile(const BoundedFile&) = delete;
    BoundedFile& operator=(const BoundedFile&) = delete;

private:
    std::string path_;
    std::string what_;
    std::string text_;
    bool ended_ = false;
    int fd_ = -1;
};

/// The whole of `path`, refused (InputError naming the file and the limit) when larger than
/// `limit` bytes.
std::string read_bounded(const std::string& path, std::size_t limit, std::string_view what);

} // namespace clustersim::config
