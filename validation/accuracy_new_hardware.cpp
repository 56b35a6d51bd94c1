// The numbers of docs/validation.md's section "New hardware": every row of
// new-hardware/published-runs.yaml mapped to an experiment from its own fields, on one preset
// per accelerator, with Megatron-Bridge's performance recipes for what the tables do not print
// (new_hardware_rules()). Never a parameter per row.
#include "validation/accuracy_new_hardware.h"

#include "base/error.h"
#include "config/yaml_map.h"
#include "hardware/torus.h"
#include "strategies/models/model_loader.h"
#include "strategies/models/model_spec.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/framework_spec.h"
#include "strategies/parallel/training_step.h"
#include "validation/published_rows.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace clustersim::validation {

namespace {

using detail::contains;
using detail::dim;
using detail::Settings;

/// One preset per accelerator (the systems Megatron-Bridge's tables name: DGX B200 / B300, the
/// GB200 / GB300 NVL72 racks, DGX H100 as in the H100 study, the AMD Instinct platforms, the
/// TPU generations).
std::string preset_of(const std::string& accelerator) {
    static const std::map<std::string, std::string> presets{
        {"B200", "dgx-b200"},     {"B300", "dgx-b300"},          {"GB200", "gb200-nvl72"},
        {"GB300", "gb300-nvl72"}, {"H100", "dgx-superpod-h100"}, {"TPU v4", "tpu-v4"},
        {"TPU v5e", "tpu-v5e"},   {"TPU v5p", "tpu-v5p"},
    };
    // AMD Instinct: the 8-GPU xGMI mesh platform named by its GPU ("MI300X" on mi300x).
    if (accelerator == "MI300X" || accelerator == "MI325X" || accelerator == "MI355X")
        return "mi" + accelerator.substr(2, 3) + "x";
    const auto it = presets.find(accelerator);
    return it == presets.end() ? "" : it->second;
}

/// The model preset of a row's mixture of experts, by the name the table prints ("" for the
/// dense Llama rows, built from the row's own dimensions).
std::string moe_preset_of(const std::string& model) {
    static const std::vector<std::pair<std::string, std::string>> presets{
        {"DeepSeek-V3", "deepseek-v3"},         {"Kimi K2", "kimi-k2"},
        {"GPT-OSS 120B", "gpt-oss-120B"},       {"Qwen3-30B-A3B", "qwen3-30B-A3B"},
        {"Qwen3-235B-A22B", "qwen3-235B-A22B"}, {"Mixtral 8x7B", "mixtral-8x7B"},
        {"Mixtral 8x22B", "mixtral-8x22B"},
    };
    for (const auto& [name, preset] : presets)
        if (contains(model, name))
            return preset;
    return "";
}

/// The row's dimensions that differ from its model preset's ("" when none): the preset is
/// built from the released config the row names, so they must agree.
std::string preset_mismatch(config::YamlMap& model, const strategies::models::ModelSpec& m) {
    const std::vector<std::pair<const char*, int>> dims{{"layers", m.layers},
                                                        {"hidden", m.hidden},
                                                        {"heads", m.heads},
                                                        {"kv_heads", m.kv_heads},
                                                        {"vocab", m.vocab},
                                                        {"moe_experts", m.num_experts},
                                                        {"moe_topk", m.moe_router_topk},
                                                        {"moe_ffn", m.moe_ffn_hidden_size}};
    for (const auto& [key, value] : dims)
        if (model.has(key) && !model.raw(key).IsNull() && dim(model, key) != value)
            return fmt::format("{} {} (preset {}: {})", key, dim(model, key), m.name, value);
    return "";
}

/// Megatron-Bridge's DeepSeek-V3 and Kimi K2 recipes (recipes/deepseek/deepseek_v3.py and
/// recipes/kimi/kimi_k2.py, the pipeline layout maps): DeepSeek-V3's one multi-token-prediction
/// block (its config's num_nextn_predict_layers, which the bridge takes as mtp_num_layers;
/// Kimi K2 has none), and the layout of its `stages` model stages (pp x vp; the maps key them
/// by (pp, vp), and every pair of one product has the same layout): the embedding with the
/// first layers, the MTP block and the loss with the last. 32 stages (pp 8 x vp 4) are in no
/// map: the layout is the one Megatron-Bridge writes for them, its H100 performance recipes'
/// (perf_recipes/deepseek/h100/deepseek_v3.py "Et|(tt|)*30mL", kimi/h100/kimi_k2.py
/// "Et|(tt|)*30L", v0.6.0; scripts/performance/configs/deepseek/deepseek_llm_pretrain.py at
/// r0.2.0). `without_mtp`: the table says its DeepSeek-V3 ran without the block (the 25.11
/// tables' "DeepSeekV3 (w/o MTP)").
void latent_moe_recipe(Settings& s, const std::string& model, int stages, bool without_mtp) {
    const bool mtp = contains(model, "DeepSeek-V3") && !without_mtp;
    if (mtp)
        s.emplace_back("model.mtp_num_layers", "1");
    const std::string last = std::string(mtp ? "m" : "") + "L";
    const std::map<int, std::string> layouts{
        {4, "Et*16|t*16|t*16|t*13" + last},
        {8, "Et*8|(t*8|)*6t*5" + last},
        {16, "Et*4|(t*4|)*14t" + last},
        {32, "Et|(tt|)*30" + last},
    };
    if (const auto it = layouts.find(stages); it != layouts.end())
        s.emplace_back("parallel.pipeline_model_parallel_layout", it->second);
}

/// A layout dimension the table prints, 1 where it prints none (null, "n/a").
int optional_dim(config::YamlMap& m, std::string_view key) {
    if (!m.has(key) || m.raw(key).IsNull())
        return 1;
    return dim(m, key);
}

bool is_tpu(const NewHardwareRun& r) {
    return r.accelerator.rfind("TPU", 0) == 0;
}

/// A value the row prints, or null.
bool stated(config::YamlMap& m, std::string_view key) {
    return m.has(key) && !m.raw(key).IsNull();
}

/// The training stack the row names (framework.name: "Megatron-Bridge", "Primus (Megatron-LM
/// backend)", ...; "" when not stated).
std::string training_stack(config::YamlMap& row) {
    config::YamlMap framework = row.map("framework");
    return stated(framework, "name") ? framework.str("name") : "";
}

/// What a MaxText row's cited script sets and the row does not copy (its source.config, read
/// at the commit it names).
struct CitedScript {
    std::string_view config;                ///< the row's source.config
    std::string_view per_device_batch_size; ///< as the script sets it
    std::string_view remat_policy;          ///< as the script sets it, or base.yml's default
};

/// AI-Hypercomputer/tpu-recipes@c8cfe2f, training/v5p/Mixtral-8X7B-Maxtext/scripts/
/// run_mixtral-8x7b.sh: model_name=mixtral-8x7b per_device_batch_size=36
/// max_target_length=4096 weight_dtype=bfloat16 attention=flash; no mesh key (base.yml's ici
/// fsdp -1) and no remat_policy (base.yml's default, full).
constexpr std::array kCitedScripts{
    CitedScript{"AI-Hypercomputer/tpu-recipes@c8cfe2f689081d36701a101cd73a70965d80926b:training/"
                "v5p/Mixtral-8X7B-Maxtext",
                "36", "full"},
};

const CitedScript* cited_script(config::YamlMap& row) {
    const std::string config = row.map("source").str("config");
    for (const auto& c : kCitedScripts)
        if (config == c.config)
            return &c;
    return nullptr;
}

/// What a MaxText row needs ("" when nothing): its batch and mesh (the row's, or its cited
/// script's), a mixture of experts from its preset.
std::string maxtext_needs(config::YamlMap& row, config::YamlMap& model) {
    config::YamlMap batch = row.map("micro_batch");
    if (!stated(batch, "per_device_batch_size") && cited_script(row) == nullptr)
        return "needs the per-device batch (not stated)";
    if (stated(model, "moe_experts")) {
        const std::string preset = moe_preset_of(model.str("name"));
        if (preset.empty())
            return "needs a MaxText mixture of experts' preset";
        const std::string differs = preset_mismatch(model, strategies::models::load_model(preset));
        if (!differs.empty())
            return "needs the row's " + differs;
    }
    return "";
}

/// Where the recipes below are read: Megatron-Bridge at the release each NeMo container ships
/// (26.08: v0.6.0, 2026-08-19; 26.06: v0.5.0; 26.04.01: v0.4.2, the first with the 26.04.01
/// table's DGX B200 DeepSeek-V3 layout pp 8 x vp 2 x ep 32; 25.11: the r0.2.0 branch, whose
/// GB300 DeepSeek-V3 layout (pp 4 x ep 64) differs from the 25.11 table's pp 2 x ep 32: its
/// dispatcher and graphs are taken as the container's).
constexpr std::string_view kBridge26_08 =
    "NVIDIA-NeMo/Megatron-Bridge@51885cf132b2814188b6855c25a8588254274c2a (v0.6.0):src/megatron/"
    "bridge/perf_recipes/";
constexpr std::string_view kBridge26_06 =
    "NVIDIA-NeMo/Megatron-Bridge@fcbb6031103d0ca845c1a54d4fee55ecfcca17b6 (v0.5.0):scripts/"
    "performance/configs/";
constexpr std::string_view kBridge26_04_01 =
    "NVIDIA-NeMo/Megatron-Bridge@c810129341a84e58f4cbed3093f70668a088c028 (v0.4.2):scripts/"
    "performance/configs/";
constexpr std::string_view kBridge25_11 =
    "NVIDIA-NeMo/Megatron-Bridge@0465189601951c14ad592bd8eefbb673929e25bc (r0.2.0):scripts/"
    "performance/configs/";

/// What Megatron-Bridge's performance recipe of a row's container turns on for a mixture of
/// experts (the tables print none of it): the token dispatcher (moe_token_dispatcher_type flex
/// with moe_flex_dispatcher_backend deepep or hybridep: a copy per destination node across
/// nodes and per destination GPU inside one; else alltoall), Megatron-Core's expert-parallel
/// overlap (the workload configs' moe_a2a_overlap, which utils/overrides.py
/// _set_moe_a2a_overlap_overrides turns into overlap_moe_expert_parallel_comm and
/// delay_wgrad_compute; the 26.08 recipes set both directly) and the CUDA graphs
/// (cuda_graph_impl, cuda_graph_scope).
struct MoeRecipe {
    std::string_view container;   ///< the row's framework.version, before " container"
    std::string_view preset;      ///< the model's preset (moe_preset_of)
    std::string_view accelerator; ///< the row's hw_class
    std::string_view precision;   ///< the row's precision
    /// the token dispatcher: "alltoall", or flex on "deepep" or "hybridep" (every flex recipe
    /// here names HybridEP but 26.04.01's DeepSeek-V3 B200 MXFP8, whose V2 config sets
    /// moe_flex_dispatcher_backend deepep; DeepEP does not run on GB200 and GB300:
    /// training/flex_dispatcher_backend.py)
    std::string_view dispatcher;
    bool ep_overlap;              ///< overlap_moe_expert_parallel_comm + delay_wgrad_compute
    std::string_view graph_impl;  ///< cuda_graph_impl
    std::string_view graph_scope; ///< cuda_graph_scope ("": the implementation's default)
    /// recompute_modules of the recipe's selective recompute ("": none; Megatron-Bridge's
    /// DeepSeek-V3 and Kimi K2 recipes set recompute_granularity selective with them, the
    /// Qwen3 recipes no recompute)
    std::string_view recompute;
    std::string_view base;  ///< the release (kBridge*)
    std::string_view where; ///< the file and config under it
};

// clang-format off
constexpr std::array kMoeRecipes{
    // 26.08: gpt_oss/common.py, _apply_gpt_oss_120b_full_iter_fp8mx_configs: HybridEP, a
    // full-iteration graph, overlap_moe_expert_parallel_comm and delay_wgrad_compute (and
    // kFusedGroupedMlp); the GB200 recipe's recompute_modules [].
    MoeRecipe{"26.08", "gpt-oss-120B", "GB300", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_08, "gpt_oss/gb300/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config"},
    MoeRecipe{"26.08", "gpt-oss-120B", "GB200", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_08, "gpt_oss/gb200/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config"},
    // 26.08: the MXFP8 recipes call _enable_deepseek_full_iteration_mxfp8 (deepseek/common.py)
    // or _enable_hybridep_full_iteration_mxfp8 (qwen/common.py): HybridEP, a full-iteration
    // graph, overlap_moe_expert_parallel_comm and delay_wgrad_compute.
    MoeRecipe{"26.08", "deepseek-v3", "GB300", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_08, "deepseek/gb300/deepseek_v3.py, deepseek_v3_pretrain_256gpu_gb300_fp8mx_config"},
    MoeRecipe{"26.08", "deepseek-v3", "GB200", "MXFP8", "hybridep", true, "full_iteration", "", "[mla_up_proj]", kBridge26_08, "deepseek/gb200/deepseek_v3.py, deepseek_v3_pretrain_256gpu_gb200_fp8mx_config"},
    MoeRecipe{"26.08", "qwen3-30B-A3B", "GB300", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_08, "qwen/gb300/qwen3_moe.py, qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config"},
    MoeRecipe{"26.08", "qwen3-30B-A3B", "GB200", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_08, "qwen/gb200/qwen3_moe.py, qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config"},
    MoeRecipe{"26.08", "qwen3-235B-A22B", "GB300", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_08, "qwen/gb300/qwen3_moe.py, qwen3_235b_a22b_pretrain_256gpu_gb300_fp8mx_config"},
    MoeRecipe{"26.08", "qwen3-235B-A22B", "GB200", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_08, "qwen/gb200/qwen3_moe.py, qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config"},
    // 26.06
    MoeRecipe{"26.06", "deepseek-v3", "B300", "MXFP8", "hybridep", false, "transformer_engine", "[attn, moe_router, moe_preprocess]", "[mla_up_proj]", kBridge26_06, "deepseek/deepseek_workload_base_configs.py, DEEPSEEK_V3_PRETRAIN_CONFIG_B300_V2"},
    MoeRecipe{"26.06", "qwen3-30B-A3B", "B300", "MXFP8", "hybridep", true, "full_iteration", "", "", kBridge26_06, "qwen/qwen3_workload_base_configs.py, QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_FP8_MX_V1"},
    MoeRecipe{"26.06", "qwen3-30B-A3B", "H100", "FP8", "hybridep", false, "none", "", "", kBridge26_06, "qwen/qwen3_workload_base_configs.py, QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1"},
    MoeRecipe{"26.06", "gpt-oss-120B", "B300", "MXFP8", "hybridep", false, "transformer_engine", "[attn, moe_router, moe_preprocess]", "", kBridge26_06, "gpt_oss/gpt_oss_workload_base_configs.py, GPT_OSS_120B_PRETRAIN_CONFIG_B300_FP8_MX_V2 (= B300_BF16_V2, HybridEP)"},
    MoeRecipe{"26.06", "kimi-k2", "GB300", "MXFP8", "hybridep", false, "none", "", "[mla_up_proj]", kBridge26_06, "kimi/kimi_workload_base_configs.py, KIMI_K2_PRETRAIN_CONFIG_GB300"},
    // 26.04.01
    MoeRecipe{"26.04.01", "deepseek-v3", "B200", "MXFP8", "deepep", true, "transformer_engine", "[attn, moe_router, moe_preprocess]", "[mla_up_proj, mlp]", kBridge26_04_01, "deepseek/deepseek_workload_base_configs.py, DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2 (DeepEP)"},
    MoeRecipe{"26.04.01", "qwen3-30B-A3B", "B200", "MXFP8", "hybridep", false, "transformer_engine", "[attn, moe_router, moe_preprocess]", "", kBridge26_04_01, "qwen/qwen3_workload_base_configs.py, QWEN3_30B_A3B_PRETRAIN_CONFIG_B200_FP8_MX_V1"},
    MoeRecipe{"26.04.01", "qwen3-235B-A22B", "B200", "MXFP8", "alltoall", false, "none", "", "", kBridge26_04_01, "qwen/qwen3_llm_pretrain.py, qwen3_235b_a22b_pretrain_config_b200 (alltoall), QWEN3_235B_A22B_PRETRAIN_CONFIG_B200_FP8_MX_V2"},
    MoeRecipe{"26.04.01", "qwen3-235B-A22B", "B300", "MXFP8", "hybridep", false, "none", "", "", kBridge26_04_01, "qwen/qwen3_workload_base_configs.py, QWEN3_235B_A22B_PRETRAIN_CONFIG_B300_FP8_MX_V2"},
    // GPT-OSS 120B, the V2 configs (GBS 1280, the table's) of gpt_oss/
    // gpt_oss_workload_base_configs.py as gpt_oss_llm_pretrain.py applies them: the alltoall
    // dispatcher but on B300 (HybridEP); GB200's moe_a2a_overlap; Transformer Engine's graphs on
    // GB300 and B300; recompute_modules [layernorm, moe_act] on GB200, B200 and H100.
    MoeRecipe{"26.04.01", "gpt-oss-120B", "GB300", "BF16", "alltoall", false, "transformer_engine", "[attn, moe_router, moe_preprocess]", "", kBridge26_04_01, "gpt_oss/gpt_oss_workload_base_configs.py, GPT_OSS_120B_PRETRAIN_CONFIG_GB300_BF16_V2"},
    MoeRecipe{"26.04.01", "gpt-oss-120B", "GB200", "BF16", "alltoall", true, "none", "", "[layernorm, moe_act]", kBridge26_04_01, "gpt_oss/gpt_oss_workload_base_configs.py, GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2"},
    MoeRecipe{"26.04.01", "gpt-oss-120B", "B300", "BF16", "hybridep", false, "transformer_engine", "[attn, moe_router, moe_preprocess]", "", kBridge26_04_01, "gpt_oss/gpt_oss_workload_base_configs.py, GPT_OSS_120B_PRETRAIN_CONFIG_B300_BF16_V2 (HybridEP)"},
    MoeRecipe{"26.04.01", "gpt-oss-120B", "B200", "BF16", "alltoall", false, "none", "", "[layernorm, moe_act]", kBridge26_04_01, "gpt_oss/gpt_oss_workload_base_configs.py, GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2"},
    MoeRecipe{"26.04.01", "gpt-oss-120B", "H100", "BF16", "alltoall", false, "none", "", "[layernorm, moe_act]", kBridge26_04_01, "gpt_oss/gpt_oss_workload_base_configs.py, GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V2"},
    MoeRecipe{"26.04.01", "qwen3-235B-A22B", "H100", "FP8", "alltoall", true, "none", "", "", kBridge26_04_01, "qwen/qwen3_llm_pretrain.py, qwen3_235b_a22b_pretrain_config_h100 (alltoall), QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V2"},
    // 25.11
    MoeRecipe{"25.11", "deepseek-v3", "GB300", "BF16", "hybridep", false, "transformer_engine", "[attn, moe_router, moe_preprocess]", "[moe_act]", kBridge25_11, "deepseek/workload_base_configs.py, DEEPSEEK_V3_GB300_BASE_CONFIG"},
    MoeRecipe{"25.11", "deepseek-v3", "GB200", "BF16", "hybridep", false, "transformer_engine", "[moe_router, moe_preprocess]", "[mla_up_proj]", kBridge25_11, "deepseek/workload_base_configs.py, DEEPSEEK_V3_GB200_BASE_CONFIG"},
    MoeRecipe{"25.11", "deepseek-v3", "GB200", "FP8-MX (MXFP8)", "hybridep", false, "transformer_engine", "[moe_router, moe_preprocess]", "[mla_up_proj]", kBridge25_11, "deepseek/workload_base_configs.py, DEEPSEEK_V3_GB200_FP8_MX_BASE_CONFIG = DEEPSEEK_V3_GB200_BASE_CONFIG"},
};
// clang-format on

/// The recipes above that run the experts as Transformer Engine's fused grouped MLP
/// (training.fused_grouped_mlp: use_transformer_engine_op_fuser with
/// NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 in the recipe's env_vars); read for GPT-OSS, the one
/// mixture here whose experts' eager path differs (biases, a clamped activation).
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kFusedGroupedMlp{{
    {"26.08", "gpt_oss/gb300/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config"},
    {"26.08", "gpt_oss/gb200/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config"},
}};

/// The recipes above that run Transformer Engine's FP8 attention (training.
/// fp8_dot_product_attention: mixed_precision.fp8_dot_product_attention, which Megatron-Core
/// passes to the MXFP8 recipe as fp8_dpa): 26.08's DeepSeek-V3 GB300 recipe
/// (_enable_deepseek_full_iteration_mxfp8(cfg, fp8_dot_product_attention=True, ...); its GB200
/// recipe leaves it False), GPT-OSS's _apply_gpt_oss_120b_full_iter_fp8mx_configs and the
/// Qwen3 recipes' _enable_hybridep_full_iteration_mxfp8; 26.06's
/// QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_FP8_MX_V1 (fp8_dot_product_attention=True, which
/// utils/overrides.py set_workload_base_configs copies). No other recipe of these rows' sets it.
constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kFp8Attention{{
    {"26.08", "deepseek/gb300/deepseek_v3.py, deepseek_v3_pretrain_256gpu_gb300_fp8mx_config"},
    {"26.08", "gpt_oss/gb300/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config"},
    {"26.08", "gpt_oss/gb200/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config"},
    {"26.08", "qwen/gb300/qwen3_moe.py, qwen3_30b_a3b_pretrain_8gpu_gb300_fp8mx_config"},
    {"26.08", "qwen/gb200/qwen3_moe.py, qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config"},
    {"26.08", "qwen/gb300/qwen3_moe.py, qwen3_235b_a22b_pretrain_256gpu_gb300_fp8mx_config"},
    {"26.08", "qwen/gb200/qwen3_moe.py, qwen3_235b_a22b_pretrain_256gpu_gb200_fp8mx_config"},
    {"26.06", "qwen/qwen3_workload_base_configs.py, QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_FP8_MX_V1"},
}};

/// The recipes above that run the LM head in MXFP8 (training.fp8_output_proj: Megatron-Core's
/// fp8_output_proj): 26.08's DeepSeek-V3 GB300 and GB200 MXFP8 recipes
/// (_enable_deepseek_full_iteration_mxfp8(cfg, ..., fp8_output_proj=True)) and GPT-OSS's
/// _apply_gpt_oss_120b_full_iter_fp8mx_configs (Megatron-Bridge v0.6.0, src/megatron/bridge/
/// perf_recipes/); 26.06 sets it for GB200 and GB300 MXFP8 only (scripts/performance/configs
/// at v0.5.0: no row here), the older containers nowhere.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kFp8OutputProj{{
    {"26.08", "deepseek/gb300/deepseek_v3.py, deepseek_v3_pretrain_256gpu_gb300_fp8mx_config"},
    {"26.08", "deepseek/gb200/deepseek_v3.py, deepseek_v3_pretrain_256gpu_gb200_fp8mx_config"},
    {"26.08", "gpt_oss/gb300/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb300_fp8mx_config"},
    {"26.08", "gpt_oss/gb200/gpt_oss.py, gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config"},
}};

