// Framework profiles (strategies/parallel/framework_profile.h) and the DeepSpeed-era costs they
// switch on: what each profile sets, that a written key wins, that the PipelineEngine reduces
// gradients after the last backward and gathers its partitioned output back before each
// backward, and the closed form of unfused gradient accumulation.
#include "base/error.h"
#include "hardware/compute_model.h"
#include "strategies/collectives/communicator.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_spec.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/framework_profile.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// Every behaviour a profile sets, as its framework: key writes it.
std::string setting_of(const FrameworkSpec& f, ProfileKey k) {
    switch (k) {
    case ProfileKey::batch_on_every_stage:
        return f.batch_on_every_stage ? "true" : "false";
    case ProfileKey::pipeline_tp_gather:
        return f.pipeline_tp_gather ? "true" : "false";
    case ProfileKey::fp32_grad_reduce:
        return f.fp32_grad_reduce ? "true" : "false";
    case ProfileKey::grad_accumulation:
        return std::string(to_string(f.grad_accumulation));
    case ProfileKey::pipeline_engine:
        break;
    }
    return f.deepspeed_pipeline ? "deepspeed" : "megatron";
}

/// GPT of 24 layers, hidden 2048 (the single-node data's largest), on `gpus` A100s.
ExperimentSpec gpt(const Platform& p, int gpus, Settings extra) {
    Settings s{{"model.kind", "transformer"}, {"model.layers", "24"},
               {"model.hidden", "2048"},      {"model.heads", "16"},
               {"model.seq", "1024"},         {"model.vocab", "50257"},
               {"training.dtype", "fp16"},    {"training.global_batch", "16"},
               {"training.micro_batch", "2"}, {"parallel.recompute", "full"},
               {"parallel.schedule", "1f1b"}};
    for (auto& kv : extra)
        s.push_back(kv);
    return make_experiment(p, gpus, s, "test");
}

} // namespace

TEST_CASE("framework profile: each profile sets exactly the behaviours it documents",
          "[strategies][framework]") {
    const auto names = framework_profile_names();
    REQUIRE(names.size() == 3);
    for (const auto& name : names) {
        INFO(name);
        const auto p = parse_framework_profile(name);
        REQUIRE(p);
        CHECK(to_string(*p) == name);
        // Fitted costs set to values no profile writes: they come through untouched.
        FrameworkSpec before;
        before.host_overhead = sim::Time::us(17);
        before.microbatch_overhead = sim::Time::us(1234);
        before.memory_efficiency = 0.5;
        before.gemm_efficiency = 0.75;
        before.p2p_overhead = sim::Time::us(3);
        before.align_param_gather = true;
        before.dtensor_tp = true;
        before.gpu_speed_spread = 0.02;
        FrameworkSpec f = before;
        apply_profile(f, *p);
        REQUIRE(f.profile == p);
        for (int k = 0; k < kProfileKeys; ++k) {
            const auto key = static_cast<ProfileKey>(k);
            INFO(key_name(key));
            CHECK(setting_of(f, key) == profile_setting(*p, key));
            CHECK(profile_key(key_name(key)) == key);
        }
        // Everything else as it was: put the five behaviours back and compare every field.
        FrameworkSpec back = f;
        back.batch_on_every_stage = before.batch_on_every_stage;
        back.pipeline_tp_gather = before.pipeline_tp_gather;
        back.fp32_grad_reduce = before.fp32_grad_reduce;
        back.grad_accumulation = before.grad_accumulation;
        back.deepspeed_pipeline = before.deepspeed_pipeline;
        back.profile = std::nullopt;
        CHECK(back.host_overhead == before.host_overhead);
        CHECK(back.microbatch_overhead == before.microbatch_overhead);
        CHECK(back.memory_efficiency == before.memory_efficiency);
        CHECK(back.gemm_efficiency == before.gemm_efficiency);
        CHECK(back.p2p_overhead == before.p2p_overhead);
        CHECK(back.collective_overhead == before.collective_overhead);
        CHECK(back.align_param_gather == before.align_param_gather);
        CHECK(back.dtensor_tp == before.dtensor_tp);
        CHECK(back.runtime_memory == before.runtime_memory);
        CHECK(back.allocator_fragmentation == before.allocator_fragmentation);
        CHECK(back.gpu_speed_spread == before.gpu_speed_spread);
        CHECK(back.explicit_keys == before.explicit_keys);
    }
    CHECK_FALSE(parse_framework_profile("deepspeed-mii"));
    CHECK_FALSE(profile_key("host_overhead"));
    // The table's rows (framework_profile.h).
    CHECK(profile_setting(FrameworkProfile::megatron_deepspeed, ProfileKey::pipeline_engine) ==
          "deepspeed");
    CHECK(profile_setting(FrameworkProfile::megatron_lm, ProfileKey::grad_accumulation) ==
          "unfused");
    CHECK(profile_setting(FrameworkProfile::megatron_core, ProfileKey::grad_accumulation) ==
          "fused");
}

