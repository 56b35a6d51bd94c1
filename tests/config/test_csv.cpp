// The one CSV reader (config/csv.h): comments, the header, quoting, numbers, and errors that
// name the file and line.
#include "base/error.h"
#include "config/csv.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace clustersim;
using config::CsvTable;

namespace {

/// The InputError `f` throws (fails the test when it throws none).
template <typename F>
InputError error_of(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return e;
    }
    FAIL("no InputError");
    return InputError("");
}

} // namespace

TEST_CASE("csv: comments, header, rows by column name", "[config][csv]") {
    const CsvTable t = CsvTable::parse("# a comment\n"
                                       "\n"
                                       "name, size ,time(ns)\r\n"
                                       "# a comment between rows\n"
                                       "a,1024,44.5\n"
                                       "  b , 2048 , 1e3 \n",
                                       "t.csv");
    CHECK(t.name() == "t.csv");
    CHECK(t.header_line() == 3);
    CHECK(t.columns() == std::vector<std::string>{"name", "size", "time(ns)"});
    REQUIRE(t.size() == 2);
    CHECK(t.rows()[0].line == 5);
    CHECK(t.rows()[1].line == 6);
    CHECK(t.text(1, "name") == "b");
    CHECK(t.number(0, "size") == 1024);
    CHECK(t.number(1, "time(ns)") == 1000);
    CHECK(t.number_at(0, 2) == 44.5);
    CHECK(t.where(1) == "t.csv:6");
    CHECK(t.find_column("size") == std::size_t{1});
    CHECK_FALSE(t.find_column("speed"));
}

TEST_CASE("csv: quoted fields keep commas and quotes", "[config][csv]") {
    const CsvTable t = CsvTable::parse("what,note\n\"a, b\",\"say \"\"hi\"\"\"\n", "q.csv");
    REQUIRE(t.size() == 1);
    CHECK(t.text(0, "what") == "a, b");
    CHECK(t.text(0, "note") == "say \"hi\"");
    CHECK(config::split_csv_line(" x , \"y,z\" ,") == std::vector<std::string>{"x", "y,z", ""});
}

TEST_CASE("csv: a header may start with '#' when it precedes the first numeric row",
          "[config][csv]") {
    const CsvTable t = CsvTable::parse("# Megatron steps\n"
                                       "# GPUs,global batch,time (ms)\n"
                                       "8,32,1.5\n",
                                       "steps.csv", CsvTable::Header::before_first_number);
    CHECK(t.header_line() == 2);
    CHECK(t.columns().front() == "# GPUs");
    CHECK(t.comments() == std::vector<std::string>{"# Megatron steps"});
    CHECK(t.number(0, "time (ms)") == 1.5);
    const InputError e = error_of([] {
        (void)CsvTable::parse("garbage\nsize,time\n1,2\n", "g.csv",
                              CsvTable::Header::before_first_number);
    });
    CHECK_THAT(e.what(), Catch::StartsWith("g.csv:1: expected a comment ('#') or the header"));
    CHECK_THAT(error_of([] {
                   (void)CsvTable::parse("# only\n", "e.csv",
                                         CsvTable::Header::before_first_number);
               }).what(),
               Catch::StartsWith("e.csv: no data rows"));
}

TEST_CASE("csv: errors name the file and line, as text and as a SourceLocation", "[config][csv]") {
    const std::string header = "size,time\n";
    SECTION("a row cut short") {
        const InputError e =
            error_of([&] { (void)CsvTable::parse(header + "1,2\n3\n", "cut.csv"); });
        CHECK(std::string(e.what()) == "cut.csv:3: expected 2 fields as the header at line 1 "
                                       "says, got 1: the row is cut or garbled");
        REQUIRE(e.where());
        CHECK(e.where()->file == "cut.csv");
        CHECK(e.where()->line == 3);
    }
    SECTION("not a number") {
        const CsvTable t = CsvTable::parse("# c\n" + header + "1,fast\n", "n.csv");
        const InputError e = error_of([&] { (void)t.number(0, "time"); });
        CHECK(std::string(e.what()) == "n.csv:3: column 'time': expected a number, got 'fast'");
        REQUIRE(e.where());
        CHECK(e.where()->line == 3);
        CHECK(e.where()->key == "time");
        CHECK_THROWS_WITH(t.number(0, "size2"), "n.csv:2: no column 'size2'");
        CHECK_THROWS_WITH(t.fail(0, "too slow"), "n.csv:3: too slow");
    }
    SECTION("numbers are whole and finite") {
        const CsvTable t = CsvTable::parse(header + "12 GB,inf\n", "w.csv");
        CHECK_THROWS_WITH(t.number(0, "size"), Catch::Contains("got '12 GB'"));
        CHECK_THROWS_WITH(t.number(0, "time"), Catch::Contains("got 'inf'"));
        CHECK(config::parse_number("+1e-3") == 1e-3);
        CHECK_FALSE(config::parse_number(""));
    }
    SECTION("no header, no rows, no file") {
        CHECK_THROWS_WITH(CsvTable::parse("# just a comment\n", "h.csv"), "h.csv: no header line");
        CHECK_THROWS_WITH(CsvTable::parse(header, "r.csv"), "r.csv: no data rows");
        const std::string missing =
            (std::filesystem::temp_directory_path() / "clustersim-no-such.csv").string();
        const InputError e = error_of([&] { (void)CsvTable::read(missing); });
        CHECK(std::string(e.what()) == missing + ": cannot open the file");
        REQUIRE(e.where());
        CHECK(e.where()->file == missing);
    }
}

TEST_CASE("csv: read() reads a file", "[config][csv]") {
    const test::TempDir dir("csv");
    const auto path = dir.write("t.csv", "# x\nbytes,busbw\n1024,0.04\n");
    const CsvTable t = CsvTable::read(path.string());
    CHECK(t.name() == path.string());
    CHECK(t.number(0, "busbw") == 0.04);
    CHECK(t.where(0) == path.string() + ":3");
}

TEST_CASE("csv: one splitter, trimmed for hand-written files, exact for files read back",
          "[config][csv]") {
    using config::CsvFieldText;
    using config::split_csv_line;
    CHECK(split_csv_line(" a , \"b,\"\"c\"\" \" ", CsvFieldText::trimmed) ==
          std::vector<std::string>{"a", "b,\"c\""}); // trimmed inside quotes too
    CHECK(split_csv_line(" a ,\"b\"", CsvFieldText::exact) == std::vector<std::string>{" a ", "b"});
    // Malformed either way: a quote never closed, a quote after text of its field.
    for (const auto mode : {CsvFieldText::trimmed, CsvFieldText::exact}) {
        CHECK_THROWS_WITH(split_csv_line("1,\"open", mode),
                          "a quoted field without its closing quote");
        CHECK_THROWS_WITH(split_csv_line("1,ab\"c\"", mode), "a quote inside an unquoted field");
    }
    CHECK_THROWS_WITH(split_csv_line(" \"x\"", CsvFieldText::exact),
                      "a quote inside an unquoted field");
    // In a table the error names the file and the line.
    CHECK_THROWS_WITH(CsvTable::parse("# c\nbytes,busbw\n1024,\"0.5\n", "t.csv"),
                      "t.csv:3: a quoted field without its closing quote");
}
