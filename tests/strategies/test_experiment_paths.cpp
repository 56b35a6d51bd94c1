// Relative paths in an experiment file (`hardware:`, `model:`, and `extends:` inside them) are
// resolved against the experiment file's folder, never the current directory: the same file
// means the same hardware and model wherever the command runs.
#include "base/error.h"
#include "strategies/parallel/experiment.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace clustersim;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

/// Runs in `dir` for its lifetime, then goes back.
struct InDirectory {
    fs::path previous = fs::current_path();
    explicit InDirectory(const fs::path& dir) { fs::current_path(dir); }
    ~InDirectory() { fs::current_path(previous); }
};

} // namespace

TEST_CASE("experiment files: relative hardware and model paths follow the file",
          "[strategies][experiment][paths]") {
    const fs::path root =
        fs::temp_directory_path() / ("clustersim-exp-paths-" + std::to_string(::getpid()));
    fs::remove_all(root);
    // The experiment's own folder has its hardware (a 4-GPU PCIe node) and model (6 layers);
    // the folder the command runs in has files of the same names that say something else.
    write(root / "project/exp.yaml", "hardware: hw/node.yaml\n"
                                     "model: models/mlp.yaml\n"
                                     "training: {global_batch: 32, micro_batch: 8}\n");
    write(root / "project/hw/node.yaml", "extends: pcie-4gpu\nname: beside-the-experiment\n");
    write(root / "project/models/mlp.yaml", "extends: lecture-mlp\nlayers: 6\n");
    write(root / "hw/node.yaml", "extends: dgx-a100\nname: in-the-current-directory\n");
    write(root / "models/mlp.yaml", "extends: lecture-mlp\nlayers: 2\n");

    for (const fs::path& cwd : {root, root / "project", root / "project/hw"}) {
        INFO(cwd.string());
        const InDirectory in(cwd);
        const auto e = strategies::parallel::load_experiment((root / "project/exp.yaml").string());
        CHECK(e.cluster.name == "beside-the-experiment");
        CHECK(e.gpus == 4);
        CHECK(e.model.layers == 6);
    }
    // Given relative to the current directory, the experiment file is found from there, and
    // its own references still from its folder.
    {
        const InDirectory in(root);
        const auto e = strategies::parallel::load_experiment("project/exp.yaml");
        CHECK(e.cluster.name == "beside-the-experiment");
        CHECK(e.model.layers == 6);
    }
    fs::remove_all(root);
}

TEST_CASE("experiment files: a referenced file of another kind is refused without quoting it",
          "[strategies][experiment][paths][errors]") {
    const fs::path root =
        fs::temp_directory_path() / ("clustersim-exp-other-" + std::to_string(::getpid()));
    fs::remove_all(root);
    // A password-file-like line: as YAML, a mapping whose one key is the whole line.
    write(root / "not-a-model.yaml", "root:$6$saltsalt$hashhashhash:20228:0:99999:7:::\n");
    write(root / "exp.yaml", "hardware: dgx-a100\nmodel: not-a-model.yaml\n"
                             "training: {global_batch: 8}\n");
    std::string what;
    try {
        (void)strategies::parallel::load_experiment((root / "exp.yaml").string());
    } catch (const InputError& e) {
        what = e.what();
    }
    CHECK_THAT(what, Catch::Contains("not-a-model.yaml: none of its keys") &&
                         Catch::Contains("is it the right file") && Catch::Contains("layers"));
    CHECK_THAT(what, !Catch::Contains("hashhash") && !Catch::Contains("saltsalt"));
    fs::remove_all(root);
}