TEST_CASE("framework profile: a key written in a framework section overrides its profile, an "
          "experiment's profile sets every behaviour",
          "[strategies][framework]") {
    // In the same section, whatever the order of the keys.
    const Platform p = parse_platform_yaml(
        "extends: dgx-a100\nframework: {pipeline_tp_gather: false, profile: megatron-deepspeed}\n",
        "f.yaml");
    CHECK(p.framework.profile == FrameworkProfile::megatron_deepspeed);
    CHECK_FALSE(p.framework.pipeline_tp_gather);
    CHECK(p.framework.deepspeed_pipeline);
    CHECK(p.framework.grad_accumulation == GradAccumulation::deepspeed);
    // A later layer's profile leaves an earlier layer's written key alone.
    const test::TempDir tmp("profile");
    tmp.write("base.yaml", "extends: dgx-a100\nframework: {fp32_grad_reduce: true}\n");
    const Platform layered = load_platform(
        tmp.write("top.yaml", "extends: base.yaml\nframework: {profile: megatron-lm}\n").string());
    CHECK(layered.framework.fp32_grad_reduce);                               // written below: kept
    CHECK(layered.framework.grad_accumulation == GradAccumulation::unfused); // the profile's
    // The experiment's training.framework over the hardware file's: the experiment names the
    // stack it runs, so megatron-core sets all five behaviours, dgx-a100's written
    // pipeline_tp_gather: true (its fit's stack) included; the fitted costs stay the file's.
    const Platform a100 = load_platform("dgx-a100");
    CHECK(a100.framework.pipeline_tp_gather);
    CHECK_FALSE(a100.framework.profile);
    CHECK(gpt(a100, 8, {}).framework.pipeline_tp_gather);
    const ExperimentSpec e = gpt(a100, 8, {{"training.framework", "megatron-core"}});
    CHECK(e.framework.profile == FrameworkProfile::megatron_core);
    CHECK_FALSE(e.framework.pipeline_tp_gather);
    CHECK_FALSE(e.framework.batch_on_every_stage);
    CHECK(e.framework.host_overhead == a100.framework.host_overhead);
}

TEST_CASE("framework profile: an unknown name is refused naming the file, line, key and the "
          "accepted names",
          "[strategies][framework]") {
    const test::TempDir tmp("profile-bad");
    const auto path = tmp.write("e.yaml", "hardware: dgx-a100\nmodel: gpt3-175B\n"
                                          "training:\n  global_batch: 8\n"
                                          "  framework: deepspeed-zero\n");
    const std::string err = test::input_error_of([&] { (void)load_experiment(path.string()); });
    CHECK_THAT(err, Catch::Contains(path.string() + ":5:") &&
                        Catch::Contains("training.framework") &&
                        Catch::Contains("megatron-core, megatron-lm, megatron-deepspeed") &&
                        Catch::Contains("deepspeed-zero"));
    const std::string hw = test::input_error_of([&] {
        (void)parse_platform_yaml("extends: dgx-a100\nframework:\n  profile: ds\n", "h.yaml");
    });
    CHECK_THAT(hw, Catch::Contains("h.yaml:3:") && Catch::Contains("framework.profile") &&
                       Catch::Contains("megatron-deepspeed"));
}

