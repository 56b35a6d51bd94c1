// MaxText's mesh keys (strategies/parallel/device_mesh.h): the sizes they set, the ranks placed
// on the torus as JAX's create_device_mesh places them, the batch from per_device_batch_size,
// remat_policy, MFU with causal attention at half, and each bad input refused at its key with
// what would work.
#include "app/cli.h"
#include "base/error.h"
#include "hardware/torus.h"
#include "strategies/models/model_spec.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

namespace {

// A small dense decoder (8 layers, hidden 1024, 16 heads, seq 2048).
const char* kModel = "model: {kind: transformer, layers: 8, hidden: 1024, heads: 16, ffn: 4096, "
                     "seq: 2048, vocab: 32000, attention: flash}\n";

std::string write(const test::TempDir& dir, const std::string& head, const std::string& training,
                  const std::string& parallel) {
    const std::string path = (dir.path / "e.yaml").string();
    test::spit(path, head + "\n" + kModel + "training: {" + training + "}\nparallel: {" + parallel +
                         "}\n");
    return path;
}

ExperimentSpec load(const test::TempDir& dir, const std::string& head, const std::string& training,
                    const std::string& parallel) {
    return load_experiment(write(dir, head, training, parallel));
}

hardware::TorusShape chip_of(const ExperimentSpec& e, int gpu) {
    return hardware::coordinates(e.cluster.torus, gpu % e.cluster.torus.devices()).chip;
}

} // namespace

TEST_CASE("mesh: ici axes become tp and FSDP, placed on the torus as create_device_mesh does",
          "[experiment][mesh]") {
    const test::TempDir dir("mesh-v5p");
    // v5p 4x4x4: tensor 4 takes the first whole axis of 4 (x), fsdp 16 the two left (y, z).
    const ExperimentSpec e =
        load(dir, "hardware: tpu-v5p\nslice: 4x4x4", "per_device_batch_size: 2, dtype: bf16",
             "ici_tensor_parallelism: 4, ici_fsdp_parallelism: -1");
    const ParallelSpec& p = e.parallel;
    CHECK(p.tp == 4);
    CHECK(p.dp == 16);
    CHECK(p.pp == 1);
    CHECK(p.zero == 3);
    CHECK(p.sequence_parallel);
    CHECK(p.dp_replicate == 1);
    CHECK(e.training.global_batch == 128); // 2 x 64 devices
    CHECK(e.training.micro_batch == 8);    // one micro-batch of the 8 sequences per shard
    for (int t = 0; t < 4; ++t)
        CHECK(chip_of(e, gpu_of(p, t, 0, 0)) == hardware::TorusShape{t, 0, 0});
    for (int d = 0; d < 16; ++d)
        CHECK(chip_of(e, gpu_of(p, 0, d, 0)) == hardware::TorusShape{0, d / 4, d % 4});
    // Every device runs exactly one rank.
    std::vector<int> seen(64, 0);
    for (int g : p.device_order)
        ++seen[static_cast<std::size_t>(g)];
    CHECK(std::count(seen.begin(), seen.end(), 1) == 64);
    // The same result when validated again (sweeps and make_experiment validate twice).
    ExperimentSpec again = e;
    validate_experiment(again);
    CHECK(again.parallel == e.parallel);
    CHECK(again.training == e.training);
    // A sweep changing one axis: fsdp's -1 takes the devices left again.
    again.parallel.mesh.ici[static_cast<std::size_t>(MeshAxis::tensor)] = 16;
    validate_experiment(again);
    CHECK(again.parallel.tp == 16);
    CHECK(again.parallel.dp == 4);
    // per_device_batch_size alone: MaxText's default mesh, the same when validated again.
    ExperimentSpec defaults =
        load(dir, "hardware: tpu-v5p\nslice: 4x4x4", "per_device_batch_size: 1, dtype: bf16", "");
    CHECK(defaults.parallel.dp == 64);
    CHECK(defaults.parallel.zero == 3);
    const ParallelSpec first = defaults.parallel;
    validate_experiment(defaults);
    CHECK(defaults.parallel == first);
}

