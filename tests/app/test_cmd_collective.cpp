// clustersim collective through app::run_cli: the nccl-tests table, CSV, JSON, --show-values,
// and bad input (one line on stderr, exit code 2, nothing on stdout).
#include "app/cli.h"
#include "cli_run.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace clustersim;
using namespace clustersim::test;

TEST_CASE("cli collective: a sweep printed as nccl-tests prints it", "[app][collective]") {
    const Run r = run({"collective", "--hardware", "dgx-a100", "--op", "all_reduce", "--gpus", "8",
                       "--min-bytes", "8", "--max-bytes", "4G", "--factor", "2"});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    const auto ls = lines(r.out);
    // 8 B .. 4 GiB by 2: 30 sizes, as the nccl-tests log of the same sweep.
    int rows = 0;
    for (const auto& l : ls)
        rows += l.empty() || l[0] == '#' ? 0 : 1;
    CHECK(rows == 30);
    CHECK_THAT(r.out, Catch::Contains("#       size         count      type   redop    root     "
                                      "time   algbw   busbw"));
    // Columns at nccl-tests' widths: %12li  %12li  %8s  %6s  %6i  %7s  %6.2f  %6.2f.
    const std::string first = ls[4];
    CHECK(first.substr(0, 12) == "           8");
    CHECK(first.substr(14, 12) == "           2");
    CHECK(first.substr(28, 8) == "   float");
    CHECK(first.substr(38, 6) == "   sum");
    CHECK(first.substr(46, 6) == "    -1");
    CHECK_THAT(r.out, Catch::Contains("  4294967296    1073741824     float     sum      -1"));
    CHECK_THAT(r.out, Catch::Contains("# Avg bus bandwidth    : "));
}

TEST_CASE("cli collective: busbw is algbw times nccl-tests' factor", "[app][collective]") {
    for (const auto& [op, factor] :
         std::vector<std::pair<std::string, double>>{{"all_reduce", 1.75},
                                                     {"all_gather", 0.875},
                                                     {"reduce_scatter", 0.875},
                                                     {"all_to_all", 0.875},
                                                     {"broadcast", 1.0},
                                                     {"send_recv", 1.0}}) {
        const Run r = run({"collective", "--hardware", "dgx-h100", "--op", op, "--bytes", "64MiB",
                           "--format", "json"});
        REQUIRE(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        REQUIRE(j.size() == 1);
        const auto& row = j[0];
        INFO(op);
        CHECK(row["op"] == op);
        CHECK(row["gpus"] == 8);
        CHECK(row["bytes"] == 64 << 20);
        CHECK(row["dtype"] == "fp32");
        CHECK(row["algbw_gbps"].get<double>() ==
              Approx(double(64 << 20) / row["time_us"].get<double>() / 1e3));
        CHECK(row["busbw_gbps"].get<double>() == Approx(row["algbw_gbps"].get<double>() * factor));
    }
}

TEST_CASE("cli collective: CSV, flow fidelity and dtypes", "[app][collective]") {
    const Run csv =
        run({"collective", "--hardware", "hgx-h200", "--op", "reduce_scatter", "--bytes", "1GiB",
             "--dtype", "bf16", "--format", "csv", "--fidelity", "flow", "--algo", "ring"});
    REQUIRE(csv.code == 0);
    const auto ls = lines(csv.out);
    REQUIRE(ls.size() == 2);
    CHECK(ls[0] == "op,algo,protocol,gpus,bytes,count,dtype,redop,root,fidelity,time_us,"
                   "algbw_gbps,busbw_gbps");
    CHECK_THAT(ls[1], Catch::StartsWith("reduce_scatter,ring,") &&
                          Catch::Contains(",8,1073741824,67108864,bf16,sum,-1,flow,"));
    // Same inputs, same bytes.
    CHECK(run({"collective", "--hardware", "hgx-h200", "--op", "reduce_scatter", "--bytes", "1GiB",
               "--dtype", "bf16", "--format", "csv", "--fidelity", "flow", "--algo", "ring"})
              .out == csv.out);
}

TEST_CASE("cli collective: --fidelity flow folds identical flows, flow-full simulates them all",
          "[app][collective][symmetry]") {
    // 4 DGX H100 nodes: the rings' hops inside each node and every rank's memory work are
    // identical flows that symmetry leaves to representatives; the times are the same to the
    // picosecond, so every printed column but the fidelity's name is the same.
    auto csv = [](const std::string& fidelity, const std::string& op) {
        return run({"collective", "--hardware", "dgx-h100", "--gpus", "32", "--op", op,
                    "--min-bytes", "1MiB", "--max-bytes", "256MiB", "--factor", "16", "--format",
                    "csv", "--fidelity", fidelity});
    };
    for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}) {
        INFO(op);
        const Run sym = csv("flow", op);
        const Run full = csv("flow-full", op);
        REQUIRE(sym.code == 0);
        REQUIRE(full.code == 0);
        const auto a = lines(sym.out);
        const auto b = lines(full.out);
        REQUIRE(a.size() == 4);
        REQUIRE(a.size() == b.size());
        for (std::size_t i = 1; i < a.size(); ++i) {
            CHECK_THAT(a[i], Catch::Contains(",flow,"));
            CHECK_THAT(b[i], Catch::Contains(",flow-full,"));
            std::string folded = a[i];
            folded.replace(folded.find(",flow,"), 6, ",flow-full,");
            CHECK(folded == b[i]);
        }
    }
    const Run table = run({"collective", "--hardware", "dgx-h100", "--gpus", "16", "--op",
                           "all_reduce", "--bytes", "64MiB", "--fidelity", "flow-full"});
    REQUIRE(table.code == 0);
    CHECK_THAT(table.out, Catch::Contains("(dgx-h100, 2 nodes), flow-full fidelity"));
}