TEST_CASE("framework profile: DeepSpeed's PipelineEngine runs 1F1B only",
          "[strategies][framework]") {
    const Platform a100 = load_platform("dgx-a100");
    const std::string err = test::input_error_of([&] {
        (void)gpt(a100, 8,
                  {{"training.framework", "megatron-deepspeed"},
                   {"parallel.pp", "2"},
                   {"parallel.schedule", "interleaved-1f1b"},
                   {"parallel.virtual_stages", "2"}});
    });
    CHECK_THAT(err, Catch::Contains("schedule interleaved-1f1b") && Catch::Contains("1F1B") &&
                        Catch::Contains("megatron-deepspeed") &&
                        Catch::Contains("training.framework: megatron-lm"));
    // The same layout under Megatron-LM's profile runs.
    CHECK_NOTHROW(gpt(a100, 8,
                      {{"training.framework", "megatron-lm"},
                       {"parallel.pp", "2"},
                       {"parallel.schedule", "interleaved-1f1b"},
                       {"parallel.virtual_stages", "2"}}));
    // The engine asserts ZeRO stage < 2 (pipe/engine.py, PipelineEngine.__init__).
    const std::string zero = test::input_error_of([&] {
        (void)gpt(a100, 8,
                  {{"training.framework", "megatron-deepspeed"},
                   {"parallel.pp", "2"},
                   {"parallel.zero", "2"}});
    });
    CHECK_THAT(zero, Catch::Contains("ZeRO stage 2") && Catch::Contains("PipelineEngine"));
    // At every pipeline size: the engine runs a one-stage PipelineModule too (without it,
    // pipeline_engine: megatron as Megatron-DeepSpeed's --no-pipeline-parallel, ZeRO-3 runs:
    // below).
    for (const char* stage : {"2", "3"}) {
        const std::string one_stage = test::input_error_of([&] {
            (void)gpt(a100, 8,
                      {{"training.framework", "megatron-deepspeed"},
                       {"parallel.pp", "1"},
                       {"parallel.zero", stage}});
        });
        CHECK_THAT(one_stage, Catch::Contains(std::string("ZeRO stage ") + stage) &&
                                  Catch::Contains("pipeline_engine: megatron"));
    }
    // Without the PipelineEngine, DeepSpeed's engine runs bf16 only under ZeRO (engine.py,
    // _configure_distributed_model at v0.7.0).
    const Platform plain = parse_platform_yaml(
        "extends: dgx-a100\nframework: {grad_accumulation: deepspeed, pipeline_engine: megatron}\n",
        "p.yaml");
    const std::string bf16 = test::input_error_of([&] {
        (void)gpt(plain, 8, {{"training.dtype", "bf16"}, {"parallel.zero", "0"}});
    });
    CHECK_THAT(bf16, Catch::Contains("bf16 without ZeRO") && Catch::Contains("zero: 1"));
    CHECK_NOTHROW(gpt(plain, 8, {{"training.dtype", "bf16"}, {"parallel.zero", "1"}}));
    CHECK_NOTHROW(gpt(plain, 8, {{"training.dtype", "fp16"}, {"parallel.zero", "0"}}));
    CHECK_NOTHROW(gpt(plain, 8, {{"training.dtype", "fp16"}, {"parallel.zero", "3"}}));
}

