// Memory as a run prints it: allocated, reserved (PyTorch's caching allocator) and the device's
// total (nvidia-smi), against the capacity the device reports; Megatron's distributed optimizer
// with fp32 main gradients (strategies/parallel/memory_accounting.h).
#include "base/error.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/memory_accounting.h"
#include "strategies/parallel/platform.h"
#include "strategies/parallel/training_step.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace clustersim;
using namespace clustersim::strategies::parallel;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

constexpr std::int64_t kMiB = 1 << 20;

/// Llama 3 8B on one dgx-h100 node, bf16, the layout and settings given.
StepResult step(const Platform& p, Settings extra) {
    Settings s{{"model", "llama3-8B"},
               {"training.dtype", "bf16"},
               {"training.micro_batch", "1"},
               {"training.global_batch", "8"}};
    for (auto& kv : extra)
        s.push_back(kv);
    StepOptions o;
    o.oom_advice = false;
    return simulate_step(make_experiment(p, 8, s, "memory-levels"), o);
}

} // namespace

TEST_CASE("memory levels: allocated then reserved then the device total in the reported capacity",
          "[parallel][memory]") {
    // The reported totals of NVML (nvidia-smi), where the preset gives them; a GPU extending a
    // preset with its own capacity does not inherit the base's report.
    CHECK(load_platform("dgx-h100").cluster.node.gpu.usable_hbm_bytes() == 81559 * kMiB);
    CHECK(load_platform("hgx-h200").cluster.node.gpu.usable_hbm_bytes() == 143771 * kMiB);
    CHECK(load_platform("dgx-a100").cluster.node.gpu.usable_hbm_bytes() == 81920 * kMiB);
    CHECK(load_platform("grand-teton-h100").cluster.node.gpu.usable_hbm_bytes() == 96'000'000'000);
    CHECK(load_platform("aws-p4d").cluster.node.gpu.usable_hbm_bytes() == 40960 * kMiB);

    const Platform h100 = load_platform("dgx-h100");
    const StepResult r = step(h100, {{"parallel.tp", "8"}});
    REQUIRE(r.memory.size() == 1);
    const StageMemory& m = r.memory[0];
    CHECK(r.capacity_bytes == 81559 * kMiB);
    CHECK(m.peak_bytes == m.weights_bytes + m.grads_bytes + m.optimizer_bytes +
                              m.activations_bytes + m.gathered_bytes);
    // Without a fragmentation share the allocator's slack is its segment floor on the one
    // stream that allocates: one 2 MiB and one 20 MiB segment partly used.
    CHECK(m.reserved_bytes - m.peak_bytes == 22 * kMiB);
    CHECK(m.device_bytes == m.reserved_bytes + h100.framework.runtime_memory);
    CHECK(r.peak_bytes_max == m.peak_bytes);
    CHECK(r.peak_reserved_bytes_max == m.reserved_bytes);
    CHECK(r.device_bytes_max == m.device_bytes);

    // A measured fragmentation share adds that share of what the step allocates and frees.
    Platform fragmented = h100;
    fragmented.framework.allocator_fragmentation = 0.1;
    const StageMemory f = step(fragmented, {{"parallel.tp", "8"}}).memory[0];
    CHECK(f.peak_bytes == m.peak_bytes);
    CHECK(f.reserved_bytes - f.peak_bytes ==
          22 * kMiB + static_cast<std::int64_t>(0.1 * static_cast<double>(f.activations_bytes)));

    // ZeRO-3's gathers allocate on two more streams, each with its own pools.
    const StageMemory z3 = step(h100, {{"parallel.fsdp", "true"}}).memory[0];
    REQUIRE(z3.gathered_bytes > 0);
    CHECK(z3.reserved_bytes - z3.peak_bytes == 3 * 22 * kMiB);
    CHECK(detail::allocator_slack_bytes(0.0, 0, true) == 3 * 22 * kMiB);
}

TEST_CASE("memory levels: out of memory against the device total and the headroom warning",
          "[parallel][memory]") {
    Platform p = load_platform("dgx-h100");
    const StepResult base = step(p, {{"parallel.tp", "8"}});
    REQUIRE(!base.oom);
    const StageMemory& m = base.memory[0];
    REQUIRE(m.transient_bytes > 0);
    // Headroom below the backward's working set: fits, with the warning.
    p.cluster.node.gpu.hbm_reported_bytes = m.device_bytes + m.transient_bytes / 2;
    const StepResult tight = step(p, {{"parallel.tp", "8"}});
    CHECK(!tight.oom);
    REQUIRE(tight.tight_headroom);
    CHECK(*tight.tight_headroom == 0);
    // Room for it: no warning.
    p.cluster.node.gpu.hbm_reported_bytes = m.device_bytes + m.transient_bytes;
    CHECK(!step(p, {{"parallel.tp", "8"}}).tight_headroom);
    // The device total, runtime included, over the capacity: out of memory by the difference.
    p.cluster.node.gpu.hbm_reported_bytes = m.device_bytes - 1;
    const StepResult over = step(p, {{"parallel.tp", "8"}});
    REQUIRE(over.oom);
    CHECK(over.oom->excess_bytes == 1);
    CHECK(!over.tight_headroom);
}

TEST_CASE("memory levels: Megatron's distributed optimizer keeps fp32 main gradients",
          "[parallel][memory]") {
    // Megatron-LM's distributed-optimizer page
    // (https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/dist_optimizer.md):
    // bf16 parameters with fp32 gradients take 6 + 12/d bytes per parameter under the distributed
    // optimizer.
    Platform p = load_platform("dgx-h100");
    REQUIRE(p.framework.fp32_grad_reduce);
    const Settings zero1{{"parallel.dp", "8"}, {"parallel.zero", "1"}};
    const StageMemory fp32 = step(p, zero1).memory[0];
    p.framework.fp32_grad_reduce = false;
    const StageMemory bf16 = step(p, zero1).memory[0];
    // The same parameters: weights 2 bytes each in both.
    REQUIRE(fp32.weights_bytes == bf16.weights_bytes);
    const std::int64_t params = fp32.weights_bytes / 2;
    CHECK(fp32.grads_bytes == 4 * params);
    CHECK(bf16.grads_bytes == 2 * params);
    CHECK(fp32.weights_bytes + fp32.grads_bytes + fp32.optimizer_bytes ==
          6 * params + 12 * ((params + 7) / 8));
}

TEST_CASE("memory levels: allocator_fragmentation is a fraction", "[parallel][memory]") {
    auto load = [](const std::string& v) {
        return parse_platform_yaml(
            "extends: dgx-h100\nframework:\n  allocator_fragmentation: " + v + "\n", "frag.yaml");
    };
    CHECK(load("0.05").framework.allocator_fragmentation == Approx(0.05));
    CHECK_THROWS_WITH(load("1.5"), Catch::Contains("frag.yaml:3:") &&
                                       Catch::Contains("allocator_fragmentation") &&
                                       Catch::Contains("expected a fraction in [0, 1)"));
    CHECK_THROWS_AS(load("-0.1"), InputError);
}
