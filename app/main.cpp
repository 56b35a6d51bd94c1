#include "app/cli.h"

#include <cerrno>
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    const int code = clustersim::app::run_cli(argc, argv, {std::cout, std::cerr});
    // A result that did not reach its reader is a failure (`run --format json > /dev/full`): the
    // stream only learns of it when its buffer is written out.
    errno = 0;
    std::cout.flush();
    if (!std::cout) {
        const int err = errno;
        std::cerr << "clustersim: error: cannot write to standard output"
                  << (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) << "\n";
        return code != clustersim::app::kOk ? code : clustersim::app::kCheckFailed;
    }
    return code;
}
