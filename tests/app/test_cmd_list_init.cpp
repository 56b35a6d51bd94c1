#include "app/cli.h"
#include "base/error.h"
#include "strategies/parallel/experiment.h"

#include "cli_run.h"

#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <sstream>

using namespace clustersim;

TEST_CASE("list: every preset with its one line", "[app][list]") {
    const test::Run r = test::run({"list"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("Hardware (") == 0);
    CHECK(std::regex_search(r.out, std::regex("\n  dgx-a100 +NVIDIA DGX A100 80GB")));
    CHECK(r.out.find("gpt3-175B") != std::string::npos);
    CHECK(r.out.find("Experiments (") != std::string::npos);
    // Experiments have no description key; their first comment line says what they are.
    CHECK(r.out.find("pipeline-schedules") != std::string::npos);
    CHECK(r.out.find("(cannot be read") == std::string::npos);
}

TEST_CASE("cli: a mistyped command is named, with the commands there are", "[app][cli]") {
    const test::Run r = test::run({"frobnicate"});
    CHECK(r.code == 2);
    CHECK(r.err.find("unknown command 'frobnicate' (commands: hardware, ") == 19);
    CHECK(r.err.find("list, init)") != std::string::npos);
}
