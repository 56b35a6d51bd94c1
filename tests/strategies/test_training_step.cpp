#include "base/error.h"
#include "strategies/collectives/communicator.h"
#include "strategies/models/memory_formulas.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
namespace models = clustersim::strategies::models;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// A cluster whose framework costs nothing extra and whose NVLink is so fast that pipeline
/// transfers take only their latency, so that the schedules' closed forms hold.
Platform ideal_cluster(const std::string& preset = "dgx-a100") {
    Platform c = load_platform(preset);
    c.cluster.node.nvlink.bandwidth = 1e14;
    c.framework.host_overhead = sim::Time::zero();
    c.framework.p2p_overhead = sim::Time::zero();
    c.framework.gemm_efficiency = 1;
    c.framework.memory_efficiency = 1;
    return c;
}

ExperimentSpec experiment(const Platform& c, int gpus, Settings s) {
    return make_experiment(c, gpus, s, "test");
}

/// A deep MLP: equal stages (no embedding; its loss is negligible next to 48 layers of
/// 4096 x 4096 on micro-batches of 8192 rows).
Settings deep_mlp(const std::string& schedule, int pp, int micro_batches, int v = 1) {
    return {{"model.kind", "mlp"},
            {"model.layers", "48"},
            {"model.dim", "4096"},
            {"training.global_batch", std::to_string(8192 * micro_batches)},
            {"training.micro_batch", "8192"},
            {"training.dtype", "bf16"},
            {"parallel.pp", std::to_string(pp)},
            {"parallel.schedule", schedule},
            {"parallel.virtual_stages", std::to_string(v)},
            {"parallel.dp", "1"},
            {"parallel.pp_overlap", "true"}};
}

double sum(const Breakdown& b) {
    return b.compute_s + b.recompute_s + b.host_s + b.tp_comm_exposed_s + b.pp_bubble_s +
           b.pp_comm_exposed_s + b.dp_comm_exposed_s + b.optimizer_s;
}

} // namespace

TEST_CASE("training step: bubble fraction (p-1)/(m+p-1) for GPipe and 1F1B with equal stages",
          "[strategies][training]") {
    const auto cluster = ideal_cluster();
    for (const char* schedule : {"gpipe", "1f1b"}) {
        for (int p : {2, 4}) {
            for (int m : {1, 4, 16}) {
                const auto e = experiment(cluster, p, deep_mlp(schedule, p, m));
                const StepResult r = simulate_step(e);
                INFO(schedule << " p=" << p << " m=" << m);
                CHECK(r.ideal_bubble_fraction == Approx(double(p - 1) / (m + p - 1)));
                // The closed form counts forward and backward only: compare the bubble with the
                // step less the optimizer. Transfers of 8192 x 4096 activations over NVLink and
                // the small loss keep it within 2% of the closed form.
                const double passes = r.step_time_s - r.breakdown.optimizer_s;
                CHECK(r.breakdown.pp_bubble_s / passes ==
                      Approx(r.ideal_bubble_fraction).epsilon(0.02));
                CHECK(sum(r.breakdown) == Approx(r.step_time_s).epsilon(1e-9));
            }
        }
    }
}

TEST_CASE("training step: interleaving divides the bubble by v", "[strategies][training]") {
    const auto cluster = ideal_cluster();
    for (int v : {2, 3}) {
        const int p = 4, m = 8;
        const auto e = experiment(cluster, p, deep_mlp("interleaved-1f1b", p, m, v));
        const StepResult r = simulate_step(e);
        INFO("v=" << v);
        CHECK(r.ideal_bubble_fraction == Approx(double(p - 1) / (v * m + p - 1)));
        // Interleaving makes v times more transfers, each costing NCCL's ~40 us latency against
        // passes of ~5 ms: within 5% of the closed form.
        const double passes = r.step_time_s - r.breakdown.optimizer_s;
        CHECK(r.breakdown.pp_bubble_s / passes == Approx(r.ideal_bubble_fraction).epsilon(0.05));
        const StepResult plain = simulate_step(experiment(cluster, p, deep_mlp("1f1b", p, m)));
        CHECK(r.bubble_fraction < plain.bubble_fraction);
    }
}