TEST_CASE("framework profile: bf16 on DeepSpeed's PipelineEngine runs BF16_Optimizer, a ZeRO-1 "
          "with fp32 gradients, and refuses ZeRO-1",
          "[strategies][framework]") {
    // deepspeed/runtime/bf16_optimizer.py at v0.7.0: bf16 weights and their param.grad whole,
    // fp32 gradients of every weight, fp32 master weights and Adam's two moments on 1/dp of
    // them; the step on that partition, then the bf16 partitions all-gathered.
    const Platform a100 = load_platform("dgx-a100");
    const Settings ds{{"training.framework", "megatron-deepspeed"}, {"parallel.pp", "2"}};
    const auto with = [&](Settings extra) {
        Settings s = ds;
        for (auto& kv : extra)
            s.push_back(kv);
        return gpt(a100, 8, s);
    };
    const ExperimentSpec bf16 = with({{"training.dtype", "bf16"}, {"parallel.zero", "0"}});
    const ExperimentSpec fp16 = with({{"training.dtype", "fp16"}, {"parallel.zero", "1"}});
    REQUIRE(bf16.parallel.dp == 4);
    const auto topo = std::make_shared<const hardware::Topology>(bf16.cluster);
    const StepPlan plan = build_step_plan(bf16, topo);
    const StepPlan zero1 = build_step_plan(fp16, topo);
    for (std::size_t k = 0; k < plan.ranks.size(); ++k) {
        const RankPlan& r = plan.ranks[k];
        INFO("rank " << k);
        const std::int64_t p = r.parameters;
        const std::int64_t shard = (p + 3) / 4;
        CHECK(r.weights_bytes == 2 * p);
        CHECK(r.grads_bytes == (2 + 4) * p);
        CHECK(r.optimizer_bytes == (4 + 8) * shard);
        // The 16-bit ZeRO-1 optimizer holds the same weights and state, and 16-bit gradients.
        CHECK(zero1.ranks[k].optimizer_bytes == r.optimizer_bytes);
        CHECK(zero1.ranks[k].grads_bytes == 2 * p);
        // The step on the partition, reading fp32 gradients, and the norm, clipping and
        // zeroing over every fp32 gradient: 4 + 8 + 4 bytes a parameter (BF16_Optimizer.step).
        const hardware::ComputeModel cm(bf16.cluster);
        const double step =
            (strategies::models::optimizer_step(shard, hardware::Dtype::bf16,
                                                strategies::models::Optimizer::adam, 0, cm)
                 .time.seconds() +
             cm.memory_bound_seconds(16 * p)) /
            bf16.framework.memory_efficiency;
        CHECK(r.optimizer_time.seconds() == Approx(step).epsilon(1e-9));
        // Gradients all-reduced whole (ZeRO is off), then the weights gathered (the tied
        // embedding's all-reduce between the first and the last stage besides).
        const auto count = [&](DpRole role) {
            return std::count_if(r.dp.begin(), r.dp.end(),
                                 [&](const DpCollective& d) { return d.role == role; });
        };
        CHECK(count(DpRole::grad_all_reduce) == 1);
        CHECK(count(DpRole::grad_reduce_scatter) == 0);
        REQUIRE(count(DpRole::param_all_gather) == 1);
        const auto gather = std::find_if(r.dp.begin(), r.dp.end(), [](const DpCollective& d) {
            return d.role == DpRole::param_all_gather;
        });
        CHECK(gather->collective.bytes == 2 * p);
        CHECK(std::none_of(gather, r.dp.end(), [](const DpCollective& d) {
            return d.role == DpRole::grad_all_reduce;
        }));
    }
    // The tied embedding's gradient all-reduced between the first and the last stage as the
    // fp32 gradient it is.
    for (const RankPlan* r : {&plan.ranks.front(), &plan.ranks.back()}) {
        const auto tied = std::find_if(r->dp.begin(), r->dp.end(), [](const DpCollective& d) {
            return d.role == DpRole::embedding_grad_all_reduce;
        });
        REQUIRE(tied != r->dp.end());
        CHECK(tied->collective.dtype == hardware::Dtype::fp32);
    }
    // Its gradient reduction raises NotImplementedError under ZeRO-1 (v0.6.2-v0.9.1), at every
    // pipeline size the engine runs.
    for (const char* pp : {"2", "1"}) {
        const std::string err = test::input_error_of([&] {
            (void)with({{"training.dtype", "bf16"}, {"parallel.zero", "1"}, {"parallel.pp", pp}});
        });
        CHECK_THAT(err, Catch::Contains("bf16 with ZeRO-1") && Catch::Contains("PipelineEngine") &&
                            Catch::Contains("zero: 0") && Catch::Contains("training.dtype: fp16"));
    }
    // It always keeps fp32 master weights, and reduces no expert-parallel layer.
    CHECK_THAT(test::input_error_of([&] {
                   (void)with({{"training.dtype", "bf16"},
                               {"parallel.zero", "0"},
                               {"training.master_weights", "false"}});
               }),
               Catch::Contains("BF16_Optimizer") && Catch::Contains("master_weights"));
    const std::string moe = test::input_error_of([&] {
        (void)make_experiment(a100, 16,
                              {{"model", "mixtral-8x7B"},
                               {"model.seq", "1024"},
                               {"training.framework", "megatron-deepspeed"},
                               {"training.dtype", "bf16"},
                               {"training.global_batch", "16"},
                               {"training.micro_batch", "1"},
                               {"parallel.pp", "2"},
                               {"parallel.zero", "0"},
                               {"parallel.ep", "8"}},
                              "moe");
    });
    CHECK_THAT(moe, Catch::Contains("BF16_Optimizer") && Catch::Contains("training.dtype: fp16"));
}