/// The SMs each container's recipes give HybridEP's dispatch and combine kernels
/// (parallel.moe_hybridep_num_sms): 32 at every release here, set by the common performance
/// overrides wherever the backend is hybridep ("TODO: This needs to be adjusted when
/// overlapping HybridEP with computation or the number of SMs for HybridEP is reduced."), which
/// run after every recipe of kMoeRecipes has named its backend; 26.08's MXFP8 helpers set it
/// again. DeepEP's (26.04.01's DeepSeek-V3 B200) is set by no recipe: Megatron-Core's default
/// 20 (ParallelSpec::deepep_sms).
struct HybridEpSms {
    std::string_view container;
    int sms;
    std::string_view where; ///< the file and function under the release (kBridge*)
};
constexpr std::array kHybridEpSms{
    HybridEpSms{"26.08", 32,
                "_common.py, _benchmark_common; gpt_oss/common.py, "
                "_apply_gpt_oss_120b_full_iter_fp8mx_configs; deepseek/common.py, "
                "_enable_deepseek_full_iteration_mxfp8"},
    HybridEpSms{"26.06", 32,
                "utils/overrides.py, _set_common_perf_overrides (from set_workload_base_configs)"},
    HybridEpSms{"26.04.01", 32,
                "utils/overrides.py, _set_common_perf_overrides (from set_workload_base_configs)"},
    HybridEpSms{"25.11", 32,
                "utils/helpers.py, set_common_perf_overrides (from "
                "get_model_recipe_with_user_overrides)"},
};

