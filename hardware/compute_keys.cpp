// The compute: section's fused_attention: and memory: keys (hardware_keys.h): the attention
// kernel's and the memory-bound kernels' rates (compute_model.h).
#include "hardware/hardware_keys.h"

namespace clustersim::hardware {

using config::field;
using config::Key;
using config::KeyType;

const std::vector<Key<ComputeSpec>>& fused_attention_keys() {
    static const std::vector<Key<ComputeSpec>> keys{
        {{.name = "efficiency",
          .type = KeyType::number,
          .fallback = "required",
          .meaning = "the sustained fraction of the dense peak, in (0, 1]: its softmax and "
                     "rescaling keep the tensor cores from GEMM rates",
          .lands = "ComputeSpec::fused_attention_efficiency"}},
        {{.name = "exp2_per_sm_clock",
          .type = KeyType::number,
          .fallback = "0 (the exponentials not costed apart)",
          .number_min = 0,
          .meaning = "the SFU's exp2 results per SM per clock (MUFU.EX2): the softmax's "
                     "exponentials, one per score each pass evaluates",
          .lands = "ComputeSpec::fused_attention_exp2_per_sm_clock"},
         field<&ComputeSpec::fused_attention_exp2_per_sm_clock>},
        {{.name = "exposed_exp",
          .type = KeyType::number,
          .fallback = "0",
          .number_min = 0,
          .meaning = "the share, in [0, 1], of the exponentials' SFU time left unhidden",
          .lands = "ComputeSpec::fused_attention_exposed_exp"},
         field<&ComputeSpec::fused_attention_exposed_exp>},
        {{.name = "fp8_backward_scores_per_sm_clock",
          .type = KeyType::number,
          .fallback = "0 (FP8 attention not measured: training.fp8_dot_product_attention refused)",
          .number_min = 0,
          .meaning = "FP8 attention's backward with per-tensor scales: scores per SM per clock "
                     "at which the kernel quantizes the recomputed probabilities and their "
                     "gradient to FP8 (besides its MMAs at the fp8 peak)",
          .lands = "ComputeSpec::fused_attention_fp8_backward_scores_per_sm_clock"},
         field<&ComputeSpec::fused_attention_fp8_backward_scores_per_sm_clock>},
        {{.name = "mxfp8_backward_scores_per_sm_clock",
          .type = KeyType::number,
          .fallback = "0 (MXFP8 attention not measured: training.fp8_dot_product_attention "
                      "refused with fp8_recipe mxfp8)",
          .number_min = 0,
          .meaning = "the same with MXFP8 blocks of 32 (a scale per block found in the kernel)",
          .lands = "ComputeSpec::fused_attention_mxfp8_backward_scores_per_sm_clock"},
         field<&ComputeSpec::fused_attention_mxfp8_backward_scores_per_sm_clock>},
    };
    return keys;
}

const std::vector<Key<ComputeSpec>>& memory_keys() {
    using C = ComputeSpec;
    static const std::vector<Key<C>> keys{
        {{.name = "efficiency",
          .type = KeyType::number,
          .fallback = "required",
          .meaning = "the sustained fraction of HBM bandwidth large memory-bound kernels reach, "
                     "in (0, 1]",
          .lands = "ComputeSpec::memory_efficiency"}},
        {{.name = "half_efficiency_bytes",
          .type = KeyType::bytes,
          .fallback = "required",
          .min = 0,
          .meaning = "the bytes moved at which a memory-bound kernel reaches half its bandwidth",
          .lands = "ComputeSpec::memory_half_efficiency_bytes"},
         field<&C::memory_half_efficiency_bytes>},
    };
    return keys;
}

} // namespace clustersim::hardware
