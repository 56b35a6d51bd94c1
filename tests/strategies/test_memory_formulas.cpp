#include "base/error.h"
#include "strategies/models/memory_formulas.h"
#include "strategies/models/model_loader.h"

#include <catch2/catch.hpp>

using namespace clustersim;
using namespace clustersim::strategies::models;
using hardware::Dtype;

TEST_CASE("memory formulas: Korthikanti et al. 2022 closed forms", "[models][memory]") {
    const double s = 2048, b = 1, h = 12288, a = 96, t = 8; // GPT-3 175B, Table 3
    const double sbh = s * b * h;
    auto k = [&](double tp, bool sp, Recompute r, bool flash = false) {
        return korthikanti_activation_bytes(s, b, h, a, tp, sp, r, flash);
    };
    CHECK(k(1, false, Recompute::none) == Approx(sbh * (34 + 5 * a * s / h)));
    CHECK(k(t, false, Recompute::none) == Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
    CHECK(k(t, true, Recompute::none) == Approx(sbh / t * (34 + 5 * a * s / h)));
    CHECK(k(t, false, Recompute::selective) == Approx(sbh * (10 + 24 / t)));
    CHECK(k(t, true, Recompute::selective) == Approx(34 * sbh / t));
    CHECK(k(t, true, Recompute::full) == Approx(2 * sbh));
    CHECK(k(t, true, Recompute::none, true) == Approx(34 * sbh / t));
    // At t = 1 sequence parallelism changes nothing; every technique saves memory.
    CHECK(k(1, true, Recompute::none) == Approx(k(1, false, Recompute::none)));
    CHECK(k(t, true, Recompute::none) < k(t, false, Recompute::none));
    CHECK(k(t, true, Recompute::selective) < k(t, true, Recompute::none));
    // GPT-3 on 8-way TP with SP and selective recompute: 107 MB per layer and micro-batch,
    // a fifth of TP alone (23 sbh).
    CHECK(k(t, true, Recompute::selective) == Approx(106'954'752));
    CHECK(k(t, false, Recompute::none) == Approx(23 * sbh));
}

TEST_CASE("memory formulas: weights, gradients and optimizer state by ZeRO stage",
          "[models][memory]") {
    const std::int64_t p = 1'200'000'000;
    const int d = 8;
    auto total = [&](int zero, Dtype dt = Dtype::fp16, Optimizer o = Optimizer::adam) {
        return model_state_bytes(p, dt, o, zero, d).total();
    };
    CHECK(total(0) == 18 * p); // Megatron, mixed precision (Korthikanti et al.)
    CHECK(total(1) == 4 * p + 12 * p / d);
    CHECK(total(2) == 2 * p + 14 * p / d);
    CHECK(total(3) == 16 * p / d);
    const ModelStateBytes z0 = model_state_bytes(p, Dtype::bf16, Optimizer::adam, 0, d);
    CHECK(z0.weights == 2 * p);
    CHECK(z0.gradients == 4 * p);
    CHECK(z0.optimizer == 12 * p);
    // Megatron's distributed optimizer under bf16 with fp32 main gradients: 6 + 12/d bytes per
    // parameter (Megatron-LM's distributed-optimizer page,
    // https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/dist_optimizer.md),
    // the gradients unsharded in fp32; DeepSpeed's 16-bit ZeRO-1 above keeps 4 + 12/d. Other stages
    // ignore it.
    const ModelStateBytes z1 = model_state_bytes(p, Dtype::bf16, Optimizer::adam, 1, d, true);
    CHECK(z1.total() == 6 * p + 12 * p / d);
    CHECK(z1.gradients == 4 * p);
    CHECK(model_state_bytes(p, Dtype::bf16, Optimizer::adam, 2, d, true).total() ==
          2 * p + 14 * p / d);
    CHECK(model_state_bytes(p, Dtype::bf16, Optimizer::adam, 0, d, true).total() == 18 * p);
    // fp32 training keeps no master copy: 4 + 4 + 8.
    CHECK(total(0, Dtype::fp32) == 16 * p);
    CHECK(total(0, Dtype::fp16, Optimizer::sgd) == 10 * p);
    // Shards round up.
    CHECK(model_state_bytes(10, Dtype::fp16, Optimizer::adam, 3, 4).weights == 2 * 3);
    // ZeRO-3 over one rank is no sharding.
    CHECK(model_state_bytes(p, Dtype::fp16, Optimizer::adam, 3, 1).total() == 16 * p);
    // GPT-3 175B without ZeRO: 3.1 TB of model state, 49 GB per GPU on 8 x 8 (TP x PP).
    const double gpt3 = static_cast<double>(parameter_counts(load_model("gpt3-175B")).total);
    CHECK(18 * gpt3 / 64 == Approx(49.1e9).epsilon(0.01));
    CHECK_THROWS_AS(model_state_bytes(p, Dtype::fp16, Optimizer::adam, 4, d), InputError);
    CHECK_THROWS_AS(model_state_bytes(p, Dtype::fp16, Optimizer::adam, 1, 0), InputError);
}

TEST_CASE("memory formulas: pure 16-bit training and 8-bit Adam, bytes per parameter",
          "[models][memory]") {
    const std::int64_t p = 3'212'749'824; // Llama 3.2 3B (tied embeddings)
    // Pure bf16 (torchtune's dtype bf16): 2 weights + 2 gradients + 2 m + 2 v, no master copy.
    const ModelStateBytes pure = model_state_bytes(p, Dtype::bf16, Optimizer::adam, 0, 1, false,
                                                   /*master_weights=*/false);
    CHECK(pure.weights == 2 * p);
    CHECK(pure.gradients == 2 * p);
    CHECK(pure.optimizer == 4 * p);
    CHECK(pure.total() == 8 * p);
    // Sharded alike (FSDP2 over 8 ranks with bf16 parameters): 8P / d.
    CHECK(model_state_bytes(800, Dtype::bf16, Optimizer::adam, 3, 8, false, false).total() ==
          8 * 100);
    // The master-weight flag changes nothing in fp32 training (nothing to drop).
    CHECK(model_state_bytes(p, Dtype::fp32, Optimizer::adam, 0, 1, false, false).total() ==
          model_state_bytes(p, Dtype::fp32, Optimizer::adam, 0, 1).total());
    // 8-bit Adam: one byte each for m and v and an fp32 absmax per 256-block of each
    // (bitsandbytes Optimizer8bit.init_state): 2 + 8/256 bytes per parameter.
    CHECK(adam8bit_state_bytes(256 * 1000) == 2 * 256 * 1000 + 8 * 1000);
    CHECK(adam8bit_state_bytes(257) == 2 * 257 + 8 * 2); // the last block partial
    const ModelStateBytes q =
        model_state_bytes(256 * 1000, Dtype::bf16, Optimizer::adam8bit, 0, 1, false, false);
    CHECK(q.weights == 2 * 256'000);
    CHECK(q.gradients == 2 * 256'000);
    CHECK(q.optimizer == adam8bit_state_bytes(256'000));
    // With master weights the fp32 copy stays: 4 + 2 + 8/256 per parameter of state.
    CHECK(model_state_bytes(256'000, Dtype::bf16, Optimizer::adam8bit, 0, 1).optimizer ==
          4 * 256'000 + adam8bit_state_bytes(256'000));
    // ZeRO 1 shards the 8-bit state: ceil(P/d) per rank.
    CHECK(model_state_bytes(2048, Dtype::bf16, Optimizer::adam8bit, 1, 8, false, false).optimizer ==
          adam8bit_state_bytes(256));
    // Parsed by its torchtune-style name.
    CHECK(parse_optimizer("adamw8bit") == Optimizer::adam8bit);
    CHECK(to_string(Optimizer::adam8bit) == "adamw8bit");
}
