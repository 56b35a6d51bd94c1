// The numbers of docs/validation.md's sections "Training steps across nodes" and "Recent large
// runs": every row of large-scale/h100-published-runs.yaml mapped to an experiment from its own
// fields, on one preset per cluster, with one rule per framework for what the source does not
// state (recent_rules()). Never a parameter per row.
#include "validation/accuracy_recent.h"

#include "validation/published_rows.h"

#include "base/error.h"
#include "config/yaml_map.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"
#include "strategies/models/layer_work.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/platform.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace clustersim::validation {

using namespace calibrate; // the formats, predictions and statistics this study uses

namespace {

using detail::Settings;

// The clusters, one preset each (never one per row):
// - NeMo 24.07 and Megatron-Bridge: "DGX-H100" (the pages' system), NVIDIA's own SuperPOD
//   fabric (8x 400 Gb/s NDR per node, non-blocking, SHARP-capable switches).
// - torchtitan: Meta's Grand Teton, H100 96 GB at a 500 W power limit (the benchmark page).
constexpr const char* kNvidiaPreset = "dgx-superpod-h100";
constexpr const char* kMetaPreset = "grand-teton-h100";

using detail::contains;
using detail::dim;
using detail::torchtitan_layout;

/// A scalar's text, or "" for null/absent.
std::string scalar_or_empty(config::YamlMap& m, std::string_view key) {
    if (!m.has(key))
        return "";
    const YAML::Node n = m.raw(key);
    return n.IsScalar() ? n.Scalar() : std::string();
}

/// The row's fields other than its id: model, framework, cluster (its preset), parallelism,
/// batch, recompute, precision, the measured time and memory.
void read_run(config::YamlMap& row, config::YamlMap& model, RecentRun& r) {
    r.model = model.str("name");
    r.moe = model.str("type") == "moe";
    r.framework = row.str("framework");
    config::YamlMap hw = row.map("hardware");
    const std::string gpu = hw.str("gpu");
    r.gpus = dim(hw, "num_gpus");
    r.preset = contains(gpu, "500W") || contains(gpu, "Grand Teton") ? kMetaPreset
               : contains(gpu, "H100-SXM5-80GB")                     ? kNvidiaPreset
                                                                     : "";
    if (r.preset.empty())
        hw.fail("gpu", "expected an H100-SXM5-80GB (DGX H100) or a 500W Grand Teton H100, got '" +
                           gpu + "'");

    config::YamlMap par = row.map("parallelism");
    r.tp = dim(par, "tp");
    r.pp = dim(par, "pp");
    r.cp = dim(par, "cp");
    r.ep = dim(par, "ep");
    r.dp = dim(par, "dp");
    if (par.has("vpp"))
        r.virtual_stages = dim(par, "vpp");
    const std::string schedule = scalar_or_empty(par, "pp_schedule");
    // torchtitan's stages per rank, which the page does not state: without split points its
    // multi-stage schedules (Interleaved1F1B) run 2 per rank (generate_split_points at commit
    // 9dec370); another framework's interleaving must print them.
    if (contains(schedule, "Interleaved") && r.virtual_stages == 1)
        r.virtual_stages = contains(r.framework, "torchtitan") ? 2 : 0;
    config::YamlMap batch = row.map("batch");
    r.global_batch = dim(batch, "global_batch_seqs");
    // Megatron's micro-batch is printed; torchtitan's local batch is a data-parallel rank's
    // whole batch, run at once without a pipeline, and with one split into as many
    // micro-batches as pipeline ranks (n_microbatches defaults to pipeline_parallel_degree at
    // the benchmark page's commit 9dec370: torchtitan/parallelisms/pipelining_utils.py,
    // build_pipeline_schedule).
    const int local_batch = batch.has("local_batch") ? dim(batch, "local_batch") : 0;
    r.micro_batch = batch.has("micro_batch")              ? dim(batch, "micro_batch")
                    : r.pp > 1 && local_batch % r.pp == 0 ? local_batch / r.pp
                    : r.pp > 1                            ? 1
                                                          : dim(batch, "local_batch");
    const std::string recompute = scalar_or_empty(row, "recompute");
    r.recompute = recompute.empty() ? "none" : recompute;
    const std::string precision = row.str("precision");
    r.fp8 = contains(precision, "FP8") || contains(precision, "Float8");
    // Megatron-Bridge's performance scripts run FP8 as delayed scaling by default up to
    // v0.1.0rc3 (25.09: --fp8_recipe default "ds"), and from r0.2.0 (25.11) only as fp8_cs,
    // fp8_mx or fp8_sc (scripts/performance/argument_parser.py, --compute_dtype choices, at
    // r0.2.0 through v0.6.0): a 25.11-or-later "FP8" is current scaling, as "FP8-CS" says.
    const auto container = r.framework.rfind(' ');
    const double version =
        contains(r.framework, "Megatron-Bridge") && container != std::string::npos
            ? std::atof(r.framework.c_str() + container + 1)
            : 0;
    r.fp8_current = contains(precision, "FP8-CS") ||
                    (r.fp8 && version >= 25.11 && !contains(precision, "block"));
    r.dense_bf16 = !r.moe && precision == "BF16";
    r.measured_s = row.map("derived").number("iteration_time_s", 1e-9);
    if (row.has("measured")) {
        config::YamlMap measured = row.map("measured");
        if (measured.has("peak_memory_gib") && !measured.raw("peak_memory_gib").IsNull())
            r.measured_peak_gib = measured.number("peak_memory_gib", 1e-9);
    }
}

/// The experiment's model, training and parallel keys from the row, and the recompute that
/// the framework's recipe runs.
void base_settings(RecentRun& r, config::YamlMap& model, bool torchtitan) {
    Settings& s = r.settings;
    if (r.moe) {
        // The model's own preset (its published dimensions); the row's text fields give no more.
        s.emplace_back("model", "deepseek-v3");
        s.emplace_back("model.seq", std::to_string(dim(model, "seq_len")));
    } else {
        detail::dense_model(model, r.model, s);
    }
    s.emplace_back("training.global_batch", std::to_string(r.global_batch));
    s.emplace_back("training.micro_batch", std::to_string(r.micro_batch));
    s.emplace_back("training.dtype", r.fp8 ? "fp8" : "bf16");
    s.emplace_back("training.optimizer", "adamw");
    s.emplace_back("parallel.tp", std::to_string(r.tp));
    s.emplace_back("parallel.pp", std::to_string(r.pp));
    s.emplace_back("parallel.dp", std::to_string(r.dp));
    if (r.cp > 1) {
        s.emplace_back("parallel.cp", std::to_string(r.cp));
        r.features.push_back(fmt::format("cp {}", r.cp));
    }
    if (r.ep > 1) {
        s.emplace_back("parallel.ep", std::to_string(r.ep));
        r.features.push_back(fmt::format("ep {}", r.ep));
        // Megatron-Bridge's DeepSeek-V3 performance recipes keep each expert whole
        // (scripts/performance/configs/deepseek/workload_base_configs.py, v0.2.0:
        // BASE_DEEPSEEK_V3_CONFIG expert_tensor_parallel_size=1), not Megatron-Core's default
        // of etp = tp.
        // Their H100 recipe also dispatches tokens with the flex dispatcher on DeepEP
        // (DEEPSEEK_V3_H100_BASE_CONFIG: moe_flex_dispatcher_backend="deepep").
        if (r.moe && !torchtitan) {
            s.emplace_back("parallel.etp", "1");
            s.emplace_back("parallel.moe_token_dispatcher", "flex");
            r.features.emplace_back("etp 1, DeepEP dispatch");
        }
    }
    if (r.fp8)
        r.features.emplace_back(r.fp8_current ? "FP8 current scaling" : "FP8");
    if (r.tp > 1)
        s.emplace_back("parallel.sequence_parallel", "true");
    if (r.pp > 1 && r.virtual_stages != 1) {
        s.emplace_back("parallel.schedule", "interleaved-1f1b");
        if (r.virtual_stages > 1)
            s.emplace_back("parallel.virtual_stages", std::to_string(r.virtual_stages));
    } else if (r.pp > 1) {
        s.emplace_back("parallel.schedule", "1f1b");
    }
    // Megatron-Bridge's DeepSeek-V3 H100 runs recompute by module and do not overlap the
    // gradient reduce (scripts/performance/run_script.py at v0.1.0rc3, the 25.09 era:
    // recompute_modules ["mla_up_proj", "mlp"], comm_overlap.overlap_grad_reduce False;
    // v0.2.0's workload_base_configs.py DEEPSEEK_V3_H100_BASE_CONFIG and
    // deepseek_v3_h100_config alike), under its recipe's recompute_granularity "selective".
    const bool moe_recipe = r.moe && !torchtitan;
    if (moe_recipe && r.recompute == "none") {
        r.recompute = "selective (mla_up_proj, mlp)";
        r.features.emplace_back("recompute_modules mla_up_proj, mlp");
        s.emplace_back("parallel.recompute", "selective");
        s.emplace_back("parallel.recompute_modules", "[mla_up_proj, mlp]");
    } else {
        s.emplace_back("parallel.recompute", r.recompute);
    }
}

/// How the recipes split layers that the stages do not divide (layer_assignment.h).
void layer_split_settings(RecentRun& r, config::YamlMap& model, bool torchtitan) {
    Settings& s = r.settings;
    const int layers = dim(model, "layers");
    const int model_stages = r.pp * std::max(1, r.virtual_stages);
    if (r.pp > 1 && r.virtual_stages != 0 && layers % model_stages != 0) {
        if (torchtitan) {
            s.emplace_back("parallel.pipeline_model_parallel_layout",
                           torchtitan_layout(layers, model_stages));
            r.features.emplace_back("torchtitan's layer split");
        } else if (r.moe && r.pp == 8 && r.virtual_stages == 4) {
            // Megatron-Bridge's DeepSeek-V3 H100 recipe (scripts/performance/configs/deepseek/
            // deepseek_llm_pretrain.py, deepseek_v3_h100_config, v0.2.0):
            // pipeline_model_parallel_layout "Et|(tt|)*30mL". Its last stage's
            // multi-token-prediction layer (m) is not in the model preset: left out.
            s.emplace_back("parallel.pipeline_model_parallel_layout", "Et|(tt|)*30L");
            r.features.emplace_back(
                "the recipe's layout, 1 + 30 x 2 layers + loss (its MTP layer left out)");
        } else if (contains(r.model, "405B")) {
            // Megatron-Bridge's Llama 3.1 405B recipe (src/megatron/bridge/recipes/llama/
            // llama3.py, llama31_405b_pretrain_config, v0.2.0): the embedding and the loss
            // each count as a layer of the pipeline split.
            s.emplace_back("parallel.account_for_embedding_in_pipeline_split", "true");
            s.emplace_back("parallel.account_for_loss_in_pipeline_split", "true");
            r.features.emplace_back("embedding and loss as layers of the split");
        }
    }
}

/// What the framework runs that the row does not print: torchtitan's FSDP2, async TP, op-level
/// recompute, eager or compiled kernels; NeMo's and Megatron-Bridge's distributed optimizer
/// and overlaps.
void framework_settings(RecentRun& r, bool torchtitan) {
    Settings& s = r.settings;
    const bool moe_recipe = r.moe && !torchtitan;
    if (torchtitan) {
        // FSDP2 shards parameters, gradients and optimizer state and all-gathers each block's
        // parameters before its forward and backward (prefetching the next), reduce-scattering
        // its gradients: ZeRO-3's traffic, overlapped with the compute, and FSDP2's copies of
        // the gathered parameters and of the gradients on the compute stream.
        s.emplace_back("parallel.fsdp", "true");
        s.emplace_back("parallel.overlap_grad_reduce", "true");
        r.features.emplace_back("FSDP2");
        if (contains(r.framework, "AsyncTP") || contains(r.framework, "async TP")) {
            // Async TP decomposes the TP all-gathers and reduce-scatters into chunks overlapped
            // with the matmuls they feed, by PyTorch's symmetric memory
            // (enable_async_tensor_parallel).
            s.emplace_back("parallel.enable_async_tensor_parallel", "true");
            r.features.emplace_back("async TP");
        }
        // torchtitan's selective mode as its llama3 configs set it (train_configs/*.toml:
        // selective_ac_option = "op"): op-level checkpointing, not Megatron's.
        if (r.recompute == "selective")
            s.emplace_back("parallel.selective_recompute", "op");
        // torchtitan's Llama block is plain PyTorch (torchtitan/models/llama/model.py at the
        // page's commit 9dec370: RMSNorm op by op, its llama3 configs' norm_type "rmsnorm",
        // RoPE through complex numbers, repeat_kv, SwiGLU as silu and a product): none of
        // Megatron-Core's fused kernels. Eager, each op is a kernel; with torch.compile
        // ([training] compile, "+ torch.compile" in the row) Inductor fuses each chain.
        for (const char* knob : {"training.apply_rope_fusion", "training.bias_activation_fusion",
                                 "training.masked_softmax_fusion", "training.norm_fusion"})
            s.emplace_back(knob, "false");
        // torchtitan's Float8 is torchao.float8's Float8Linear with tensorwise dynamic
        // scaling (torchtitan/float8.py at 9dec370; its default and only supported recipe).
        if (r.fp8)
            s.emplace_back("training.fp8_recipe", "tensorwise");
        const bool compiled = contains(r.framework, "compile");
        s.emplace_back("training.compile", compiled ? "true" : "false");
        r.features.emplace_back(compiled ? "torch.compile" : "eager");
        // Its loss at 9dec370: PyTorch's cross_entropy on the logits upcast to fp32, not
        // compiled whatever [training] compile says (train.py: "compiling loss function
        // causes CUDA errors, turning off for now").
        s.emplace_back("training.cross_entropy", "eager");
    } else {
        // NeMo / Megatron-Bridge performance recipes: the distributed optimizer with gradient
        // reduce and parameter gather overlapped, and TP communication overlap where tp > 1.
        s.emplace_back("parallel.zero", "1");
        if (r.fp8_current)
            s.emplace_back("training.fp8_recipe", "current");
        const char* overlap = moe_recipe ? "false" : "true";
        s.emplace_back("parallel.overlap_grad_reduce", overlap);
        s.emplace_back("parallel.overlap_param_gather", overlap);
        if (moe_recipe)
            r.features.emplace_back("gradient reduce not overlapped");
        if (r.tp > 1)
            s.emplace_back("parallel.tp_comm_overlap", "true");
    }
}

/// The step simulated from the settings, or what the step model would need to predict it.
void predict_run(RecentRun& r) {
    Settings& s = r.settings;
    std::vector<std::string> needs;
    if (r.virtual_stages == 0)
        needs.emplace_back("the page's stages per rank for interleaved 1F1B (not stated)");
    if (r.fp8 && !fp8_training_modelled())
        needs.emplace_back("FP8 as Transformer Engine / torchao run it");
    try {
        auto e = strategies::parallel::make_experiment(detail::platform(r.preset), r.gpus, s, r.id);
        // Megatron-Bridge aligns the parameter gathers across pipeline ranks where it overlaps
        // them with virtual stages (src/megatron/bridge/training/comm_overlap.py at v0.1.0rc3
        // through v0.3.0, _get_optimizer_overlap_cfgs: align_param_gather = True when dp > 1,
        // pp > 1 and virtual stages > 1), on Megatron-Core >= 0.9 (FrameworkSpec::
        // align_param_gather). NeMo 24.07's recipes run Apex's DistributedFusedAdam
        // (NVIDIA/NeMo-Framework-Launcher 24.07, launcher_scripts/conf/training/*: optim.name
        // distributed_fused_adam), neither Megatron-Core's chain nor its aligned gathers: they
        // keep the preset's default, the chain.
        if (contains(r.framework, "Megatron-Bridge") && r.pp > 1 && r.virtual_stages > 1 &&
            r.dp > 1)
            e.framework.align_param_gather = true;
        // Megatron-Bridge's performance scripts keep and reduce the gradients in bf16, as for
        // the new-hardware study's rows.
        detail::megatron_bridge_grad_reduce(e.framework, r.framework);
        if (needs.empty()) {
            strategies::parallel::StepOptions o;
            o.oom_advice = false;
            r.step = strategies::parallel::simulate_step(e, o);
            r.predicted_s = r.step.step_time_s;
        }
    } catch (const InputError& err) {
        const std::string what = err.what();
        if (r.cp > 1 && contains(what, "parallel.cp'"))
            needs.emplace_back("context parallelism (parallel.cp)");
        else if (r.ep > 1 && contains(what, "parallel.ep'"))
            needs.emplace_back("expert parallelism (parallel.ep)");
        else if (r.virtual_stages != 0)
            needs.push_back("a layout the step model accepts (" +
                            what.substr(what.rfind(r.id + ": ") == 0 ? r.id.size() + 2 : 0) + ")");
    }
    for (const auto& n : needs)
        r.not_modelled += (r.not_modelled.empty() ? "needs " : "; ") + n;
}

/// One row of the file, mapped and predicted.
RecentRun map_row(YAML::Node node, const std::string& file) {
    config::YamlMap row(node, file, "rows");
    RecentRun r;
    r.where = config::format_mark(file, node.Mark());
    r.id = row.str("id");
    config::YamlMap model = row.map("model");
    read_run(row, model, r);
    const bool torchtitan = contains(r.framework, "torchtitan");
    base_settings(r, model, torchtitan);
    layer_split_settings(r, model, torchtitan);
    framework_settings(r, torchtitan);
    predict_run(r);
    return r;
}

} // namespace

