// Megatron-Core's expert-parallel overlap (overlap_moe_expert_parallel_comm with
// delay_wgrad_compute: ep_overlap.h) and CUDA graphs (cuda_graph_impl, cuda_graph_scope:
// cuda_graphs.h) in the step model: their closed forms and what they change of a step.
#include "base/error.h"
#include "strategies/parallel/cuda_graphs.h"
#include "strategies/parallel/ep_overlap.h"
#include "strategies/parallel/ep_overlap_host.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/training_step.h"

#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <array>
#include <string>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

/// A layer pair with every node of one duration per stream kind.
EpOverlapLayer pair_of(double compute, double comm) {
    EpOverlapLayer l;
    l.attn_fwd = l.mlp_fwd = l.post_fwd = compute;
    l.pre_bwd = l.mlp_bwd = l.mlp_wgrad = l.attn_bwd = compute;
    l.dispatch_fwd = l.combine_fwd = l.combine_bwd = l.dispatch_bwd = comm;
    return l;
}

Settings moe(int ep, int dp) {
    return {{"model", "mixtral-8x7B"},
            {"model.layers", "4"},
            {"model.seq", "1024"},
            {"training.global_batch", std::to_string(8 * dp)},
            {"training.micro_batch", "1"},
            {"parallel.dp", std::to_string(dp)},
            {"parallel.ep", std::to_string(ep)}};
}

Settings with(Settings s, const Settings& more) {
    s.insert(s.end(), more.begin(), more.end());
    return s;
}

std::string error_of(const Platform& p, int gpus, const Settings& s) {
    return test::input_error_of([&] { (void)make_experiment(p, gpus, s, "moe.yaml"); });
}

} // namespace

TEST_CASE("ep overlap: a layer pair takes between max(compute, comm) and their sum",
          "[strategies][moe][ep_overlap]") {
    for (const auto& [compute, comm] :
         {std::pair{1.0, 0.0}, {0.0, 1.0}, {1.0, 0.25}, {1.0, 1.0}, {0.25, 1.0}, {2.0, 3.0}}) {
        const EpOverlapLayer l = pair_of(compute, comm);
        CHECK(ep_sequential_seconds(l) == Approx(7 * compute + 4 * comm));
        for (bool delay : {false, true}) {
            const double t = ep_overlapped_seconds(l, delay);
            CHECK(t >= std::max(l.compute(), l.communication()) - 1e-12);
            CHECK(t <= ep_sequential_seconds(l) + 1e-12);
        }
    }
    // Nothing to overlap: the compute stream alone; no compute: the all-to-alls back to back.
    CHECK(ep_overlapped_seconds(pair_of(1, 0), true) == Approx(7.0));
    CHECK(ep_overlapped_seconds(pair_of(0, 1), true) == Approx(4.0));
}

TEST_CASE("ep overlap: each all-to-all hidden behind the other micro-batch's kernels",
          "[strategies][moe][ep_overlap]") {
    // The schedule's chain: combine_bwd beside pre_bwd's successor attn_fwd, the dispatch
    // beside mlp_bwd and mlp_wgrad, its backward beside mlp_fwd, the combine beside attn_bwd.
    // Each all-to-all shorter than the kernels beside it costs nothing: the pair is its
    // compute.
    EpOverlapLayer l = pair_of(1.0, 0.0);
    l.combine_bwd = l.dispatch_fwd = l.dispatch_bwd = l.combine_fwd = 0.9;
    CHECK(ep_overlapped_seconds(l, true) == Approx(l.compute()));
    // One all-to-all longer than what hides it: max() of the two, not the sum.
    EpOverlapLayer slow = pair_of(1.0, 0.0);
    slow.combine_fwd = 3.0; // beside attn_bwd (1) then post_fwd waits for it
    CHECK(ep_overlapped_seconds(slow, true) ==
          Approx(l.compute() - slow.attn_bwd - slow.post_fwd +
                 std::max(slow.attn_bwd, slow.combine_fwd) + slow.post_fwd));
}

