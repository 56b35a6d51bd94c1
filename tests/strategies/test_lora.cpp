// LoRA fine-tuning (training.peft: lora; models::Lora, layer_work_lora.cpp): what a step
// computes, stores and reduces, against closed forms. Hu et al. 2021 (arXiv 2106.09685),
// section 4.1: the base weights W0 frozen (no gradient), the adapters B A trained; Megatron-
// Bridge's ParallelLinearAdapter: linear_in (in x r) then linear_out (r x out), each split over
// the tensor-parallel ranks.
#include "base/error.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "layer_work_test_util.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/memory_formulas.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies;
using namespace clustersim::strategies::models;

namespace {

const hardware::ComputeModel& h100() {
    static const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    return cm;
}

constexpr std::uint8_t kAllTargets = 0xF;

LayerConfig lora_config(int tp, int dim, std::uint8_t targets) {
    LayerConfig c;
    c.tp = tp;
    c.sequence_parallel = tp > 1;
    c.dtype = hardware::Dtype::bf16;
    c.lora.dim = dim;
    c.lora.alpha = 32;
    c.lora.targets = targets;
    return c;
}

/// FLOPs of a pass's plain GEMMs (the linears and their adapters; not the attention core).
double linear_flops(const PassWork& p) {
    double f = 0;
    for (const Op& op : p.ops)
        if (op.kind == OpKind::gemm)
            f += op.flops;
    return f;
}

/// (in, out) of Llama 3 8B's four linears (Dubey et al. 2024, Table 3; the released config:
/// hidden 4096, 32 query heads of 128, 8 key/value heads, SwiGLU of 14336): linear_qkv
/// 4096 -> 4096 + 2 x 1024, linear_proj 4096 -> 4096, linear_fc1 4096 -> 2 x 14336 (gate and
/// up fused), linear_fc2 14336 -> 4096.
constexpr std::int64_t kLinears[4][2] = {{4096, 6144}, {4096, 4096}, {4096, 28672}, {14336, 4096}};

using Settings = std::vector<std::pair<std::string, std::string>>;

const parallel::Platform& platform() {
    static const parallel::Platform p = parallel::load_platform("dgx-h100");
    return p;
}

parallel::ExperimentSpec experiment(const Settings& extra, const std::string& model = "llama3-8B") {
    Settings s{{"model", model},
               {"model.layers", "2"},
               {"model.seq", "1024"},
               {"training.global_batch", "16"},
               {"training.micro_batch", "1"},
               {"parallel.overlap_grad_reduce", "false"}};
    for (const auto& kv : extra)
        s.push_back(kv);
    return parallel::make_experiment(platform(), 8, s, "lora.yaml");
}

const Settings kLora{{"training.peft", "lora"},
                     {"training.lora_dim", "16"},
                     {"training.lora_alpha", "32"},
                     {"training.lora_target_modules", "[linear_qkv, linear_proj]"}};

std::string error_of(const Settings& extra, const std::string& model = "llama3-8B") {
    try {
        experiment(extra, model);
    } catch (const InputError& e) {
        return e.what();
    }
    return "(no error)";
}

std::int64_t grad_all_reduce_bytes(const parallel::ExperimentSpec& e) {
    const auto plan =
        parallel::build_step_plan(e, std::make_shared<const hardware::Topology>(e.cluster));
    std::int64_t bytes = 0;
    for (const auto& d : plan.ranks.at(0).dp)
        if (d.role == parallel::DpRole::grad_all_reduce)
            bytes += d.collective.bytes;
    return bytes;
}

} // namespace