/// The recipe of a row's mixture of experts (nullptr: none read, Megatron-Core's defaults).
const MoeRecipe* moe_recipe(config::YamlMap& row, const NewHardwareRun& r,
                            const std::string& preset) {
    config::YamlMap fw = row.map("framework");
    if (!stated(fw, "version"))
        return nullptr;
    const std::string version = fw.str("version");
    for (const auto& recipe : kMoeRecipes)
        if (version == std::string(recipe.container) + " container" && preset == recipe.preset &&
            r.accelerator == recipe.accelerator && r.precision == recipe.precision)
            return &recipe;
    return nullptr;
}

/// The recipe's MoE settings (moe_recipe), onto the row's experiment.
void apply_moe_recipe(const MoeRecipe& recipe, Settings& s) {
    if (recipe.dispatcher != "alltoall") {
        s.emplace_back("parallel.moe_token_dispatcher", "flex");
        s.emplace_back("parallel.moe_flex_dispatcher_backend", std::string(recipe.dispatcher));
        for (const HybridEpSms& h : kHybridEpSms)
            if (recipe.dispatcher == "hybridep" && recipe.container == h.container)
                s.emplace_back("parallel.moe_hybridep_num_sms", std::to_string(h.sms));
    }
    if (recipe.ep_overlap) {
        s.emplace_back("parallel.overlap_moe_expert_parallel_comm", "true");
        s.emplace_back("parallel.delay_wgrad_compute", "true");
    }
    for (const auto& [container, where] : kFusedGroupedMlp)
        if (recipe.container == container && recipe.where == where)
            s.emplace_back("training.fused_grouped_mlp", "true");
    for (const auto& [container, where] : kFp8Attention)
        if (recipe.container == container && recipe.where == where)
            s.emplace_back("training.fp8_dot_product_attention", "true");
    for (const auto& [container, where] : kFp8OutputProj)
        if (recipe.container == container && recipe.where == where)
            s.emplace_back("training.fp8_output_proj", "true");
    if (recipe.graph_impl != "none") {
        s.emplace_back("training.cuda_graph_impl", std::string(recipe.graph_impl));
        if (!recipe.graph_scope.empty())
            s.emplace_back("training.cuda_graph_scope", std::string(recipe.graph_scope));
    }
}