TEST_CASE("training step: 1F1B keeps at most p micro-batches in flight, GPipe keeps m",
          "[strategies][training][memory]") {
    const auto cluster = ideal_cluster();
    const int p = 4, m = 16;
    const StepResult one = simulate_step(experiment(cluster, p, deep_mlp("1f1b", p, m)));
    const StepResult gpipe = simulate_step(experiment(cluster, p, deep_mlp("gpipe", p, m)));
    // Every stage keeps a fixed amount per micro-batch (the last stage a little more, for its
    // loss): stage s of 1F1B holds p - s micro-batches at once, every GPipe stage all m.
    for (int s = 0; s < p; ++s) {
        INFO("stage " << s);
        const double per_mb = static_cast<double>(gpipe.memory[s].activations_bytes) / m;
        CHECK(static_cast<double>(one.memory[s].activations_bytes) ==
              Approx(per_mb * (p - s)).epsilon(0.01));
        CHECK(one.memory[s].activations_bytes < gpipe.memory[s].activations_bytes);
    }
}

TEST_CASE("training step: memory returns to its baseline after the step",
          "[strategies][training][memory]") {
    const auto cluster = ideal_cluster();
    StepOptions o;
    o.timeline = true;
    const StepResult r =
        simulate_step(experiment(cluster, 4, deep_mlp("interleaved-1f1b", 4, 8, 2)), o);
    std::vector<std::int64_t> last(4, -1);
    for (const auto& pt : r.memory_points) {
        CHECK(pt.activations_bytes >= 0);
        CHECK(pt.activations_bytes <= r.memory[pt.rank].activations_bytes);
        last[pt.rank] = pt.activations_bytes;
    }
    for (int s = 0; s < 4; ++s)
        CHECK(last[s] == 0);
}

TEST_CASE("training step: DP overlap hides the all-reduce when the backward is longer",
          "[strategies][training][dp]") {
    const auto cluster = ideal_cluster();
    Settings s = deep_mlp("1f1b", 1, 4);
    s.push_back({"parallel.dp", "8"});
    s.push_back({"parallel.pp", "1"});
    s[3] = {"training.global_batch", std::to_string(8192 * 4 * 8)};
    s.push_back({"parallel.dp_bucket", "32MiB"});
    auto overlapped = s;
    overlapped.push_back({"parallel.dp_overlap", "true"});
    auto at_end = s;
    at_end.push_back({"parallel.dp_overlap", "false"});
    const StepResult a = simulate_step(experiment(cluster, 8, overlapped));
    const StepResult b = simulate_step(experiment(cluster, 8, at_end));
    // 48 layers of 64 MiB of fp32 gradients, one bucket each: a bucket's all-reduce over 8 GPUs
    // (~0.6 ms on NVLink) is shorter than a layer's backward (~2 ms), so only the last bucket
    // is exposed; without overlap the whole 3.2 GB all-reduce is.
    CHECK(b.breakdown.dp_comm_exposed_s > 10 * a.breakdown.dp_comm_exposed_s);
    CHECK(a.step_time_s < b.step_time_s);
    // The same kernels, slowed by the bucket all-reduces running beside them (only where they
    // overlap the backward).
    CHECK(b.breakdown.overlap_slowdown_s == 0);
    CHECK(a.breakdown.overlap_slowdown_s > 0);
    CHECK(a.breakdown.compute_s - a.breakdown.overlap_slowdown_s == Approx(b.breakdown.compute_s));
}

