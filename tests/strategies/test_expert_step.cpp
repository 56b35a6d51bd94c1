// Expert parallelism in the step model: parallel.ep and parallel.etp, the alltoall token
// dispatcher's collectives and grouped GEMMs (layer_work), the groups they run on, expert
// gradients over the expert-data-parallel group, and the memory per GPU.
#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "strategies/collectives/communicator.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/collective_times.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/param_gathers.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
namespace models = clustersim::strategies::models;
using hardware::Dtype;
using models::CommGroup;
using models::Pass;
using models::TpOp;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

const models::TpCollective* find(const models::LayerWork& w, std::string_view name) {
    for (const auto& c : w.collectives) {
        if (c.name == name)
            return &c;
    }
    return nullptr;
}

const models::Op* find_op(const models::PassWork& p, std::string_view name) {
    for (const auto& op : p.ops) {
        if (op.name == name)
            return &op;
    }
    return nullptr;
}

int count(const models::LayerWork& w, Pass pass, TpOp op, CommGroup group) {
    int n = 0;
    for (const auto& c : w.collectives)
        n += c.pass == pass && c.op == op && c.group == group ? 1 : 0;
    return n;
}

/// Mixtral 8x7B's dimensions, 4096-token sequences.
models::ModelSpec mixtral() {
    models::ModelSpec m = models::load_model("mixtral-8x7B");
    m.seq = 4096;
    return m;
}

Settings tiny_moe(int ep, int dp, int tp = 1) {
    return {{"model", "mixtral-8x7B"},
            {"model.layers", "4"},
            {"model.seq", "1024"},
            {"training.global_batch", std::to_string(2 * dp)},
            {"training.micro_batch", "1"},
            {"parallel.tp", std::to_string(tp)},
            {"parallel.sequence_parallel", tp > 1 ? "true" : "false"},
            {"parallel.dp", std::to_string(dp)},
            {"parallel.ep", std::to_string(ep)}};
}

std::string error_of(const Platform& p, int gpus, const Settings& s) {
    return test::input_error_of([&] { (void)make_experiment(p, gpus, s, "moe.yaml"); });
}

double sum(const Breakdown& b) {
    return b.compute_s + b.recompute_s + b.host_s + b.tp_comm_exposed_s + b.ep_comm_exposed_s +
           b.pp_bubble_s + b.pp_comm_exposed_s + b.dp_comm_exposed_s + b.optimizer_s;
}

} // namespace

TEST_CASE("expert parallelism: dispatch and combine all-to-all bytes from the routing",
          "[strategies][moe][ep]") {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    models::ModelSpec m = mixtral();
    const std::int64_t h = 4096, k = 2, e = 2; // bf16
    models::LayerConfig cfg;
    cfg.dtype = Dtype::bf16;
    SECTION("ep 8, tp 1: every GPU sends its 4096 x top-2 copies, 1/8 to each peer") {
        cfg.ep = 8;
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        const auto* dispatch = find(w, "moe.dispatch");
        const auto* combine = find(w, "moe.combine");
        REQUIRE(dispatch != nullptr);
        REQUIRE(combine != nullptr);
        CHECK(dispatch->op == TpOp::all_to_all);
        CHECK(dispatch->group == CommGroup::ep);
        // nccl-tests' all-to-all size: the per-rank buffer of ep blocks, tokens x topk x h x e.
        CHECK(dispatch->bytes == 4096 * k * h * e);
        CHECK(dispatch->bytes / 8 == 4096 * k * h * e / 8); // per peer
        CHECK(combine->bytes == dispatch->bytes);
        // Backward has the reverse pair; no etp collectives with etp = tp = 1.
        CHECK(count(w, Pass::forward, TpOp::all_to_all, CommGroup::ep) == 2);
        CHECK(count(w, Pass::backward, TpOp::all_to_all, CommGroup::ep) == 2);
        CHECK(count(w, Pass::forward, TpOp::all_gather, CommGroup::etp) == 0);
        // One local expert: no sort by expert.
        CHECK(find_op(w.forward, "moe.sort_chunks") == nullptr);
    }
    SECTION("tp 2 with sequence parallelism: each GPU routes its half of the sequence") {
        cfg.tp = 2;
        cfg.sequence_parallel = true;
        cfg.ep = 4;
        cfg.etp = 1;
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        CHECK(find(w, "moe.dispatch")->bytes == 4096 / 2 * k * h * e);
        CHECK(find_op(w.forward, "moe.sort_chunks") != nullptr); // 2 local experts
        // The routed experts need no tensor-parallel reduction (etp 1): the attention's pair
        // of sequence-parallel collectives and nothing more from the MoE block forward.
        CHECK(count(w, Pass::forward, TpOp::reduce_scatter, CommGroup::tp) == 1);
    }
    SECTION("etp 2: the received copies gathered over the expert tensor-parallel pair") {
        cfg.tp = 2;
        cfg.sequence_parallel = true;
        cfg.ep = 4; // etp defaults to tp = 2
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        const std::int64_t received = 4096 / 2 * k;
        CHECK(find(w, "moe.etp_all_gather")->bytes == 2 * received * h * e);
        CHECK(find(w, "moe.etp_all_gather")->group == CommGroup::etp);
        CHECK(find(w, "moe.etp_reduce_scatter")->bytes == 2 * received * h * e);
        CHECK(count(w, Pass::backward, TpOp::all_gather, CommGroup::etp) == 1);
        CHECK(count(w, Pass::backward, TpOp::reduce_scatter, CommGroup::etp) == 1);
        // The grouped GEMM: 2 local experts, the pair's copies, half the columns.
        const auto* fc1 = find_op(w.forward, "moe.experts.fc1");
        CHECK(fc1->batch == 2);
        CHECK(fc1->m == 2 * received / 2);
        CHECK(fc1->n == 2 * 14336 / 2);
    }
    SECTION("the busiest GPU sets the pace; a capacity factor caps it") {
        cfg.ep = 4;
        m.moe_load_imbalance = 1.5;
        CHECK(find(models::layer_work(m, cfg, cm), "moe.dispatch")->bytes ==
              4096 * k * 3 / 2 * h * e);
        m.moe_expert_capacity_factor = 1.25;
        CHECK(find(models::layer_work(m, cfg, cm), "moe.dispatch")->bytes ==
              4096 * k * 5 / 4 * h * e);
    }
}

