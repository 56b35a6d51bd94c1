// clustersim sweep through app::run_cli: one CSV row per configuration (every varied key, the
// result columns the issue lists), dp derived, invalid combinations as rows with their reason,
// determinism across runs and thread counts, --resume after an interruption (the file cut
// anywhere, mid-line included) giving the uninterrupted file, --resume refused on another
// sweep's CSV, and every bad input of the issue: exit 2, the flag or key named, no CSV line.
#include "app/cli.h"
#include "base/units.h"
#include "cli_run.h"
#include "explore/grid.h"
#include "explore/resume.h"
#include "explore/sweep_row.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

using namespace clustersim;
using namespace clustersim::test;
namespace fs = std::filesystem;

namespace {
const std::string kGpt3 = CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml";

/// A parsed sweep CSV: the comment lines, the columns, and the rows as maps column -> field.
struct Csv {
    std::vector<std::string> comments;
    std::vector<std::string> columns;
    std::vector<std::map<std::string, std::string>> rows;
};

Csv parse_csv(const std::string& text) {
    Csv c;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("#", 0) == 0) {
            c.comments.push_back(line);
            continue;
        }
        const auto fields = explore::split_csv(line);
        if (c.columns.empty()) {
            c.columns = fields;
            continue;
        }
        REQUIRE(fields.size() == c.columns.size());
        std::map<std::string, std::string> row;
        for (std::size_t i = 0; i < fields.size(); ++i)
            row[c.columns[i]] = fields[i];
        c.rows.push_back(std::move(row));
    }
    return c;
}

std::vector<std::string> tp_pp_args(const std::string& out) {
    return {"sweep",  kGpt3,
            "--vary", "parallel.tp=1,2,4,8",
            "--vary", "parallel.pp=1,2,4,8,16",
            "--out",  out,
            "--top",  "5"};
}
} // namespace

TEST_CASE("sweep: one CSV row per configuration, every varied key and the result columns",
          "[app][sweep]") {
    TempDir dir("sweep-rows");
    const std::string csv = dir.file("s.csv");
    const Run r = run(tp_pp_args(csv));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const Csv c = parse_csv(slurp(csv));
    // The issue's columns: the varied keys, step time, tokens/s, MFU, bubble fraction, the
    // breakdown, peak memory, oom, the reason when invalid.
    for (const char* col : {"config",
                            "parallel.tp",
                            "parallel.pp",
                            "gpus",
                            "tp",
                            "pp",
                            "dp",
                            "cp",
                            "ep",
                            "step_time_s",
                            "tokens_per_s",
                            "mfu",
                            "bubble_fraction",
                            "compute_s",
                            "recompute_s",
                            "tp_comm_exposed_s",
                            "pp_bubble_s",
                            "pp_comm_exposed_s",
                            "dp_comm_exposed_s",
                            "ep_comm_exposed_s",
                            "optimizer_s",
                            "peak_bytes",
                            "capacity_bytes",
                            "oom",
                            "invalid_reason"})
        CHECK(std::find(c.columns.begin(), c.columns.end(), col) != c.columns.end());
    REQUIRE(c.rows.size() == 20); // 4 x 5
    int valid = 0, invalid = 0;
    for (std::size_t i = 0; i < c.rows.size(); ++i) {
        const auto& row = c.rows[i];
        INFO("row " << i);
        // Configuration order: the last axis varies fastest.
        CHECK(row.at("config") == std::to_string(i));
        const int tp = std::stoi(row.at("parallel.tp"));
        const int pp = std::stoi(row.at("parallel.pp"));
        CHECK(tp == std::vector<int>{1, 2, 4, 8}[i / 5]);
        CHECK(pp == std::vector<int>{1, 2, 4, 8, 16}[i % 5]);
        if (!row.at("invalid_reason").empty()) {
            ++invalid;
            // An invalid row says why and has no results.
            CHECK(row.at("step_time_s").empty());
            CHECK(row.at("tokens_per_s").empty());
            CHECK(row.at("oom").empty());
            continue;
        }
        ++valid;
        CHECK(std::stoi(row.at("tp")) == tp);
        CHECK(std::stoi(row.at("pp")) == pp);
        CHECK(std::stoi(row.at("gpus")) == 64);
        // dp derived: gpus / (tp x pp).
        CHECK(std::stoi(row.at("dp")) * tp * pp == 64);
        // tokens/s is the global batch (64 x 2048 tokens) over the step time.
        const double step = std::stod(row.at("step_time_s"));
        CHECK(step > 0);
        CHECK(std::stod(row.at("tokens_per_s")) == Approx(64.0 * 2048 / step).epsilon(1e-6));
        const double mfu = std::stod(row.at("mfu"));
        CHECK(mfu > 0);
        CHECK(mfu < 1);
        CHECK((row.at("oom") == "true" || row.at("oom") == "false"));
        // The bubble fraction is the bubble's share of the step.
        CHECK(std::stod(row.at("bubble_fraction")) ==
              Approx(std::stod(row.at("pp_bubble_s")) / step).margin(1e-6));
        if (pp == 1)
            CHECK(std::stod(row.at("bubble_fraction")) == Approx(0).margin(1e-9));
        const bool oom = row.at("oom") == "true";
        CHECK(oom == (std::stoll(row.at("peak_bytes")) > std::stoll(row.at("capacity_bytes"))));
    }
    // tp x pp = 128 > 64 GPUs cannot run; the rest divide 64.
    CHECK(invalid >= 1);
    CHECK(valid >= 10);
    const auto& too_many = c.rows[3 * 5 + 4]; // tp 8, pp 16
    CHECK_FALSE(too_many.at("invalid_reason").empty());
    // The summary counts them, and the top table ranks the valid ones.
    CHECK_THAT(r.out, Catch::Contains("dp        derived as gpus / (tp x pp x cp)"));
    CHECK_THAT(r.out, Catch::Contains(std::to_string(invalid) + " invalid"));
    CHECK_THAT(r.out, Catch::Contains("best 5 by tokens/s"));
}