TEST_CASE("framework profile: the PipelineEngine's gradient all-reduce runs whole after the last "
          "backward, adding exactly its time",
          "[strategies][framework]") {
    // tp 1 (no partitioned tensors) and fused accumulation: the engine differs from Megatron's
    // only in when it reduces. Asked to overlap, it reduces after the backward all the same:
    // the step equals Megatron's with dp_overlap false, and every gradient reduction is one
    // collective after the last backward, whose time is the step's exposed data-parallel time.
    Platform p = load_platform("dgx-a100");
    p.framework.gpu_speed_spread = 0;
    p.framework.grad_accumulation = GradAccumulation::fused;
    const Settings layout{{"parallel.pp", "2"}, {"parallel.dp", "4"}, {"parallel.tp", "1"}};
    Platform ds = p;
    ds.framework.deepspeed_pipeline = true;
    Settings overlap = layout;
    overlap.push_back({"parallel.dp_overlap", "true"});
    Settings after = layout;
    after.push_back({"parallel.dp_overlap", "false"});
    const ExperimentSpec e_ds = gpt(ds, 8, overlap);
    CHECK_FALSE(e_ds.parallel.dp_overlap);
    const StepResult r_ds = simulate_step(e_ds);
    const StepResult r_after = simulate_step(gpt(p, 8, after));
    const StepResult r_overlap = simulate_step(gpt(p, 8, overlap));
    CHECK(r_ds.step_time_s == r_after.step_time_s);
    CHECK(r_ds.breakdown == r_after.breakdown);
    CHECK(r_ds.step_time_s > r_overlap.step_time_s);
    const auto topo = std::make_shared<const hardware::Topology>(e_ds.cluster);
    const StepPlan plan = build_step_plan(e_ds, topo);
    double reduce = 0;
    for (const RankPlan& r : plan.ranks)
        for (const DpCollective& c : r.dp) {
            CHECK_FALSE(c.chunk);
            if (r.rank == r_ds.critical_rank && c.role == DpRole::grad_all_reduce)
                reduce += c.time.seconds();
        }
    REQUIRE(reduce > 0);
    // The critical rank's exposed data-parallel time is its all-reduce (and the tied
    // embedding's, shared by the first and last rank, when it waits for it).
    double embedding = 0;
    for (const DpCollective& c : plan.ranks[static_cast<std::size_t>(r_ds.critical_rank)].dp)
        if (c.role == DpRole::embedding_grad_all_reduce)
            embedding += c.time.seconds();
    CHECK(r_ds.breakdown.dp_comm_exposed_s >= reduce - 1e-12);
    CHECK(r_ds.breakdown.dp_comm_exposed_s <= reduce + embedding + 1e-9);
}

TEST_CASE("framework profile: the PipelineEngine gathers its partitioned output back before each "
          "backward",
          "[strategies][framework]") {
    // tp 4, pp 2: Megatron-LM of 2021 gathers the received activation and gradient (two
    // tensor-parallel all-gathers); DeepSpeed's engine also the output it sent, before that
    // micro-batch's backward: the backward transfer costs exactly one more all-gather.
    Platform p = load_platform("dgx-a100");
    p.framework.p2p_overhead = sim::Time::zero();
    const Settings layout{{"parallel.pp", "2"}, {"parallel.tp", "4"}};
    Settings lm = layout, ds = layout;
    lm.push_back({"training.framework", "megatron-lm"});
    ds.push_back({"training.framework", "megatron-deepspeed"});
    const ExperimentSpec e_lm = gpt(p, 8, lm);
    const auto topo = std::make_shared<const hardware::Topology>(e_lm.cluster);
    const StepPlan a = build_step_plan(e_lm, topo);
    const StepPlan b = build_step_plan(gpt(p, 8, ds), topo);
    strategies::collectives::Communicator tp(*topo, {0, 1, 2, 3});
    strategies::collectives::Collective c;
    c.op = strategies::collectives::Op::all_gather;
    c.dtype = hardware::Dtype::fp16;
    c.bytes = std::int64_t{1024} * 2 * 2048 * 2; // s x b x h, fp16
    const double gather = tp.predict(c).seconds();
    REQUIRE(gather > 0);
    CHECK(b.stage(0).send_forward == a.stage(0).send_forward);
    CHECK((b.stage(0).send_backward - a.stage(0).send_backward).seconds() ==
          Approx(gather).epsilon(1e-9));
}

