#include "base/error.h"
#include "base/text.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace clustersim;

TEST_CASE("text: percentages with the decimals asked for", "[base][text]") {
    CHECK(base::percent(0.1234) == "12.3%");
    CHECK(base::percent(0.1234, 2) == "12.34%");
    CHECK(base::percent(0) == "0.0%");
    CHECK(base::signed_percent(0.05) == "+5.0%");
    CHECK(base::signed_percent(-0.0456, 2) == "-4.56%");
    CHECK(base::percent_number(0.1234, 2) == "12.34");
}

TEST_CASE("text: significant digits", "[base][text]") {
    CHECK(base::round_significant(123456.789, 6) == 123457.0);
    CHECK(base::round_significant(0.000123456789, 3) == 0.000123);
    CHECK(base::round_significant(-98765.0, 2) == -99000.0);
    CHECK(base::round_significant(0.0, 3) == 0.0);
    CHECK(std::isinf(base::round_significant(std::numeric_limits<double>::infinity(), 3)));
    CHECK(base::scientific(1.23456e9, 3) == "1.23e+09");
    CHECK(base::scientific(5000, 3) == "5.00e+03");
    // What is written reads back as what was rounded.
    const double x = 2.0 / 3.0;
    CHECK(base::round_significant(x, 4) == std::stod(base::scientific(x, 4)));
}

TEST_CASE("text: join", "[base][text]") {
    CHECK(base::join({}, ", ").empty());
    CHECK(base::join({"a"}, ", ") == "a");
    CHECK(base::join({"a", "b", "c"}, ", ") == "a, b, c");
}

TEST_CASE("errors: an InputError may carry its location as data", "[base][error]") {
    const InputError plain("x.yaml: bad");
    CHECK_FALSE(plain.where().has_value());
    const InputError located("x.yaml:3:5: key 'a.b': bad", {"x.yaml", 3, 5, "a.b"});
    REQUIRE(located.where().has_value());
    CHECK(located.where()->line == 3);
    CHECK(located.where()->column == 5);
    CHECK(located.where()->key == "a.b");
    CHECK(std::string(located.what()) == "x.yaml:3:5: key 'a.b': bad");
}

TEST_CASE("errors: an InputError keeps its reason and location apart", "[base][error]") {
    const InputError keyed({"x.yaml", 3, 5, "a.b"}, "expected a number");
    CHECK(std::string(keyed.what()) == "x.yaml:3:5: key 'a.b': expected a number");
    CHECK(keyed.reason() == "expected a number");
    CHECK(keyed.keyed_reason() == "key 'a.b': expected a number");
    REQUIRE(keyed.where().has_value());
    CHECK(keyed.where()->key == "a.b");
    // Said about its own file, the location goes; about another, the message stays whole.
    CHECK(keyed.message_for("x.yaml") == "key 'a.b': expected a number");
    CHECK(keyed.message_for("y.yaml") == keyed.what());

    // The key as data only (the reason names it in its own words), a line with no column, and
    // a file with no line.
    const InputError unnamed({"t.csv", 12, 0, "vocab"}, "column 'vocab': expected a number",
                             InputError::KeyShown::no);
    CHECK(std::string(unnamed.what()) == "t.csv:12: column 'vocab': expected a number");
    CHECK(unnamed.message_for("t.csv") == "column 'vocab': expected a number");
    const InputError file_only({"e.yaml", 0, 0, "parallel.tp"}, "tp must divide the GPUs",
                               InputError::KeyShown::no);
    CHECK(std::string(file_only.what()) == "e.yaml: tp must divide the GPUs");
    CHECK(file_only.located_in("e.yaml"));

    // A message that carries its own location is kept as written: nothing is parsed out of it.
    const InputError legacy("x.yaml:3:5: key 'a.b': bad", {"x.yaml", 3, 5, "a.b"});
    CHECK_FALSE(legacy.located_in("x.yaml"));
    CHECK(legacy.reason() == legacy.what());
    CHECK(legacy.message_for("x.yaml") == legacy.what());
}

TEST_CASE("text: input quoted in errors is short and printable", "[base][text]") {
    CHECK(base::excerpt("fast") == "fast");
    CHECK(base::excerpt("a\nb\tc") == "a?b?c");
    const std::string huge(20 << 20, 'x');
    const std::string e = base::excerpt(huge);
    CHECK(e == std::string(60, 'x') + "... (20971520 bytes)");
    // Cut at a character boundary: "µ" is two bytes in UTF-8.
    CHECK(base::excerpt("aµs", 2) == "a... (4 bytes)");
}