TEST_CASE("expert parallelism: grouped GEMMs and weights per GPU against ep 1",
          "[strategies][moe][ep]") {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    const models::ModelSpec m = mixtral();
    models::LayerConfig one;
    const models::LayerWork w1 = models::layer_work(m, one, cm);
    CHECK(w1.collectives.empty()); // tp 1, ep 1: nothing to exchange
    CHECK(w1.expert_parameters == 0);
    for (int ep : {2, 4, 8}) {
        models::LayerConfig cfg;
        cfg.ep = ep;
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        const auto* f1 = find_op(w1.forward, "moe.experts.fc1");
        const auto* fe = find_op(w.forward, "moe.experts.fc1");
        // The experts divide by ep, the tokens per local expert multiply by ep: with balanced
        // routing a GPU computes as many copies as it routes, whatever ep.
        CHECK(fe->batch * ep == f1->batch);
        CHECK(fe->m == f1->m * ep);
        CHECK(fe->flops == Approx(f1->flops).epsilon(1e-12));
        // The routed experts' weights divide by ep; the rest stays.
        const std::int64_t experts = 8 * 3 * std::int64_t{4096} * 14336;
        CHECK(w.expert_parameters == experts / ep);
        CHECK(w1.parameters - w.parameters == experts - experts / ep);
    }
}

TEST_CASE("expert parallelism: the step has all-to-alls only with ep > 1 and sums up",
          "[strategies][moe][ep][training]") {
    const Platform p = load_platform("dgx-h100");
    const StepResult r1 = simulate_step(make_experiment(p, 8, tiny_moe(1, 8), "ep1"));
    const StepResult r8 = simulate_step(make_experiment(p, 8, tiny_moe(8, 8), "ep8"));
    CHECK(r1.breakdown.ep_comm_exposed_s == 0);
    CHECK(r8.breakdown.ep_comm_exposed_s > 0);
    CHECK(sum(r8.breakdown) == Approx(r8.step_time_s).epsilon(1e-9));
    CHECK(r8.ep == 8);
    CHECK(r8.expert_dp == 1);
    // The experts' weights, gradients and optimizer state divide by ep.
    CHECK(r8.memory[0].weights_bytes < r1.memory[0].weights_bytes);
    // Flow fidelity runs the same passes: the same exposed all-to-all time.
    const StepResult f8 =
        simulate_step(make_experiment(p, 8, tiny_moe(8, 8), "ep8"), {Fidelity::flow});
    CHECK(f8.breakdown.ep_comm_exposed_s == Approx(r8.breakdown.ep_comm_exposed_s));
    CHECK(sum(f8.breakdown) == Approx(f8.step_time_s).epsilon(1e-9));
}

