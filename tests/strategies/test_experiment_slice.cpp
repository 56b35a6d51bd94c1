// An experiment on a TPU: `slice:` names the shape (several slices with gpus or chips),
// `chips:` counts chips (TPU7x: 2 devices each), and bad shapes or counts are refused at their
// key.
#include "base/error.h"
#include "strategies/parallel/experiment.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <string>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

namespace {
ExperimentSpec load(const test::TempDir& dir, const std::string& head) {
    const std::string path = (dir.path / "e.yaml").string();
    test::spit(path, head + "\nmodel: gpt3-175B\ntraining: {global_batch: 256, micro_batch: 1, "
                            "dtype: bf16}\nparallel: {tp: 1, pp: 1}\n");
    return load_experiment(path);
}
} // namespace

TEST_CASE("experiment: slice and chips size a TPU cluster", "[experiment][torus]") {
    const test::TempDir dir("experiment-slice");
    const ExperimentSpec two = load(dir, "hardware: tpu-v5p\nslice: 4x4x8\ngpus: 256");
    CHECK(two.cluster.torus.shape == hardware::TorusShape{4, 4, 8});
    CHECK(two.cluster.nodes == 2);
    CHECK(two.gpus == 256);
    const ExperimentSpec one = load(dir, "hardware: tpu-v5p\nslice: 8x4x4");
    CHECK(one.gpus == 128);
    const ExperimentSpec dies = load(dir, "hardware: tpu-7x\nchips: 128");
    CHECK(dies.gpus == 256);
    CHECK(dies.cluster.torus.shape == hardware::TorusShape{4, 4, 8});
    CHECK_THROWS_WITH(load(dir, "hardware: tpu-v5p\nslice: 4x4x5"),
                      Catch::Contains("key 'slice'") && Catch::Contains("2x4x4 (32)"));
    CHECK_THROWS_WITH(load(dir, "hardware: tpu-v5p\nslice: 4x4x4\ngpus: 100"),
                      Catch::Contains("key 'gpus'") && Catch::Contains("use 64 or 128"));
    CHECK_THROWS_WITH(load(dir, "hardware: tpu-v5p\ngpus: 96"),
                      Catch::Contains("key 'gpus'") && Catch::Contains("whole 4x4x4 cubes"));
    CHECK_THROWS_WITH(load(dir, "hardware: dgx-h100\nchips: 8"), Catch::Contains("key 'chips'"));
}