TEST_CASE("ep overlap: delay_wgrad_compute lets the dispatch's backward start before the "
          "weight gradients",
          "[strategies][moe][ep_overlap]") {
    EpOverlapLayer l = pair_of(1.0, 0.0);
    l.dispatch_bwd = 2.0; // the forward's experts (1) and, delayed, the wgrad (1) beside it
    // Without the delay it starts after mlp_bwd and mlp_wgrad, and attn_bwd waits for it.
    const double plain = ep_overlapped_seconds(l, false);
    const double delayed = ep_overlapped_seconds(l, true);
    CHECK(delayed < plain);
    CHECK(delayed == Approx(l.compute()));
    CHECK(plain == Approx(l.compute() + 1.0));
}

TEST_CASE("ep overlap: the share of a rank's passes that pair up",
          "[strategies][moe][ep_overlap]") {
    // No pipeline: the first forward and the last backward alone.
    CHECK(ep_paired_share(1, 0, 1, 16) == Approx(15.0 / 16));
    // Interleaved: (pp - rank - 1) x 2 + (v - 1) x pp warmup forwards, and one more.
    CHECK(ep_paired_share(8, 0, 2, 128) == Approx((256.0 - (14 + 8 + 1)) / 256));
    CHECK(ep_paired_share(8, 7, 2, 128) == Approx((256.0 - (8 + 1)) / 256));
    CHECK(ep_paired_share(4, 0, 2, 2) == 0);
}

TEST_CASE("ep overlap: the step hides all-to-all waits, never adds time",
          "[strategies][moe][ep_overlap][training]") {
    const Platform p = load_platform("dgx-h100");
    const StepResult plain = simulate_step(make_experiment(p, 8, moe(8, 8), "plain"));
    const StepResult overlap = simulate_step(
        make_experiment(p, 8,
                        with(moe(8, 8), {{"parallel.overlap_moe_expert_parallel_comm", "true"},
                                         {"parallel.delay_wgrad_compute", "true"}}),
                        "overlap"));
    REQUIRE(plain.breakdown.ep_comm_exposed_s > 0);
    CHECK(overlap.breakdown.ep_comm_exposed_s < plain.breakdown.ep_comm_exposed_s);
    CHECK(overlap.step_time_s < plain.step_time_s);
    // Only the all-to-all waits change, and the kernels they now run beside (no pipeline).
    const double slowed = overlap.breakdown.compute_s - plain.breakdown.compute_s;
    CHECK(slowed >= 0);
    CHECK(slowed ==
          Approx(overlap.breakdown.overlap_slowdown_s - plain.breakdown.overlap_slowdown_s)
              .margin(1e-9));
    // The step saves what the passes save, less what the shorter backward leaves exposed of
    // the gradient reduction after it.
    const double saved =
        plain.breakdown.ep_comm_exposed_s - overlap.breakdown.ep_comm_exposed_s - slowed;
    const double dp_more = overlap.breakdown.dp_comm_exposed_s - plain.breakdown.dp_comm_exposed_s;
    CHECK(plain.step_time_s - overlap.step_time_s == Approx(saved - dp_more).epsilon(1e-6));
    CHECK(plain.step_time_s - overlap.step_time_s <= saved + 1e-12);
}

TEST_CASE("ep overlap: the all-to-alls beside the kernels slow them by at most their share",
          "[strategies][moe][ep_overlap]") {
    EpOverlapLayer l = pair_of(1.0, 0.5);
    const double hidden = ep_sequential_seconds(l) - ep_overlapped_seconds(l, true);
    REQUIRE(hidden > 0);
    CHECK(ep_overlap_saving(l, true) == Approx(hidden));
    l.comm_share = 0.2;
    CHECK(ep_overlap_saving(l, true) < hidden);
    CHECK(ep_overlap_saving(l, true) >= hidden * (1 - 0.2) - 1e-12);
}

namespace {

/// Every node of a pair costing the host `issue` seconds.
EpOverlapHost host_of(double issue) {
    EpOverlapHost h;
    for (EpNodeHost& n : h.nodes)
        n.issue = issue;
    return h;
}

} // namespace