TEST_CASE("cli collective: sizes are rounded as nccl-tests rounds them", "[app][collective]") {
    const Run r = run({"collective", "--hardware", "dgx-a100", "--op", "all_gather", "--bytes",
                       "1000", "--format", "csv"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains(",8,992,31,fp32,none,-1,")); // 31 elements x 8 GPUs x 4 B
}

TEST_CASE("cli collective: --show-values prints every rank before and after", "[app][collective]") {
    const Run r = run({"collective", "--show-values", "--hardware", "dgx-h100", "--gpus", "4",
                       "--op", "reduce_scatter"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("rank 0 (gpu0) before: [0, 1, 2, 3]") &&
                          Catch::Contains("rank 3 (gpu3) before: [3, 4, 5, 6]") &&
                          Catch::Contains("rank 0 (gpu0) after:  [6]") &&
                          Catch::Contains("rank 3 (gpu3) after:  [18]"));
    const Run b = run({"collective", "--show-values", "--hardware", "dgx-a100", "--op", "broadcast",
                       "--root", "2", "--algo", "ring"});
    REQUIRE(b.code == 0);
    CHECK_THAT(b.out, Catch::Contains("rank 0 (gpu0) before: -") &&
                          Catch::Contains("rank 2 (gpu2) before: [2, 3, 4, 5, 6, 7, 8, 9]") &&
                          Catch::Contains("rank 7 (gpu7) after:  [2, 3, 4, 5, 6, 7, 8, 9]"));
}

TEST_CASE("cli collective: bad input is one line, exit 2, no output", "[app][collective]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
        {{"--op", "allreduce2"}, "--op: unknown collective"},
        {{"--op", "all_reduce", "--bytes", "0"}, "--bytes: expected a positive size"},
        {{"--op", "all_reduce", "--bytes", "-5"}, "--bytes"},
        {{"--op", "all_reduce", "--bytes", "lots"}, "--bytes"},
        {{"--op", "all_gather", "--bytes", "16"}, "less than one fp32 element per GPU"},
        {{"--op", "all_reduce", "--algo", "nvls"}, "NVLink SHARP"},
        {{"--op", "all_reduce", "--algo", "tree", "--gpus", "1"}, "at least 2 GPUs"},
        {{"--op", "all_to_all", "--algo", "ring"}, "direct"},
        {{"--op", "all_reduce", "--algo", "hierarchical"}, "2 nodes"},
        {{"--op", "all_reduce", "--algo", "magic"}, "--algo"},
        {{"--op", "all_reduce", "--fidelity", "exact"}, "--fidelity"},
        {{"--op", "all_reduce", "--dtype", "fp64"}, "--dtype"},
        {{"--op", "all_reduce", "--format", "xml"}, "--format"},
        {{"--op", "all_reduce", "--factor", "1"}, "--factor"},
        {{"--op", "all_reduce", "--min-bytes", "1G", "--max-bytes", "1M"}, "--min-bytes"},
        {{"--op", "broadcast", "--root", "8"}, "--root 8"},
        {{"--op", "all_reduce", "--root", "1"}, "has no root"},
        {{"--op", "all_reduce", "--protocol", "ll64"}, "--protocol"},
        {{"--op", "all_reduce", "--show-values", "--bytes", "1MiB"}, "at most 64 elements"},
        {{"--op", "all_reduce", "--bytes", "1M", "--min-bytes", "8"}, "excludes"},
        {{"--op", "all_reduce", "--max-seconds", "-1"}, "--max-seconds: expected a number"},
        {{"--op", "all_reduce", "--estimate"}, "--estimate: counts what a flow simulation"},
    };
    for (const auto& [args, message] : bad) {
        std::vector<std::string> full{"collective", "--hardware", "dgx-a100"};
        full.insert(full.end(), args.begin(), args.end());
        const Run r = run(full);
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(message));
    }
}

