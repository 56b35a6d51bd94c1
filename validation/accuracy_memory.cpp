// The numbers of docs/validation.md's section "Memory": every row of
// memory/measured-peak-memory.yaml mapped to an experiment from its own fields, with one rule per
// framework for what the source does not state (memory_rules()), compared on the statistic the
// source printed. Never a parameter per row.
#include "validation/accuracy_memory.h"

#include "validation/published_rows.h"

#include "base/error.h"
#include "config/yaml_map.h"
#include "strategies/parallel/experiment.h"

#include <fmt/format.h>

namespace clustersim::validation {

namespace {

using detail::contains;
using detail::dim;
using detail::Settings;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// A count that a row gives as a number or as a mapping with its `value`.
int count_of(config::YamlMap& row, std::string_view key) {
    if (row.raw(key).IsMap()) {
        config::YamlMap m = row.map(key);
        return dim(m, "value");
    }
    return dim(row, key);
}

/// A scalar's text, or "" for null/absent.
std::string text_of(config::YamlMap& m, std::string_view key) {
    if (!m.has(key))
        return "";
    const YAML::Node n = m.raw(key);
    return n.IsScalar() ? n.Scalar() : std::string();
}

/// A boolean that may be absent (false).
bool flag(config::YamlMap& m, std::string_view key) {
    return m.has(key) && !m.raw(key).IsNull() && m.boolean(key);
}

/// The measured value in GiB and the statistic its source printed.
void read_measured(config::YamlMap& row, MemoryRun& r) {
    config::YamlMap measured = row.map("memory_measured");
    const double value = measured.number("value", 1e-9);
    const std::string unit = measured.str("unit");
    if (unit.rfind("GiB", 0) == 0)
        r.measured_gib = value;
    else if (unit.rfind("MiB", 0) == 0)
        r.measured_gib = value / 1024.0;
    else
        measured.fail("unit", "expected GiB or MiB, got '" + unit + "'");
    // In this order: nvidia-smi's note mentions the reserved memory it includes, and Trainy's
    // the active peak WandB also logs beside the reserved one it printed.
    const std::string metric = measured.str("metric");
    if (contains(metric, "nvidia-smi") || contains(metric, "NVML"))
        r.statistic = MemoryStatistic::device_used;
    else if (contains(metric, "reserved"))
        r.statistic = MemoryStatistic::reserved;
    else if (contains(metric, "active"))
        r.statistic = MemoryStatistic::active;
    else
        measured.fail("metric", "expected peak reserved, peak active or nvidia-smi used");
}

/// The first date (YYYY-MM-DD) in the row's framework version, "" without one.
std::string version_date(config::YamlMap& row) {
    config::YamlMap framework = row.map("framework");
    const std::string v = text_of(framework, "version");
    for (std::size_t i = 0; i + 10 <= v.size(); ++i) {
        const std::string_view d(v.data() + i, 10);
        const auto digits = [&](std::size_t a, std::size_t b) {
            for (std::size_t k = a; k < b; ++k)
                if (d[k] < '0' || d[k] > '9')
                    return false;
            return true;
        };
        if (digits(0, 4) && d[4] == '-' && digits(5, 7) && d[7] == '-' && digits(8, 10))
            return std::string(d);
    }
    return "";
}

/// torchtitan: FSDP2 over the data-parallel ranks, the local batch as one micro-batch (with a
/// pipeline: as many micro-batches as pipeline ranks), recompute as printed.
void torchtitan_settings(config::YamlMap& row, config::YamlMap& model, MemoryRun& r) {
    Settings& s = r.settings;
    detail::dense_model(model, r.model, s);
    config::YamlMap par = row.map("parallelism");
    r.tp = dim(par, "tp");
    r.pp = dim(par, "pp");
    r.cp = dim(par, "cp");
    r.dp = dim(par, "dp");
    const int local_batch = count_of(row, "micro_batch");
    const int micro = r.pp > 1 ? std::max(1, local_batch / r.pp) : local_batch;
    s.emplace_back("training.global_batch", std::to_string(count_of(row, "global_batch")));
    s.emplace_back("training.micro_batch", std::to_string(micro));
    s.emplace_back("training.optimizer", "adamw");
    s.emplace_back("parallel.tp", std::to_string(r.tp));
    s.emplace_back("parallel.pp", std::to_string(r.pp));
    s.emplace_back("parallel.dp", std::to_string(r.dp));
    s.emplace_back("parallel.fsdp", "true");
    s.emplace_back("parallel.overlap_grad_reduce", "true");
    r.features.emplace_back("FSDP2");
    if (r.cp > 1) {
        s.emplace_back("parallel.cp", std::to_string(r.cp));
        r.features.push_back(fmt::format("cp {}", r.cp));
    }
    if (r.tp > 1)
        s.emplace_back("parallel.sequence_parallel", "true");
    // torchtitan's multi-stage schedules run 2 stages per rank without split points
    // (generate_split_points at 9dec370), and split the layers as it does.
    const std::string schedule = text_of(par, "pp_schedule");
    const bool interleaved = contains(schedule, "Interleaved");
    if (r.pp > 1) {
        s.emplace_back("parallel.schedule", interleaved ? "interleaved-1f1b" : "1f1b");
        if (interleaved)
            s.emplace_back("parallel.virtual_stages", "2");
        const int layers = dim(model, "layers");
        const int stages = r.pp * (interleaved ? 2 : 1);
        if (layers % stages != 0) {
            s.emplace_back("parallel.pipeline_model_parallel_layout",
                           detail::torchtitan_layout(layers, stages));
            r.features.emplace_back("torchtitan's layer split");
        }
    }
    const std::string recompute = row.str("recompute");
    r.recompute = contains(recompute, "full")        ? "full"
                  : contains(recompute, "selective") ? "selective"
                                                     : "none";
    s.emplace_back("parallel.recompute", r.recompute);
    if (r.recompute == "selective")
        s.emplace_back("parallel.selective_recompute", "op");
    config::YamlMap other = row.map("other");
    const bool fp8 = flag(other, "float8");
    s.emplace_back("training.dtype", fp8 ? "fp8" : "bf16");
    if (fp8) {
        s.emplace_back("training.fp8_recipe", "tensorwise");
        r.features.emplace_back("Float8");
        // torchao's FSDP float8 all-gather where the row names it, which torchtitan turns on
        // only with data-parallel sharding (Float8Handler: parallel_dims.dp_shard_enabled and
        // enable_fsdp_float8_all_gather, torchtitan/float8.py at 9dec370): not where FSDP
        // shards over the context-parallel ranks alone (dp 1).
        if (contains(row.str("precision"), "float8 all-gather") && r.dp > 1) {
            s.emplace_back("training.fp8_fsdp_all_gather", "true");
            r.features.emplace_back("FP8 all-gather");
        }
    }
    if (flag(other, "async_tp")) {
        s.emplace_back("parallel.enable_async_tensor_parallel", "true");
        r.features.emplace_back("async TP");
    }
    const bool compiled = flag(other, "torch_compile");
    s.emplace_back("training.compile", compiled ? "true" : "false");
    r.features.emplace_back(compiled ? "torch.compile" : "eager");
    // torchtitan's loss_fn is PyTorch's cross_entropy on the logits upcast to fp32, compiled
    // with the model from e10cb94 (2024-10-22, "Move output .float() to loss fn and compile it
    // if compiling") to e8977b0 (2024-12-18, "turning off compile on loss function") and from
    // bbb1b61 (2025-04-02, build_cross_entropy_loss) on; eager otherwise. The row's framework
    // version carries its commit's date.
    const std::string date = version_date(row);
    const bool loss_compiled =
        compiled && (date >= "2025-04-02" || (date >= "2024-10-22" && date < "2024-12-18"));
    s.emplace_back("training.cross_entropy", loss_compiled ? "compiled" : "eager");
    r.features.emplace_back(loss_compiled ? "compiled loss" : "eager loss");
}

/// torchtune's full_finetune_single_device (meta-pytorch/torchtune@1814feb17, the README
/// table's): one GPU, the batch as one micro-batch, pure bf16 (its dtype bf16), torch's AdamW
/// or 8-bit AdamW, the loss as its recipe builds it, recompute full or none, and the memory
/// flags the row sets.
void torchtune_settings(config::YamlMap& row, config::YamlMap& model, MemoryRun& r) {
    Settings& s = r.settings;
    detail::dense_model(model, r.model, s);
    const int batch = count_of(row, "micro_batch");
    s.emplace_back("training.global_batch", std::to_string(batch));
    s.emplace_back("training.micro_batch", std::to_string(batch));
    const std::string precision = row.str("precision");
    const std::string optimizer = row.str("optimizer");
    if (contains(precision, "pure bf16")) {
        s.emplace_back("training.dtype", "bf16");
        s.emplace_back("training.master_weights", "false");
        r.features.emplace_back("pure bf16");
    }
    // "8-bit AdamW" as bitsandbytes' AdamW8bit, whose states PyTorch's allocator holds (the
    // Paged variant's would live in CUDA managed memory, outside active_bytes).
    const bool adam8 = contains(optimizer, "8-bit");
    s.emplace_back("training.optimizer", adam8 ? "adamw8bit" : "adamw");
    if (adam8)
        r.features.emplace_back("8-bit AdamW");
    const std::string recompute = row.str("recompute");
    r.recompute = contains(recompute, "full") ? "full" : "none";
    s.emplace_back("parallel.recompute", r.recompute);
    config::YamlMap other = row.map("other");
    const bool compiled = flag(other, "torch_compile");
    s.emplace_back("training.compile", compiled ? "true" : "false");
    r.features.emplace_back(compiled ? "torch.compile" : "eager");
    // torchtune's modules run op by op (torchtune/modules at 1814feb17): RMSNorm in fp32 then
    // scaled (rms_norm.py), RoPE on an fp32 copy and the grouped keys and values copied per
    // query head (position_embeddings.py, attention.py), SwiGLU as silu(w1(x)) * w3(x)
    // (feed_forward.py): no fused kernels, unless compiled (TrainingSpec::kernels).
    for (const char* fusion :
         {"training.apply_rope_fusion", "training.bias_activation_fusion", "training.norm_fusion"})
        s.emplace_back(fusion, "false");
    // The model upcasts its logits (TransformerDecoder: output(h).float()) and the loss is
    // torch's cross_entropy, compiled around that input with compile; CEWithChunkedOutputLoss
    // takes the 16-bit logits of 8 slices.
    const bool chunked = contains(text_of(other, "loss"), "Chunked");
    s.emplace_back("training.cross_entropy", chunked    ? "chunked"
                                             : compiled ? "compiled-fp32"
                                                        : "eager");
    r.features.emplace_back(chunked ? "chunked loss" : compiled ? "compiled loss" : "eager loss");
    if (contains(optimizer, "optimizer_in_bwd")) {
        s.emplace_back("training.optimizer_in_bwd", "true");
        r.features.emplace_back("optimizer in backward");
    }
    if (flag(other, "activation_offloading")) {
        s.emplace_back("training.activation_offloading", "true");
        r.features.emplace_back("activation offloading");
    }
}

/// The classifier's labels from the row's model name ("..., 2 labels)"), 2 without them.
int labels_of(const std::string& name) {
    const auto at = name.find(" labels");
    if (at == std::string::npos)
        return 2;
    auto from = at;
    while (from > 0 && name[from - 1] >= '0' && name[from - 1] <= '9')
        --from;
    return from == at ? 2 : std::stoi(name.substr(from, at - from));
}

/// Hugging Face's single-GPU guide (its Trainer on bert-large-uncased loaded with
/// AutoModelForSequenceClassification): the row's dimensions with bert-large-uncased's
/// config.json for the rest (type_vocab_size 2, hidden_act gelu, LayerNorm, learned absolute
/// positions, hidden and attention dropout 0.1, no vocabulary padding), bidirectional eager
/// attention as BertSelfAttention runs it (unfused, PyTorch's softmax: no fused kernels in
/// the model), the classification head; the Trainer's AdamW (optim adamw_hf, fp32 states), one
/// GPU, per_device_train_batch_size as the micro-batch and gradient_accumulation_steps as the
/// micro-batches of a step, gradient checkpointing as full recompute of every layer
/// (BertEncoder's torch.utils.checkpoint per layer), fp16 as torch.cuda.amp's autocast.
void hf_settings(config::YamlMap& row, config::YamlMap& model, MemoryRun& r) {
    Settings& s = r.settings;
    s.emplace_back("model.kind", "transformer");
    for (const auto& [key, field] :
         {std::pair{"layers", "layers"}, std::pair{"hidden", "hidden"}, std::pair{"heads", "heads"},
          std::pair{"kv_heads", "kv_heads"}, std::pair{"ffn", "ffn"}, std::pair{"seq", "seq_len"},
          std::pair{"vocab", "vocab"}})
        s.emplace_back(std::string("model.") + key, std::to_string(dim(model, field)));
    s.emplace_back("model.vocab_divisible_by", "1");
    s.emplace_back("model.type_vocab_size", "2");
    s.emplace_back("model.activation", "gelu");
    s.emplace_back("model.norm", "layernorm");
    s.emplace_back("model.position_embedding", "learned");
    s.emplace_back("model.bias", "true");
    s.emplace_back("model.dropout", "0.1");
    s.emplace_back("model.attention", "unfused");
    s.emplace_back("model.causal", "false");
    s.emplace_back("model.head", "classification");
    s.emplace_back("model.num_labels", std::to_string(labels_of(r.model)));
    r.features.emplace_back("classification head");
    config::YamlMap other = row.map("other");
    const int micro = count_of(row, "micro_batch");
    const int steps =
        other.has("gradient_accumulation_steps") ? dim(other, "gradient_accumulation_steps") : 1;
    s.emplace_back("training.global_batch", std::to_string(micro * steps));
    s.emplace_back("training.micro_batch", std::to_string(micro));
    s.emplace_back("training.optimizer", "adamw");
    s.emplace_back("training.masked_softmax_fusion", "false");
    s.emplace_back("training.bias_activation_fusion", "false");
    const bool amp = contains(row.str("precision"), "AMP");
    s.emplace_back("training.dtype", amp ? "fp16" : "fp32");
    if (amp)
        s.emplace_back("training.autocast", "true");
    r.features.emplace_back(amp ? "AMP fp16" : "fp32");
    if (steps > 1)
        r.features.push_back(fmt::format("{} micro-batches", steps));
    r.recompute = contains(row.str("recompute"), "checkpointing") ? "full" : "none";
    s.emplace_back("parallel.recompute", r.recompute);
}

/// What a torchtune row uses that the model does not have.
std::vector<std::string> single_gpu_needs(config::YamlMap& model, const MemoryRun& r) {
    // Literals collected as views, strings made once at the end: GCC 12's -Warray-bounds
    // misfires on std::string temporaries built inside this function once it is inlined.
    std::vector<std::string_view> needs;
    if (contains(r.framework, "torchtune") && text_of(model, "seq_len").empty())
        needs.emplace_back("a sequence length (unpacked samples padded per batch: "
                           "data-dependent; the row gives only max_seq_len)");
    return {needs.begin(), needs.end()};
}

MemoryRun map_row(YAML::Node node, const std::string& file) {
    config::YamlMap row(node, file, "rows");
    MemoryRun r;
    r.where = config::format_mark(file, node.Mark());
    r.id = row.str("id");
    config::YamlMap model = row.map("model");
    r.model = model.str("name");
    r.framework = row.map("framework").str("name");
    config::YamlMap hw = row.map("hardware");
    const std::string gpu = hw.str("gpu");
    r.gpus = dim(hw, "num_gpus");
    read_measured(row, r);
    if (contains(r.framework, "HF transformers")) {
        // The guide's one V100-SXM2-16GB, with the CUDA context it measured.
        r.preset = "v100-sxm2-16gb";
        hf_settings(row, model, r);
    } else if (!contains(r.framework, "torchtitan")) {
        r.preset = "dgx-a100";
        for (const auto& n : single_gpu_needs(model, r))
            r.not_modelled += (r.not_modelled.empty() ? "needs " : "; ") + n;
        if (!r.not_modelled.empty())
            return r;
        torchtune_settings(row, model, r);
    } else {
        // One preset per cluster: Meta's Grand Teton H100s (96 GB HBM2e, 500 W) for the
        // benchmark page's rows, an HGX H200 node for Trainy's.
        r.preset = contains(gpu, "H200") ? "hgx-h200" : "grand-teton-h100";
        torchtitan_settings(row, model, r);
    }
    try {
        const auto e = strategies::parallel::make_experiment(detail::platform(r.preset), r.gpus,
                                                             r.settings, r.id);
        strategies::parallel::StepOptions o;
        o.oom_advice = false;
        r.step = strategies::parallel::simulate_step(e, o);
        const std::int64_t bytes =
            r.statistic == MemoryStatistic::reserved ? r.step.peak_reserved_bytes_max
            : r.statistic == MemoryStatistic::active ? r.step.peak_bytes_max
                                                     : r.step.device_bytes_max;
        r.predicted_gib = static_cast<double>(bytes) / kGiB;
    } catch (const InputError& err) {
        const std::string what = err.what();
        r.not_modelled = "needs " + what.substr(what.rfind(r.id + ": ") == 0 ? r.id.size() + 2 : 0);
    }
    return r;
}

} // namespace

std::vector<MemoryRun> memory_runs(const std::string& data_dir) {
    const std::string file = data_dir + "/memory/measured-peak-memory.yaml";
    std::vector<MemoryRun> out;
    detail::for_each_row(file, [&](YAML::Node row) { out.push_back(map_row(row, file)); });
    return out;
}

calibrate::ErrorStats memory_errors(const std::vector<MemoryRun>& runs) {
    std::vector<double> errors;
    for (const auto& r : runs)
        if (r.ran())
            errors.push_back(r.error());
    return calibrate::error_stats(errors);
}

const char* to_string(MemoryStatistic s) {
    switch (s) {
    case MemoryStatistic::reserved:
        return "peak reserved";
    case MemoryStatistic::active:
        return "peak active";
    case MemoryStatistic::device_used:
        return "nvidia-smi used";
    }
    return "";
}

std::vector<std::string> memory_rules() {
    return {
        "the statistic the source printed: torchtitan's \"Memory(GiB)\" is the caching "
        "allocator's reserved peak (torch.cuda.max_memory_reserved; the step's reserved bytes: "
        "allocated plus the allocator's slack, without the CUDA context and NCCL's buffers); "
        "torchtune's \"Peak Memory Active\" the active peak (the allocated bytes); Hugging "
        "Face's nvidia-smi \"used\" the device's (reserved plus the CUDA context: the "
        "preset's context_memory on one GPU, runtime_memory otherwise)",
        "torchtitan rows: the benchmark page's on `grand-teton-h100` (H100 96 GB HBM2e), "
        "Trainy's on `hgx-h200`; the model from the row's dimensions (Llama: SwiGLU, RMSNorm, "
        "RoPE, untied output); FSDP2 over the data-parallel ranks (reduce in fp32, the root "
        "unit held gathered), the local batch as one micro-batch (with a pipeline: as many "
        "micro-batches as pipeline ranks, 2 stages per rank when interleaved, the layers split "
        "as its generate_split_points does, run as torch.distributed.pipelining runs them: "
        "ScheduleInterleaved1F1B's warm-up, each stage's outputs kept to the step's end, a "
        "receive buffer per micro-batch and the input gradients left on them), sequence "
        "parallelism with TP, recompute as printed (selective as its op-level policy), Float8 "
        "as torchao's tensorwise recipe with FSDP's FP8 all-gather where the row names it and "
        "the data-parallel ranks shard (dp > 1: torchtitan's Float8Handler turns it on only "
        "then), AdamW; the loss PyTorch's cross_entropy on the logits upcast to fp32, compiled "
        "with the model "
        "where torchtitan's commit did (2024-10-22 to 2024-12-18 and from 2025-04-02: the "
        "framework version's date), eager otherwise",
        "torchtune rows (its README's table, full_finetune_single_device at "
        "meta-pytorch/torchtune@1814feb17): one A100 80GB (`dgx-a100`), the batch as one "
        "micro-batch, the model from the row's dimensions with its tied embeddings, pure bf16 "
        "(master_weights false: weights, gradients and AdamW's states in bf16, gradients "
        "allocated by the backward and freed after the step), torch's AdamW, eager as its "
        "modules run op by op (RMSNorm in fp32, SwiGLU unfused, grouped-query attention's keys "
        "and values copied per query head: what autograd keeps of them; compiled, the fused "
        "chains, those copies still kept by SDPA), its loss as the "
        "recipe builds it (the model's logits upcast to fp32 then cross_entropy, compiled "
        "around that input with compile; CEWithChunkedOutputLoss over 8 slices), recompute as "
        "printed, optimizer_in_bwd and activation offloading where the row sets them, \"8-bit "
        "AdamW\" as bitsandbytes' AdamW8bit (its states in PyTorch's allocator)",
        "Hugging Face rows (its single-GPU guide at huggingface/transformers@0016acf7, the "
        "Trainer on bert-large-uncased with AutoModelForSequenceClassification): the guide's "
        "V100-SXM2-16GB (`v100-sxm2-16gb`, with the 1343 MiB CUDA context the guide measured "
        "as its context_memory); the row's dimensions with bert-large-uncased's config for the "
        "rest (token-type embeddings, GeLU, LayerNorm, learned positions, dropout 0.1, no "
        "vocabulary padding); bidirectional eager attention as BertSelfAttention runs it "
        "(unfused, PyTorch's softmax); the pooler and a classifier to the labels instead of an "
        "LM head; AdamW in fp32; per_device_train_batch_size as the micro-batch and "
        "gradient_accumulation_steps as the micro-batches; gradient checkpointing as full "
        "recompute; fp16 as torch.cuda.amp's autocast (fp32 weights, gradients and Adam "
        "states, each linear's 16-bit copy of its input saved, the weights' casts cached for "
        "the forward)",
        "the presets' allocator_fragmentation is 0 (no measured share at hand): reserved = "
        "allocated + the allocator's segment floor per stream (scripts/pytorch/"
        "allocator_fragmentation.py measures the share on a decoder, scripts/pytorch/"
        "pipeline_rank_memory.py on one pipeline rank of torchtitan's 405B runs replayed, "
        "scripts/pytorch/bert_memory.py the Hugging Face rows' allocated and reserved peaks, on "
        "a GPU)",
    };
}

} // namespace clustersim::validation
