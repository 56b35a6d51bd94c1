#pragma once
// What the command-line tests share: running `clustersim ARGS...` through app::run_cli with its
// output captured; the scratch directory and file helpers come from support/scratch.h.
#include "app/cli.h"
#include "support/scratch.h"

#include <sstream>
#include <string>
#include <vector>

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

} // namespace clustersim::test