/// What a row needs that clustersim does not model yet ("" when nothing).
std::string needs(const NewHardwareRun& r, config::YamlMap& row, config::YamlMap& model) {
    if (is_tpu(r))
        return maxtext_needs(row, model);
    std::vector<std::string> out;
    if (r.preset.empty())
        out.push_back(contains(r.accelerator, "MI") ? "an AMD Instinct preset (xGMI mesh)"
                                                    : "TPU presets and mesh sharding");
    // Supervised fine-tuning (SFT) trains every weight as pre-training does, on packed
    // sequences of the printed length; other tasks (LoRA) train adapters over a frozen model.
    if (row.str("task") != "pretrain" && row.str("task") != "SFT")
        out.push_back("fine-tuning (" + row.str("task") + ")");
    const std::string preset = moe_preset_of(r.model);
    if (!preset.empty()) {
        const std::string differs = preset_mismatch(model, strategies::models::load_model(preset));
        if (!differs.empty())
            out.push_back("the row's " + differs);
    } else if (!contains(r.model, "Llama")) {
        out.push_back("the " + r.model.substr(0, r.model.find(" (")) + " model's features");
    } else if (model.has("moe_experts") && !model.raw("moe_experts").IsNull()) {
        out.emplace_back("a Llama MoE");
    }
    std::string s;
    for (const auto& n : out)
        s += (s.empty() ? "needs " : "; ") + n;
    return s;
}

