#pragma once
// What the command-line tests share: running `clustersim ARGS...` through app::run_cli with its
// output captured, a scratch directory per test, and reading and writing whole files.
#include "app/cli.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace clustersim::test {

/// One command's exit code and what it printed.
struct Run {
    int code;
    std::string out;
    std::string err;
};

/// Runs `clustersim args...` in this process (app::run_cli), capturing stdout and stderr.
inline Run run(std::vector<std::string> args) {
    args.insert(args.begin(), "clustersim");
    std::vector<const char*> argv;
    for (auto& a : args)
        argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int code = app::run_cli(static_cast<int>(argv.size()), argv.data(), {out, err});
    return {code, out.str(), err.str()};
}

/// A fresh directory for one test's files, removed afterwards.
struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& name)
        : path(std::filesystem::temp_directory_path() /
               ("clustersim-" + name + "-" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
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

} // namespace clustersim::test