bool fp8_training_modelled() {
    const auto m = strategies::models::load_model("llama3-8B");
    const hardware::ComputeModel cm(hardware::load_hardware("dgx-h100"));
    auto attention = [&](hardware::Dtype d) {
        strategies::models::LayerConfig cfg;
        cfg.dtype = d;
        const auto w = strategies::models::layer_work(m, cfg, cm);
        for (std::size_t i = 0; i < w.forward.ops.size(); ++i) {
            if (w.forward.ops[i].kind == strategies::models::OpKind::fused_attention)
                return w.forward.ops[i].time.seconds();
        }
        return 0.0;
    };
    const double fp8 = attention(hardware::Dtype::fp8);
    const double bf16 = attention(hardware::Dtype::bf16);
    return fp8 > 0 && std::abs(fp8 / bf16 - 1) < 0.01;
}

std::vector<RecentRun> recent_runs(const std::string& data_dir) {
    const std::string file = data_dir + "/large-scale/h100-published-runs.yaml";
    std::vector<RecentRun> out;
    detail::for_each_row(file, [&](YAML::Node row) { out.push_back(map_row(row, file)); });
    return out;
}

ErrorStats recent_errors(const std::vector<RecentRun>& runs, bool dense_bf16_only) {
    std::vector<double> errors;
    for (const auto& r : runs) {
        if (r.ran() && (!dense_bf16_only || r.dense_bf16))
            errors.push_back(r.error());
    }
    return error_stats(errors);
}