/// Megatron-Bridge's performance recipes on the row's layout: the printed micro-batch,
/// interleaving with the printed virtual stages, sequence parallelism and TP overlap with tp,
/// the distributed optimizer with overlapped reduce and gather (Megatron-FSDP where the table's
/// FSDP column is a group size), Transformer Engine's FP8 recipes.
void settings(NewHardwareRun& r, config::YamlMap& row, config::YamlMap& model, int global_batch) {
    config::YamlMap par = row.map("parallelism");
    const int tp = optional_dim(par, "tp"), pp = optional_dim(par, "pp");
    const int cp = optional_dim(par, "cp"), vp = optional_dim(par, "vp");
    const int dp = r.gpus / (tp * pp * cp);
    Settings& s = r.settings;
    const std::string moe = moe_preset_of(r.model);
    if (moe.empty()) {
        detail::dense_model(model, r.model, s);
    } else {
        // The model's preset (its released config), at the row's sequence; the printed
        // expert-parallel size, experts unsplit (etp 1, Megatron-Bridge's MoE recipes); the
        // dispatcher, expert-parallel overlap and CUDA graphs of the container's recipe
        // (kMoeRecipes; the tables print none of them), else the alltoall dispatcher.
        s.emplace_back("model", moe);
        s.emplace_back("model.seq", std::to_string(dim(model, "seq_len")));
        s.emplace_back("parallel.ep", std::to_string(optional_dim(par, "ep")));
        s.emplace_back("parallel.etp", "1");
        if (contains(r.model, "DeepSeek-V3") || contains(r.model, "Kimi K2"))
            latent_moe_recipe(s, r.model, pp * std::max(1, vp),
                              stated(row, "notes") && contains(row.str("notes"), "w/o MTP"));
        if (const MoeRecipe* recipe = moe_recipe(row, r, moe))
            apply_moe_recipe(*recipe, s);
    }
    s.emplace_back("training.global_batch", std::to_string(global_batch));
    s.emplace_back("training.micro_batch", std::to_string(dim(row, "micro_batch")));
    const bool fp8 = contains(r.precision, "FP8");
    const bool nvfp4 = contains(r.precision, "NVFP4");
    s.emplace_back("training.dtype", nvfp4 ? "fp4" : fp8 ? "fp8" : "bf16");
    // MXFP8 ("FP8-MX") and NVFP4 are Transformer Engine's block-scaled recipes, as
    // Megatron-Bridge's fp8_mx and nvfp4 run them (bf16_with_mxfp8_mixed, bf16_with_nvfp4_mixed).
    if (contains(r.precision, "MX"))
        s.emplace_back("training.fp8_recipe", "mxfp8");
    // "FP8-CS" is Transformer Engine's per-tensor current scaling (the tables' own words), and
    // so is their plain "FP8": from r0.2.0 (25.11) Megatron-Bridge's performance scripts run
    // fp8_cs, fp8_mx or fp8_sc and no delayed scaling (scripts/performance/argument_parser.py,
    // --compute_dtype choices bf16, fp8_cs, fp8_mx, fp8_sc, nvfp4, at r0.2.0 through v0.6.0;
    // v0.1.0rc3's --fp8_recipe default "ds" is gone). clustersim's `current` recipe.
    const bool bridge = contains(training_stack(row), "Megatron-Bridge");
    if (fp8 && !contains(r.precision, "MX") && (bridge || contains(r.precision, "FP8-CS")))
        s.emplace_back("training.fp8_recipe", "current");
    s.emplace_back("training.optimizer", "adamw");
    s.emplace_back("parallel.tp", std::to_string(tp));
    s.emplace_back("parallel.pp", std::to_string(pp));
    s.emplace_back("parallel.dp", std::to_string(dp));
    r.layout = fmt::format("tp {} x pp {}{} x dp {}", tp, pp,
                           cp > 1 ? fmt::format(" x cp {}", cp) : "", dp);
    if (cp > 1)
        s.emplace_back("parallel.cp", std::to_string(cp));
    if (tp > 1) {
        s.emplace_back("parallel.sequence_parallel", "true");
        s.emplace_back("parallel.tp_comm_overlap", "true");
    }
    if (pp > 1) {
        s.emplace_back("parallel.schedule", vp > 1 ? "interleaved-1f1b" : "1f1b");
        if (vp > 1) {
            s.emplace_back("parallel.virtual_stages", std::to_string(vp));
            r.layout += fmt::format(", v {}", vp);
        }
        // Llama 3.1 405B's and Qwen3-235B-A22B's recipes count the embedding and the loss as
        // layers of the split (Megatron-Bridge llama3.py, llama31_405b_pretrain_config, as in
        // the H100 study; qwen3_moe.py, qwen3_235b_a22b_pretrain_config).
        if (contains(r.model, "405B") || contains(r.model, "Qwen3-235B")) {
            s.emplace_back("parallel.account_for_embedding_in_pipeline_split", "true");
            s.emplace_back("parallel.account_for_loss_in_pipeline_split", "true");
        }
    }
    const YAML::Node fsdp = par.has("fsdp") ? par.raw("fsdp") : YAML::Node();
    const bool megatron_fsdp = fsdp.IsScalar() && fsdp.Scalar() != "0" && fsdp.Scalar() != "False";
    if (megatron_fsdp) {
        // Megatron-FSDP shards parameters, gradients and optimizer state (ZeRO-3's traffic,
        // overlapped): costed as FSDP2.
        s.emplace_back("parallel.fsdp", "true");
        r.layout += ", Megatron-FSDP";
    } else {
        s.emplace_back("parallel.zero", "1");
        s.emplace_back("parallel.overlap_param_gather", "true");
    }
    s.emplace_back("parallel.overlap_grad_reduce", "true");
    const std::string recompute =
        row.has("recompute") && !row.raw("recompute").IsNull() ? row.str("recompute") : "none";
    // Not printed: the recipe's selective recompute, if any (kMoeRecipes).
    const MoeRecipe* recipe = moe.empty() ? nullptr : moe_recipe(row, r, moe);
    if (recompute != "full" && recipe != nullptr && !recipe->recompute.empty()) {
        s.emplace_back("parallel.recompute", "selective");
        s.emplace_back("parallel.recompute_modules", std::string(recipe->recompute));
    } else {
        s.emplace_back("parallel.recompute", recompute == "full" ? "full" : "none");
    }
}