TEST_CASE("expert parallelism: groups on the topology and expert gradients over expert dp",
          "[strategies][moe][ep][training]") {
    const Platform p = load_platform("dgx-h100");
    auto plan_of = [&](const ExperimentSpec& e) {
        return build_step_plan(e, std::make_shared<const hardware::Topology>(e.cluster));
    };
    SECTION("ep 4 of dp 8: expert gradients reduced over pairs, dense over all 8") {
        const ExperimentSpec e = make_experiment(p, 8, tiny_moe(4, 8), "ep4");
        CHECK(e.parallel.expert_dp() == 2);
        const StepPlan plan = plan_of(e);
        const RankPlan& r = plan.ranks[0];
        CHECK(r.ep_group == std::vector<int>{0, 1, 2, 3});
        CHECK(r.expert_dp_group == std::vector<int>{0, 4});
        std::int64_t expert_bytes = 0, dense_bytes = 0;
        for (const DpCollective& d : r.dp)
            (d.expert ? expert_bytes : dense_bytes) += d.collective.bytes;
        // Every gradient reduced once, each in its group, in the dtype of the gradient
        // reduction (fp32 or the 16-bit training dtype, by the hardware file's framework).
        REQUIRE(r.expert_parameters > 0);
        const std::int64_t g = expert_bytes / r.expert_parameters;
        CHECK((g == 2 || g == 4));
        CHECK(expert_bytes == g * r.expert_parameters);
        CHECK(dense_bytes == g * (r.parameters - r.expert_parameters));
        CHECK(r.expert_parameters == 4 * 2 * 3 * std::int64_t{4096} * 14336);
    }
    SECTION("an all-to-all across nodes waits longer than one inside a node") {
        Settings in = tiny_moe(8, 16);
        in.push_back({"model.num_experts", "16"});
        Settings across = tiny_moe(16, 16);
        across.push_back({"model.num_experts", "16"});
        const StepPlan a = plan_of(make_experiment(p, 16, in, "in"));
        const StepPlan b = plan_of(make_experiment(p, 16, across, "across"));
        CHECK(a.ranks[0].ep_group.back() == 7);
        CHECK(b.ranks[0].ep_group.back() == 15);
        CHECK(b.stage(0).forward.ep_wait > 2 * a.stage(0).forward.ep_wait);
        CHECK(a.stage(0).forward.ep_wait > sim::Time::zero());
    }
}

TEST_CASE("expert parallelism: Mixtral 8x7B's model state per GPU at ep 8 on 64 H100s",
          "[strategies][moe][ep][memory]") {
    const Platform p = load_platform("dgx-h100");
    Settings s{
        {"model", "mixtral-8x7B"},     {"model.seq", "4096"}, {"training.global_batch", "256"},
        {"training.micro_batch", "1"}, {"parallel.tp", "1"},  {"parallel.pp", "4"},
        {"parallel.dp", "16"},         {"parallel.ep", "8"},  {"parallel.zero", "1"}};
    const ExperimentSpec e = make_experiment(p, 64, s, "mixtral");
    CHECK(e.parallel.expert_dp() == 2); // 16 / 8
    const StepResult r = simulate_step(e);
    // A middle stage: 8 layers. Per layer the attention (QKV of 32 + 2 x 8 heads of 128, the
    // projection), two RMSNorms and the router, on every GPU; one of the 8 experts (SwiGLU:
    // three 4096 x 14336 matrices).
    const std::int64_t h = 4096;
    const std::int64_t dense = h * (32 + 16) * 128 + h * h + 2 * h + 8 * h;
    const std::int64_t expert = 3 * h * 14336;
    const std::int64_t layers = 8;
    const auto& m = r.memory[1];
    CHECK(m.weights_bytes == 2 * layers * (dense + expert));
    // ZeRO-1 (the distributed optimizer): fp32 main gradients whole (the preset reduces in
    // fp32, Megatron's default under bf16); fp32 master weights and Adam's moments sharded over
    // dp 16 for the dense parts, over expert dp 2 for the experts.
    CHECK(m.grads_bytes == 4 * layers * (dense + expert));
    CHECK(m.optimizer_bytes == 12 * ((layers * dense + 15) / 16) + 12 * ((layers * expert) / 2));
}