TEST_CASE(
    "lora: a frozen linear's backward is its data gradient, and adapters add 3 thin GEMMs' worth",
    "[models][lora]") {
    const ModelSpec m = load_model("llama3-8B");
    const int r = 16;
    const auto full = layer_work(m, lora_config(1, 0, 0), h100());
    const auto lora = layer_work(m, lora_config(1, r, kAllTargets), h100());
    const double T = m.seq; // micro-batch 1
    double L = 0;           // the base linears' forward FLOPs, 2 T in out each
    double A = 0;           // the adapters' forward FLOPs, 2 T r (in + out) each
    for (const auto& [in, out] : kLinears) {
        L += 2 * T * static_cast<double>(in * out);
        A += 2 * T * r * static_cast<double>(in + out);
    }
    CHECK(linear_flops(full.forward) == Approx(L).epsilon(1e-12));
    CHECK(linear_flops(full.backward) == Approx(2 * L).epsilon(1e-12));
    // The frozen base: forward, and its data gradient only (no weight gradient); each adapter:
    // two GEMMs forward, their data and weight gradients backward.
    CHECK(linear_flops(lora.forward) == Approx(L + A).epsilon(1e-12));
    CHECK(linear_flops(lora.backward) == Approx(L + 2 * A).epsilon(1e-12));
    // A LoRA step's linear GEMMs: about 2/3 of full training's, plus the adapters'.
    const double step_full = linear_flops(full.forward) + linear_flops(full.backward);
    const double step_lora = linear_flops(lora.forward) + linear_flops(lora.backward);
    CHECK(step_lora / step_full == Approx(2.0 / 3.0 + A / L).epsilon(1e-12));
    for (const Op& op : lora.backward.ops)
        if (!op.name.starts_with("lora."))
            CHECK_FALSE(op.name.ends_with("wgrad"));
    // The adapters' parameters are trained, the layer's own frozen.
    CHECK(lora.frozen_parameters == full.parameters);
    std::int64_t adapters = 0;
    for (const auto& [in, out] : kLinears)
        adapters += r * (in + out);
    CHECK(lora.parameters - lora.frozen_parameters == adapters);
    // linear_out's input, the T x r low-rank activation, kept per adapter (bf16).
    CHECK(lora.activation_bytes - full.activation_bytes == 4 * m.seq * r * 2);
}

TEST_CASE("lora: under tensor parallelism each rank holds r (in + out) / t of each adapter",
          "[models][lora]") {
    const ModelSpec m = load_model("llama3-8B");
    const int r = 16;
    const int t = 8;
    const std::uint8_t qkv_proj =
        lora_bit(LoraTarget::linear_qkv) | lora_bit(LoraTarget::linear_proj);
    const auto full = layer_work(m, lora_config(t, 0, 0), h100());
    const auto lora = layer_work(m, lora_config(t, r, qkv_proj), h100());
    CHECK(lora.frozen_parameters == layer_parameters_per_rank(m, t));
    CHECK(lora.parameters - lora.frozen_parameters ==
          r * (4096 + 6144) / t + r * (4096 + 4096) / t);
    // The tensor-parallel collectives stay (the frozen layers' dgrads still reduce), except the
    // sequence-parallel re-gathers of inputs only the frozen MLP's weight gradients needed.
    CHECK(lora.collective_count(Pass::forward, TpOp::all_gather) ==
          full.collective_count(Pass::forward, TpOp::all_gather));
    CHECK(lora.collective_count(Pass::backward, TpOp::reduce_scatter) ==
          full.collective_count(Pass::backward, TpOp::reduce_scatter));
    int regathers_full = 0;
    int regathers_lora = 0;
    for (const auto& c : full.collectives)
        regathers_full += c.regather ? 1 : 0;
    for (const auto& c : lora.collectives)
        regathers_lora += c.regather ? 1 : 0;
    CHECK(regathers_full == 2);
    CHECK(regathers_lora == 1); // linear_qkv's adapter needs its gathered input
    // Every collective still points inside its pass, in order.
    for (const auto& c : lora.collectives) {
        CHECK(c.after < c.needed_by);
        CHECK(c.needed_by <= lora.pass(c.pass).ops.count());
    }
}