TEST_CASE("sweep: varying cp derives dp = gpus / (tp x pp x cp), and the CSV names cp",
          "[app][sweep]") {
    TempDir dir("sweep-cp");
    const std::string csv = dir.file("s.csv");
    // tp 8 x pp 16 x dp 8 on 1,024 GPUs: only a derived dp lets cp 2 and 4 run (with the fused
    // attention context parallelism requires).
    const Run r =
        run({"sweep", CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-1024xA100.yaml",
             "--vary", "model.attention=flash", "--vary", "parallel.cp=1,2,4", "--out", csv});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const Csv c = parse_csv(slurp(csv));
    REQUIRE(c.rows.size() == 3);
    for (const auto& row : c.rows) {
        INFO(row.at("invalid_reason"));
        REQUIRE(row.at("invalid_reason").empty());
        CHECK(row.at("cp") == row.at("parallel.cp"));
        CHECK(std::stoi(row.at("tp")) * std::stoi(row.at("pp")) * std::stoi(row.at("cp")) *
                  std::stoi(row.at("dp")) ==
              1024);
        CHECK(row.at("ep") == "1"); // a dense model
        CHECK(std::stod(row.at("ep_comm_exposed_s")) == 0);
    }
}

TEST_CASE("sweep: the top table is the CSV's best rows, best first", "[app][sweep]") {
    TempDir dir("sweep-top");
    const std::string csv = dir.file("s.csv");
    const Run r = run(tp_pp_args(csv));
    REQUIRE(r.code == 0);
    const Csv c = parse_csv(slurp(csv));
    std::vector<std::pair<double, std::string>> fit;
    for (const auto& row : c.rows) {
        if (row.at("invalid_reason").empty() && row.at("oom") == "false")
            fit.emplace_back(std::stod(row.at("tokens_per_s")), row.at("config"));
    }
    REQUIRE(!fit.empty());
    std::stable_sort(fit.begin(), fit.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    // The table's first line after its heading: rank 1 is the fastest configuration that fits.
    std::istringstream in(r.out.substr(r.out.find("best 5 by tokens/s")));
    std::string line;
    std::getline(in, line); // the title
    std::getline(in, line); // the heading
    REQUIRE(std::getline(in, line));
    std::istringstream cells(line);
    std::string rank, config;
    cells >> rank >> config;
    CHECK(rank == "1");
    CHECK(config == fit.front().second);
}

TEST_CASE("sweep: two runs and any thread count write the same bytes", "[app][sweep]") {
    TempDir dir("sweep-determinism");
    auto args = [&](const std::string& out, const std::string& jobs) {
        return std::vector<std::string>{"sweep",  kGpt3,
                                        "--vary", "parallel.tp=1,2,4,8",
                                        "--vary", "parallel.pp=2,4,8",
                                        "--vary", "training.micro_batch=1,2",
                                        "--vary", "parallel.recompute=none,selective,full",
                                        "--jobs", jobs,
                                        "--out",  out};
    };
    REQUIRE(run(args(dir.file("a.csv"), "1")).code == 0);
    REQUIRE(run(args(dir.file("b.csv"), "1")).code == 0);
    REQUIRE(run(args(dir.file("c.csv"), "2")).code == 0);
    REQUIRE(run(args(dir.file("d.csv"), "3")).code == 0);
    const std::string a = slurp(dir.file("a.csv"));
    CHECK(parse_csv(a).rows.size() == 4 * 3 * 2 * 3);
    CHECK(a == slurp(dir.file("b.csv")));
    CHECK(a == slurp(dir.file("c.csv")));
    CHECK(a == slurp(dir.file("d.csv")));
}

TEST_CASE("sweep: --resume after an interruption gives the uninterrupted file", "[app][sweep]") {
    TempDir dir("sweep-resume");
    const std::string full = dir.file("full.csv");
    REQUIRE(run(tp_pp_args(full)).code == 0);
    const std::string expected = slurp(full);
    // The CSV is its column line and rows; what the rows are is beside it.
    REQUIRE(expected.rfind("config,", 0) == 0);
    const std::size_t rows_start = expected.find('\n') + 1;
    // Cut points: right after the column line, at a line boundary in the middle of the rows,
    // in the middle of a line, one byte short of the end.
    const std::size_t mid_line =
        expected.find('\n', rows_start + (expected.size() - rows_start) / 2);
    std::vector<std::size_t> cuts{rows_start,   mid_line + 1,        mid_line - 7,
                                  mid_line + 3, expected.size() - 1, expected.size()};
    for (std::size_t cut : cuts) {
        INFO("cut at byte " << cut << " of " << expected.size());
        const std::string part = dir.file("part.csv");
        spit(part, expected.substr(0, cut));
        spit(part + ".json", slurp(full + ".json"));
        auto args = tp_pp_args(part);
        args.push_back("--resume");
        args.push_back("--jobs");
        args.push_back("2");
        const Run r = run(args);
        INFO(r.err);
        REQUIRE(r.code == 0);
        CHECK(slurp(part) == expected);
        CHECK_THAT(r.out, Catch::Contains("rows already in"));
    }
    // A resume of a file that does not exist yet starts the sweep.
    const std::string fresh = dir.file("fresh.csv");
    auto args = tp_pp_args(fresh);
    args.push_back("--resume");
    REQUIRE(run(args).code == 0);
    CHECK(slurp(fresh) == expected);
}

TEST_CASE("sweep: the CSV is a header and rows, its metadata beside it", "[app][sweep]") {
    TempDir dir("sweep-plain");
    const std::string csv = dir.file("s.csv");
    REQUIRE(run(tp_pp_args(csv)).code == 0);
    // What pandas.read_csv(path) needs: the first line names the columns, every row has as
    // many fields, booleans are true/false.
    const auto ls = lines(slurp(csv));
    REQUIRE(ls.size() > 2);
    const auto head = explore::split_csv(ls[0]);
    CHECK(head[0] == "config");
    const auto oom = std::find(head.begin(), head.end(), "oom") - head.begin();
    for (std::size_t i = 1; i < ls.size(); ++i) {
        const auto f = explore::split_csv(ls[i]);
        REQUIRE(f.size() == head.size());
        const std::string& b = f[static_cast<std::size_t>(oom)];
        CHECK((b.empty() || b == "true" || b == "false"));
    }
    const auto meta = nlohmann::json::parse(slurp(csv + ".json"));
    CHECK(meta["tool"] == "clustersim sweep");
    REQUIRE(meta["columns"].size() == head.size());
    for (std::size_t i = 0; i < head.size(); ++i)
        CHECK(meta["columns"][i]["name"] == head[i]);
    CHECK(meta["identity"].back().get<std::string>().rfind("sweep-id: ", 0) == 0);
    // Without its metadata a CSV cannot be resumed: refused, the file left alone.
    const std::string before = slurp(csv);
    fs::remove(csv + ".json");
    auto args = tp_pp_args(csv);
    args.push_back("--resume");
    const Run r = run(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains(csv + ".json"));
    CHECK(slurp(csv) == before);
}

TEST_CASE("sweep: --resume refuses the CSV of another sweep and leaves it alone", "[app][sweep]") {
    TempDir dir("sweep-resume-other");
    const std::string csv = dir.file("s.csv");
    REQUIRE(run(tp_pp_args(csv)).code == 0);
    const std::string before = slurp(csv);
    SECTION("other values of an axis") {
        const Run r = run({"sweep", kGpt3, "--vary", "parallel.tp=1,2", "--vary",
                           "parallel.pp=1,2,4,8,16", "--out", csv, "--resume"});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("--resume"));
        CHECK_THAT(r.err, Catch::Contains("different sweep"));
        CHECK_THAT(r.err, Catch::Contains("parallel.tp=1,2"));
    }
    SECTION("other options") {
        auto args = tp_pp_args(csv);
        args.insert(args.end(), {"--resume", "--max-memory", "40GiB"});
        const Run r = run(args);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("different sweep"));
    }
    SECTION("not a sweep at all") {
        spit(csv, "a,b,c\n1,2,3\n");
        auto args = tp_pp_args(csv);
        args.push_back("--resume");
        const Run r = run(args);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains("different sweep"));
        CHECK(slurp(csv) == "a,b,c\n1,2,3\n");
        return;
    }
    CHECK(slurp(csv) == before);
}