TEST_CASE("expert parallelism under FSDP2: the routed experts sharded, gathered and "
          "reduce-scattered over the expert-data-parallel group (torchtitan's efsdp)",
          "[strategies][moe][ep][memory][fsdp2]") {
    // torchtitan/distributed/fsdp.py (apply_fsdp's shard_placement_fn) at
    // pytorch/torchtitan@b5bcd76c6: experts over efsdp = dp_shard x cp x tp / ep, the rest of
    // each block over dp_shard x cp.
    const Platform p = load_platform("dgx-h100");
    Settings s{
        {"model", "mixtral-8x7B"},     {"model.seq", "4096"}, {"training.global_batch", "256"},
        {"training.micro_batch", "1"}, {"parallel.tp", "1"},  {"parallel.pp", "4"},
        {"parallel.dp", "16"},         {"parallel.ep", "8"},  {"parallel.fsdp", "true"}};
    const ExperimentSpec e = make_experiment(p, 64, s, "mixtral");
    REQUIRE(e.parallel.zero == 3);
    REQUIRE(e.parallel.expert_dp() == 2);
    const auto topo = std::make_shared<const hardware::Topology>(e.cluster);
    const StepPlan plan = build_step_plan(e, topo);
    const std::int64_t h = 4096;
    const std::int64_t dense = h * (32 + 16) * 128 + h * h + 2 * h + 8 * h;
    const std::int64_t expert = 3 * h * 14336;
    const std::int64_t layers = 8;
    // A middle stage (8 layers): the weights and Adam's state sharded, the dense parts over 16
    // ranks, the experts over 2.
    const RankPlan& r = plan.ranks[1];
    const auto shard = [](std::int64_t n, std::int64_t d) { return (n + d - 1) / d; };
    CHECK(r.weights_bytes == 2 * (shard(layers * dense, 16) + shard(layers * expert, 2)));
    CHECK(r.optimizer_bytes == 12 * (shard(layers * dense, 16) + shard(layers * expert, 2)));
    CHECK(r.expert_dp_group.size() == 2);
    CHECK(r.dp_group.size() == 16);
    // The experts' gradients reduce-scattered over their group, the rest over the
    // data-parallel one, each in the reduce dtype.
    const std::int64_t grad = e.framework.fp32_grad_reduce ? 4 : 2;
    std::int64_t expert_bytes = 0;
    std::int64_t dense_bytes = 0;
    for (const DpCollective& d : r.dp) {
        CHECK(d.role == DpRole::grad_reduce_scatter);
        CHECK(d.collective.op == strategies::collectives::Op::reduce_scatter);
        (d.expert ? expert_bytes : dense_bytes) += d.collective.bytes;
    }
    CHECK(expert_bytes == Approx(static_cast<double>(grad * layers * expert)).epsilon(1e-6));
    CHECK(dense_bytes == Approx(static_cast<double>(grad * layers * dense)).epsilon(1e-6));
    // A layer's gather: the dense parameters over the 16 ranks, then its local expert over
    // the 2, as the communicators time them.
    detail::PlanContext ctx(e, e.framework, true);
    ctx.dp_times = detail::CollectiveTimes(detail::communicator(plan, r.dp_group, ctx.dp_comm));
    ctx.edp_times =
        detail::CollectiveTimes(detail::communicator(plan, r.expert_dp_group, ctx.edp_comm));
    const detail::Gather g = detail::parameter_gather(ctx, dense + expert, expert);
    strategies::collectives::Communicator dp_comm(*topo, r.dp_group);
    strategies::collectives::Communicator edp_comm(*topo, r.expert_dp_group);
    const auto gather_seconds = [&](const strategies::collectives::Communicator& comm,
                                    std::int64_t params) {
        strategies::collectives::Collective c;
        c.op = strategies::collectives::Op::all_gather;
        c.dtype = Dtype::bf16;
        c.bytes = 2 * params;
        return detail::CollectiveTimes(&comm).time(c).seconds();
    };
    const double split = gather_seconds(dp_comm, dense) + gather_seconds(edp_comm, expert);
    CHECK(g.seconds == Approx(split).epsilon(1e-9));
    // Not the whole layer over the data-parallel group, which would move 8x the expert bytes
    // per rank's shard across nodes.
    CHECK(g.seconds != Approx(gather_seconds(dp_comm, dense + expert)).epsilon(1e-3));
    // In the step's own plan: with one data-parallel rank (tp 8, ep 2, etp 1: expert dp 4)
    // only the experts are sharded, and each layer's forward still gathers them, which the
    // same layout under the distributed optimizer (gathered once, after the step) does not.
    Settings one{{"model", "mixtral-8x7B"},
                 {"model.seq", "4096"},
                 {"training.global_batch", "8"},
                 {"training.micro_batch", "1"},
                 {"parallel.tp", "8"},
                 {"parallel.dp", "1"},
                 {"parallel.ep", "2"},
                 {"parallel.etp", "1"},
                 {"parallel.sequence_parallel", "true"}};
    Settings one_fsdp = one;
    one_fsdp.push_back({"parallel.fsdp", "true"});
    Settings one_zero1 = one;
    one_zero1.push_back({"parallel.zero", "1"});
    const ExperimentSpec f1 = make_experiment(p, 8, one_fsdp, "mixtral");
    REQUIRE(f1.parallel.expert_dp() == 4);
    const auto plan_of = [](const ExperimentSpec& x) {
        return build_step_plan(x, std::make_shared<const hardware::Topology>(x.cluster));
    };
    const StepPlan fsdp_plan = plan_of(f1);
    const StepPlan zero1_plan = plan_of(make_experiment(p, 8, one_zero1, "mixtral"));
    CHECK(fsdp_plan.stage(0).forward_gather_bytes > 0);
    CHECK(fsdp_plan.stage(0).forward.time > zero1_plan.stage(0).forward.time);
    CHECK(zero1_plan.stage(0).forward_gather_bytes == 0);
    // torchtitan splits no expert over tensor-parallel ranks.
    Settings etp2 = one_fsdp;
    etp2.push_back({"parallel.etp", "2"});
    CHECK_THROWS_WITH(make_experiment(p, 8, etp2, "mixtral"),
                      Catch::Contains("splits no expert") && Catch::Contains("etp: 1"));
}

