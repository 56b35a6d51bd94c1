#include "app/output.h"
#include "base/error.h"

#include "cli_run.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <sys/stat.h>

using namespace clustersim;
namespace fs = std::filesystem;

TEST_CASE("output files: written whole, through links, never over devices", "[app][output]") {
    const test::TempDir dir("output");

    SECTION("a plain file is replaced whole and no temporary is left") {
        const fs::path p = dir.path / "a.txt";
        app::write_file_atomically(p.string(), "first");
        app::write_file_atomically(p.string(), "second");
        CHECK(test::slurp(p) == "second");
        int files = 0;
        for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path))
            ++files;
        CHECK(files == 1);
    }

    SECTION("a symbolic link stays a link; the file it points to gets the content") {
        const fs::path real = dir.path / "real.json";
        const fs::path link = dir.path / "link.json";
        test::spit(real, "old");
        fs::create_symlink(real, link);
        app::write_file_atomically(link.string(), "new");
        CHECK(fs::is_symlink(fs::symlink_status(link)));
        CHECK(test::slurp(real) == "new");
    }

    SECTION("a device is written through, not replaced by a regular file") {
        REQUIRE(fs::exists("/dev/null"));
        app::write_file_atomically("/dev/null", "discarded");
        struct stat st {};
        REQUIRE(::stat("/dev/null", &st) == 0);
        CHECK(S_ISCHR(st.st_mode));
    }

    SECTION("a directory, an empty path and a missing folder are input errors") {
        CHECK_THROWS_WITH(app::write_file_atomically(dir.path.string(), "x"),
                          dir.path.string() + ": is a directory; give a file name");
        CHECK_THROWS_AS(app::write_file_atomically("", "x"), InputError);
        CHECK_THROWS_WITH(app::write_file_atomically((dir.path / "no/such/f").string(), "x"),
                          Catch::Contains("does not exist"));
    }
}

TEST_CASE("output files: an output that is an input is refused", "[app][output]") {
    const test::TempDir dir("output-input");
    const fs::path in = dir.path / "exp.yaml";
    test::spit(in, "x");
    const fs::path link = dir.path / "link.yaml";
    fs::create_symlink(in, link);
    CHECK_THROWS_WITH(app::refuse_output_over_input(in.string(), "--trace", {in.string()}),
                      "--trace " + in.string() + ": is an input of this command (" + in.string() +
                          "); writing it would destroy it: give another file");
    // Through another spelling of the path, or a link to it.
    const std::string dotted = (dir.path / "." / "exp.yaml").string();
    CHECK_THROWS_AS(app::refuse_output_over_input(dotted, "--out", {in.string()}), InputError);
    CHECK_THROWS_AS(app::refuse_output_over_input(link.string(), "--out", {in.string()}),
                    InputError);
    CHECK_NOTHROW(
        app::refuse_output_over_input((dir.path / "other.json").string(), "--out", {in.string()}));
    CHECK_NOTHROW(app::refuse_output_over_input("", "--out", {in.string()}));
}