TEST_CASE("training step: identical input, identical output", "[strategies][training]") {
    const auto e =
        load_experiment(CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml");
    StepOptions o;
    o.timeline = true;
    const StepResult a = simulate_step(e, o);
    const StepResult b = simulate_step(e, o);
    CHECK(a.step_time_s == b.step_time_s);
    REQUIRE(a.bars.size() == b.bars.size());
    for (std::size_t i = 0; i < a.bars.size(); ++i) {
        CHECK(a.bars[i].start == b.bars[i].start);
        CHECK(a.bars[i].label == b.bars[i].label);
    }
}

TEST_CASE("training step: a timeline's layer slices name each stage's own layers",
          "[strategies][training][timeline]") {
    // GPT-3 175B, pp 8 with 3 virtual stages: 24 chunks of 4 layers, chunk c of rank p holding
    // layers 4 (8 c + p) to 4 (8 c + p) + 3. The middle chunks are alike and costed once
    // (PlanContext::stage_costs); each rank's slices still name its own layers.
    const auto e =
        load_experiment(CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml");
    REQUIRE(e.parallel.pp == 8);
    REQUIRE(e.parallel.virtual_stages == 3);
    REQUIRE(e.model.layers == 96);
    StepOptions o;
    o.timeline = true;
    for (const Fidelity f : {Fidelity::analytic, Fidelity::flow}) {
        o.fidelity = f;
        const StepResult r = simulate_step(e, o);
        std::vector<std::set<int>> seen(8);
        std::vector<int> forward_slices(8, 0);
        for (const TimelineBar& b : r.bars) {
            if (b.kind != "layer" || b.label.rfind("L", 0) != 0)
                continue;
            seen[static_cast<std::size_t>(b.rank)].insert(std::stoi(b.label.substr(1)));
            if (b.label.find(" F") != std::string::npos)
                ++forward_slices[static_cast<std::size_t>(b.rank)];
        }
        for (int p = 0; p < 8; ++p) {
            std::set<int> expected;
            for (int c = 0; c < 3; ++c)
                for (int k = 0; k < 4; ++k)
                    expected.insert(4 * (8 * c + p) + k);
            INFO("rank " << p);
            CHECK(seen[static_cast<std::size_t>(p)] == expected);
            // Every forward of every micro-batch and chunk: its four layers.
            CHECK(forward_slices[static_cast<std::size_t>(p)] == 4 * 3 * r.micro_batches);
        }
    }
}

TEST_CASE("training step: analytic and flow fidelity agree without contention",
          "[strategies][training][flow]") {
    const auto cluster = ideal_cluster();
    for (const char* schedule : {"gpipe", "1f1b"}) {
        const auto e = experiment(cluster, 4, deep_mlp(schedule, 4, 8));
        StepOptions flow;
        flow.fidelity = Fidelity::flow;
        const StepResult a = simulate_step(e);
        const StepResult f = simulate_step(e, flow);
        INFO(schedule);
        CHECK(f.step_time_s == Approx(a.step_time_s).epsilon(0.01));
        CHECK(f.bubble_fraction == Approx(a.bubble_fraction).margin(0.01));
        CHECK(f.events > 0);
    }
}

TEST_CASE("training step: GPT-3 175B on 64 A100s", "[strategies][training]") {
    const auto e =
        load_experiment(CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml");
    const StepResult r = simulate_step(e);
    CHECK(r.simulated_gpus == std::vector<int>{0, 8, 16, 24, 32, 40, 48, 56});
    CHECK(sum(r.breakdown) == Approx(r.step_time_s).epsilon(1e-9));
    // Model FLOPs per iteration (Narayanan et al. Eq. 3 without the recompute pass):
    // 72 B s l h^2 (1 + s/6h + V/12lh).
    const double B = 64, s = 2048, l = 96, h = 12288, V = 50257;
    CHECK(r.model_flops ==
          Approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))).epsilon(0.01));
    CHECK(r.mfu > 0.2);
    CHECK(r.mfu < 0.8);
    CHECK_FALSE(r.oom);
    // Activations of stage 1 with TP 8 + sequence parallel + selective recompute: 34 s b h / t
    // per layer (Korthikanti et al.), 4 layers per chunk; interleaved 1F1B holds
    // 2(p-1-1) + (v-1)p + 1 = 29 chunk passes on rank 1 at its peak, plus, during a backward,
    // one layer's recomputed attention.
    const double per_layer = 34.0 * s * 1 * h / 8;
    const double kept = 29 * 4 * per_layer;
    CHECK(static_cast<double>(r.memory[1].activations_bytes) >= kept);
    CHECK(static_cast<double>(r.memory[1].activations_bytes) <= kept + 5 * 96 * s * s);
}