TEST_CASE("expert parallelism: the flex (DeepEP) dispatcher sends once per node over the rail",
          "[strategies][moe][ep][training]") {
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    const models::ModelSpec m = mixtral();
    models::LayerConfig cfg;
    cfg.dtype = Dtype::bf16;
    cfg.ep = 8;
    cfg.flex_dispatcher = true;
    SECTION("across 2 nodes: the rail's all-to-all, one copy per destination node") {
        cfg.ep_nodes = 2;
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        const auto* dispatch = find(w, "moe.dispatch");
        REQUIRE(dispatch != nullptr);
        CHECK(dispatch->group == CommGroup::ep_rail);
        // Top-2 of 8 experts, 4 per node: both on one node with chance C(4,2) x 2 / C(8,2)
        // = 12/28, so 2 - 12/28 = 44/28 nodes per token.
        CHECK(dispatch->bytes == std::llround(4096 * 44.0 / 28) * 4096 * 2);
        CHECK(count(w, Pass::forward, TpOp::all_to_all, CommGroup::ep_rail) == 2);
        CHECK(count(w, Pass::backward, TpOp::all_to_all, CommGroup::ep_rail) == 2);
        CHECK(count(w, Pass::forward, TpOp::all_to_all, CommGroup::ep) == 0);
    }
    SECTION("inside one node: once per destination GPU, as many as alltoall for distinct experts") {
        cfg.ep_nodes = 1;
        const models::LayerWork w = models::layer_work(m, cfg, cm);
        CHECK(find(w, "moe.dispatch")->group == CommGroup::ep);
        CHECK(find(w, "moe.dispatch")->bytes == 4096 * 2 * 4096 * 2);
    }
    SECTION("the step: ep 8 x etp 2 over 2 nodes, less exposed all-to-all than alltoall") {
        const Platform p = load_platform("dgx-h100");
        Settings s = tiny_moe(8, 8, 2);
        const StepResult a2a = simulate_step(make_experiment(p, 16, s, "alltoall"));
        s.push_back({"parallel.moe_token_dispatcher", "flex"});
        const StepResult flex = simulate_step(make_experiment(p, 16, s, "flex"));
        CHECK(flex.breakdown.ep_comm_exposed_s > 0);
        CHECK(flex.breakdown.ep_comm_exposed_s < a2a.breakdown.ep_comm_exposed_s);
        CHECK(flex.breakdown.compute_s == Approx(a2a.breakdown.compute_s));
        CHECK(sum(flex.breakdown) == Approx(flex.step_time_s).epsilon(1e-9));
        s.back().second = "deepep";
        CHECK_THAT(error_of(p, 16, s), Catch::Contains("moe_token_dispatcher") &&
                                           Catch::Contains("alltoall") && Catch::Contains("flex"));
    }
}

