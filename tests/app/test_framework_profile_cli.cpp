// The experiment's `training.framework` key on the command line: a profile by name, refused with
// exit 2 when unknown, naming the file, line, key and the accepted names.
#include "cli_run.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using test::run;

TEST_CASE("cli run: an unknown framework profile exits 2 naming file, line, key and the "
          "accepted names",
          "[app][run][framework]") {
    const test::TempDir tmp("framework-cli");
    const std::string path = tmp.write("e.yaml", "hardware: dgx-a100\n"
                                                 "gpus: 8\n"
                                                 "model: gpt3-175B\n"
                                                 "training:\n"
                                                 "  global_batch: 8\n"
                                                 "  framework: deepspeed\n")
                                 .string();
    const test::Run bad = run({"run", path});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains(path + ":6:") && Catch::Contains("training.framework") &&
                            Catch::Contains("expected one of megatron-core, megatron-lm, "
                                            "megatron-deepspeed, got 'deepspeed'"));
    // --set names it too, and a known name runs.
    const test::Run set = run({"run",
                               CLUSTERSIM_SOURCE_DIR "/configs/experiments/"
                                                     "turing-530B-2520xA100.yaml",
                               "--set", "training.framework=megatron-ds"});
    CHECK(set.code == 2);
    CHECK_THAT(set.err, Catch::Contains("framework") && Catch::Contains("megatron-deepspeed"));
    const test::Run ok = run({"run",
                              CLUSTERSIM_SOURCE_DIR "/configs/experiments/"
                                                    "turing-530B-2520xA100.yaml",
                              "--set", "training.framework=megatron-lm"});
    CHECK(ok.code == 0);
}