TEST_CASE("ep overlap host: no host time leaves the GPU's schedule as it was",
          "[strategies][moe][ep_overlap]") {
    for (const auto& [compute, comm] : {std::pair{1.0, 0.25}, {1.0, 1.0}, {0.25, 1.0}}) {
        const EpOverlapLayer l = pair_of(compute, comm);
        for (bool delay : {false, true}) {
            CHECK(ep_overlapped_seconds(l, EpOverlapHost{}, delay) ==
                  ep_overlapped_seconds(l, delay));
            CHECK(ep_overlap_saving(l, EpOverlapHost{}, delay) == ep_overlap_saving(l, delay));
        }
        CHECK(ep_sequential_seconds(l, EpOverlapHost{}) == Approx(ep_sequential_seconds(l)));
    }
}

TEST_CASE("ep overlap host: a pair whose host time exceeds its kernels' is host-bound",
          "[strategies][moe][ep_overlap]") {
    // Each of the 11 nodes takes the host 3 s to issue and the GPU at most 1 s: both ways the
    // pair ends when the host has issued the last node, and the overlap hides nothing.
    const EpOverlapLayer l = pair_of(1.0, 0.5);
    const EpOverlapHost h = host_of(3.0);
    CHECK(ep_sequential_seconds(l, h) == Approx(11 * 3.0));
    for (bool delay : {false, true}) {
        CHECK(ep_overlapped_seconds(l, h, delay) == Approx(11 * 3.0));
        CHECK(ep_overlap_saving(l, h, delay) == Approx(0).margin(1e-12));
    }
    // Host time below the kernels' hides behind them: the GPU's schedule again.
    const EpOverlapHost ahead = host_of(0.01);
    CHECK(ep_sequential_seconds(l, ahead) == Approx(ep_sequential_seconds(l)));
    CHECK(ep_overlapped_seconds(l, ahead, true) == Approx(ep_overlapped_seconds(l, true)));
}

TEST_CASE("ep overlap host: a host sync in every node serialises the pair",
          "[strategies][moe][ep_overlap]") {
    // A blocking copy at the end of each node: the host issues the next node only when the
    // GPU is done, so nothing runs beside anything and the pair takes its sequential time.
    const EpOverlapLayer l = pair_of(1.0, 0.5);
    EpOverlapHost h;
    const std::array<double, kEpNodes> gpu{l.pre_bwd,      l.combine_bwd, l.attn_fwd,     l.mlp_bwd,
                                           l.dispatch_fwd, l.mlp_wgrad,   l.dispatch_bwd, l.mlp_fwd,
                                           l.combine_fwd,  l.attn_bwd,    l.post_fwd};
    for (std::size_t i = 0; i < kEpNodes; ++i) {
        h.nodes[i].sync = true;
        h.nodes[i].gpu = h.nodes[i].gpu_to_sync = gpu[i];
    }
    CHECK(ep_sequential_seconds(l, h) == Approx(7 * 1.0 + 4 * 0.5));
    CHECK(ep_overlapped_seconds(l, h, true) == Approx(7 * 1.0 + 4 * 0.5));
    CHECK(ep_overlap_saving(l, h, true) == Approx(0).margin(1e-12));
    // The routing's split sizes alone are waited for at the dispatch, which waits for the
    // routing on the GPU anyway: with the host ahead they cost the overlap nothing.
    EpOverlapHost routing;
    routing[EpNode::attn_fwd].sync = true;
    routing[EpNode::attn_fwd].gpu = routing[EpNode::attn_fwd].gpu_to_sync = l.attn_fwd;
    CHECK(ep_overlapped_seconds(l, routing, true) == Approx(ep_overlapped_seconds(l, true)));
    // A blocking copy at the end of the forward's experts (the host 0.4 s a node, the GPU's
    // pair 7 s): the host resumes when they end, and the backward's attention, issued
    // after the combine, starts one issue late.
    REQUIRE(ep_overlapped_seconds(l, true) == Approx(7.0));
    EpOverlapHost copy = host_of(0.4);
    CHECK(ep_overlapped_seconds(l, copy, true) == Approx(7.0));
    copy[EpNode::mlp_fwd].sync = true;
    copy[EpNode::mlp_fwd].gpu = copy[EpNode::mlp_fwd].gpu_to_sync = l.mlp_fwd;
    copy[EpNode::mlp_fwd].issue_to_sync = 0.4;
    CHECK(ep_overlapped_seconds(l, copy, true) == Approx(7.0 + 0.4));
}