TEST_CASE("framework profile: unfused gradient accumulation adds one kernel per parameter tensor "
          "and micro-batch",
          "[strategies][framework]") {
    // One stage (pp 1, tp 1), no host cost, memory-bound kernels at the compute model's rate:
    // a GPT layer has 12 parameter tensors (QKV, projection, fc1, fc2 with biases; two
    // LayerNorms' weights and biases). Autograd's accumulation into a 16-bit param.grad reads
    // the new gradient and reads and writes the old (6 bytes a parameter) on m - 1 of the m
    // micro-batches; Megatron-LM's fp32 main_grad hook 2 + 4 + 4 on every one; BF16_Optimizer
    // casts (2 + 4) and adds (12) on every one.
    Platform p = load_platform("dgx-a100");
    p.framework.host_overhead = sim::Time::zero();
    p.framework.memory_efficiency = 1;
    p.framework.gpu_speed_spread = 0;
    p.framework.microbatch_overhead = sim::Time::zero();
    const auto backward = [&](GradAccumulation g, bool fp32, const std::string& dtype) {
        Platform q = p;
        q.framework.grad_accumulation = g;
        q.framework.fp32_grad_reduce = fp32;
        // DeepSpeed's accumulation under its PipelineEngine (Megatron-DeepSpeed's GPTModelPipe
        // at pp 1 too), which runs bf16 without ZeRO.
        q.framework.deepspeed_pipeline = g == GradAccumulation::deepspeed;
        const ExperimentSpec e = gpt(q, 1, {{"training.dtype", dtype}});
        const auto topo = std::make_shared<const hardware::Topology>(e.cluster);
        return build_step_plan(e, topo).stage(0).backward;
    };
    const ExperimentSpec e = gpt(p, 1, {});
    REQUIRE(e.micro_batches() == 8);
    const std::int64_t per_layer = strategies::models::parameter_counts(e.model).per_layer;
    const hardware::ComputeModel cm(e.cluster);
    const auto kernel = [&](std::int64_t bytes_per_param) {
        return cm.memory_bound_seconds(bytes_per_param * per_layer / 12);
    };
    const PassCost fused = backward(GradAccumulation::fused, false, "fp16");
    const PassCost autograd = backward(GradAccumulation::unfused, false, "fp16");
    const PassCost main_grad = backward(GradAccumulation::unfused, true, "fp16");
    const PassCost ds16 = backward(GradAccumulation::deepspeed, true, "fp16");
    CHECK((autograd.time - fused.time).seconds() ==
          Approx(24 * 12 * 7.0 / 8 * kernel(6)).epsilon(1e-6));
    CHECK((main_grad.time - fused.time).seconds() == Approx(24 * 12 * kernel(10)).epsilon(1e-6));
    // DeepSpeed's fp16 engine adds into param.grad whatever the reduction's dtype.
    CHECK(ds16.time == autograd.time);
    CHECK(autograd.kernels - fused.kernels == 24 * 12);
    const PassCost fused_bf16 = backward(GradAccumulation::fused, false, "bf16");
    const PassCost bf16_optimizer = backward(GradAccumulation::deepspeed, false, "bf16");
    CHECK((bf16_optimizer.time - fused_bf16.time).seconds() ==
          Approx(24 * 12 * (kernel(6) + kernel(12))).epsilon(1e-6));
    CHECK(bf16_optimizer.kernels - fused_bf16.kernels == 2 * 24 * 12);
    // DeepSpeed's ZeRO optimizers under bf16 (the engine without its PipelineEngine, zero 1)
    // keep param.grad as under fp16: autograd's accumulation in 16 bits.
    Platform z = p;
    z.framework.grad_accumulation = GradAccumulation::deepspeed;
    z.framework.fp32_grad_reduce = false;
    z.framework.deepspeed_pipeline = false;
    const ExperimentSpec zero_bf16 =
        gpt(z, 1, {{"training.dtype", "bf16"}, {"parallel.zero", "1"}});
    const PassCost ds_zero_bf16 =
        build_step_plan(zero_bf16, std::make_shared<const hardware::Topology>(zero_bf16.cluster))
            .stage(0)
            .backward;
    CHECK((ds_zero_bf16.time - fused_bf16.time).seconds() ==
          Approx(24 * 12 * 7.0 / 8 * kernel(6)).epsilon(1e-6));
    // The forward is untouched.
    const auto forward = [&](GradAccumulation g) {
        Platform q = p;
        q.framework.grad_accumulation = g;
        const ExperimentSpec x = gpt(q, 1, {});
        return build_step_plan(x, std::make_shared<const hardware::Topology>(x.cluster))
            .stage(0)
            .forward.time;
    };
    CHECK(forward(GradAccumulation::unfused) == forward(GradAccumulation::fused));
}