std::vector<std::string> recent_rules() {
    return {
        "one preset per cluster: NeMo and Megatron-Bridge rows on `dgx-superpod-h100` (the pages' "
        "DGX H100, 8x 400 Gb/s NDR per node), torchtitan rows on `grand-teton-h100` (H100 96 GB "
        "at the page's 500 W power limit, 400 Gb/s RoCE per GPU); every GPU computes at the "
        "pace of the expected slowest of the row's GPUs (the presets' "
        "`framework.gpu_speed_spread`, 1.5% per GPU, from Sinha et al.'s SC'22 measurements of "
        "same-SKU GPUs: 3.5% slower on 64 GPUs, 4.9% on 1,024)",
        "the model from the row's dimensions; Llama rows with SwiGLU, RMSNorm, RoPE, untied "
        "embeddings and no biases, GPT-3 with GeLU, LayerNorm, learned positions and tied "
        "embeddings, Nemotron-4's squared ReLU costed as GeLU; FlashAttention-style fused "
        "attention; the MoE row on the `deepseek-v3` model preset",
        "NeMo / Megatron-Bridge (Megatron-Core): the printed micro-batch, interleaved 1F1B with "
        "the printed virtual stages (layers the stages do not divide split as the model's "
        "recipe does: Llama 3.1 405B with the embedding and loss as layers, DeepSeek-V3 with "
        "its layout string), sequence parallelism and TP communication overlap where tp > "
        "1, the distributed optimizer (ZeRO-1) with gradient reduce and parameter gather "
        "overlapped (Megatron-Bridge rows with the gathers aligned across pipeline ranks, "
        "`framework.align_param_gather`, as its recipes set it, and the gradients kept and "
        "reduced in bf16, as its performance scripts set grad_reduce_in_fp32; NeMo 24.07's Apex "
        "optimizer on the preset's default); recompute as printed (not stated: none); the "
        "DeepSeek-V3 row as its recipe runs on H100: recompute_modules [mla_up_proj, mlp] and the "
        "gradient reduce not overlapped",
        "torchtitan: FSDP2 (ZeRO-3's gathers and reduce-scatters, overlapped, with FSDP2's "
        "copies of the gathered parameters and of the gradients on the compute stream), the local "
        "batch as one micro-batch without a pipeline (with one: as many micro-batches as "
        "pipeline ranks, 2 stages per rank when interleaved, the layers split as its "
        "generate_split_points does, at the page's commit, each chunk gathered once per step, "
        "its gradients added into fp32 in every backward and reduce-scattered once its last "
        "backward has returned, as torch.distributed.pipelining's run_post_backward issues "
        "them), sequence "
        "parallelism with TP, async TP as PyTorch's symmetric-memory fused matmuls; recompute as "
        "printed (its selective "
        "mode as its llama3 configs' op-level policy, selective_ac_option \"op\": every second "
        "matmul of a block and its elementwise ops again); its model's elementwise ops (RMSNorm, "
        "RoPE with repeat_kv, SwiGLU) one kernel each in eager runs, fused as Megatron-Core's "
        "with torch.compile; its loss PyTorch's cross_entropy on the logits upcast to fp32, "
        "never compiled at the page's commit (`cross_entropy: eager`)",
        "AdamW; bf16 unless the row says FP8 or Float8: FP8 as Transformer Engine's delayed "
        "scaling for NeMo and Megatron-Bridge up to 25.09 (its scripts' default; the 25.09 "
        "DeepSeek-V3 row's block-wise scaling as it too), as its per-tensor current scaling "
        "(`fp8_recipe: current`) where the row says FP8-CS and from 25.11 (whose scripts have "
        "no delayed scaling), as torchao's tensorwise dynamic scaling (`fp8_recipe: "
        "tensorwise`) for torchtitan's Float8",
    };
}

} // namespace clustersim::validation
