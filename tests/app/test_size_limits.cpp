// Limits told, not hit: a cluster too large for this machine's memory is refused by every
// command before anything is built, with the estimate, as an input error (exit 2), never
// bad_alloc (exit 1) or a run that does not end. A collective on 2^28 GPUs needs over a terabyte
// for its graph, so that holds on any machine; an experiment has at most 2^24 GPUs, whose graph
// (about 31.8 GiB: hardware/graph_size.h) is refused on machines of under 39.7 GiB (the refusal
// leaves a fifth of the memory), where the test checks it.
#include "cli_run.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace clustersim;
using namespace clustersim::test;

namespace {
const std::string kGpt3 = CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-1024xA100.yaml";

void check_refused(const Run& r, const std::string& gpus) {
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("a cluster of " + gpus + " GPUs needs about ") &&
                          Catch::Contains("GiB for its graph") &&
                          (Catch::Contains("this machine has") ||
                           Catch::Contains("this process may use")));
}

/// Runs `args` in a child process under RLIMIT_AS of what it has mapped plus `headroom_mib`;
/// returns the child's exit code (-1 if it did not exit) and puts its stderr in `err`.
int run_under_address_limit(const std::vector<std::string>& args, rlim_t headroom_mib,
                            std::string& err) {
    const TempDir dir("rlimit-as");
    const std::string err_file = dir.file("err.txt");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        double mapped = 0;
        std::ifstream("/proc/self/statm") >> mapped;
        const auto bytes =
            static_cast<rlim_t>(mapped * static_cast<double>(::sysconf(_SC_PAGE_SIZE))) +
            (headroom_mib << 20);
        rlimit as{bytes, bytes};
        ::setrlimit(RLIMIT_AS, &as);
        const Run r = run(args);
        spit(err_file, r.err);
        ::_exit(r.code);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    err = slurp(err_file);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
} // namespace

TEST_CASE("size limits: run and collective refuse a cluster that cannot fit", "[app][limits]") {
    SECTION("run, both fidelities, on 2^24 GPUs") {
        const double memory_gib = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                                  static_cast<double>(::sysconf(_SC_PAGE_SIZE)) / (1 << 30);
        if (memory_gib >= 39.5) {
            WARN("this machine's " << memory_gib << " GiB hold 2^24 GPUs' graph: not checked");
            return;
        }
        for (const char* fidelity : {"analytic", "flow"})
            check_refused(
                run({"run", kGpt3, "--fidelity", fidelity, "--set", "gpus=16777216", "--set",
                     "parallel.dp=131072", "--set", "training.global_batch=8388608"}),
                "16777216");
    }
    SECTION("collective") {
        check_refused(run({"collective", "-H", "dgx-h100", "--gpus", "268435456", "--op",
                           "all_reduce", "--bytes", "1GiB"}),
                      "268435456");
        check_refused(run({"collective", "-H", "dgx-h100", "--gpus", "268435456", "--op",
                           "all_reduce", "--bytes", "1GiB", "--fidelity", "flow"}),
                      "268435456");
    }
}

TEST_CASE("size limits: ulimit -v is honoured, not only the machine's memory", "[app][limits]") {
    // A child process under RLIMIT_AS of what it has mapped plus 512 MiB: a million GPUs' graph
    // (gigabytes) is refused with the limit named, where physical memory alone accepted it and
    // the build died of bad_alloc.
    std::string err;
    CHECK(run_under_address_limit({"collective", "-H", "dgx-a100", "--gpus", "1000000", "--op",
                                   "all_reduce", "--bytes", "1GiB", "--fidelity", "flow"},
                                  512, err) == 2);
    CHECK_THAT(err, Catch::Contains("a cluster of 1000000 GPUs needs about") &&
                        Catch::Contains("this process may use (ulimit -v (RLIMIT_AS))"));
}

TEST_CASE("size limits: a flow run whose rounds would not fit is refused before it runs",
          "[app][limits]") {
    // The double binary tree's all-reduce on 32,768 A100s in flow fidelity: its graph and plan
    // (about 0.15 GiB) fit under mapped + 400 MiB, its largest round (1.1 M flows, about 0.6 GiB
    // with the network's tables; the whole run peaks at 0.64 GB) does not: refused up front
    // (flow_estimate.h) with the estimate and the limit, where it ran seconds into bad_alloc.
    std::string err;
    CHECK(run_under_address_limit({"collective", "-H", "dgx-a100", "--gpus", "32768", "--op",
                                   "all_reduce", "--bytes", "1GiB", "--algo", "tree", "--fidelity",
                                   "flow"},
                                  400, err) == 2);
    CHECK_THAT(err, Catch::Contains("the all_reduce on 32768 GPUs in flow fidelity needs about") &&
                        Catch::Contains("ulimit -v (RLIMIT_AS) leaves") &&
                        Catch::Contains("--fidelity analytic"));
    CHECK_THAT(err, !Catch::Contains("out of memory"));
}

TEST_CASE("size limits: a communicator's tree is estimated before it is built", "[app][limits]") {
    // An all-reduce on 262,144 A100s: its graph (about 0.5 GiB) passes the check under mapped +
    // 700 MiB; the double binary tree that prices it (about 0.66 GiB of tables) does not. Before
    // it was estimated the run died with "internal error: std::bad_alloc" (exit 1), then with
    // "out of memory" once that was caught; now it is refused before the tree is built, in
    // either fidelity.
    std::string err;
    CHECK(run_under_address_limit({"collective", "-H", "dgx-a100", "--gpus", "262144", "--op",
                                   "all_reduce", "--bytes", "1GiB"},
                                  700, err) == 2);
    CHECK_THAT(err, Catch::Contains("the double binary tree of a communicator of 262144 GPUs "
                                    "needs about") &&
                        Catch::Contains("ulimit -v (RLIMIT_AS) leaves") &&
                        Catch::Contains("--algo ring"));
    CHECK_THAT(err, !Catch::Contains("out of memory"));
}