/// MaxText's rows (src/maxtext/configs/tpu/*/README.md and the scripts beside them, the tiering
/// table): the model from the row's dimensions as MaxText's default llama2 decoder block builds
/// it (base.yml: SwiGLU, RMSNorm, RoPE, untied logits, no biases, head_dim 128), the printed
/// per_device_batch_size, remat_policy and mesh through the mesh keys, AdamW, slices of the
/// printed count (the most cubic shape of their chips).
void maxtext_settings(NewHardwareRun& r, config::YamlMap& row, config::YamlMap& model) {
    Settings& s = r.settings;
    const std::string moe = moe_preset_of(r.model);
    if (moe.empty()) {
        detail::dense_model(model, "Llama", s);
        s.emplace_back("model.kv_channels", "128");
    } else {
        // A mixture of experts from its preset (the released config MaxText's model file
        // copies, checked against the row's dimensions) at the row's sequence; MaxText's
        // dropless sparse matmul (megablox, capacity_factor -1) as balanced routing.
        s.emplace_back("model", moe);
        s.emplace_back("model.seq", std::to_string(dim(model, "seq_len")));
    }
    const CitedScript* cited = cited_script(row);
    config::YamlMap hw = row.map("hardware");
    const std::string shape = hw.str("slice_shape");
    const std::size_t x = shape.find("x ");
    const int slices = x != std::string::npos ? std::stoi(shape.substr(0, x)) : 1;
    const auto& torus = detail::platform(r.preset).cluster.torus;
    s.emplace_back("slice", hardware::to_string(hardware::shape_for_chips(torus, r.gpus / slices),
                                                torus.dims));
    config::YamlMap batch = row.map("micro_batch");
    s.emplace_back("training.per_device_batch_size",
                   stated(batch, "per_device_batch_size")
                       ? batch.raw("per_device_batch_size").Scalar()
                       : std::string(cited->per_device_batch_size));
    s.emplace_back("training.dtype", "bf16");
    s.emplace_back("training.optimizer", "adamw");
    if (stated(row, "recompute")) {
        // qkv_proj_offloaded saves the same projections as save_qkv_proj, on the host.
        s.emplace_back("training.remat_policy", row.str("recompute"));
    } else if (cited != nullptr) {
        s.emplace_back("training.remat_policy", std::string(cited->remat_policy));
    }
    // What XLA overlaps is what the run's LIBTPU_INIT_ARGS switch on: a collective not made
    // asynchronous runs in line with the compute. MaxText's v4 scripts (configs/tpu/v4/22b.sh,
    // 52b.sh) set only --xla_enable_async_all_gather, so the FSDP gradients' reduce-scatters
    // wait; the v5e and v5p scripts set XLA's async collective fusion with compute overlap
    // (--xla_tpu_enable_async_collective_fusion, --xla_tpu_overlap_compute_collective_tc), as
    // the tiering table's benchmark configs do (benchmarks/xla_flags_library.py).
    const std::string script = row.map("source").str("config");
    const bool async_all_gather_only = contains(script, "configs/tpu/v4/");
    if (async_all_gather_only)
        s.emplace_back("parallel.overlap_grad_reduce", "false");
    config::YamlMap par = row.map("parallelism");
    r.layout.clear();
    for (const auto& [key, name, text] :
         {std::tuple{"fsdp", "ici_fsdp_parallelism", "ici fsdp"},
          std::tuple{"tp", "ici_tensor_parallelism", "ici tensor"},
          std::tuple{"dcn_dp", "dcn_data_parallelism", "dcn data"}}) {
        if (!stated(par, key))
            continue;
        s.emplace_back(std::string("parallel.") + name, par.raw(key).Scalar());
        r.layout +=
            fmt::format("{}{} {}", r.layout.empty() ? "" : " x ", text, par.raw(key).Scalar());
    }
    if (r.layout.empty())
        r.layout = "ici fsdp -1";
    r.layout += fmt::format(", {} slice{}", slices, slices > 1 ? "s" : "");
    if (cited != nullptr && !stated(batch, "per_device_batch_size"))
        r.layout += fmt::format(", per_device_batch_size {} and remat_policy {} from its script",
                                cited->per_device_batch_size, cited->remat_policy);
    if (async_all_gather_only)
        r.layout += ", gradient reduce-scatter in line";
}

/// The measured step of a MaxText row: its TFLOP/s per chip on MaxText's count (causal
/// attention at half) over the step's FLOPs per device, or its tokens per second per device.
double maxtext_measured_s(config::YamlMap& measured,
                          const strategies::parallel::ExperimentSpec& e) {
    if (stated(measured, "tflops_per_sec_per_chip"))
        return strategies::models::causal_model_flops_per_iteration(e.model,
                                                                    e.training.global_batch) /
               e.gpus / (measured.number("tflops_per_sec_per_chip", 1e-9) * 1e12);
    return static_cast<double>(e.training.global_batch) / e.gpus * e.model.seq /
           measured.number("approx_tokens_per_sec_per_device", 1e-9);
}

/// A Primus projection row (docs_deprecated/tech_blogs/projection/projection.md's validation
/// tables: a run's measured tokens/s per GPU beside Primus's projection of it) prints no global
/// batch, but the projection's iteration time and tokens/s per GPU, which projection.py computes as
/// global_batch_size x seq_length / iteration time / GPUs
/// (AMD-AGI/Primus@fd1eeabbad15135e3702094087e96142b4b4eacb:
/// primus/core/projection/performance_projection/projection.py, "tokens_per_iter =
/// global_batch * seq_len"): the two give the global batch the projection ran, the run its
/// table compares the projection with. Sets the row's measured step (that batch over the
/// measured tokens/s per GPU) and returns the batch; 0 where the row prints no projection.
int primus_projected_batch(config::YamlMap& row, config::YamlMap& model, NewHardwareRun& r) {
    config::YamlMap measured = row.map("measured");
    for (const char* key : {"projected_iteration_time_ms", "primus_projected_8node",
                            "measured_8node_tokens_per_sec_per_gpu"})
        if (!stated(measured, key))
            return 0;
    const double seq = dim(model, "seq_len");
    const double sequences = measured.number("primus_projected_8node", 1) * r.gpus *
                             measured.number("projected_iteration_time_ms", 1) / 1000 / seq;
    const auto batch = static_cast<int>(std::lround(sequences));
    // The printed values have four and five digits: whole sequences within their rounding.
    if (batch < 1 || std::abs(sequences - batch) > 1e-3 * batch)
        return 0;
    r.measured_s =
        batch * seq / (measured.number("measured_8node_tokens_per_sec_per_gpu", 1) * r.gpus);
    return batch;
}