TEST_CASE("training step: a mixture of experts with dense first layers, every expert local",
          "[strategies][training][moe]") {
    // DeepSeek-V3 cut to 4 layers, the first dense: stage 0 holds the dense layer and one with
    // experts, stage 1 two with experts; with no expert parallelism every GPU holds all 256
    // experts of its layers (split 8 ways by expert tensor parallelism) and their optimizer
    // state.
    const auto cluster = load_platform("dgx-h100");
    Settings s{{"model", "deepseek-v3"},
               {"model.layers", "4"},
               {"model.first_k_dense_replace", "1"},
               {"training.global_batch", "8"},
               {"training.dtype", "bf16"},
               {"parallel.tp", "8"},
               {"parallel.pp", "2"},
               {"parallel.sequence_parallel", "true"},
               {"parallel.recompute", "full"}};
    const ExperimentSpec e = experiment(cluster, 16, s);
    const StepResult r = simulate_step(e);
    REQUIRE(r.memory.size() == 2);
    const std::int64_t moe = models::moe_layer_parameters_per_rank(e.model, 8);
    const std::int64_t dense = models::layer_parameters_per_rank(e.model, 8);
    const std::int64_t h = 7168;
    const std::int64_t vocab = models::padded_vocab(e.model, 8) / 8 * h;
    CHECK(r.memory[0].weights_bytes == 2 * (dense + moe + vocab));
    CHECK(r.memory[1].weights_bytes == 2 * (2 * moe + vocab + h));
    // Megatron's 18 bytes per parameter without ZeRO: fp32 gradients, master weights, m, v.
    CHECK(r.memory[1].optimizer_bytes == 12 * (2 * moe + vocab + h));
    // Model FLOPs: the active parameters' work (8 of 256 experts and the shared one).
    CHECK(r.model_flops == Approx(models::model_flops_per_iteration(e.model, 8, false)));
    CHECK(r.step_time_s > 0);
    CHECK(sum(r.breakdown) == Approx(r.step_time_s).epsilon(1e-9));
}

TEST_CASE("training step: out of memory is a result with a fix", "[strategies][training][memory]") {
    const auto cluster = load_platform("dgx-a100");
    Settings s{{"model", "gpt3-175B"},
               {"training.global_batch", "8"},
               {"parallel.tp", "8"},
               {"parallel.pp", "1"},
               {"parallel.recompute", "none"}};
    const StepResult r = simulate_step(experiment(cluster, 8, s));
    REQUIRE(r.oom);
    CHECK(r.oom->stage == 0);
    CHECK(r.oom->excess_bytes > 0);
    CHECK(r.step_time_s > 0);
    // Neither recompute nor ZeRO (dp is 1) makes it fit: an empty suggestion.
    REQUIRE(r.oom_fix);
    CHECK_FALSE(r.oom_fix->fits());

    Settings t{{"model", "megatron-22B"},
               {"training.global_batch", "16"},
               {"training.micro_batch", "4"},
               {"parallel.tp", "8"},
               {"parallel.recompute", "none"}};
    const StepResult u = simulate_step(experiment(cluster, 8, t));
    INFO(u.peak_bytes_max);
    REQUIRE(u.oom);
    REQUIRE(u.oom_fix);
    REQUIRE(u.oom_fix->recompute);
    CHECK(*u.oom_fix->recompute != RecomputePolicy::none);
    CHECK_FALSE(u.oom_fix->zero);
    // Advice is a search: off, the result says nothing.
    StepOptions quiet;
    quiet.oom_advice = false;
    CHECK_FALSE(simulate_step(experiment(cluster, 8, t), quiet).oom_fix);
}

TEST_CASE("training step: recompute auto picks the cheapest plan that fits",
          "[strategies][training][memory]") {
    const auto cluster = load_platform("dgx-a100");
    Settings s{{"model", "megatron-22B"},
               {"training.global_batch", "16"},
               {"training.micro_batch", "4"},
               {"parallel.tp", "8"},
               {"parallel.recompute", "auto"}};
    const StepResult a = simulate_step(experiment(cluster, 8, s));
    CHECK_FALSE(a.oom);
    CHECK(a.automatic_recompute);
    REQUIRE(a.memory.size() == 1);
    const RecomputePlan& plan = a.memory[0].recompute;
    CHECK(plan.none + plan.selective + plan.full == 48); // megatron-22B's layers, all on stage 0
    CHECK(plan.selective + plan.full > 0);
    s.back().second = "full";
    const StepResult full = simulate_step(experiment(cluster, 8, s));
    CHECK(a.step_time_s <= full.step_time_s);
    s.back().second = "none";
    const StepResult none = simulate_step(experiment(cluster, 8, s));
    REQUIRE(none.oom); // auto had to recompute something
    CHECK(a.step_time_s >= none.step_time_s);
}