TEST_CASE("mesh: v5e 16x16 and multislice over the DCN", "[experiment][mesh]") {
    const test::TempDir dir("mesh-v5e");
    const ExperimentSpec e =
        load(dir, "hardware: tpu-v5e\nslice: 16x16", "per_device_batch_size: 1, dtype: bf16",
             "ici_fsdp_parallelism: 16, ici_tensor_parallelism: 16");
    CHECK(e.parallel.tp == 16);
    CHECK(e.parallel.dp == 16);
    for (int t = 0; t < 16; ++t)
        CHECK(chip_of(e, gpu_of(e.parallel, t, 0, 0)) == hardware::TorusShape{t, 0, 0});
    for (int d = 0; d < 16; ++d)
        CHECK(chip_of(e, gpu_of(e.parallel, 0, d, 0)) == hardware::TorusShape{0, d, 0});

    // Two slices: dcn_data defaults to -1 (the slices), FSDP within each: hybrid sharding whose
    // replicas are the same device of each slice.
    const ExperimentSpec two = load(dir, "hardware: tpu-v5e\nslice: 16x16\ngpus: 512",
                                    "per_device_batch_size: 4, dtype: bf16", "");
    CHECK(two.parallel.dp == 512);
    CHECK(two.parallel.zero == 3);
    CHECK(two.parallel.dp_replicate == 2);
    CHECK(two.parallel.dp_shard_size() == 256);
    CHECK(gpu_of(two.parallel, 0, 256, 0) == 256 + gpu_of(two.parallel, 0, 0, 0));
    CHECK(two.training.global_batch == 2048);
}

TEST_CASE("mesh: on GPUs the ici axes split a node in order, dcn the nodes", "[experiment][mesh]") {
    const test::TempDir dir("mesh-gpu");
    const ExperimentSpec e =
        load(dir, "hardware: dgx-h100\ngpus: 16", "per_device_batch_size: 1, dtype: bf16",
             "ici_tensor_parallelism: 8, ici_fsdp_parallelism: 1, dcn_fsdp_parallelism: 2");
    CHECK(e.parallel.tp == 8);
    CHECK(e.parallel.dp == 2);
    CHECK(e.parallel.zero == 3);
    for (int r = 0; r < 16; ++r)
        CHECK(e.parallel.device_order[static_cast<std::size_t>(r)] == r);
}

TEST_CASE("mesh: pipeline stages run GPipe with one micro-batch per stage", "[experiment][mesh]") {
    const test::TempDir dir("mesh-pp");
    const ExperimentSpec e =
        load(dir, "hardware: tpu-v5p\nslice: 4x4x4", "per_device_batch_size: 1, dtype: bf16",
             "ici_pipeline_parallelism: 4, ici_fsdp_parallelism: 16");
    CHECK(e.parallel.pp == 4);
    CHECK(e.parallel.schedule == PipelineSchedule::gpipe);
    CHECK(e.micro_batches() == 4);
    CHECK(e.training.micro_batch == 1);
}