/// Why a GPU row gives no step time: what it leaves unstated among the GPU count and what
/// turns its tokens/s per GPU into a step (the global batch, or the micro-batch, sequence
/// and precision of a row that prints none of them).
std::string unstated(config::YamlMap& row, config::YamlMap& model, int gpus) {
    std::vector<std::string> missing;
    if (gpus == 0)
        missing.emplace_back("GPU count");
    if (!stated(row, "micro_batch"))
        missing.emplace_back("micro-batch");
    if (!stated(model, "seq_len"))
        missing.emplace_back("sequence");
    if (!stated(row, "precision"))
        missing.emplace_back("precision");
    if (!stated(row, "global_batch"))
        missing.emplace_back("global batch");
    std::string s;
    for (std::size_t i = 0; i < missing.size(); ++i)
        s += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
    return "needs the run's " + s + " (not stated: a step from tokens/s per GPU, its pipeline " +
           "bubble and its gradient reduction depend on " + (missing.size() > 1 ? "them" : "it") +
           ")";
}

NewHardwareRun map_row(YAML::Node node, const std::string& file) {
    config::YamlMap row(node, file, "rows");
    NewHardwareRun r;
    r.id = row.str("id");
    r.accelerator = row.str("hw_class");
    r.preset = preset_of(r.accelerator);
    config::YamlMap model = row.map("model");
    r.model = model.str("name");
    r.precision = row.has("precision") && !row.raw("precision").IsNull() ? row.str("precision")
                                                                         : "not stated";
    config::YamlMap hw = row.map("hardware");
    r.gpus = stated(hw, "gpus") ? dim(hw, "gpus") : stated(hw, "chips") ? dim(hw, "chips") : 0;
    config::YamlMap derived = row.map("derived");
    if (derived.has("step_time_s"))
        r.measured_s = derived.map("step_time_s").number("value", 1e-9);
    r.not_modelled = needs(r, row, model);
    if (is_tpu(r) && r.ran()) {
        maxtext_settings(r, row, model);
        try {
            const auto e = strategies::parallel::make_experiment(detail::platform(r.preset), r.gpus,
                                                                 r.settings, r.id);
            config::YamlMap measured = row.map("measured");
            r.measured_s = maxtext_measured_s(measured, e);
            strategies::parallel::StepOptions o;
            o.oom_advice = false;
            r.predicted_s = strategies::parallel::simulate_step(e, o).step_time_s;
        } catch (const InputError& err) {
            r.not_modelled =
                std::string("needs a layout the step model accepts (") + err.what() + ")";
        }
        return r;
    }
    int global_batch = stated(row, "global_batch") ? dim(row, "global_batch") : 0;
    if (r.ran() && r.measured_s <= 0 && r.gpus > 0)
        global_batch = primus_projected_batch(row, model, r);
    if (!r.ran() || r.gpus == 0 || r.measured_s <= 0) {
        if (r.ran())
            r.not_modelled = unstated(row, model, r.gpus);
        return r;
    }
    settings(r, row, model, global_batch);
    if (!stated(row, "global_batch"))
        r.layout += fmt::format(", global batch {} from Primus's projection", global_batch);
    try {
        auto e = strategies::parallel::make_experiment(detail::platform(r.preset), r.gpus,
                                                       r.settings, r.id);
        // Megatron-Bridge aligns the parameter gathers across pipeline ranks with virtual
        // stages (comm_overlap.py, as in the H100 study).
        // (Primus's Megatron backend sets align_param_gather too: primus/configs/modules/
        // megatron/trainer_base.yaml at fd1eeab.)
        if (e.parallel.pp > 1 && e.parallel.virtual_stages > 1 && e.parallel.dp > 1)
            e.framework.align_param_gather = true;
        const std::string stack = training_stack(row);
        // Megatron-Bridge's performance recipes keep and reduce the gradients in bf16.
        detail::megatron_bridge_grad_reduce(e.framework, stack);
        // Primus's example configs turn gradient_accumulation_fusion off (AMD-AGI/Primus@
        // fd1eeab, examples/megatron/configs/MI355X/mixtral_8x22B_v0.1-BF16-pretrain.yaml):
        // Megatron-Core's backward hook adds each weight gradient into the fp32 main_grad.
        if (contains(stack, "Primus"))
            e.framework.grad_accumulation = strategies::parallel::GradAccumulation::unfused;
        strategies::parallel::StepOptions o;
        o.oom_advice = false;
        r.predicted_s = strategies::parallel::simulate_step(e, o).step_time_s;
    } catch (const InputError& err) {
        const std::string what = err.what();
        r.not_modelled = "needs a layout the step model accepts (" +
                         what.substr(what.rfind(r.id + ": ", 0) == 0 ? r.id.size() + 2 : 0) + ")";
    }
    return r;
}

} // namespace

std::vector<NewHardwareRun> new_hardware_runs(const std::string& data_dir) {
    const std::string file = data_dir + "/new-hardware/published-runs.yaml";
    std::vector<NewHardwareRun> out;
    detail::for_each_row(file, [&](YAML::Node row) { out.push_back(map_row(row, file)); });
    return out;
}

calibrate::ErrorStats new_hardware_errors(const std::vector<NewHardwareRun>& runs,
                                          const std::string& accelerator) {
    std::vector<double> errors;
    for (const auto& r : runs) {
        if (r.ran() && (accelerator.empty() || r.accelerator == accelerator))
            errors.push_back(r.error());
    }
    return calibrate::error_stats(errors);
}