TEST_CASE("experiments: numbers that disagree are refused with what would fix them",
          "[strategies][training][errors]") {
    const auto cluster = load_platform("dgx-a100");
    Settings base{{"model", "gpt3-175B"}, {"training.global_batch", "64"}};
    auto with = [&](Settings extra) {
        Settings s = base;
        s.insert(s.end(), extra.begin(), extra.end());
        return s;
    };
    SECTION("tp x pp x dp is not the GPU count") {
        CHECK_THROWS_WITH(
            experiment(cluster, 64,
                       with({{"parallel.tp", "8"}, {"parallel.pp", "4"}, {"parallel.dp", "4"}})),
            Catch::Contains("tp 8 x pp 4 x dp 4 = 128 GPUs") && Catch::Contains("has 64") &&
                Catch::Contains("dp: 2"));
        // No data-parallel size fits when tp x pp does not divide the GPUs: say so, offer none.
        CHECK_THROWS_WITH(
            experiment(cluster, 64,
                       with({{"parallel.tp", "3"}, {"parallel.pp", "1"}, {"parallel.dp", "2"}})),
            Catch::Contains("set gpus: 6") && Catch::Contains("no dp fits 64 GPUs") &&
                !Catch::Contains("dp: "));
    }
    SECTION("op-level selective recompute with tensor parallelism") {
        CHECK_THROWS_WITH(experiment(cluster, 64,
                                     with({{"parallel.tp", "8"},
                                           {"parallel.recompute", "selective"},
                                           {"parallel.selective_recompute", "op"}})),
                          Catch::Contains("parallel.selective_recompute") &&
                              Catch::Contains("tp > 1 is not modelled"));
        CHECK_THROWS_WITH(experiment(cluster, 64, with({{"parallel.selective_recompute", "ops"}})),
                          Catch::Contains("parallel.selective_recompute") &&
                              Catch::Contains("attention"));
    }
    SECTION("heads not divisible by tp") {
        CHECK_THROWS_WITH(experiment(cluster, 64, with({{"parallel.tp", "64"}})),
                          Catch::Contains("96 attention heads") && Catch::Contains("tp 64"));
    }
    SECTION("layers not divisible by pp x virtual stages") {
        CHECK_THROWS_WITH(experiment(cluster, 64,
                                     with({{"parallel.tp", "8"},
                                           {"parallel.pp", "8"},
                                           {"parallel.schedule", "interleaved-1f1b"},
                                           {"parallel.virtual_stages", "5"}})),
                          Catch::Contains("96 layers") && Catch::Contains("= 40"));
    }
    SECTION("global batch not divisible by micro batch x dp") {
        CHECK_THROWS_WITH(
            experiment(cluster, 64, with({{"parallel.tp", "8"}, {"training.micro_batch", "3"}})),
            Catch::Contains("global_batch 64") && Catch::Contains("micro_batch 3 x dp 8"));
    }
    SECTION("interleaving with too few micro-batches") {
        Settings s{{"model", "gpt3-175B"},
                   {"training.global_batch", "12"},
                   {"parallel.tp", "8"},
                   {"parallel.pp", "8"},
                   {"parallel.schedule", "interleaved-1f1b"},
                   {"parallel.virtual_stages", "2"}};
        CHECK_THROWS_WITH(experiment(cluster, 64, s), Catch::Contains("multiple of pp 8") &&
                                                          Catch::Contains("global_batch 16"));
    }
    SECTION("an unknown model preset") {
        CHECK_THROWS_WITH(
            experiment(cluster, 8, {{"model", "gpt5"}, {"training.global_batch", "8"}}),
            Catch::Contains("gpt5"));
    }
    SECTION("an unknown key") {
        CHECK_THROWS_WITH(experiment(cluster, 8, with({{"parallel.tpp", "2"}})),
                          Catch::Contains("unknown key 'parallel.tpp'"));
    }
    SECTION("a dtype the GPU lacks") {
        CHECK_THROWS_WITH(
            experiment(cluster, 8, with({{"training.dtype", "fp8"}, {"parallel.tp", "8"}})),
            Catch::Contains("no fp8"));
    }
}