TEST_CASE("sweep: bad input exits 2, names the flag or key, writes no CSV", "[app][sweep]") {
    TempDir dir("sweep-bad");
    const std::string csv = dir.file("s.csv");
    struct Case {
        std::vector<std::string> args;
        std::vector<std::string> says;
    };
    const std::vector<Case> cases{
        {{"--vary", "parallel.tpp=1,2"}, {"--vary parallel.tpp", "unknown key", "parallel.tp"}},
        {{"--vary", "parallel.tp="}, {"--vary parallel.tp", "empty"}},
        {{"--vary", "parallel.tp=1,,2"}, {"--vary parallel.tp", "empty value"}},
        {{"--vary", "parallel.tp"}, {"--vary", "KEY=V1,V2"}},
        {{"--vary", "parallel.tp=one,two"}, {"--vary parallel.tp=one", "parallel.tp"}},
        {{"--vary", "parallel.recompute=none,sometimes"}, {"--vary parallel.recompute=sometimes"}},
        {{"--vary", "training.micro_batch=1.5"}, {"--vary training.micro_batch=1.5"}},
        {{"--vary", "parallel.tp=1,2", "--vary", "parallel.tp=4"}, {"parallel.tp", "twice"}},
        // 7 GPUs: no split of tp and pp divides the global batch of 64 among 7 data ranks.
        {{"--vary", "parallel.tp=1,2,4,8", "--gpus", "7"},
         {"none of the 4 configurations", "7 GPUs"}},
        {{"--vary", "parallel.tp=1,2", "--max-memory", "lots"}, {"--max-memory"}},
        {{"--vary", "parallel.tp=1,2", "--jobs", "-1"}, {"--jobs"}},
        {{"--vary", "parallel.tp=1,2", "--gpus", "-8"}, {"--gpus"}},
        {{"--vary", "parallel.tp=1,2", "--set", "parallel.ppp=2"}, {"parallel.ppp"}},
        {{"--vary", "hardware.framework.align_param_gathr=true,false"},
         {"--vary hardware.framework.align_param_gathr=true", "unknown key", "align_param_gather"}},
        {{"--vary", "hardware.framework.align_param_gather=true,maybe"},
         {"--vary hardware.framework.align_param_gather=maybe", "true or false"}},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args{"sweep", kGpt3, "--out", csv};
        args.insert(args.end(), c.args.begin(), c.args.end());
        std::string line;
        for (const auto& a : c.args)
            line += a + " ";
        INFO(line);
        const Run r = run(args);
        INFO(r.err);
        CHECK(r.code == 2);
        for (const auto& s : c.says)
            CHECK_THAT(r.err, Catch::Contains(s));
        // One line, and no CSV begun.
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK_FALSE(fs::exists(csv));
    }
    // --resume without --out.
    const Run r = run({"sweep", kGpt3, "--vary", "parallel.tp=1,2", "--resume"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("--resume"));
    // A CSV already there is left untouched by a sweep that fails its checks.
    spit(csv, "keep me\n");
    CHECK(run({"sweep", kGpt3, "--out", csv, "--vary", "parallel.tp=1,2", "--gpus", "7"}).code ==
          2);
    CHECK(slurp(csv) == "keep me\n");
}

TEST_CASE("sweep: a key of the hardware file varies like any other", "[app][sweep]") {
    // Megatron-Core's aligned parameter gathers against its chained ones (a framework knob of
    // the hardware file) on GPT-3 with the distributed optimizer's overlapped gathers, dp 2:
    // a row each, the key a column, the step times as `run --set` gives them.
    TempDir dir("sweep-hardware-key");
    const std::string csv = dir.file("s.csv");
    const std::vector<std::string> fixed{
        "--set", "parallel.pp=4",   "--set", "parallel.dp=2",
        "--set", "parallel.zero=1", "--set", "parallel.overlap_param_gather=true"};
    std::vector<std::string> args{
        "sweep", kGpt3, "--out", csv, "--vary", "hardware.framework.align_param_gather=false,true"};
    args.insert(args.end(), fixed.begin(), fixed.end());
    const Run r = run(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const Csv c = parse_csv(slurp(csv));
    REQUIRE(c.rows.size() == 2);
    CHECK(c.rows[0].at("hardware.framework.align_param_gather") == "false");
    CHECK(c.rows[1].at("hardware.framework.align_param_gather") == "true");
    std::vector<double> step;
    for (const char* aligned : {"false", "true"}) {
        std::vector<std::string> a{
            "run",  kGpt3,   "--format",
            "json", "--set", std::string("hardware.framework.align_param_gather=") + aligned};
        a.insert(a.end(), fixed.begin(), fixed.end());
        const Run one = run(a);
        REQUIRE(one.code == 0);
        step.push_back(nlohmann::json::parse(one.out).at("step_time_s").get<double>());
    }
    CHECK(step[0] != step[1]); // the knob changes the step here
    for (std::size_t i = 0; i < 2; ++i)
        CHECK(std::stod(c.rows[i].at("step_time_s")) == Approx(step[i]).epsilon(1e-6));
}

TEST_CASE("sweep: resume reads only complete lines", "[app][sweep]") {
    using namespace explore;
    TempDir dir("sweep-existing");
    const std::string path = dir.file("x.csv");
    const std::string header = "config,a,b\n";
    spit(path, header + "0,1,2\n1,3,4\n2,5");
    const Existing e = read_existing(path, header, 10);
    CHECK(e.done == std::set<std::int64_t>{0, 1});
    CHECK(e.keep_bytes == static_cast<std::int64_t>(header.size() + 12));
    CHECK(e.in_order);
    spit(path, header + "0,1,2\n0,3,4\n");
    CHECK_THROWS_WITH(read_existing(path, header, 10), Catch::Contains("appears twice"));
    spit(path, header + "0,1\n");
    CHECK_THROWS_WITH(read_existing(path, header, 10), Catch::Contains("malformed row"));
    spit(path, header + "12,1,2\n");
    CHECK_THROWS_WITH(read_existing(path, header, 10), Catch::Contains("malformed row"));
}

TEST_CASE("sweep: integer lists continue with '...'", "[app][sweep]") {
    using explore::parse_int_list;
    CHECK(parse_int_list("--gpus", "8,16,...,128") ==
          std::vector<std::int64_t>{8, 16, 32, 64, 128});
    CHECK(parse_int_list("--gpus", "1,2,4,...,64") ==
          std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64});
    // Three numbers fix the step; two multiply by their ratio; the end lies on the progression.
    CHECK(parse_int_list("--m", "2048,2560,3072,...,4096") ==
          std::vector<std::int64_t>{2048, 2560, 3072, 3584, 4096});
    CHECK(parse_int_list("--m", "1,4,16,...,1024") ==
          std::vector<std::int64_t>{1, 4, 16, 64, 256, 1024});
    CHECK(parse_int_list("--m", "2,5,8,...,14") == std::vector<std::int64_t>{2, 5, 8, 11, 14});
    CHECK(parse_int_list("--m", "1,2,...,8,12,16,...,24") ==
          std::vector<std::int64_t>{1, 2, 4, 8, 12, 16, 20, 24});
    CHECK(parse_int_list("--m", "4,8,...,32") == std::vector<std::int64_t>{4, 8, 16, 32});
    // What the rule cannot read is refused with the rule, never guessed.
    CHECK_THROWS_WITH(parse_int_list("--m", "4,8,...,24"),
                      Catch::Contains("24 is not on the progression") &&
                          Catch::Contains("after two numbers it multiplies"));
    CHECK_THROWS_WITH(parse_int_list("--m", "2048,2560,...,4096"),
                      Catch::Contains("2560 is not a whole multiple of 2048") &&
                          Catch::Contains("2048,2560,3072,..."));
    CHECK_THROWS_WITH(parse_int_list("--m", "1,2,5,...,20"),
                      Catch::Contains("neither add nor multiply"));
    CHECK_THROWS_WITH(parse_int_list("--m", "1,2,..."), Catch::Contains("a number after it"));
    CHECK_THROWS_WITH(parse_int_list("--m", "1,2,...,1000000000000"),
                      Catch::Contains("is not on the progression"));
    CHECK_THROWS_WITH(parse_int_list("--m", "1,2,3,...,100000000"), Catch::Contains("more than"));
    // Sweep axes read the same rule; words pass through untouched.
    CHECK(explore::parse_axis("--vary", "parallel.tp=1,2,...,8").values ==
          std::vector<std::string>{"1", "2", "4", "8"});
    CHECK(explore::parse_axis("--vary", "parallel.recompute=none,full").values ==
          std::vector<std::string>{"none", "full"});
    CHECK_THROWS_WITH(explore::parse_axis("--vary", "training.global_batch=512,768,...,2048"),
                      Catch::Contains("--vary training.global_batch") &&
                          Catch::Contains("not a whole multiple"));
    CHECK(parse_int_list("--m", "3") == std::vector<std::int64_t>{3});
    CHECK_THROWS_WITH(parse_int_list("--gpus", "8,...,64"), Catch::Contains("--gpus"));
    CHECK_THROWS_WITH(parse_int_list("--gpus", "8,4"), Catch::Contains("increase"));
    CHECK_THROWS_WITH(parse_int_list("--gpus", "8,x"), Catch::Contains("--gpus"));
    CHECK_THROWS_WITH(parse_int_list("--gpus", "0,8"), Catch::Contains("positive"));
}

TEST_CASE("sweep: the CSV quotes fields with commas and reads them back", "[app][sweep]") {
    using namespace explore;
    const std::string f = csv_field("a, \"b\"");
    CHECK(f == "\"a, \"\"b\"\"\"");
    CHECK(split_csv("1," + f + ",x") == std::vector<std::string>{"1", "a, \"b\"", "x"});
    CHECK_THROWS(split_csv("1,\"open"));
}

TEST_CASE("sweep: the best configuration's time with the hardware file's band, or uncalibrated",
          "[app][sweep][uncertainty]") {
    TempDir dir("uncertainty");
    const Run plain = run({"sweep", kGpt3, "--vary", "parallel.tp=4,8", "--top", "1"});
    REQUIRE(plain.code == 0);
    CHECK_THAT(plain.out, Catch::Contains("uncertainty best: uncalibrated (hardware 'dgx-a100' "
                                          "has no uncertainty for steps)"));
    // A calibrated file: the band is [t (1 + p10), t (1 + p90)] of the best step time t.
    const std::string hw = dir.file("calibrated.yaml");
    spit(hw, "extends: dgx-a100\nname: calibrated\nuncertainty:\n  basis: held-out\n"
             "  steps: {points: 100, p10: -0.1, p50: 0, p90: 0.2}\n");
    const Run cal = run({"sweep", kGpt3, "--set", "hardware=" + hw, "--vary", "parallel.tp=4,8",
                         "--top", "1", "--out", dir.file("s.csv")});
    REQUIRE(cal.code == 0);
    const Csv csv = parse_csv(slurp(dir.file("s.csv")));
    // The best that fits is tp 8 (tp 4 is out of memory), as the uncalibrated sweep says.
    double best = 0;
    for (const auto& row : csv.rows)
        if (row.at("parallel.tp") == "8")
            best = std::stod(row.at("step_time_s"));
    REQUIRE(best > 0);
    const std::string expected =
        "uncertainty best: p10-p90 " + base::format_time(sim::Time::from_seconds(best * 0.9)) +
        " - " + base::format_time(sim::Time::from_seconds(best * 1.2)) + " (100 held-out steps)";
    CHECK_THAT(cal.out, Catch::Contains(expected));
}