TEST_CASE("mesh: remat_policy maps onto recompute", "[experiment][mesh]") {
    const test::TempDir dir("mesh-remat");
    const auto policy = [&](const std::string& name) {
        return load(dir, "hardware: tpu-v5p\nslice: 4x4x4",
                    "per_device_batch_size: 1, dtype: bf16, remat_policy: " + name, "")
            .parallel;
    };
    CHECK(policy("full").recompute == RecomputePolicy::full);
    CHECK(policy("save_qkv_proj").recompute == RecomputePolicy::full);
    CHECK(policy("minimal").recompute == RecomputePolicy::selective);
    CHECK(policy("minimal").recompute_modules ==
          strategies::models::recompute_bit(strategies::models::RecomputeModule::core_attn));
    // The with_context policies save the attention's output: its kernel is not run again.
    CHECK(policy("minimal_with_context").recompute == RecomputePolicy::selective);
    CHECK(policy("minimal_with_context").recompute_modules == 0);
    CHECK(policy("save_dot_with_context_except_mlp").recompute_modules ==
          strategies::models::recompute_bit(strategies::models::RecomputeModule::mlpwi));
    const ParallelSpec mlp = policy("save_dot_except_mlpwi");
    CHECK(mlp.recompute == RecomputePolicy::selective);
    CHECK((mlp.recompute_modules &
           strategies::models::recompute_bit(strategies::models::RecomputeModule::mlpwi)) != 0);
    CHECK_THROWS_WITH(load(dir, "hardware: tpu-v5p\nslice: 4x4x4",
                           "global_batch: 64, dtype: bf16, remat_policy: full",
                           "recompute: selective"),
                      Catch::Contains("key 'training.remat_policy'"));
}

TEST_CASE("mesh: remat_policy full recomputes as JAX's remat, recompute full as Megatron",
          "[experiment][mesh][recompute]") {
    // The same layout and recompute; given as MaxText's remat_policy, the recompute pass stops
    // before the MLP's down projection (models::LayerConfig::remat_backward_reads; the layer's
    // closed form is in test_recompute_modules.cpp), the rest of the step alike.
    const test::TempDir dir("mesh-remat-jax");
    const std::string v5p = "hardware: tpu-v5p\nslice: 4x4x4";
    const StepResult jax = simulate_step(load(dir, v5p,
                                              "per_device_batch_size: 1, dtype: bf16, "
                                              "remat_policy: full",
                                              "ici_tensor_parallelism: 4"));
    const StepResult megatron =
        simulate_step(load(dir, v5p, "per_device_batch_size: 1, dtype: bf16",
                           "ici_tensor_parallelism: 4, recompute: full"));
    CHECK(jax.breakdown.recompute_s < megatron.breakdown.recompute_s);
    CHECK(jax.breakdown.compute_s == Approx(megatron.breakdown.compute_s));
    CHECK(jax.step_time_s < megatron.step_time_s);
}

TEST_CASE("mesh: bad input is refused at its key with what would work", "[experiment][mesh]") {
    const test::TempDir dir("mesh-bad");
    const std::string v5p = "hardware: tpu-v5p\nslice: 4x4x4";
    const std::string batch = "per_device_batch_size: 1, dtype: bf16";
    // Axes whose product is not the devices of a slice: the fix names the size that fits.
    CHECK_THROWS_WITH(load(dir, v5p, batch, "ici_tensor_parallelism: 8, ici_fsdp_parallelism: 4"),
                      Catch::Contains("key 'parallel.ici_tensor_parallelism'") &&
                          Catch::Contains("multiply to 32") &&
                          Catch::Contains("not the 64 devices of a slice") &&
                          Catch::Contains("ici_tensor_parallelism 16"));
    // A -1 beside axes that do not divide the slice.
    CHECK_THROWS_WITH(load(dir, v5p, batch, "ici_tensor_parallelism: 3"),
                      Catch::Contains("key 'parallel.ici_fsdp_parallelism'") &&
                          Catch::Contains("does not divide the 64"));
    // Two -1 axes on one network.
    CHECK_THROWS_WITH(load(dir, v5p, batch, "ici_fsdp_parallelism: -1, ici_tensor_parallelism: -1"),
                      Catch::Contains("key 'parallel.ici_tensor_parallelism'") &&
                          Catch::Contains("are both -1"));
    CHECK_THROWS_WITH(
        load(dir, v5p + "\ngpus: 256", batch, "dcn_data_parallelism: -1, dcn_fsdp_parallelism: -1"),
        Catch::Contains("key 'parallel.dcn_fsdp_parallelism'"));
    // dcn axes whose product is not the slices.
    CHECK_THROWS_WITH(load(dir, v5p + "\ngpus: 256", batch, "dcn_data_parallelism: 3"),
                      Catch::Contains("key 'parallel.dcn_data_parallelism'") &&
                          Catch::Contains("not the 4 slices"));
    // A per_device_batch_size that leaves a fraction of a sequence per batch shard.
    CHECK_THROWS_WITH(
        load(dir, v5p, "per_device_batch_size: 0.125, dtype: bf16", "ici_tensor_parallelism: 4"),
        Catch::Contains("key 'training.per_device_batch_size'") &&
            Catch::Contains("fraction of a sequence") && Catch::Contains("multiple of 0.25"));
    CHECK_THROWS_WITH(load(dir, v5p, "per_device_batch_size: 1.3, dtype: bf16", ""),
                      Catch::Contains("key 'training.per_device_batch_size'"));
    // An axis the torus cannot hold without splitting a physical axis (JAX refuses it too).
    CHECK_THROWS_WITH(load(dir, v5p, batch, "ici_tensor_parallelism: 8, ici_fsdp_parallelism: 8"),
                      Catch::Contains("key 'parallel.ici_tensor_parallelism'") &&
                          Catch::Contains("whole torus axes"));
    // Megatron's sizes beside the mesh, and a count of 0.
    CHECK_THROWS_WITH(load(dir, v5p, batch, "ici_fsdp_parallelism: 64, tp: 4"),
                      Catch::Contains("key 'parallel.tp'"));
    CHECK_THROWS_WITH(load(dir, v5p, batch, "ici_fsdp_parallelism: 0"),
                      Catch::Contains("key 'parallel.ici_fsdp_parallelism'"));
    CHECK_THROWS_WITH(load(dir, v5p, "per_device_batch_size: 1, global_batch: 64", ""),
                      Catch::Contains("key 'training.global_batch'"));
}