TEST_CASE("training step: flow symmetry gives the step of flow-full, and says what it left out",
          "[strategies][training][flow][symmetry]") {
    const auto cluster = load_platform("dgx-a100");
    auto settings = deep_mlp("1f1b", 2, 4);
    settings.push_back({"model.layers", "8"});
    settings.push_back({"parallel.dp", "8"});
    settings.push_back({"parallel.tp", "8"});
    settings.push_back({"training.global_batch", std::to_string(8192 * 4 * 8)});
    settings.push_back({"parallel.dp_bucket", "16MiB"});
    StepOptions flow, full;
    flow.fidelity = full.fidelity = Fidelity::flow;
    full.flow_symmetry = false;
    SECTION("data-parallel replicas on nodes of their own: symmetric") {
        // 16 nodes: each stage's ring runs over 8 of them; the hops that do not touch the
        // representative's node (pipeline transfers) are identical and left to one.
        const auto e = experiment(cluster, 128, settings);
        const StepResult s = simulate_step(e, flow);
        const StepResult f = simulate_step(e, full);
        CHECK(s.step_time_s == f.step_time_s); // exactly (issue 38)
        CHECK(s.flow_symmetry);
        CHECK_FALSE(f.flow_symmetry);
        CHECK(s.represented_flows > 0);
        CHECK(f.represented_flows == 0);
        CHECK(s.flows + s.represented_flows == f.flows);
        CHECK_FALSE(s.represented_gpus.empty());
        // The representatives (GPU 0 of each stage's first replica) are always simulated.
        for (int g : s.simulated_gpus)
            CHECK(std::find(s.flow_gpus.begin(), s.flow_gpus.end(), g) != s.flow_gpus.end());
        CHECK(s.flow_gpus.size() + s.represented_gpus.size() == f.flow_gpus.size());
    }
    SECTION("pipeline transfers on the data-parallel groups' nodes: refused") {
        settings.push_back({"parallel.tp", "1"});
        const auto e = experiment(cluster, 16, settings);
        const StepResult s = simulate_step(e, flow);
        const StepResult f = simulate_step(e, full);
        CHECK(s.step_time_s == f.step_time_s);
        CHECK(s.represented_flows == 0);
        CHECK(s.represented_gpus.empty());
    }
}

TEST_CASE("training step: GPT-3 175B's layout replicated over 32 nodes, flow = flow-full exactly",
          "[strategies][training][flow][symmetry]") {
    // The issue-38 configuration (tp 8, pp 8, v 3, dp = GPUs / 64) at a size flow-full finishes
    // in a test: 256 GPUs, four replicas of 8 nodes; every stage's all-reduce crosses nodes.
    auto e = load_experiment(CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml",
                             {{"gpus", "256"},
                              {"parallel.dp", "4"},
                              {"training.global_batch", "64"},
                              {"model.layers", "24"}});
    StepOptions flow, full;
    flow.fidelity = full.fidelity = Fidelity::flow;
    full.flow_symmetry = false;
    const StepResult s = simulate_step(e, flow);
    const StepResult f = simulate_step(e, full);
    CHECK(s.step_time_s == f.step_time_s);
    CHECK(s.represented_flows > 0);
    CHECK(s.flows + s.represented_flows == f.flows);
}