std::vector<std::string> new_hardware_rules() {
    return {
        "one preset per accelerator: B200 on `dgx-b200`, B300 on `dgx-b300`, GB200 and GB300 on "
        "`gb200-nvl72` and `gb300-nvl72` (whole racks of 72, the job on the first of them), "
        "H100 on `dgx-superpod-h100`, MI300X, MI325X and MI355X on `mi300x`, `mi325x` and "
        "`mi355x`; TPU v4, v5e and v5p on `tpu-v4`, `tpu-v5e` and `tpu-v5p`; on the Blackwell "
        "presets, fused attention as cuDNN's measured GB200 and GB300 kernels run it (a share of "
        "the bf16 peak plus the exposed part of the softmax's exponentials on the SFU, whose "
        "rate Blackwell Ultra doubles: compute_model.h)",
        "MaxText's TPU rows through the mesh keys (parallel.ici_*/dcn_*_parallelism, "
        "training.per_device_batch_size and remat_policy as printed; device_mesh.h maps them): "
        "the model from the row's dimensions as MaxText's default llama2 decoder builds it "
        "(SwiGLU, RMSNorm, RoPE, untied logits, no biases, head_dim 128), AdamW, slices of the "
        "printed count in the most cubic shape of their chips; the measured step is the "
        "printed TFLOP/s per chip on MaxText's count (causal attention at half) over the "
        "step's FLOPs per device (the tiering table's row: its tokens per second per device); "
        "collectives overlapped as the row's script's LIBTPU_INIT_ARGS make them asynchronous: "
        "the v4 scripts only the all-gathers (the FSDP gradients' reduce-scatters in line, "
        "parallel.overlap_grad_reduce false), the v5e and v5p scripts' async collective fusion "
        "the FSDP collectives; Mixtral 8x7B from its preset at the row's sequence with "
        "per_device_batch_size 36 and remat_policy full from the tpu-recipes script the row "
        "cites (run_mixtral-8x7b.sh at c8cfe2f: no mesh key, no remat_policy, base.yml's "
        "defaults), on 256 chips as the row counts them (its 8x4x4 holds 128), MaxText's "
        "dropless routing as balanced; the v4, v5e and v5p README tables were written with "
        "MaxText's commit 76bd53b0 (2023-12-15), whose base.yml and scripts differ from the "
        "current ones the rows copy (a ReLU MLP, head_dim 256, tied embeddings, larger v4 and "
        "v5p per-device batches, v5p 512B at tensor 16, v5e 128B with full remat): the rows are "
        "run as they state; "
        "the TPU presets' compute rates are labelled assumptions, not fitted to a TPU",
        "the model: dense Llama rows from the row's dimensions (the public config it names: "
        "SwiGLU, RMSNorm, RoPE, untied embeddings, no biases, fused attention); the mixtures "
        "of experts from their presets (`deepseek-v3`, `kimi-k2`, `gpt-oss-120B`, "
        "`qwen3-30B-A3B`, `qwen3-235B-A22B`, `mixtral-8x22B`: the released configs, checked "
        "against the row's dimensions) at the row's sequence, with the printed expert-parallel "
        "size, experts "
        "unsplit (etp 1), token routing balanced (the tables force-balance it); DeepSeek-V3 "
        "with its one multi-token-prediction block but where the table says it ran without "
        "(25.11: \"w/o MTP\"), DeepSeek-V3 and Kimi K2 with Megatron-Bridge's pipeline layouts "
        "(pp x vp = 32, in no recipe's map: its H100 recipes' Et|(tt|)*30 with the loss); what the "
        "container's performance recipe sets for DeepSeek-V3, Kimi K2, GPT-OSS and the Qwen3 "
        "mixtures, read at the Megatron-Bridge release it ships "
        "(26.08 v0.6.0, 26.06 v0.5.0, 26.04.01 v0.4.2, 25.11 r0.2.0): the flex dispatcher "
        "(DeepEP or HybridEP: a copy per destination node across nodes, per destination GPU "
        "inside one; HybridEP permutes, pads and sums the tokens with kernels of its own; its "
        "dispatch and combine kernels on the 32 SMs every release's recipes give them, DeepEP's on "
        "Megatron-Core's 20, "
        "taken from the kernels beside them) or "
        "alltoall (under FP8 and MXFP8 Transformer Engine pads each expert's rows with copies "
        "of its own, as under DeepEP), Megatron-Core's expert-parallel overlap "
        "(overlap_moe_expert_parallel_comm with delay_wgrad_compute: a paired forward's and "
        "backward's all-to-alls beside each other's kernels) and its CUDA graphs (a whole-"
        "iteration graph: no host time per kernel or micro-batch; Transformer Engine's per-layer "
        "scopes: one launch per captured run of kernels), the selective recompute of "
        "DeepSeek-V3, Kimi K2 and GPT-OSS (their recompute_modules), GPT-OSS's fused grouped MLP "
        "on 26.08 (without it Megatron-Core's experts clamp the activation and add fc2's bias in "
        "fp32 with kernels of their own; YaRN's RoPE runs unfused on every container); "
        "Transformer Engine's FP8 attention where the recipe sets fp8_dot_product_attention "
        "(26.08's DeepSeek-V3 GB300, GPT-OSS and Qwen3 MXFP8 recipes, 26.06's Qwen3-30B-A3B "
        "B300: cuDNN's MXFP8 kernel at its measured rates, its backward over the whole causal "
        "triangle in GPT-OSS's windowed layers as measured, Q, K, V and the output gradient "
        "quantized around it); the LM head in MXFP8 where the recipe sets fp8_output_proj "
        "(26.08's DeepSeek-V3 and GPT-OSS MXFP8 recipes); not the other mixtures' fused "
        "grouped MLP kernels, nor the 26.08 "
        "and full-iteration 26.06 recipes' HybridEP capacity factor and paged activation stash "
        "(a token budget of 1.5 x the routed tokens per rank and pages holding the experts' "
        "saved activations: buffers, the kernels after the dispatch running on the routed "
        "tokens; the stash's copies on a side stream not costed)",
        "AMD Primus's projection table (docs_deprecated/tech_blogs/projection/projection.md at "
        "Primus fd1eeab, the MI355X Mixtral "
        "8x22B row): the printed layout and micro-batch with what Primus's Megatron backend "
        "sets for the config the row names (examples/megatron/configs/MI355X/"
        "mixtral_8x22B_v0.1-BF16-pretrain.yaml and the files it extends: the alltoall "
        "dispatcher of mixtral_base.yaml, force-balanced routing, the distributed optimizer "
        "with gradient reduce and parameter gather overlapped and aligned across pipeline "
        "ranks, recompute_method block over 0 layers, i.e. none, gradient_accumulation_fusion "
        "off: an fp32 add per weight gradient and micro-batch); the global batch of the "
        "projection the table compares the measurement with (its printed iteration time x "
        "tokens/s per GPU x GPUs / sequence, projection.py's formula: 256; the example "
        "config's own is 128), the measured step that batch over the measured tokens/s per "
        "GPU; as stated, without recompute, the layout does not fit the MI355X's 288 GiB by "
        "clustersim's memory model (nor by Primus's own memory projection in the same "
        "document, 583 GB): the measured run held less by something the table does not print, "
        "and its step is costed as stated. The other AMD rows print neither "
        "a global batch nor a projection's step "
        "(and the pipeline study's rows no sequence, micro-batch or precision): listed",
        "supervised fine-tuning (SFT) rows as pre-training on the printed sequence: every weight "
        "trained; their packed samples' attention within each sample is not known, so attention "
        "runs over the whole sequence (an upper bound)",
        "Megatron-Bridge's performance recipes: the printed micro-batch and layout, interleaved "
        "1F1B with the printed virtual stages (Llama 3.1 405B with the embedding and loss as "
        "layers of the split), sequence parallelism and TP communication overlap where tp > 1, "
        "the distributed optimizer with gradient reduce and parameter gather overlapped and "
        "aligned across pipeline ranks, the gradients held and reduced in bf16 "
        "(grad_reduce_in_fp32 False in every release's benchmark settings), Megatron-FSDP (the "
        "FSDP column a group size) as FSDP2, "
        "recompute as printed (not stated: none, but for the mixtures' recipes above), AdamW",
        "precision as printed: BF16; FP8 and FP8-CS as Transformer Engine's per-tensor current "
        "scaling (the performance scripts of these containers have no delayed scaling), "
        "clustersim's current recipe "
        "(an amax pass, or the amax inside the norm or activation before, and a cast per "
        "input, with its transpose on H100 only: Blackwell's FP8 GEMMs take any layout, "
        "gpu.fp8_any_layout; the weights cast once per step); MXFP8 and NVFP4 as Transformer "
        "Engine's block-scaled recipes (both copies "
        "of each operand quantized, the scales, NVFP4's amax passes; fp4 GEMMs at the listed "
        "NVFP4 peak)",
    };
}

} // namespace clustersim::validation
