#pragma once
// What tests that touch files share: a scratch directory per test, whole-file reading and
// writing, and the message of the InputError a piece of code throws. The directory's name
// carries the process id and a counter, so that test processes running side by side (ctest
// -j, two checkouts on one machine) never share one.
#include "base/error.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace clustersim::test {

/// A fresh directory for one test's files, removed afterwards.
struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& name) {
        static std::atomic<int> serial{0};
        path = std::filesystem::temp_directory_path() /
               ("clustersim-" + name + "-" + std::to_string(::getpid()) + "-" +
                std::to_string(serial++));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    /// The path of `name` in the directory (not created).
    std::string file(const std::string& name) const { return (path / name).string(); }
    /// Writes `text` to `name` (creating subdirectories) and returns its path.
    std::filesystem::path write(const std::string& name, const std::string& text) const {
        const std::filesystem::path p = path / name;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
};

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void spit(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

inline std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);)
        v.push_back(l);
    return v;
}

/// The message of the InputError `f` throws; "(no error)" when it throws none.
inline std::string input_error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace clustersim::test