TEST_CASE("training step: Megatron-Core fetches the batch on the first and last chunks only",
          "[strategies][training]") {
    // GPT-3 175B on 64 A100s: pp 8, v 3, 24 virtual stages. With batch_on_every_stage (Megatron
    // before October 2023) every chunk's forward starts with the host alone for the
    // micro-batch overhead; without it (Megatron-Core's get_batch) only virtual stage 0 (the
    // embedding) and 23 (the head and loss) do, and the others differ by exactly that.
    const auto spec = [](bool every) {
        auto e =
            load_experiment(CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml");
        e.framework.microbatch_overhead = sim::Time::from_seconds(5e-3);
        e.framework.batch_on_every_stage = every;
        return e;
    };
    const auto every = spec(true);
    const auto ends = spec(false);
    const auto topo = std::make_shared<const hardware::Topology>(every.cluster);
    const StepPlan a = build_step_plan(every, topo);
    const StepPlan b = build_step_plan(ends, topo);
    REQUIRE(a.stages.size() == 24);
    REQUIRE(b.stages.size() == 24);
    for (int vs = 0; vs < 24; ++vs) {
        const double diff = (a.stage(vs).forward.time - b.stage(vs).forward.time).seconds();
        INFO("virtual stage " << vs);
        CHECK(b.stage(vs).backward.time == a.stage(vs).backward.time);
        if (vs == 0 || vs == 23)
            CHECK(diff == 0);
        else
            CHECK(diff == Approx(5e-3).epsilon(1e-9));
    }
    CHECK(simulate_step(ends).breakdown.host_s < simulate_step(every).breakdown.host_s);
    // The presets: H100 runs are Megatron-Core's; dgx-a100's fit is of the older stack.
    CHECK_FALSE(load_platform("dgx-superpod-h100").framework.batch_on_every_stage);
    CHECK(load_platform("dgx-a100").framework.batch_on_every_stage);
}

TEST_CASE("training step: Megatron-LM of 2021 all-gathers pipeline tensors over tensor parallelism",
          "[strategies][training]") {
    // GPT-3 175B on 64 A100s: tp 8, pp 8, v 3, one node per pipeline rank. Without sequence
    // parallelism, Megatron-LM's 2021 exchange (megatron/p2p_communication.py, _communicate)
    // sends 1/tp of the s x b x h tensor from each tensor-parallel rank and the receiver
    // all-gathers it over its 8 GPUs (NVLink) before the next pass: every cross-rank send costs
    // exactly that all-gather more than sending the same 1/tp shard (as sequence parallelism
    // does), in both directions. Megatron-Core (no gather) sends the whole tensor from every
    // tensor-parallel rank without sequence parallelism (NVIDIA/Megatron-LM@3c92fa93b5).
    const auto spec = [](bool gather, bool sp) {
        auto e =
            load_experiment(CLUSTERSIM_SOURCE_DIR "/configs/experiments/gpt3-175B-64xA100.yaml");
        e.parallel.sequence_parallel = sp;
        e.framework.pipeline_tp_gather = gather;
        e.framework.p2p_overhead = sim::Time::zero();
        return e;
    };
    const auto off = spec(false, false);
    const auto topo = std::make_shared<const hardware::Topology>(off.cluster);
    const StepPlan a = build_step_plan(off, topo);
    const StepPlan b = build_step_plan(spec(true, false), topo);
    const StepPlan sp = build_step_plan(spec(true, true), topo);
    // The all-gather of the whole fp16 tensor (2048 x 1 x 12288) over GPUs 0-7 (one node).
    strategies::collectives::Communicator tp(*topo, {0, 1, 2, 3, 4, 5, 6, 7});
    strategies::collectives::Collective c;
    c.op = strategies::collectives::Op::all_gather;
    c.dtype = hardware::Dtype::fp16;
    c.bytes = std::int64_t{2048} * 12288 * 2;
    const double gather = tp.predict(c).seconds();
    REQUIRE(gather > 0);
    REQUIRE(a.stages.size() == 24);
    const StepPlan sp_core = build_step_plan(spec(false, true), topo);
    for (int vs = 0; vs + 1 < 24; ++vs) {
        INFO("virtual stage " << vs);
        CHECK(b.stage(vs).send_bytes == c.bytes / 8);
        CHECK(a.stage(vs).send_bytes == c.bytes);
        CHECK(sp.stage(vs).send_bytes == c.bytes / 8);
        CHECK(sp_core.stage(vs).send_bytes == c.bytes / 8);
        CHECK(a.stage(vs).send_forward > sp.stage(vs).send_forward);
        CHECK((b.stage(vs).send_forward - sp.stage(vs).send_forward).seconds() ==
              Approx(gather).epsilon(1e-9));
        CHECK((b.stage(vs).send_backward - sp.stage(vs).send_backward).seconds() ==
              Approx(gather).epsilon(1e-9));
        // Sequence parallelism's shards go as they are, in either stack: no gather.
        CHECK(sp.stage(vs).send_forward == sp_core.stage(vs).send_forward);
    }
    // The whole tensor (48 MiB) across nodes against its eighth and an NVLink all-gather.
    CHECK(a.stage(0).send_forward > b.stage(0).send_forward);
    // On where the preset's framework was fitted on that stack (dgx-a100: Megatron-LM /
    // Megatron-DeepSpeed steps of 2021-22), off for the Megatron-Core era's presets.
    CHECK(load_platform("dgx-a100").framework.pipeline_tp_gather);
    CHECK_FALSE(load_platform("dgx-superpod-h100").framework.pipeline_tp_gather);
}