TEST_CASE("cli collective: more GPUs than a NIC-less machine holds", "[app][collective]") {
    const TempDir dir("collective");
    const auto file = dir.write("no-nics.yaml", "extends: dgx-a100\nnode:\n  nics: 0\n");
    const Run r = run({"collective", "--hardware", file.string(), "--op", "all_reduce", "--gpus",
                       "16", "--bytes", "1M"});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("no NICs"));
}

TEST_CASE("cli collective: nccl-tests' flags with nccl-tests' meanings", "[app][collective]") {
    // all_reduce_perf -b 1M -e 4M -f 2 -g 8 -o max -d bfloat16 -n 5 -w 1: three sizes.
    const Run s =
        run({"collective", "-H", "dgx-a100", "--op", "all_reduce", "-g",       "8",   "-b",
             "1M",         "-e", "4M",       "-f",   "2",          "-o",       "max", "-d",
             "bfloat16",   "-n", "5",        "-w",   "1",          "--format", "csv"});
    INFO(s.err);
    REQUIRE(s.code == 0);
    const Run l = run({"collective", "--hardware", "dgx-a100", "--op", "all_reduce", "--gpus", "8",
                       "--min-bytes", "1M", "--max-bytes", "4M", "--factor", "2", "--dtype", "bf16",
                       "--format", "csv"});
    REQUIRE(l.code == 0);
    const auto a = lines(s.out), b = lines(l.out);
    REQUIRE(a.size() == 4); // the header and 1, 2, 4 MiB
    REQUIRE(b.size() == a.size());
    for (std::size_t i = 1; i < a.size(); ++i) {
        // The same row but for the reduction nccl-tests' -o names (the time does not change).
        std::string expect = b[i];
        expect.replace(expect.find(",bf16,sum,"), 10, ",bf16,max,");
        CHECK(a[i] == expect);
    }
    CHECK_THAT(a[1], Catch::Contains("all_reduce"));
    CHECK_THAT(a[1], Catch::Contains(",1048576,"));
    CHECK_THAT(a[3], Catch::Contains(",4194304,"));
    // Types nccl-tests has and a prediction does not: refused, naming the flag.
    const Run bad = run({"collective", "-H", "dgx-a100", "--op", "all_reduce", "-d", "int8"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("-d"));
    const Run op = run({"collective", "-H", "dgx-a100", "--op", "all_reduce", "-o", "mulsum"});
    CHECK(op.code == 2);
    CHECK_THAT(op.err, Catch::Contains("-o"));
}

TEST_CASE("cli collective: --estimate counts a flow run without running it, --max-seconds "
          "refuses what would take longer",
          "[app][collective][estimate]") {
    // The broadcast's pipelined chains on 1,024 A100s list 11.6 M flows over 2,046 rounds
    // (strategies/collectives/flow_estimate.h); at the least measured cost per listed flow
    // (0.014 us, scripts/measure-flow-cost.sh) that is at least 0.16 s of CPU.
    const std::vector<std::string> args{"collective", "-H",         "dgx-a100", "--gpus", "1024",
                                        "--op",       "broadcast",  "--bytes",  "1GiB",   "--algo",
                                        "ring",       "--fidelity", "flow"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = args;
        a.insert(a.end(), extra.begin(), extra.end());
        return run(a);
    };
    const Run estimate = with({"--estimate"});
    REQUIRE(estimate.code == 0);
    std::istringstream rows(estimate.out);
    std::string line, row;
    while (std::getline(rows, line))
        if (!line.empty() && line[0] != '#')
            row = line;
    std::istringstream fields(row);
    std::string bytes, algo;
    double rounds = 0, flows = 0, peak = 0, mib = 0, seconds = 0;
    fields >> bytes >> algo >> rounds >> flows >> peak >> mib >> seconds;
    CHECK(bytes == "1073741824");
    CHECK(algo == "ring/LL");
    CHECK(flows >= rounds * 1024); // every round lists each rank's memory work at least
    CHECK(peak <= flows);
    CHECK(seconds == Approx(flows * 0.014e-6).epsilon(0.01));

    const Run refused = with({"--max-seconds", "0.1"});
    CHECK(refused.code == 2);
    CHECK(refused.out.empty());
    CHECK_THAT(refused.err, Catch::Contains("the broadcast on 1024 GPUs in flow fidelity would "
                                            "take at least") &&
                                Catch::Contains("more than --max-seconds 0.1") &&
                                Catch::Contains("--fidelity analytic"));
    // The bound lifted, the same run answers.
    const Run unbounded = with({"--max-seconds", "0", "--format", "csv"});
    CHECK(unbounded.code == 0);
    CHECK_THAT(unbounded.out, Catch::Contains("broadcast,ring,LL,1024,1073741824"));
}