TEST_CASE("expert parallelism: bad layouts exit with the key and the fix",
          "[strategies][moe][ep][errors]") {
    const Platform p = load_platform("dgx-h100");
    CHECK(error_of(p, 8, tiny_moe(8, 8)) == "(no error)");
    CHECK_THAT(error_of(p, 8, tiny_moe(3, 8)),
               Catch::Contains("ep 3 does not divide the model's 8 experts") &&
                   Catch::Contains("1, 2, 4, 8"));
    Settings dense = tiny_moe(2, 8);
    dense[0].second = "llama3-8B";
    CHECK_THAT(error_of(p, 8, dense),
               Catch::Contains("needs a model with experts") && Catch::Contains("set ep: 1"));
    CHECK_THAT(error_of(p, 4, tiny_moe(8, 4)), Catch::Contains("does not divide tp 1 x dp 4") &&
                                                   Catch::Contains("expert-data-parallel"));
    dense[8].second = "1";
    dense.push_back({"parallel.etp", "2"}); // nothing to split in a dense model: ignored
    CHECK(error_of(p, 8, dense) == "(no error)");
    Settings no_sp = tiny_moe(4, 4, 2);
    no_sp[6].second = "false";
    CHECK_THAT(error_of(p, 8, no_sp), Catch::Contains("sequence_parallel: true"));
    Settings etp = tiny_moe(2, 8);
    etp.push_back({"parallel.etp", "3"});
    CHECK_THAT(error_of(p, 8, etp), Catch::Contains("etp 3"));
    // ZeRO-3 with experts apart: as FSDP2 shards them, and without hybrid sharding's replicas.
    Settings zero3 = tiny_moe(2, 8);
    zero3.push_back({"parallel.zero", "3"});
    CHECK_THAT(error_of(p, 8, zero3),
               Catch::Contains("parallel.fsdp: true") && Catch::Contains("zero: 1"));
    Settings fsdp = tiny_moe(2, 8);
    fsdp.push_back({"parallel.fsdp", "true"});
    CHECK(error_of(p, 8, fsdp) == "(no error)");
    fsdp.push_back({"parallel.data_parallel_replicate_degree", "2"});
    CHECK_THAT(error_of(p, 8, fsdp), Catch::Contains("hybrid sharding") &&
                                         Catch::Contains("data_parallel_replicate_degree: 1"));

    // From a file: the line of the key and its name.
    const auto dir = std::filesystem::temp_directory_path() / "clustersim_test_ep";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "bad-ep.yaml").string();
    {
        std::ofstream f(path);
        f << "hardware: dgx-h100\nmodel: mixtral-8x7B\ntraining:\n  global_batch: 16\n"
             "parallel:\n  dp: 8\n  ep: 16\n";
    }
    try {
        load_experiment(path);
        FAIL("no error");
    } catch (const InputError& err) {
        CHECK_THAT(err.what(), Catch::Contains(path + ":7:") &&
                                   Catch::Contains("key 'parallel.ep'") &&
                                   Catch::Contains("choose ep from 1, 2, 4, 8"));
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("expert parallelism: keys costed for other models are refused, not ignored",
          "[strategies][moe][errors]") {
    const Platform p = load_platform("dgx-h100");
    // torchtitan's op-level recompute is costed for dense layers with standard attention.
    Settings moe = tiny_moe(8, 8);
    moe.push_back({"parallel.recompute", "selective"});
    moe.push_back({"parallel.selective_recompute", "op"});
    CHECK_THAT(error_of(p, 8, moe), Catch::Contains("selective_recompute: op") &&
                                        Catch::Contains("has experts") &&
                                        Catch::Contains("selective_recompute: attention"));
    // The flex dispatcher on a model without experts.
    Settings dense = tiny_moe(1, 8);
    dense[0].second = "llama3-8B";
    dense.pop_back(); // no parallel.ep
    dense.push_back({"parallel.moe_token_dispatcher", "flex"});
    CHECK_THAT(error_of(p, 8, dense),
               Catch::Contains("moe_token_dispatcher: flex") && Catch::Contains("has none"));
}