TEST_CASE("ep overlap host: a host-bound step gains nothing, a whole-iteration graph gives "
          "the kernels' saving back",
          "[strategies][moe][ep_overlap][training]") {
    const Platform fast = load_platform("dgx-h100");
    Platform slow = fast;
    slow.framework.host_overhead = sim::Time::from_seconds(0.01); // 10 ms a kernel
    const Settings overlap = {{"parallel.overlap_moe_expert_parallel_comm", "true"},
                              {"parallel.delay_wgrad_compute", "true"}};
    const Settings graph = {{"training.cuda_graph_impl", "full_iteration"}};
    auto step = [](const Platform& p, const Settings& s) {
        return simulate_step(make_experiment(p, 8, s, "moe.yaml")).step_time_s;
    };
    // Every node waits for the host: the two streams run what the host issues, one by one.
    CHECK(step(slow, with(moe(8, 8), overlap)) == Approx(step(slow, moe(8, 8))).epsilon(1e-9));
    // Inside a whole-iteration graph the host issues nothing: the overlap saves the same
    // whatever a kernel costs it.
    const double saved_fast =
        step(fast, with(moe(8, 8), graph)) - step(fast, with(with(moe(8, 8), graph), overlap));
    const double saved_slow =
        step(slow, with(moe(8, 8), graph)) - step(slow, with(with(moe(8, 8), graph), overlap));
    REQUIRE(saved_fast > 0);
    CHECK(saved_slow == Approx(saved_fast).epsilon(1e-9));
}

TEST_CASE("cuda graphs: layer scopes and the whole iteration take the host off the kernels",
          "[strategies][cuda_graphs][training]") {
    // The scopes of Megatron-Core's _get_submodules_under_cudagraphs.
    CHECK(graph_scopes_of("attention.qkv", true) == graph_bit(GraphScope::attn));
    CHECK((graph_scopes_of("moe.router.topk", true) & graph_bit(GraphScope::moe_router)) != 0);
    CHECK((graph_scopes_of("moe.permute", true) & graph_bit(GraphScope::moe_preprocess)) != 0);
    CHECK((graph_scopes_of("moe.experts.fc1", true) & graph_bit(GraphScope::moe_router)) == 0);
    CHECK(graph_scopes_of("post_attention_layernorm", false) == graph_bit(GraphScope::mlp));
    CHECK(graph_scopes_of("lm_head.dgrad", false) == 0);

    const Platform p = load_platform("dgx-h100");
    const StepResult eager = simulate_step(make_experiment(p, 8, moe(8, 8), "eager"));
    const StepResult router = simulate_step(make_experiment(
        p, 8,
        with(moe(8, 8), {{"training.cuda_graph_impl", "transformer_engine"},
                         {"training.cuda_graph_scope", "[attn, moe_router, moe_preprocess]"}}),
        "router"));
    const StepResult whole = simulate_step(make_experiment(
        p, 8, with(moe(8, 8), {{"training.cuda_graph_impl", "full_iteration"}}), "whole"));
    REQUIRE(eager.breakdown.host_s > 0);
    // Fewer launches wait for the host; a whole-step graph none (nor the micro-batches' start).
    CHECK(router.breakdown.host_s < eager.breakdown.host_s);
    CHECK(whole.breakdown.host_s == 0);
    CHECK(whole.step_time_s <= router.step_time_s);
    CHECK(router.step_time_s <= eager.step_time_s);
    // The kernels themselves are the same.
    CHECK(whole.breakdown.compute_s == Approx(eager.breakdown.compute_s).epsilon(1e-9));
}