TEST_CASE("lora: model state is the frozen weights plus adapters trained in full",
          "[strategies][lora]") {
    const auto full = parallel::simulate_step(experiment({}));
    const auto lora = parallel::simulate_step(experiment(kLora));
    REQUIRE(full.memory.size() == 1);
    REQUIRE(lora.memory.size() == 1);
    // Full training in bf16 with Adam, ZeRO 0: 2 P weights, 4 P fp32 gradients, 12 P.
    const std::int64_t P = full.memory[0].weights_bytes / 2;
    CHECK(full.memory[0].grads_bytes == 4 * P);
    CHECK(full.memory[0].optimizer_bytes == 12 * P);
    // LoRA on linear_qkv and linear_proj of 2 layers, rank 16.
    const std::int64_t adapters = 2 * 16 * ((4096 + 6144) + (4096 + 4096));
    CHECK(lora.memory[0].weights_bytes == 2 * (P + adapters));
    CHECK(lora.memory[0].grads_bytes == 4 * adapters);
    CHECK(lora.memory[0].optimizer_bytes == 12 * adapters);
    const auto state = lora_state_bytes(P, adapters, hardware::Dtype::bf16, Optimizer::adam, 0, 8);
    CHECK(state.total() == lora.memory[0].weights_bytes + lora.memory[0].grads_bytes +
                               lora.memory[0].optimizer_bytes);
    // A LoRA step is cheaper: no weight gradients of the base.
    CHECK(lora.step_time_s < full.step_time_s);
}

TEST_CASE("lora: the data-parallel all-reduce carries the adapters' gradients only",
          "[strategies][lora]") {
    const auto full_e = experiment({});
    const std::int64_t full = grad_all_reduce_bytes(full_e);
    const std::int64_t lora = grad_all_reduce_bytes(experiment(kLora));
    const std::int64_t adapters = 2 * 16 * ((4096 + 6144) + (4096 + 4096));
    // Full training reduces every parameter's gradient at the same bytes per element.
    const auto full_run = parallel::simulate_step(full_e);
    const std::int64_t P = full_run.memory[0].weights_bytes / 2;
    REQUIRE(full > 0);
    CHECK(full % P == 0);
    CHECK(lora == adapters * (full / P));
    // Overlapped with the backward: the buckets hold the same adapters' bytes.
    Settings overlapped = kLora;
    overlapped.emplace_back("parallel.overlap_grad_reduce", "true");
    const auto e = experiment(overlapped);
    const auto plan =
        parallel::build_step_plan(e, std::make_shared<const hardware::Topology>(e.cluster));
    std::int64_t buckets = 0;
    for (const auto& b : plan.stage(0).buckets)
        buckets += b.bytes;
    CHECK(buckets == lora);
}

TEST_CASE("lora: bad LoRA settings are refused naming the key", "[strategies][lora]") {
    auto with = [](Settings extra) {
        Settings s = kLora;
        for (auto& kv : extra)
            s.push_back(std::move(kv));
        return s;
    };
    CHECK_THAT(error_of(with({{"training.lora_target_modules", "[linear_qkv, q_proj]"}})),
               Catch::Contains("lora_target_modules") && Catch::Contains("q_proj"));
    CHECK_THAT(error_of(with({{"training.lora_dim", "0"}})), Catch::Contains("lora_dim"));
    CHECK_THAT(error_of(with({{"training.lora_dim", "-4"}})), Catch::Contains("lora_dim"));
    CHECK_THAT(error_of(with({{"training.lora_alpha", "0"}})), Catch::Contains("lora_alpha"));
    CHECK_THAT(error_of(with({{"training.forward_only", "true"}})),
               Catch::Contains("peft") && Catch::Contains("forward_only"));
    CHECK_THAT(error_of({{"training.lora_dim", "16"}}),
               Catch::Contains("lora_dim") && Catch::Contains("peft: lora"));
    CHECK_THAT(error_of(with({{"training.peft", "qlora"}})), Catch::Contains("peft"));
    CHECK_THAT(error_of(with({{"parallel.zero", "1"}})), Catch::Contains("zero"));
    CHECK_THAT(error_of(with({{"parallel.tp", "8"}, {"training.lora_dim", "12"}})),
               Catch::Contains("lora_dim") && Catch::Contains("tp 8"));
    CHECK_THAT(error_of(kLora, "mixtral-8x7B"), Catch::Contains("peft"));
    CHECK(error_of(kLora) == "(no error)");
    // Off by default: an experiment without peft trains every weight.
    CHECK_FALSE(experiment({}).training.lora.on());
}
