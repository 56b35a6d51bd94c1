#include "strategies/parallel/experiment.h"

#include "base/error.h"
#include "base/text.h"
#include "config/yaml_map.h"
#include "strategies/models/model_loader.h"
#include "strategies/parallel/device_mesh.h"
#include "strategies/parallel/experiment_keys.h"
#include "strategies/parallel/experiment_reader.h"
#include "strategies/parallel/framework_profile.h"
#include "strategies/parallel/nvlink_domains.h"

#include <cctype>
#include <filesystem>

namespace clustersim::strategies::parallel {

models::Fusions TrainingSpec::kernels() const {
    if (!compile)
        return fusions;
    // torch.compile fuses the elementwise chains (every fusion on); whether the experts run
    // through Transformer Engine's op fuser is the experiment's choice either way.
    models::Fusions f;
    f.fused_grouped_mlp = fusions.fused_grouped_mlp;
    // The stacks whose eager chains these are (RoPE unfused: torchtitan's and torchtune's
    // models) copy the grouped keys and values for SDPA compiled too.
    f.gqa_copies = !fusions.apply_rope_fusion;
    return f;
}

std::string_view to_string(RecomputePolicy r) {
    switch (r) {
    case RecomputePolicy::none:
        return "none";
    case RecomputePolicy::selective:
        return "selective";
    case RecomputePolicy::full:
        return "full";
    case RecomputePolicy::automatic:
        return "auto";
    }
    return "?";
}

namespace {

/// What an error about `key` of the file `path` says when it is said about `--set` instead:
/// its reason, without the file's location and key.
std::string set_reason(const InputError& err, const std::string& path) {
    return err.located_in(path) ? err.reason() : err.what();
}

/// The LoRA keys of a `training:` mapping beside `peft` (read by the key table): the target
/// modules by Megatron-Bridge's names, and the rule that lora_* keys need peft: lora.
template <class Map>
void read_lora(Map& m, TrainingSpec& t);
template <class Map>
void read_cuda_graphs(Map& m, TrainingSpec& t);

/// Reads a `training:` mapping onto `t`. `Map` is config::YamlMap (the file, with messages) or
/// config::ScalarMap (a sweep's variants, refusing without messages): one reader for both, so
/// that the two accept and read the same.
template <class Map>
void read_training(Map&& m, TrainingSpec& t) {
    config::read_keys(m, training_keys(), t);
    // MaxText's per_device_batch_size sets the batch (device_mesh.h), or global_batch does.
    if (m.has("per_device_batch_size") && t.per_device_batch_size <= 0)
        m.fail("per_device_batch_size", "expected a positive number of sequences per device");
    if (!m.has("per_device_batch_size"))
        t.global_batch = m.integer("global_batch", 1, std::int64_t{1} << 40);
    for (const char* key : {"global_batch", "micro_batch"})
        if (m.has("per_device_batch_size") && m.has(key))
            m.fail(key, "give per_device_batch_size (MaxText's: the batch and its micro-batches "
                        "follow from the mesh) or global_batch and micro_batch, not both");
    if (t.fp8_recipe != models::Fp8Recipe::delayed && t.dtype != hardware::Dtype::fp8)
        m.fail("fp8_recipe", std::string(models::to_string(t.fp8_recipe)) +
                                 " scales FP8 GEMMs: it needs training.dtype: fp8 (or leave "
                                 "fp8_recipe out)");
    if (m.has("fp4_recipe") && t.dtype != hardware::Dtype::fp4)
        m.fail("fp4_recipe", "nvfp4 scales FP4 GEMMs: it needs training.dtype: fp4 (or leave "
                             "fp4_recipe out)");
    read_lora(m, t);
    read_cuda_graphs(m, t);
    m.finish();
}

/// A list key's names with where each stands: a YAML list, or the names in one string
/// separated by commas ("[mla_up_proj, mlp]" on the command line); [] is none.
template <class Map>
std::vector<std::pair<YAML::Node, std::string>> name_list(Map& m, const char* key,
                                                          const char* item_meaning) {
    const YAML::Node list = m.raw(key);
    std::vector<std::pair<YAML::Node, std::string>> items;
    if (list.IsSequence()) {
        for (const auto& item : list) {
            if (!item.IsScalar())
                m.fail_at(item, key, std::string("expected ") + item_meaning);
            items.emplace_back(item, item.Scalar());
        }
    } else if (list.IsScalar()) {
        std::string name;
        for (char ch : list.Scalar() + ",") {
            if (ch == ',') {
                if (!name.empty())
                    items.emplace_back(list, name);
                name.clear();
            } else if (ch != '[' && ch != ']' && ch != ' ' && ch != '"' && ch != '\'') {
                name += ch;
            }
        }
    } else {
        m.fail(key, std::string("expected a list, each item ") + item_meaning);
    }
    return items;
}

template <class Map>
void read_lora(Map& m, TrainingSpec& t) {
    // peft: lora sets the targets (its default all four), peft: none clears them.
    const bool peft = m.has("peft") && t.lora.targets != 0;
    for (const char* key : {"lora_dim", "lora_alpha", "lora_target_modules"})
        if (m.has(key) && !peft)
            m.fail(key, "sets LoRA's adapters: it needs peft: lora (or leave it out)");
    if (!t.lora.on())
        return;
    if (t.lora.alpha <= 0)
        m.fail("lora_alpha", "expected a positive scale (LoRA.alpha; the adapters' output is "
                             "scaled by alpha / dim)");
    if (m.has("lora_target_modules")) {
        t.lora.targets = 0;
        for (const auto& [at, name] : name_list(m, "lora_target_modules", "a module's name")) {
            const auto target = models::parse_lora_target(name);
            if (!target)
                m.fail_at(at, "lora_target_modules",
                          "expected linear_qkv, linear_proj, linear_fc1 or linear_fc2 "
                          "(Megatron-Bridge's LoRA.target_modules), got '" +
                              name + "'");
            t.lora.targets |= models::lora_bit(*target);
        }
        if (t.lora.targets == 0)
            m.fail("lora_target_modules", "expected at least one module to adapt");
    }
}

/// cuda_graph_scope's names, checked against cuda_graph_impl (cuda_graph_scope_error).
template <class Map>
void read_cuda_graphs(Map& m, TrainingSpec& t) {
    if (!m.has("cuda_graph_scope"))
        return;
    for (const auto& [at, name] : name_list(m, "cuda_graph_scope", "a scope's name")) {
        // Megatron-Core through core_v0.17 spells the whole-step graph as cuda_graph_impl
        // local with the scope full_iteration (enums.py CudaGraphScope.full_iteration); later
        // releases as cuda_graph_impl full_iteration. Both are read as the latter.
        if (name == "full_iteration" && t.cuda_graph_impl == CudaGraphImpl::local) {
            t.cuda_graph_impl = CudaGraphImpl::full_iteration;
            continue;
        }
        const auto scope = parse_graph_scope(name);
        if (!scope)
            m.fail_at(at, "cuda_graph_scope",
                      "expected attn, mlp, moe, moe_router or moe_preprocess (Megatron-Core's "
                      "CudaGraphScope; full_iteration with cuda_graph_impl local), got '" +
                          name + "'");
        t.cuda_graph_scope |= graph_bit(*scope);
    }
    // "local impl doesn't currently distinguish between moe_preprocess or moe_router so just
    // set both if either is specified" (transformer_config.py, core_v0.17.1 and d98e8a64dd).
    const auto router_scopes = static_cast<std::uint8_t>(graph_bit(GraphScope::moe_router) |
                                                         graph_bit(GraphScope::moe_preprocess));
    if (t.cuda_graph_impl == CudaGraphImpl::local && (t.cuda_graph_scope & router_scopes) != 0)
        t.cuda_graph_scope |= router_scopes;
    if (t.cuda_graph_impl == CudaGraphImpl::full_iteration && t.cuda_graph_scope == 0)
        return;
    if (const std::string why = cuda_graph_scope_error(t.cuda_graph_impl, t.cuda_graph_scope);
        !why.empty())
        m.fail("cuda_graph_scope", why);
}

/// Reads a `parallel:` mapping onto `p` (`Map` as read_training's).
template <class Map>
void read_parallel(Map&& m, ParallelSpec& p) {
    config::read_keys(m, parallel_keys(), p);
    for (const auto& k : parallel_keys())
        if (k.info.group == "mesh" && m.has(k.info.name) &&
            m.integer(k.info.name, -1, 1 << 24) == 0)
            m.fail(k.info.name, "expected -1 (the devices left) or a count of at least 1");
    // MaxText's mesh sets the layout (device_mesh.h): the sizes it sets are not given beside it.
    if (p.mesh.given())
        for (const char* key :
             {"tp", "pp", "dp", "cp", "ep", "etp", "zero", "fsdp", "data_parallel_shard_degree",
              "data_parallel_replicate_degree", "sequence_parallel", "schedule", "virtual_stages"})
            if (m.has(key))
                m.fail(key, "MaxText's mesh keys (ici_*, dcn_*_parallelism) set the layout; give "
                            "them or Megatron's sizes, not both");
    if (m.has("pipeline_schedule"))
        p.schedule_key = "parallel.pipeline_schedule";
    if (m.has("inside_nvlink")) {
        p.inside_nvlink = 0;
        for (const auto& [at, name] : name_list(m, "inside_nvlink", "a group's name")) {
            const auto group = parse_parallel_group(name);
            if (!group)
                m.fail_at(at, "inside_nvlink",
                          "expected tp, cp, ep, dp or pp (the groups that must stay inside one "
                          "NVLink domain), got '" +
                              name + "'");
            p.inside_nvlink |= group_bit(*group);
        }
    }
    if (m.has("recompute_modules")) {
        const auto items = name_list(m, "recompute_modules", "a module's name");
        p.recompute_modules = 0;
        for (const auto& [at, name] : items) {
            const auto module = models::parse_recompute_module(name);
            if (!module)
                m.fail_at(at, "recompute_modules",
                          "expected core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                          "shared_experts (Megatron-Core's recompute_modules) or mlpwi, got '" +
                              name + "'");
            p.recompute_modules |= models::recompute_bit(*module);
        }
        if (p.recompute != RecomputePolicy::selective)
            m.fail("recompute_modules",
                   "is what recompute: selective recomputes (Megatron-Core's "
                   "recompute_granularity selective); set recompute: selective, or leave "
                   "recompute_modules out");
        if (p.selective_op)
            m.fail("recompute_modules",
                   "is Megatron's selective recompute; selective_recompute: op is torchtitan's: "
                   "give one of them");
    }
    // torchtitan's names (torchtitan/config/job_config.py, Parallelism): FSDP2 shards every
    // parameter over the data-parallel shard group, gathers each layer's before it runs and
    // prefetches the next layer's: ZeRO-3 here. data_parallel_shard_degree -1 is "the
    // data-parallel ranks data_parallel_replicate_degree leaves"; a replicate degree above 1
    // with a shard degree above 1 is hybrid sharding (HSDP: torchtitan's apply_fsdp on the 2-D
    // mesh (dp_replicate, dp_shard_cp)); replicate = dp with shard 1 is plain DDP.
    bool fsdp = false;
    m.read("fsdp", fsdp);
    int shard = p.dp_shard;
    if (shard == 0 && m.has("data_parallel_shard_degree"))
        m.fail("data_parallel_shard_degree", "expected -1 (all data-parallel ranks) or a count");
    // Without a shard degree, torchtitan's default is -1: with a replicate degree, the rest.
    if (shard == 0 && p.dp_replicate > 1)
        shard = -1;
    if (fsdp || shard == -1 || shard > 1) {
        if (m.has("zero") && p.zero != 3)
            m.fail("zero", "FSDP (fsdp / data_parallel_shard_degree) is zero: 3; give one of them");
        p.zero = 3;
        p.fsdp2 = true;
    }
    p.dp_shard = shard > 0 ? shard : 0;
    // torchtitan's async TP (enable_async_tensor_parallel: the all-gathers and reduce-scatters
    // of sequence parallelism decomposed and overlapped with the matmuls that need or produce
    // them) overlaps the same collectives as Transformer Engine's, by PyTorch's symmetric
    // memory (ParallelSpec::async_tp).
    if (m.has("tp_comm_overlap") && m.has("enable_async_tensor_parallel"))
        m.fail("enable_async_tensor_parallel",
               "give tp_comm_overlap (Transformer Engine's) or enable_async_tensor_parallel "
               "(PyTorch's async TP), not both");
    if (m.has("enable_async_tensor_parallel"))
        p.tp_comm_overlap = p.async_tp;
    // Megatron's argument checks (megatron/training/arguments.py): the TP overlap needs
    // sequence parallelism, the parameter-gather overlap the distributed optimizer and the
    // gradient-reduce overlap.
    if (p.selective_op && p.tp > 1)
        m.fail("selective_recompute",
               "op-level selective recompute with tp > 1 is not modelled (it reruns the "
               "sequence-parallel all-gathers); use tp 1 or selective_recompute: attention");
    if (p.tp_comm_overlap && p.tp > 1 && !p.sequence_parallel)
        m.fail(m.has("enable_async_tensor_parallel") ? "enable_async_tensor_parallel"
                                                     : "tp_comm_overlap",
               "needs sequence_parallel: true (Transformer Engine overlaps the all-gathers and "
               "reduce-scatters of sequence parallelism); set it, or tp_comm_overlap: false");
    if (p.overlap_param_gather && (p.zero < 1 || p.zero > 2))
        m.fail("overlap_param_gather",
               "needs the distributed optimizer (zero: 1 or 2; ZeRO-3 gathers parameters per "
               "layer anyway); set zero: 1, or overlap_param_gather: false");
    if (p.overlap_param_gather && !p.dp_overlap)
        m.fail("overlap_param_gather",
               "needs overlap_grad_reduce: true (Megatron's rule); set it, or "
               "overlap_param_gather: false");
    m.finish();
}

} // namespace

namespace {

/// Reads model, training and parallel from `root` into `e` (whose cluster is set).
void read_workload(config::YamlMap& root, ExperimentSpec& e, const std::string& file) {
    if (!root.has("model"))
        root.missing("model", "a preset like gpt3-175B or a mapping");
    try {
        e.model = models::load_model_node(root.raw("model"), file);
    } catch (const InputError& err) {
        if (root.raw("model").IsScalar())
            root.fail("model", err.what());
        throw;
    }
    if (!root.has("training"))
        root.missing("training", "global_batch at least");
    read_training(root.map("training"), e.training);
    // The stack by name, over the hardware file's framework (framework_profile.h): the
    // experiment names the stack it runs, so the profile sets all its behaviours, those the
    // hardware file's framework: section writes by their own keys too (they describe the
    // stack of that file's fit, the default for experiments that name none).
    if (e.training.framework) {
        e.framework.explicit_keys = 0;
        apply_profile(e.framework, *e.training.framework);
    }
    if (root.has("parallel"))
        read_parallel(root.map("parallel"), e.parallel);
}

} // namespace

ExperimentSpec load_experiment(const std::string& path,
                               const std::vector<std::pair<std::string, std::string>>& overrides) {
    YAML::Node doc = config::load_yaml_file(path);
    if (!doc.IsMap())
        throw InputError(path + ": expected a mapping with hardware, model, training, parallel");
    for (const auto& [key, value] : overrides)
        detail::override_key(doc, key, value);
    ExperimentSpec e;
    try {
        e = detail::read_experiment_document(doc, path);
    } catch (const InputError& err) {
        // A value that came from --set is --set's mistake: blame it, not the file's line.
        const auto& where = err.where();
        if (where && !where->key.empty()) {
            for (const auto& [key, value] : overrides) {
                if (where->key == key)
                    throw InputError("--set " + key + "=" + base::excerpt(value) + ": " +
                                         set_reason(err, path),
                                     SourceLocation{"--set", 0, 0, key});
            }
        }
        throw;
    }
    try {
        validate_experiment(e);
    } catch (const InputError& err) {
        // Numbers that disagree: point at the line of the key the fix would change (or at its
        // section, where the key is not written), or at --set where it came from there.
        const auto& where = err.where();
        if (!where || where->key.empty())
            throw;
        const std::string& key = where->key;
        const std::string what = set_reason(err, path);
        for (const auto& [k, value] : overrides) {
            if (k == key)
                throw InputError("--set " + key + "=" + base::excerpt(value) + ": " + what,
                                 SourceLocation{"--set", 0, 0, key});
        }
        const auto dot = key.find('.');
        const YAML::Node& root = doc;
        const YAML::Node part = root[key.substr(0, dot)];
        YAML::Mark mark = YAML::Mark::null_mark();
        if (dot != std::string::npos && part.IsMap() && part[key.substr(dot + 1)])
            mark = part[key.substr(dot + 1)].Mark();
        else if (part)
            mark = part.Mark();
        if (mark.is_null())
            throw;
        throw InputError(config::location(path, mark, key), what);
    }
    return e;
}

namespace detail {

void read_training_section(config::YamlMap m, TrainingSpec& t) {
    read_training(m, t);
}
void read_parallel_section(config::YamlMap m, ParallelSpec& p) {
    read_parallel(m, p);
}
void read_training_section(config::ScalarMap& m, TrainingSpec& t) {
    read_training(m, t);
}
void read_parallel_section(config::ScalarMap& m, ParallelSpec& p) {
    read_parallel(m, p);
}

ExperimentSpec read_experiment_document(YAML::Node doc, const std::string& path) {
    config::YamlMap root(doc, path);
    ExperimentSpec e;
    e.file = path;
    e.name = std::filesystem::path(path).stem().string();
    root.read("name", e.name);
    root.read("description", e.description);

    if (!root.has("hardware"))
        root.missing("hardware", "a preset like dgx-a100, a file, or a mapping");
    Platform platform;
    try {
        platform = load_platform_node(root.raw("hardware"), path);
    } catch (const InputError& e2) {
        // A preset name is a scalar with a mark of its own: point at it.
        const YAML::Node h = root.raw("hardware");
        if (h.IsScalar())
            root.fail("hardware", e2.what());
        throw;
    }
    const hardware::ClusterSpec& cluster = platform.cluster;
    int gpus = 0;
    const int given =
        (root.has("gpus") ? 1 : 0) + (root.has("nodes") ? 1 : 0) + (root.has("chips") ? 1 : 0);
    if (given > 1)
        root.fail(root.has("chips") ? "chips" : "nodes",
                  "give one of gpus, nodes and chips, not several");
    const int per_chip = cluster.torus.present() ? cluster.torus.devices_per_chip : 1;
    if (root.has("chips") && !cluster.torus.present())
        root.fail("chips",
                  "counts a TPU's chips; hardware '" + cluster.name + "' has GPUs: give gpus");
    if (root.has("gpus"))
        gpus = static_cast<int>(root.integer("gpus", 1, 1 << 24));
    else if (root.has("nodes"))
        gpus = static_cast<int>(root.integer("nodes", 1, 1 << 20)) * cluster.node.gpus;
    else if (root.has("chips"))
        gpus = static_cast<int>(root.integer("chips", 1, 1 << 24)) * per_chip;
    const char* count_key = root.has("gpus") ? "gpus" : root.has("chips") ? "chips" : "nodes";
    if (root.has("slice")) {
        // A TPU slice's shape: gpus (or chips) of it, or one slice.
        try {
            const hardware::TorusShape shape =
                hardware::parse_slice(cluster.torus, root.str("slice"), "");
            e.cluster = hardware::with_slice(cluster, shape, gpus);
        } catch (const InputError& err) {
            root.fail(given > 0 && std::string(err.what()).find("whole slices") != std::string::npos
                          ? count_key
                          : "slice",
                      err.what());
        }
        e.gpus = e.cluster.gpu_count();
    } else {
        if (given == 0)
            gpus = cluster.gpu_count();
        e.gpus = gpus;
        try {
            e.cluster = hardware::with_gpu_count(cluster, gpus);
        } catch (const InputError& err) {
            root.fail(count_key, err.what());
        }
    }
    e.framework = platform.framework;
    e.provenance = platform.provenance;
    read_workload(root, e, path);
    root.finish();
    return e;
}

} // namespace detail

ExperimentSpec make_experiment(const Platform& platform, int gpus,
                               const std::vector<std::pair<std::string, std::string>>& settings,
                               const std::string& name) {
    YAML::Node doc(YAML::NodeType::Map);
    for (const auto& [key, value] : settings)
        detail::override_key(doc, key, value);
    config::YamlMap root(doc, name);
    ExperimentSpec e;
    e.file = name;
    e.name = name;
    e.gpus = gpus;
    // `slice` (a TPU slice's shape): gpus in slices of it, as in an experiment file.
    e.cluster =
        root.has("slice")
            ? hardware::with_slice(
                  platform.cluster,
                  hardware::parse_slice(platform.cluster.torus, root.str("slice"), "slice"), gpus)
            : hardware::with_gpu_count(platform.cluster, gpus);
    e.framework = platform.framework;
    e.provenance = platform.provenance;
    read_workload(root, e, name);
    root.finish();
    validate_experiment(e);
    return e;
}

} // namespace clustersim::strategies::parallel