TEST_CASE("ep overlap and cuda graphs: bad settings name the key and the fix",
          "[strategies][moe][ep_overlap][cuda_graphs][input]") {
    const Platform p = load_platform("dgx-h100");
    CHECK_THAT(
        error_of(p, 8, with(moe(1, 8), {{"parallel.overlap_moe_expert_parallel_comm", "true"}})),
        Catch::Contains("overlap_moe_expert_parallel_comm") && Catch::Contains("ep > 1"));
    Settings piped = with(
        moe(4, 4), {{"parallel.pp", "2"}, {"parallel.overlap_moe_expert_parallel_comm", "true"}});
    CHECK_THAT(error_of(p, 8, piped), Catch::Contains("interleaved-1f1b"));
    CHECK_THAT(error_of(p, 8, with(moe(8, 8), {{"parallel.delay_wgrad_compute", "true"}})),
               Catch::Contains("overlap_moe_expert_parallel_comm"));
    CHECK_THAT(error_of(p, 8, with(moe(8, 8), {{"training.cuda_graph_scope", "[attn]"}})),
               Catch::Contains("cuda_graph_impl"));
    CHECK_THAT(error_of(p, 8,
                        with(moe(8, 8), {{"training.cuda_graph_impl", "transformer_engine"},
                                         {"training.cuda_graph_scope", "[moe_preprocess]"}})),
               Catch::Contains("moe_router"));
    CHECK_THAT(error_of(p, 8,
                        with(moe(8, 8), {{"training.cuda_graph_impl", "transformer_engine"},
                                         {"training.cuda_graph_scope", "[attention]"}})),
               Catch::Contains("attn, mlp, moe"));
    // Megatron-Core's refusals (transformer_config.py __post_init__): the whole MoE block
    // recomputed beside the overlap; moe and moe_router together.
    const Settings overlap = {{"parallel.overlap_moe_expert_parallel_comm", "true"}};
    CHECK_THAT(error_of(p, 8,
                        with(with(moe(8, 8), overlap), {{"parallel.recompute", "selective"},
                                                        {"parallel.recompute_modules", "moe"}})),
               Catch::Contains("overlap_moe_expert_parallel_comm") &&
                   Catch::Contains("drop moe from recompute_modules"));
    CHECK_THAT(error_of(p, 8,
                        with(moe(8, 8), {{"training.cuda_graph_impl", "transformer_engine"},
                                         {"training.cuda_graph_scope", "[moe, moe_router]"}})),
               Catch::Contains("give one of them"));
}

