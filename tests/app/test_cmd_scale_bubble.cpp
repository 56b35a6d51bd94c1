// clustersim scale and bubble through app::run_cli. scale: per GPU count the best configuration
// a sweep of the same knobs finds, scaling efficiency computed from the rows' own numbers, cost =
// hours x GPUs x price. bubble: on an ideal pipeline (equal stages, compute far above the
// transfers) the simulated bubble equals the closed forms; both SVGs are well-formed.
#include "app/cli.h"
#include "cli_run.h"
#include "explore/sweep_row.h"
#include "hardware/hardware_loader.h"
#include "svg_check.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

using namespace clustersim;
using namespace clustersim::test;
namespace fs = std::filesystem;

namespace {
std::string trim(const std::string& s) {
    const auto a = s.find_first_not_of(' ');
    const auto b = s.find_last_not_of(' ');
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

/// A table printed with two spaces between right-aligned columns (the first may be
/// left-aligned; cells hold no two spaces in a row): the cells of each line under the heading
/// `first`, by column name. A right-aligned cell ends where its heading ends and starts after the
/// previous two spaces.
std::vector<std::map<std::string, std::string>>
table(const std::string& out, const std::string& first, const std::vector<std::string>& names) {
    const auto ls = lines(out);
    std::size_t h = 0;
    while (h < ls.size() && ls[h].rfind(first, 0) != 0)
        ++h;
    REQUIRE(h < ls.size());
    const std::string& head = ls[h];
    std::vector<std::map<std::string, std::string>> rows;
    for (std::size_t i = h + 1; i < ls.size() && !trim(ls[i]).empty(); ++i) {
        if (ls[i][0] == '[')
            break; // footnotes
        std::map<std::string, std::string> row;
        for (const auto& name : names) {
            const auto at = head.find(name);
            REQUIRE(at != std::string::npos);
            if (at == 0) {
                // The first column, either aligned: up to the first two spaces after its text.
                const auto from = ls[i].find_first_not_of(' ');
                row[name] = ls[i].substr(from, ls[i].find("  ", from) - from);
                continue;
            }
            const std::size_t end = at + name.size();
            std::string cell = ls[i].substr(0, std::min(end, ls[i].size()));
            const auto sep = cell.rfind("  ");
            row[name] = trim(sep == std::string::npos ? cell : cell.substr(sep + 2));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

double percent(const std::string& s) {
    REQUIRE(!s.empty());
    REQUIRE(s.back() == '%');
    return std::stod(s.substr(0, s.size() - 1)) / 100;
}

double dollars(std::string s) {
    REQUIRE(s.rfind("$", 0) == 0);
    s.erase(0, 1);
    s.erase(std::remove(s.begin(), s.end(), ','), s.end());
    return std::stod(s);
}

const std::string kGpt3 = CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml";
const std::string kMlp = CLUSTERSIM_SOURCE_DIR "/configs/experiments/lecture-mlp-pipeline.yaml";
} // namespace

// A cloud preset's list price prices the plan unless --price-per-gpu-hour says otherwise, and
// the output names which was used (issue: "the output says which was used").
TEST_CASE("scale: a cloud preset's list price, or the flag's", "[app][scale][price]") {
    const std::string p5 = CLUSTERSIM_SOURCE_DIR "/configs/experiments/llama3-70B-64xH100-p5.yaml";
    const hardware::ListPrice list = hardware::load_hardware("aws-p5").price;
    REQUIRE(list.per_gpu_hour > 0);
    const std::vector<std::string> args{
        "scale",         p5,      "--gpus",        "64",       "--tokens", "1T", "--set",
        "parallel.tp=8", "--set", "parallel.pp=1", "--format", "json"};
    const Run listed = run(args);
    INFO(listed.err);
    REQUIRE(listed.code == 0);
    const auto plan = nlohmann::json::parse(listed.out);
    CHECK(plan["price_per_gpu_hour"].get<double>() == list.per_gpu_hour);
    const std::string source = plan["price_source"];
    CHECK_THAT(source, Catch::Contains("aws-p5") && Catch::Contains(list.date) &&
                           Catch::Contains(list.region));
    const auto& point = plan["points"][0];
    REQUIRE(point["status"] == "found");
    // cost = hours to train x GPUs x the price.
    CHECK(point["cost"].get<double>() ==
          Approx(point["time_to_train_s"].get<double>() / 3600 * 64 * list.per_gpu_hour));

    auto flagged = args;
    flagged.insert(flagged.end(), {"--price-per-gpu-hour", "1"});
    const Run given = run(flagged);
    REQUIRE(given.code == 0);
    const auto overridden = nlohmann::json::parse(given.out);
    CHECK(overridden["price_per_gpu_hour"].get<double>() == 1.0);
    CHECK(overridden["price_source"] == "--price-per-gpu-hour");
}

TEST_CASE("scale: efficiency and cost from the rows' own numbers", "[app][scale]") {
    TempDir dir("scale");
    const std::string svg = dir.file("scale.svg");
    // tp, pp, micro-batch, recompute and virtual stages searched (cp and ZeRO fixed by --set).
    const Run r = run({"scale", kGpt3, "--gpus", "64,128,...,512", "--price-per-gpu-hour", "2.5",
                       "--tokens", "300B", "--plot", svg, "--jobs", "2", "--wide", "--set",
                       "parallel.cp=1", "--set", "parallel.zero=1"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    // The header names the node the GPU counts are made of, not "8 x A100" for 512 GPUs.
    CHECK_THAT(r.out, Catch::Contains("on dgx-a100 nodes (8 x A100-SXM4-80GB each)"));
    CHECK_THAT(r.out, Catch::Contains("fixed by --set, not searched: parallel.cp, parallel.zero"));
    CHECK_THAT(r.out, Catch::Contains("$2.50 per GPU-hour (--price-per-gpu-hour)"));
    CHECK_THAT(r.out, Catch::Contains("assumes no failures and no restarts"));
    const auto rows =
        table(r.out, "GPUs", {"GPUs", "tokens/s", "per GPU", "eff.", "time to train", "cost"});
    REQUIRE(rows.size() == 4);
    const double g0 = std::stod(rows[0].at("GPUs"));
    const double t0 = std::stod(rows[0].at("tokens/s"));
    CHECK(g0 == 64);
    CHECK(rows[0].at("eff.") == "100.0%");
    for (const auto& row : rows) {
        const double g = std::stod(row.at("GPUs"));
        const double t = std::stod(row.at("tokens/s"));
        INFO(g << " GPUs, " << t << " tokens/s");
        CHECK(std::stod(row.at("per GPU")) == Approx(t / g).margin(0.5));
        // Efficiency: tokens/s per GPU against the smallest count (printed to 0.1%).
        CHECK(percent(row.at("eff.")) == Approx((t / g) / (t0 / g0)).margin(0.0006));
        // Time to train 300B tokens, and its cost at $2.50 per GPU-hour.
        const double seconds = 300e9 / t;
        const std::string days = row.at("time to train");
        REQUIRE(days.find(" days") != std::string::npos);
        CHECK(std::stod(days) == Approx(seconds / 86400).margin(0.051));
        // tokens/s is printed rounded to a token: the cost follows to that precision.
        CHECK(dollars(row.at("cost")) == Approx(seconds / 3600 * g * 2.5).epsilon(1e-4));
    }
    // More GPUs, more throughput, less per GPU (the global batch is fixed).
    for (std::size_t i = 1; i < rows.size(); ++i) {
        CHECK(std::stod(rows[i].at("tokens/s")) > std::stod(rows[i - 1].at("tokens/s")));
        CHECK(percent(rows[i].at("eff.")) <= 1.0);
    }
    // Where each step goes: the shares of every count's best step add up to the whole.
    const auto parts = table(r.out, "GPUs  compute",
                             {"GPUs", "compute", "recompute", "TP comm", "EP comm", "DP comm",
                              "PP comm", "bubble", "optimizer", "other"});
    REQUIRE(parts.size() == 4);
    for (const auto& row : parts) {
        double sum = 0;
        for (const char* k : {"compute", "recompute", "TP comm", "EP comm", "DP comm", "PP comm",
                              "bubble", "optimizer", "other"})
            sum += percent(row.at(k));
        CHECK(sum == Approx(1.0).margin(0.006));
    }
    const auto doc = test::check_svg(slurp(svg));
    INFO(doc.error);
    CHECK(doc.error.empty());
    std::string text;
    for (const auto* e : doc.find("text"))
        text += e->text + "\n";
    CHECK_THAT(text, Catch::Contains("GPUs"));
    CHECK_THAT(text, Catch::Contains("throughput"));
    CHECK_THAT(text, Catch::Contains("efficiency"));
}

TEST_CASE("scale: the best configuration is the best a sweep of the same knobs finds",
          "[app][scale]") {
    TempDir dir("scale-best");
    // The search stops at the lightest recompute that fits: exact because recompute only adds
    // time. A sweep of every policy finds the same best.
    const std::string json = dir.file("plan.json");
    const Run s = run({"scale", kGpt3, "--gpus", "64", "--jobs", "2", "--set", "parallel.cp=1",
                       "--set", "parallel.zero=0", "--out", json});
    INFO(s.err);
    REQUIRE(s.code == 0);
    const auto plan = nlohmann::json::parse(slurp(json));
    REQUIRE(plan["points"].size() == 1);
    const auto& point = plan["points"][0];
    REQUIRE(point["status"] == "found");
    // scale's knobs as sweep axes: tp over the node's divisors, pp over the divisors of the 96
    // layers that divide 64 GPUs, micro-batch 1..8, recompute, 1F1B or 2..8 virtual stages.
    const std::string csv = dir.file("s.csv");
    const Run w = run({"sweep",  kGpt3,
                       "--gpus", "64",
                       "--set",  "parallel.zero=0",
                       "--vary", "parallel.tp=1,2,...,8",
                       "--vary", "parallel.pp=1,2,...,32",
                       "--vary", "training.micro_batch=1,2,...,8",
                       "--vary", "parallel.recompute=none,selective,full",
                       "--vary", "parallel.schedule=1f1b,interleaved-1f1b",
                       "--vary", "parallel.virtual_stages=1,2,3,4,6,8",
                       "--top",  "1",
                       "--jobs", "2",
                       "--out",  csv});
    INFO(w.err);
    REQUIRE(w.code == 0);
    const auto best = table(w.out, "#", {"tokens/s", "fits"});
    REQUIRE(best.size() == 1);
    CHECK(best[0].at("fits") == "yes");
    CHECK(best[0].at("tokens/s") == fmt::format("{:.0f}", point["tokens_per_s"].get<double>()));
    // The sweep's product holds every configuration scale tries (and some it skips, such as
    // interleaving without a pipeline): at least as many fit.
    const auto at = w.out.find(" fit in memory");
    REQUIRE(at != std::string::npos);
    const auto from = w.out.rfind(' ', at - 1) + 1;
    CHECK(std::stoi(w.out.substr(from, at - from)) >= point["fit"].get<int>());
}

TEST_CASE("scale: a GPU count nothing can use is a row saying why, and the others go on",
          "[app][scale]") {
    // 7 GPUs: no tp (a divisor of 8) x pp (of 96 layers) other than 1 x 1 divides 7, and a
    // global batch of 1536 is no multiple of dp 7.
    const Run r = run({"scale", kGpt3, "--gpus", "7,64", "--jobs", "2", "--set", "parallel.cp=1",
                       "--set", "parallel.zero=1"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto rows = table(r.out, "GPUs", {"GPUs", "tokens/s"});
    REQUIRE(rows.size() == 2);
    CHECK_THAT(r.out, Catch::Contains("\n   7  none can run [1]  "));
    CHECK(rows[0].at("tokens/s") == "-");
    CHECK(std::stod(rows[1].at("tokens/s")) > 0);
    CHECK_THAT(r.out, Catch::Contains("[1] 7 GPUs: "));
    CHECK_THAT(r.out, Catch::Contains("global batch"));
}

TEST_CASE("scale: --target-days picks the cheapest count that meets it, CSV and JSON agree",
          "[app][scale]") {
    TempDir dir("scale-target");
    const std::string csv = dir.file("plan.csv");
    const std::string json = dir.file("plan.json");
    const std::vector<std::string> args{"scale",
                                        kGpt3,
                                        "--gpus",
                                        "64,128,256",
                                        "--tokens",
                                        "30B",
                                        "--jobs",
                                        "2",
                                        "--target-days",
                                        "20",
                                        "--price-per-gpu-hour",
                                        "2",
                                        "--set",
                                        "parallel.zero=1",
                                        "--tokens-per-step",
                                        "3M"};
    auto with = [&](std::vector<std::string> extra) {
        auto a = args;
        a.insert(a.end(), extra.begin(), extra.end());
        return run(a);
    };
    const Run c = with({"--out", csv});
    INFO(c.err);
    REQUIRE(c.code == 0);
    const Run j = with({"--out", json});
    REQUIRE(j.code == 0);
    // The same plan printed whichever file it also writes.
    const auto printed = [](const std::string& out) {
        std::string kept;
        for (const auto& l : lines(out)) {
            if (l.rfind("written", 0) != 0)
                kept += l + "\n";
        }
        return kept;
    };
    CHECK(printed(c.out) == printed(j.out));
    const auto plan = nlohmann::json::parse(slurp(json));
    CHECK(plan["target_days"] == 20.0);
    CHECK(plan["price_source"] == "--price-per-gpu-hour");
    // The pick: of the counts whose time to train is within 20 days, the least cost.
    std::optional<int> cheapest;
    double least = 0;
    for (const auto& p : plan["points"]) {
        REQUIRE(p["status"] == "found");
        const double days = p["time_to_train_s"].get<double>() / 86400;
        CHECK(p["meets_target"].get<bool>() == (days <= 20));
        // The global batch is 3M tokens rounded to a whole number of micro-batch x dp.
        const auto& l = p["layout"];
        const int per = l["micro_batch"].get<int>() * l["dp"].get<int>();
        CHECK(l["global_batch"].get<int>() % per == 0);
        CHECK(std::abs(l["global_batch"].get<double>() * 2048 - 3e6) <= per * 2048 / 2.0 + 1);
        const double cost = p["cost"].get<double>();
        CHECK(cost == Approx(p["time_to_train_s"].get<double>() / 3600 * p["gpus"].get<int>() * 2));
        if (p["meets_target"].get<bool>() && (!cheapest || cost < least)) {
            cheapest = p["gpus"].get<int>();
            least = cost;
        }
    }
    if (cheapest)
        CHECK(plan["pick_gpus"] == *cheapest);
    else
        CHECK(plan["pick_gpus"].is_null());
    // The CSV: one header line and a row per count, the metadata beside it.
    const auto lines_of = lines(slurp(csv));
    REQUIRE(lines_of.size() == 4);
    CHECK(lines_of[0].rfind("gpus,status,reason,", 0) == 0);
    const auto meta = nlohmann::json::parse(slurp(csv + ".json"));
    CHECK(meta["target_days"] == 20.0);
    CHECK(!meta.contains("points"));
    const auto head = explore::split_csv(lines_of[0]);
    for (std::size_t i = 1; i < lines_of.size(); ++i) {
        const auto f = explore::split_csv(lines_of[i]);
        REQUIRE(f.size() == head.size());
        const auto& p = plan["points"][i - 1];
        std::map<std::string, std::string> row;
        for (std::size_t k = 0; k < f.size(); ++k)
            row[head[k]] = f[k];
        CHECK(std::stoi(row["gpus"]) == p["gpus"].get<int>());
        CHECK(std::stod(row["tokens_per_s"]) == Approx(p["tokens_per_s"].get<double>()));
        CHECK(row["meets_target"] == (p["meets_target"].get<bool>() ? "true" : "false"));
        CHECK(row["layout"] == p["layout"]["code"].get<std::string>());
    }
}

TEST_CASE("scale: bad input exits 2 and names the flag", "[app][scale]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--gpus", "64,x"}, "--gpus"},
        {{"--gpus", "128,64"}, "--gpus"},
        {{"--gpus", "64,96,...,256"}, "--gpus"},
        {{"--gpus", "64", "--price-per-gpu-hour", "-1"}, "--price-per-gpu-hour"},
        {{"--gpus", "64", "--tokens", "many"}, "--tokens"},
        {{"--gpus", "64", "--max-memory", "lots"}, "--max-memory"},
        {{"--gpus", "64", "--goodput", "1.5"}, "--goodput"},
        {{"--gpus", "64", "--budget", "1000"}, "--budget"},
        {{"--gpus", "64", "--target-days", "-3"}, "--target-days"},
        {{"--gpus", "64", "--out", "plan.txt"}, "--out"},
        {{"--gpus", "64", "--format", "yaml"}, "--format"},
        {{"--gpus", "64", "--global-batch", "512", "--tokens-per-step", "1M"}, "--global-batch"},
    };
    for (const auto& [args, says] : cases) {
        std::vector<std::string> a{"scale", kGpt3};
        a.insert(a.end(), args.begin(), args.end());
        INFO(says);
        const Run r = run(a);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains(says));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
}

namespace {
/// An ideal pipeline: the lecture's MLP (identical layers, no embedding or head) made deep and
/// wide, 16 layers of 16384 x 16384 per stage on 4 H100s, so that a stage's compute (about
/// 16 x 6 x 64 x 16384^2 FLOPs = 1.6 TFLOP per micro-batch, milliseconds) dwarfs the transfer
/// of its 64 x 16384 activations (2 MiB, microseconds over NVLink); plain SGD.
std::vector<std::string> ideal(const std::string& micro_batches) {
    return {"bubble",          kMlp,
            "--micro-batches", micro_batches,
            "--set",           "gpus=4",
            "--set",           "parallel.pp=4",
            "--set",           "model.layers=64",
            "--set",           "model.dim=16384",
            "--set",           "training.micro_batch=64",
            "--set",           "training.global_batch=256",
            "--set",           "training.forward_only=false",
            "--set",           "training.dtype=bf16",
            "--set",           "training.optimizer=sgd"};
}
} // namespace

TEST_CASE("bubble: on an ideal pipeline the simulated bubble is the closed form", "[app][bubble]") {
    TempDir dir("bubble");
    const std::string svg = dir.file("bubble.svg");
    auto args = ideal("1,2,...,64");
    args.insert(args.end(), {"--plot", svg, "--virtual-stages", "2"});
    const Run r = run(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto rows = table(r.out, "schedule",
                            {"schedule", "m", "bubble", "pipeline idle", "closed form", "fits"});
    REQUIRE(rows.size() == 3 * 7);
    const int p = 4;
    int compared = 0;
    for (const auto& row : rows) {
        const int m = std::stoi(row.at("m"));
        const bool interleaved = row.at("schedule").find("interleaved") != std::string::npos;
        const int v = interleaved ? 2 : 1;
        INFO(row.at("schedule") << ", m = " << m);
        // The closed forms: GPipe and 1F1B (p-1)/(m+p-1), interleaved (p-1)/(v m+p-1).
        const double closed = static_cast<double>(p - 1) / (v * m + p - 1);
        CHECK(percent(row.at("closed form")) == Approx(closed).margin(0.0005));
        if (row.at("bubble").rfind("invalid", 0) == 0) {
            // Megatron's rule: interleaving needs m to be a multiple of p.
            CHECK(interleaved);
            CHECK(m % p != 0);
            continue;
        }
        // Within 1.5 percentage points (the transfers and per-micro-batch launch overheads are
        // not quite free; the rows differ by 0.1 to 1.3 points, most at m = 64).
        CHECK(percent(row.at("pipeline idle")) == Approx(closed).margin(0.015));
        // The bubble, a share of the whole step as run and sweep report it, is smaller: the
        // optimizer step is not pipelined.
        CHECK(percent(row.at("bubble")) <= percent(row.at("pipeline idle")));
        ++compared;
    }
    CHECK(compared == 3 * 7 - 2);
    const auto doc = test::check_svg(slurp(svg));
    INFO(doc.error);
    REQUIRE(doc.error.empty());
    std::string text;
    for (const auto* e : doc.find("text"))
        text += e->text + "\n";
    for (const char* s : {"GPipe", "1F1B", "interleaved 1F1B (v=2)", "(p-1)/(m+p-1)",
                          "(p-1)/(v m+p-1)", "micro-batches"})
        CHECK_THAT(text, Catch::Contains(s));
}

TEST_CASE("bubble: --fixed-batch cuts one global batch into more micro-batches", "[app][bubble]") {
    TempDir dir("bubble-fixed");
    const std::string json = dir.file("b.json");
    const std::string csv = dir.file("b.csv");
    // The ideal pipeline's global batch of 256 sequences (dp 1) in m = 4..64 micro-batches of
    // 256 / m, interleaved with 2 and 4 virtual stages in the same run; m = 3 does not divide.
    auto args = ideal("3,4,8,16,...,64");
    args.insert(args.end(),
                {"--fixed-batch", "--schedules", "1f1b,interleaved", "--virtual-stages", "2,4"});
    auto with = [&](std::vector<std::string> extra) {
        auto a = args;
        a.insert(a.end(), extra.begin(), extra.end());
        return run(a);
    };
    const Run r = with({"--out", json});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto rows = table(r.out, "schedule",
                            {"schedule", "m", "micro-batch", "bubble", "step time", "pipeline idle",
                             "closed form", "tokens/s"});
    REQUIRE(rows.size() == 3 * 6);
    CHECK_THAT(r.out, Catch::Contains("3 micro-batches do not divide the global batch"));
    const int p = 4;
    for (const auto& row : rows) {
        const int m = std::stoi(row.at("m"));
        INFO(row.at("schedule") << ", m = " << m);
        if (m == 3) {
            CHECK(row.at("bubble").rfind("invalid", 0) == 0);
            continue;
        }
        CHECK(std::stoi(row.at("micro-batch")) == 256 / m);
        const std::string& name = row.at("schedule");
        const int v = name.find("v=4") != std::string::npos   ? 4
                      : name.find("v=2") != std::string::npos ? 2
                                                              : 1;
        const double closed = static_cast<double>(p - 1) / (v * m + p - 1);
        CHECK(percent(row.at("closed form")) == Approx(closed).margin(0.0005));
        // Smaller micro-batches: each pass shorter, the per-micro-batch overheads a larger
        // share; the pipeline's idle share still follows the closed form.
        CHECK(percent(row.at("pipeline idle")) == Approx(closed).margin(0.03));
    }
    // The same tokens every step: tokens/s is step time's inverse across the rows of 1F1B.
    const auto plan = nlohmann::json::parse(slurp(json));
    CHECK(plan["fixed_batch"] == true);
    double tokens = 0;
    for (const auto& row : plan["rows"]) {
        if (!row["valid"].get<bool>())
            continue;
        CHECK(row["global_batch"] == 256);
        const double t = row["tokens_per_s"].get<double>() * row["step_time_s"].get<double>();
        if (tokens == 0)
            tokens = t;
        CHECK(t == Approx(tokens).epsilon(1e-9));
    }
    // The CSV holds the same rows, its metadata beside it.
    REQUIRE(with({"--out", csv}).code == 0);
    const auto ls = lines(slurp(csv));
    REQUIRE(ls.size() == 1 + plan["rows"].size());
    CHECK(ls[0].rfind("schedule,virtual_stages,m,micro_batch,", 0) == 0);
    CHECK(nlohmann::json::parse(slurp(csv + ".json"))["fixed_batch"] == true);
}

TEST_CASE("bubble: bad input exits 2 and names the flag", "[app][bubble]") {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--micro-batches", "1,2,x"}, "--micro-batches"},
        {{"--micro-batches", "1,...,8"}, "--micro-batches"},
        {{"--micro-batches", "4", "--virtual-stages", "1"}, "--virtual-stages"},
        {{"--micro-batches", "4", "--out", "b.txt"}, "--out"},
        {{"--micro-batches", "4", "--format", "yaml"}, "--format"},
        {{"--micro-batches", "2,6,...,24"}, "not on the progression"},
        {{"--micro-batches", "4", "--set", "parallel.pp=1", "--set", "gpus=1"}, "no pipeline"},
    };
    for (const auto& [args, says] : cases) {
        std::vector<std::string> a{"bubble", kMlp};
        a.insert(a.end(), args.begin(), args.end());
        INFO(says);
        const Run r = run(a);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Contains(says));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
}
