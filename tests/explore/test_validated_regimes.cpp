// The validated regimes a plan quotes are those docs/validation.md reports: each regime's runs,
// mean and worst |error| appear in its section of the file (`clustersim report validation`
// writes it), so the table in explore/validated_regimes.cpp cannot drift from the study; the
// nearest regime is chosen by GPU family, then by the GPU count's log2 distance to its range.
#include "explore/validated_regimes.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

using namespace clustersim;

namespace {
std::string section(const std::string& doc, const std::string& name) {
    const std::string head = "\n## " + name + "\n";
    const auto at = doc.find(head);
    REQUIRE(at != std::string::npos);
    const auto end = doc.find("\n## ", at + head.size());
    return doc.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

/// A share as the page prints it: "6.93%", a whole one with its decimal ("22.0%").
std::string pct(double share) {
    const double percent = std::round(share * 10000) / 100;
    if (percent == std::round(percent))
        return fmt::format("{:.1f}%", percent);
    return fmt::format("{:g}%", percent);
}
} // namespace

TEST_CASE("validated regimes: every number is in docs/validation.md", "[explore][regimes]") {
    std::ifstream in(CLUSTERSIM_SOURCE_DIR "/docs/validation.md");
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string doc = ss.str();
    auto regimes = explore::validated_step_regimes();
    regimes.push_back(explore::validated_memory_regime());
    for (const auto& r : regimes) {
        INFO(r.name);
        const std::string text = section(doc, r.section);
        // The count as the section states it ("32 of 33 rows", "9 of 10 rows", the summary
        // table's "| every row ... | 1440 |"), not any digits (a bare "32" is also in "fp32",
        // and in a GPU-count cell).
        const std::string n = std::to_string(r.rows);
        const std::regex count("(^|[^0-9.,])" + n + " of [0-9,]+ rows|[^0-9.,]of " + n +
                               " rows|\\| every row[^|\n]*\\| " + n + " \\|");
        CHECK(std::regex_search(text, count));
        CHECK_THAT(text, Catch::Contains(pct(r.mean_abs_error)));
        CHECK_THAT(text, Catch::Contains(pct(r.max_abs_error)));
    }
}

TEST_CASE("validated regimes: the nearest by GPU, then by GPU count", "[explore][regimes]") {
    const auto a8 = explore::nearest_step_regime("A100-SXM4-80GB", 8);
    REQUIRE(a8.regime != nullptr);
    CHECK(a8.regime->max_gpus == 8);
    CHECK(a8.same_gpu);
    CHECK(a8.inside_range);
    // 16 A100s: one doubling above the single node, one halving below 32: the first wins.
    CHECK(explore::nearest_step_regime("A100-SXM4-80GB", 16).regime->max_gpus == 8);
    const auto a4k = explore::nearest_step_regime("A100-SXM4-80GB", 4096);
    CHECK(a4k.regime->max_gpus == 3072);
    CHECK(!a4k.inside_range);
    const auto h = explore::nearest_step_regime("H100-SXM5-80GB", 2048);
    CHECK(h.regime->gpu == "H100");
    CHECK(!h.inside_range);
    // No regime of the GPU: the nearest by count of all, flagged.
    const auto v = explore::nearest_step_regime("V100-SXM3-32GB", 16);
    REQUIRE(v.regime != nullptr);
    CHECK(!v.same_gpu);
}