TEST_CASE("cuda graphs and the overlap: what Megatron-Core refuses of the model and recompute",
          "[strategies][moe][ep_overlap][cuda_graphs][input]") {
    // transformer_config.py __post_init__ (core_v0.17.1, d98e8a64dd).
    const Platform p = load_platform("dgx-h100");
    const Settings te = {{"training.cuda_graph_impl", "transformer_engine"}};
    const Settings dense = {{"model", "llama3-8B"},        {"model.layers", "4"},
                            {"model.seq", "1024"},         {"training.global_batch", "64"},
                            {"training.micro_batch", "1"}, {"parallel.dp", "8"}};
    // Expert scopes on a model without experts; mlp on a model whose every layer has them.
    for (const char* scope : {"[moe]", "[attn, moe_router]"})
        CHECK_THAT(error_of(p, 8, with(with(dense, te), {{"training.cuda_graph_scope", scope}})),
                   Catch::Contains("only supported for MoE"));
    CHECK_THAT(error_of(p, 8, with(with(moe(8, 8), te), {{"training.cuda_graph_scope", "[mlp]"}})),
               Catch::Contains("only supported for dense layers"));
    // A model with dense layers before the experts keeps mlp.
    CHECK(error_of(p, 8,
                   with(with(moe(8, 8), te), {{"model.first_k_dense_replace", "1"},
                                              {"training.cuda_graph_scope", "[attn, mlp]"}})) ==
          "(no error)");
    // Per-layer graphs with full recompute; the whole-iteration graph takes it.
    for (const char* impl : {"transformer_engine", "local"})
        CHECK_THAT(error_of(p, 8,
                            with(dense, {{"training.cuda_graph_impl", impl},
                                         {"parallel.recompute", "full"}})),
                   Catch::Contains("full iteration CUDA graph"));
    CHECK_THAT(error_of(p, 8,
                        with(dense, {{"training.cuda_graph_impl", "transformer_engine"},
                                     {"parallel.recompute", "auto"}})),
               Catch::Contains("recompute: auto may choose it"));
    CHECK(error_of(p, 8,
                   with(dense, {{"training.cuda_graph_impl", "full_iteration"},
                                {"parallel.recompute", "full"}})) == "(no error)");
    // moe recomputed around a transformer_engine moe_router graph.
    CHECK_THAT(error_of(p, 8,
                        with(with(moe(8, 8), te), {{"training.cuda_graph_scope", "[moe_router]"},
                                                   {"parallel.recompute", "selective"},
                                                   {"parallel.recompute_modules", "[moe]"}})),
               Catch::Contains("not supported with moe_router"));
    // More than one multi-token prediction layer beside the overlap.
    const Settings dsv3 = {{"model", "deepseek-v3"},
                           {"model.layers", "4"},
                           {"model.first_k_dense_replace", "1"},
                           {"model.seq", "1024"},
                           {"model.mtp_num_layers", "2"},
                           {"training.global_batch", "64"},
                           {"training.micro_batch", "1"},
                           {"parallel.dp", "8"},
                           {"parallel.ep", "8"},
                           {"parallel.overlap_moe_expert_parallel_comm", "true"}};
    CHECK_THAT(error_of(p, 8, dsv3), Catch::Contains("at most one"));
    CHECK_THAT(error_of(p, 8, with(dsv3, {{"model.mtp_num_layers", "1"}})),
               !Catch::Contains("multi-token"));
}

TEST_CASE("cuda graphs: local captures the router and the preprocessing together",
          "[strategies][cuda_graphs][input]") {
    // core_v0.17.1 transformer_config.py: "local impl doesn't currently distinguish between
    // moe_preprocess or moe_router so just set both if either is specified"; transformer_engine
    // refuses moe_preprocess alone.
    const Platform p = load_platform("dgx-h100");
    const auto both = static_cast<std::uint8_t>(graph_bit(GraphScope::moe_router) |
                                                graph_bit(GraphScope::moe_preprocess));
    for (const char* scope : {"[moe_router]", "[moe_preprocess]"}) {
        const ExperimentSpec e =
            make_experiment(p, 8,
                            with(moe(8, 8), {{"training.cuda_graph_impl", "local"},
                                             {"training.cuda_graph_scope", scope}}),
                            "moe.yaml");
        CHECK(e.training.cuda_graph_scope == both);
    }
    CHECK_THAT(error_of(p, 8,
                        with(moe(8, 8), {{"training.cuda_graph_impl", "transformer_engine"},
                                         {"training.cuda_graph_scope", "[moe_preprocess]"}})),
               Catch::Contains("moe_router"));
}

TEST_CASE("cuda graphs: core_v0.17's spelling of the whole-step graph is read as full_iteration",
          "[strategies][cuda_graphs][input]") {
    const Platform p = load_platform("dgx-h100");
    const ExperimentSpec old =
        make_experiment(p, 8,
                        with(moe(8, 8), {{"training.cuda_graph_impl", "local"},
                                         {"training.cuda_graph_scope", "[full_iteration]"}}),
                        "moe.yaml");
    CHECK(old.training.cuda_graph_impl == CudaGraphImpl::full_iteration);
    CHECK(old.training.cuda_graph_scope == 0);
    const ExperimentSpec now = make_experiment(
        p, 8, with(moe(8, 8), {{"training.cuda_graph_impl", "full_iteration"}}), "moe.yaml");
    CHECK(simulate_step(old).step_time_s == simulate_step(now).step_time_s);
}