TEST_CASE("mesh: bad mesh input and a slice not offered exit 2 naming the key",
          "[experiment][mesh][app]") {
    const test::TempDir dir("mesh-cli");
    const auto exit_of = [&](const std::string& head, const std::string& parallel,
                             std::string& err) {
        const std::string path = write(dir, head, "per_device_batch_size: 1", parallel);
        const char* argv[] = {"clustersim", "run", path.c_str()};
        std::ostringstream out, errs;
        const int code = app::run_cli(3, argv, {out, errs});
        err = errs.str();
        return code;
    };
    std::string err;
    CHECK(exit_of("hardware: tpu-v5p\nslice: 4x4x4",
                  "ici_tensor_parallelism: 8, "
                  "ici_fsdp_parallelism: 4",
                  err) == 2);
    CHECK_THAT(err, Catch::Contains("parallel.ici_tensor_parallelism") &&
                        Catch::Contains("ici_tensor_parallelism 16"));
    CHECK(exit_of("hardware: tpu-v5p\nslice: 4x4x5", "", err) == 2);
    CHECK_THAT(err, Catch::Contains("slice") && Catch::Contains("4x4x4"));
}

TEST_CASE("mesh: MFU with causal attention at half, MaxText's count", "[experiment][mesh]") {
    const test::TempDir dir("mesh-mfu");
    const ExperimentSpec e =
        load(dir, "hardware: tpu-v5p\nslice: 4x4x4", "per_device_batch_size: 1, dtype: bf16", "");
    const auto& m = e.model;
    // The scores: QK^T and attention-over-V, 2 s^2 (heads x head size) FLOPs each.
    CHECK(strategies::models::attention_score_flops(m) == Approx(4.0 * 2048 * 2048 * 1024));
    const double full = strategies::models::model_flops_per_iteration(m, 64, false);
    const double causal = strategies::models::causal_model_flops_per_iteration(m, 64);
    CHECK(full - causal == Approx(64 * 3.0 * 8 * 2.0 * 2048 * 2048 * 1024));
    const StepResult r = simulate_step(e);
    CHECK(r.mfu_causal == Approx(r.mfu * causal / full));
    CHECK(r.mfu_causal < r.mfu);
}
