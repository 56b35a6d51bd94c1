#include "app/cli.h"
#include "cli_run.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

using namespace clustersim;
using namespace clustersim::test;

TEST_CASE("cli: hardware show works for every preset", "[app][hardware]") {
    for (const char* preset : {"dgx-a100", "dgx-h100", "hgx-h200", "pcie-4gpu"}) {
        INFO(preset);
        const Run r = run({"hardware", "show", preset});
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Catch::Contains(preset) && Catch::Contains("bisection") &&
                              Catch::Contains("links"));
        CHECK(r.err.empty());
    }
    const Run cluster = run({"hardware", "show", "dgx-h100", "--gpus", "128"});
    CHECK_THAT(cluster.out, Catch::Contains("128 x H100") && Catch::Contains("16 nodes") &&
                                Catch::Contains("InfiniBand"));
    CHECK_THAT(cluster.out, !Catch::Contains("note:"));
    // Not a whole number of nodes: the cluster rounds up to whole nodes and says so.
    const Run part = run({"hardware", "show", "dgx-h100", "--gpus", "4"});
    CHECK(part.code == 0);
    CHECK_THAT(part.out, Catch::Contains("8 x H100") &&
                             Catch::Contains("note: --gpus 4 is not a whole number of 8-GPU "
                                             "nodes: the cluster above is 1 node (8 GPUs)"));
    const Run twelve = run({"hardware", "show", "dgx-h100", "--gpus", "12"});
    CHECK_THAT(twelve.out, Catch::Contains("16 x H100") && Catch::Contains("is 2 nodes (16 GPUs)"));
}

TEST_CASE("cli: hardware dot writes Graphviz", "[app][hardware]") {
    const Run r = run({"hardware", "dot", "dgx-a100"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("digraph") && Catch::Contains("gpu7.hbm") &&
                          Catch::Contains("NVLink 300 GB/s"));
}

TEST_CASE("cli: transfer across a 16-node cluster", "[app][transfer]") {
    const Run r = run({"transfer", "--hardware", "dgx-h100", "--gpus", "128", "--from", "gpu0",
                       "--to", "gpu127", "--bytes", "1GiB"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("rail0.leaf0 -> spine") && Catch::Contains("node15.nic7") &&
                          Catch::Contains("bottleneck 50.0 GB/s (NIC)") &&
                          Catch::Contains("achieved   50.0 GB/s"));
}

TEST_CASE("cli: bad input exits 2 with one line and no partial file", "[app][errors]") {
    SECTION("unknown preset") {
        const Run r = run({"hardware", "show", "dgx-z900"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("unknown hardware preset 'dgx-z900'"));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    SECTION("GPU out of range") {
        const Run r = run({"transfer", "--hardware", "dgx-h100", "--from", "gpu0", "--to", "gpu8"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("out of range") && Catch::Contains("gpu7"));
    }
    SECTION("bad GPU name") {
        CHECK(run({"transfer", "--hardware", "dgx-h100", "--from", "cpu0"}).code == 2);
    }
    SECTION("bad size") {
        const Run r = run({"transfer", "--hardware", "dgx-h100", "--bytes", "lots"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("expected a size"));
    }
    SECTION("zero size") {
        CHECK(run({"transfer", "--hardware", "dgx-h100", "--bytes", "0"}).code == 2);
    }
    SECTION("zero GPUs") {
        CHECK(run({"transfer", "--hardware", "dgx-h100", "--gpus", "0"}).code == 2);
    }
    SECTION("unknown subcommand and unknown flag") {
        CHECK(run({"frobnicate"}).code == 2);
        CHECK(run({"hardware", "show", "dgx-a100", "--colour"}).code == 2);
    }
    SECTION("dot into a directory that does not exist leaves nothing behind") {
        const Run r = run({"hardware", "dot", "dgx-a100", "--out", "/nonexistent-dir/x.dot"});
        CHECK(r.code == 2);
        CHECK_FALSE(std::filesystem::exists("/nonexistent-dir"));
    }
}

TEST_CASE("cli: help and version exit 0", "[app]") {
    CHECK(run({"--help"}).code == 0);
    CHECK(run({"--version"}).code == 0);
}
