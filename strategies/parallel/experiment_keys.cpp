#include "strategies/parallel/experiment_keys.h"

#include "strategies/models/model_keys.h"
#include "strategies/parallel/framework_profile.h"

#include <set>
#include <string>
#include <utility>

namespace clustersim::strategies::parallel {

using config::field;
using config::Key;
using config::KeyType;

const std::vector<Key<ExperimentSpec>>& top_level_keys() {
    static const std::vector<Key<ExperimentSpec>> keys{
        {{.name = "name",
          .type = KeyType::text,
          .fallback = "the file's name",
          .meaning = "the experiment's name in reports",
          .lands = "ExperimentSpec::name",
          .example = "my-experiment"}},
        {{.name = "description",
          .type = KeyType::text,
          .fallback = "none",
          .meaning = "what this run is for",
          .lands = "ExperimentSpec::description",
          .example = "a first look at tensor parallelism"}},
        {{.name = "hardware",
          .type = KeyType::section,
          .required = true,
          .meaning = "a hardware preset (`clustersim list`), a path to a hardware file, or a "
                     "mapping that `extends:` one and changes any key (docs/hardware-files.md)",
          .lands = "ExperimentSpec::cluster, framework, provenance",
          .example = "dgx-a100"}},
        {{.name = "gpus",
          .fallback = "one node of the hardware",
          .min = 1,
          .max = 1 << 24,
          .meaning = "GPUs in the cluster, on as many nodes as they need",
          .lands = "ExperimentSpec::gpus",
          .example = "8"}},
        {{.name = "nodes",
          .fallback = "one node of the hardware",
          .min = 1,
          .max = 1 << 20,
          .meaning = "nodes in the cluster, instead of gpus",
          .lands = "ExperimentSpec::gpus (nodes x the node's GPUs)",
          .example = "1",
          .commented = true}},
        {{.name = "chips",
          .fallback = "one slice of the hardware",
          .min = 1,
          .max = 1 << 24,
          .meaning = "a TPU's chips, instead of gpus (which counts the devices JAX sees: 2 a "
                     "chip on TPU7x)",
          .lands = "ExperimentSpec::gpus (chips x devices per chip)",
          .example = "64",
          .commented = true}},
        {{.name = "slice",
          .type = KeyType::text,
          .fallback = "the shape documented for gpus (or chips)",
          .meaning = "a TPU slice's shape, like 4x4x8; with gpus or chips, that many in slices "
                     "of this shape joined over the DCN (multislice)",
          .lands = "ExperimentSpec::cluster (hardware::with_slice)",
          .example = "4x4x4",
          .commented = true}},
        {{.name = "model",
          .type = KeyType::section,
          .required = true,
          .meaning = "a model preset (`model: gpt3-175B`) or a mapping of the model's keys",
          .lands = "ExperimentSpec::model",
          .example = "gpt3-175B"}},
        {{.name = "training",
          .type = KeyType::section,
          .required = true,
          .meaning = "how it is trained: global_batch at least",
          .lands = "ExperimentSpec::training"}},
        {{.name = "parallel",
          .type = KeyType::section,
          .fallback = "no parallelism but data parallelism over every GPU",
          .meaning = "how it is split over the GPUs",
          .lands = "ExperimentSpec::parallel"}},
    };
    return keys;
}

namespace {

// check-function-size: a table (one declaration per key, no logic between them).
std::vector<Key<ParallelSpec>> core_parallel_keys() {
    using P = ParallelSpec;
    std::vector<Key<P>> keys{
        {{.name = "tp",
          .other_names = {"tensor_model_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--tensor-model-parallel-size",
          .meaning = "tensor-parallel size",
          .lands = "ParallelSpec::tp",
          .example = "8"},
         field<&P::tp>},
        {{.name = "pp",
          .other_names = {"pipeline_model_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--pipeline-model-parallel-size",
          .meaning = "pipeline stages",
          .lands = "ParallelSpec::pp",
          .example = "1"},
         field<&P::pp>},
        {{.name = "dp",
          .fallback = "gpus / (tp x pp x cp)",
          .min = 1,
          .max = 1 << 24,
          .meaning = "data-parallel size",
          .lands = "ParallelSpec::dp",
          .example = "1"},
         field<&P::dp>},
        {{.name = "cp",
          .other_names = {"context_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--context-parallel-size",
          .meaning = "context-parallel size: each sequence split over cp GPUs",
          .lands = "ParallelSpec::cp",
          .example = "1"},
         field<&P::cp>},
        {{.name = "cp_comm_type",
          .type = KeyType::choice,
          .fallback = "p2p",
          .choices = {"p2p", "all_gather"},
          .mirrors = "--cp-comm-type",
          .meaning = "context parallelism's exchange of keys and values",
          .lands = "ParallelSpec::cp_comm_type",
          .example = "p2p"},
         &detail::set_parsed<P, &P::cp_comm_type, models::parse_cp_comm_type>},
        {{.name = "schedule",
          .other_names = {"pipeline_schedule"},
          .type = KeyType::choice,
          .fallback = "1f1b",
          .choices = {"gpipe", "1f1b", "interleaved-1f1b", "interleaved", "zb-h1", "zb-v",
                      "dualpipe"},
          .mirrors = "torchtitan's pipeline_parallel_schedule (interleaved: interleaved-1f1b)",
          .meaning = "the pipeline schedule",
          .lands = "ParallelSpec::schedule",
          .example = "1f1b"},
         +[](P& p, std::string_view s) {
             p.schedule = s == "gpipe"      ? PipelineSchedule::gpipe
                          : s == "1f1b"     ? PipelineSchedule::one_f_one_b
                          : s == "zb-h1"    ? PipelineSchedule::zb_h1
                          : s == "zb-v"     ? PipelineSchedule::zb_v
                          : s == "dualpipe" ? PipelineSchedule::dualpipe
                                            : PipelineSchedule::interleaved_1f1b;
         }},
        {{.name = "virtual_stages",
          .fallback = "1",
          .min = 1,
          .max = 1 << 10,
          .mirrors = "--num-layers-per-virtual-pipeline-stage (as a count)",
          .meaning = "model chunks per GPU, for interleaved-1f1b",
          .lands = "ParallelSpec::virtual_stages",
          .example = "1"},
         field<&P::virtual_stages>},
        {{.name = "decoder_first_pipeline_num_layers",
          .fallback = "an even split",
          .min = 0,
          .max = 1 << 20,
          .mirrors = "--decoder-first-pipeline-num-layers",
          .meaning = "layers of the first pipeline rank (the rest split evenly)",
          .lands = "ParallelSpec::split.first_stage_layers",
          .example = "15",
          .group = "split",
          .commented = true},
         +[](P& p) -> int& { return p.split.first_stage_layers; }},
        {{.name = "decoder_last_pipeline_num_layers",
          .fallback = "an even split",
          .min = 0,
          .max = 1 << 20,
          .mirrors = "--decoder-last-pipeline-num-layers",
          .meaning = "layers of the last pipeline rank",
          .lands = "ParallelSpec::split.last_stage_layers",
          .example = "15",
          .group = "split",
          .commented = true},
         +[](P& p) -> int& { return p.split.last_stage_layers; }},
        {{.name = "account_for_embedding_in_pipeline_split",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--account-for-embedding-in-pipeline-split",
          .meaning = "the embedding counts as a layer of an even split",
          .lands = "ParallelSpec::split.account_for_embedding",
          .example = "false",
          .group = "split"},
         +[](P& p) -> bool& { return p.split.account_for_embedding; }},
        {{.name = "account_for_loss_in_pipeline_split",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--account-for-loss-in-pipeline-split",
          .meaning = "the loss counts as a layer of an even split",
          .lands = "ParallelSpec::split.account_for_loss",
          .example = "false",
          .group = "split"},
         +[](P& p) -> bool& { return p.split.account_for_loss; }},
        {{.name = "pipeline_model_parallel_layout",
          .type = KeyType::text,
          .fallback = "none",
          .mirrors = "--pipeline-model-parallel-layout",
          .meaning = "the split as a string: E embedding, t layer, L loss, | between stages",
          .lands = "ParallelSpec::split.layout",
          .example = "Et|(tt|)*30L",
          .group = "split",
          .commented = true},
         +[](P& p) -> std::string& { return p.split.layout; }},
        {{.name = "sequence_parallel",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--sequence-parallel",
          .meaning = "the norms and dropouts split over tp along the sequence",
          .lands = "ParallelSpec::sequence_parallel",
          .example = "true"},
         field<&P::sequence_parallel>},
        {{.name = "recompute",
          .type = KeyType::choice,
          .fallback = "none",
          .choices = {"none", "selective", "full", "auto"},
          .mirrors = "--recompute-granularity",
          .meaning = "activations recomputed in the backward (auto: chosen per layer)",
          .lands = "ParallelSpec::recompute",
          .example = "selective"},
         +[](P& p, std::string_view r) {
             p.recompute = r == "none"        ? RecomputePolicy::none
                           : r == "selective" ? RecomputePolicy::selective
                           : r == "full"      ? RecomputePolicy::full
                                              : RecomputePolicy::automatic;
         }},
        {{.name = "recompute_method",
          .type = KeyType::choice,
          .fallback = "uniform",
          .choices = {"uniform", "block"},
          .mirrors = "--recompute-method",
          .meaning = "with recompute full: every layer (uniform), or the first "
                     "recompute_num_layers of each model chunk (block)",
          .lands = "ParallelSpec::recompute_block",
          .example = "block",
          .commented = true},
         +[](P& p, std::string_view m) { p.recompute_block = m == "block"; }},
        {{.name = "recompute_num_layers",
          .fallback = "1",
          .min = 1,
          .max = 1 << 20,
          .mirrors = "--recompute-num-layers",
          .meaning = "block: the layers of each model chunk recomputed; uniform: 1 (a checkpoint "
                     "per layer)",
          .lands = "ParallelSpec::recompute_num_layers",
          .example = "4",
          .commented = true},
         field<&P::recompute_num_layers>},
        {{.name = "selective_recompute",
          .type = KeyType::choice,
          .fallback = "attention",
          .choices = {"attention", "op"},
          .mirrors = "torchtitan's selective_ac_option op",
          .meaning = "what selective recomputes: Megatron's attention, or torchtitan's op "
                     "level (tp 1)",
          .lands = "ParallelSpec::selective_op",
          .example = "attention"},
         +[](P& p, std::string_view s) { p.selective_op = s == "op"; }},
        {{.name = "recompute_modules",
          .type = KeyType::list,
          .fallback = "[core_attn]",
          .choices = {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
                      "shared_experts", "mlpwi"},
          .mirrors = "--recompute-modules",
          .meaning = "the modules Megatron's selective recompute recomputes (mlpwi, not "
                     "Megatron's: a dense MLP's input projections and activation only, as "
                     "MaxText's save_dot_except_mlp)",
          .lands = "ParallelSpec::recompute_modules",
          .example = "[core_attn]"}},
        {{.name = "inside_nvlink",
          .type = KeyType::list,
          .fallback = "[] (no constraint)",
          .choices = {"tp", "cp", "ep", "dp", "pp"},
          .meaning = "groups that must stay inside one NVLink domain (a node; an NVL72 rack): "
                     "a layout that puts one across domains is refused",
          .lands = "ParallelSpec::inside_nvlink",
          .example = "[tp, ep]",
          .commented = true}},
        {{.name = "zero",
          .fallback = "0",
          .min = 0,
          .max = 3,
          .mirrors = "DeepSpeed's ZeRO stage (--use-distributed-optimizer is 1)",
          .meaning = "ZeRO stage: 1 optimizer state, 2 and gradients, 3 and parameters sharded",
          .lands = "ParallelSpec::zero",
          .example = "0"},
         field<&P::zero>},
        {{.name = "fsdp",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtitan's FSDP2",
          .meaning = "zero 3 as PyTorch's FSDP2 runs it (its copies on the compute stream)",
          .lands = "ParallelSpec::fsdp2, zero",
          .example = "true",
          .group = "fsdp",
          .commented = true}},
        {{.name = "data_parallel_shard_degree",
          .fallback = "-1 with a replicate degree, else none",
          .min = -1,
          .max = 1 << 24,
          .mirrors = "torchtitan's data_parallel_shard_degree",
          .meaning = "FSDP2's shard group (-1: the data-parallel ranks left)",
          .lands = "ParallelSpec::dp_shard, fsdp2, zero",
          .example = "-1",
          .group = "fsdp",
          .commented = true},
         field<&P::dp_shard>},
        {{.name = "data_parallel_replicate_degree",
          .fallback = "1",
          .min = 1,
          .max = 1 << 24,
          .mirrors = "torchtitan's data_parallel_replicate_degree",
          .meaning = "HSDP: shard over dp / R, all-reduce the shards over R",
          .lands = "ParallelSpec::dp_replicate",
          .example = "1",
          .group = "fsdp",
          .commented = true},
         field<&P::dp_replicate>},
        {{.name = "overlap_grad_reduce",
          .other_names = {"dp_overlap"},
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "--overlap-grad-reduce",
          .meaning = "gradient reduction overlapped with the backward, in buckets",
          .lands = "ParallelSpec::dp_overlap",
          .example = "true"},
         field<&P::dp_overlap>},
        {{.name = "overlap_param_gather",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--overlap-param-gather",
          .meaning = "zero 1-2: the parameter all-gather overlapped with the next forward",
          .lands = "ParallelSpec::overlap_param_gather",
          .example = "false"},
         field<&P::overlap_param_gather>},
        {{.name = "tp_comm_overlap",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--tp-comm-overlap",
          .meaning = "TP all-gathers and reduce-scatters overlapped with the GEMMs "
                     "(Transformer Engine; needs sequence_parallel)",
          .lands = "ParallelSpec::tp_comm_overlap",
          .example = "false"},
         field<&P::tp_comm_overlap>},
        {{.name = "enable_async_tensor_parallel",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "torchtitan's enable_async_tensor_parallel",
          .meaning = "tp_comm_overlap as PyTorch's async TP (symmetric memory) runs it",
          .lands = "ParallelSpec::async_tp, tp_comm_overlap",
          .example = "true",
          .commented = true},
         field<&P::async_tp>},
        {{.name = "dp_bucket",
          .type = KeyType::bytes,
          .fallback = "25MiB",
          .min = 1,
          .mirrors = "--ddp-bucket-size",
          .meaning = "bytes per gradient bucket",
          .lands = "ParallelSpec::dp_bucket",
          .example = "25MiB"},
         field<&P::dp_bucket>},
        {{.name = "pp_overlap",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--overlap-p2p-communication",
          .meaning = "pipeline sends overlap the sender's next pass",
          .lands = "ParallelSpec::pp_overlap",
          .example = "false"},
         field<&P::pp_overlap>},
        {{.name = "ep",
          .other_names = {"expert_model_parallel_size"},
          .fallback = "1",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--expert-model-parallel-size",
          .meaning = "a mixture's experts spread over ep GPUs",
          .lands = "ParallelSpec::ep",
          .example = "1"},
         field<&P::ep>},
        {{.name = "etp",
          .other_names = {"expert_tensor_parallel_size"},
          .fallback = "tp",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--expert-tensor-parallel-size",
          .meaning = "each expert's matrices split over etp GPUs",
          .lands = "ParallelSpec::etp",
          .example = "8"},
         field<&P::etp>},
        {{.name = "moe_token_dispatcher",
          .type = KeyType::choice,
          .fallback = "alltoall",
          .choices = {"alltoall", "flex"},
          .mirrors = "--moe-token-dispatcher-type",
          .meaning = "alltoall: a copy per (token, expert); flex: DeepEP or HybridEP "
                     "(moe_flex_dispatcher_backend), a copy per destination node across nodes, "
                     "per GPU inside one",
          .lands = "ParallelSpec::flex_dispatcher",
          .example = "alltoall"},
         +[](P& p, std::string_view d) { p.flex_dispatcher = d == "flex"; }},
        {{.name = "moe_flex_dispatcher_backend",
          .type = KeyType::choice,
          .fallback = "deepep",
          .choices = {"deepep", "hybridep"},
          .mirrors = "--moe-flex-dispatcher-backend",
          .meaning = "with moe_token_dispatcher flex: deepep permutes the received tokens by "
                     "expert in kernels of its own; hybridep's dispatch and combine permute, "
                     "pad and unpermute them with kernels of HybridEP's own",
          .lands = "ParallelSpec::hybridep",
          .example = "hybridep"},
         +[](P& p, std::string_view d) { p.hybridep = d == "hybridep"; }},
        {{.name = "moe_deepep_num_sms",
          .fallback = "20",
          .min = 2,
          .max = 1 << 16,
          .mirrors = "--moe-deepep-num-sms",
          .meaning = "with moe_flex_dispatcher_backend deepep: the SMs DeepEP's dispatch and "
                     "combine kernels hold (even), taken from the kernels beside them",
          .lands = "ParallelSpec::deepep_sms",
          .example = "20",
          .commented = true},
         field<&P::deepep_sms>},
        {{.name = "moe_hybridep_num_sms",
          .fallback = "HybridEP's: 24 in one NVLink domain, 8 across domains",
          .min = 1,
          .max = 1 << 16,
          .mirrors = "--moe-hybridep-num-sms",
          .meaning = "with moe_flex_dispatcher_backend hybridep: the SMs HybridEP's dispatch and "
                     "combine kernels hold, taken from the kernels beside them",
          .lands = "ParallelSpec::hybridep_sms",
          .example = "32",
          .commented = true},
         field<&P::hybridep_sms>},
        {{.name = "overlap_moe_expert_parallel_comm",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--overlap-moe-expert-parallel-comm",
          .meaning = "1F1B's forward and backward of two micro-batches run together layer by "
                     "layer, each one's all-to-alls beside the other's kernels (needs ep > 1; "
                     "with pp > 1 the interleaved schedule)",
          .lands = "ParallelSpec::ep_overlap",
          .example = "false"},
         field<&P::ep_overlap>},
        {{.name = "delay_wgrad_compute",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "--delay-wgrad-compute",
          .meaning = "with overlap_moe_expert_parallel_comm, the experts' weight gradients run "
                     "beside the dispatch's backward all-to-all instead of before it",
          .lands = "ParallelSpec::delay_wgrad",
          .example = "false"},
         field<&P::delay_wgrad>},
    };
    return keys;
}

template <MeshAxis A, bool Dcn>
int& mesh_size(ParallelSpec& p) {
    return (Dcn ? p.mesh.dcn : p.mesh.ici)[static_cast<std::size_t>(A)];
}

/// The ici_ and dcn_ keys of one mesh axis (MaxText's base.yml).
template <MeshAxis A>
void add_mesh_keys(std::vector<Key<ParallelSpec>>& keys, std::string_view ici, std::string_view dcn,
                   std::string_view what, std::string_view ici_fallback,
                   std::string_view dcn_fallback) {
    keys.push_back({{.name = ici,
                     .fallback = ici_fallback,
                     .min = -1,
                     .max = 1 << 24,
                     .mirrors = "MaxText's ici_*_parallelism",
                     .meaning = what,
                     .lands = "ParallelSpec::mesh.ici",
                     .example = "1",
                     .group = "mesh",
                     .commented = true},
                    &mesh_size<A, false>});
    keys.push_back({{.name = dcn,
                     .fallback = dcn_fallback,
                     .min = -1,
                     .max = 1 << 24,
                     .mirrors = "MaxText's dcn_*_parallelism",
                     .meaning = "the same across slices (GPUs: nodes), over the DCN",
                     .lands = "ParallelSpec::mesh.dcn",
                     .example = "1",
                     .group = "mesh",
                     .commented = true},
                    &mesh_size<A, true>});
}

std::vector<Key<ParallelSpec>> mesh_keys() {
    using A = MeshAxis;
    std::vector<Key<ParallelSpec>> k;
    add_mesh_keys<A::data>(k, "ici_data_parallelism", "dcn_data_parallelism",
                           "replicas of the weights in a slice, each a share of the batch", "1",
                           "-1 unless another dcn axis is -1");
    add_mesh_keys<A::pipeline>(k, "ici_pipeline_parallelism", "dcn_pipeline_parallelism",
                               "pipeline stages (MaxText's stage axis; GPipe's schedule)", "1",
                               "1");
    add_mesh_keys<A::fsdp>(k, "ici_fsdp_parallelism", "dcn_fsdp_parallelism",
                           "weights, gradients and optimizer state sharded, a share of the "
                           "batch each (ZeRO-3)",
                           "-1 unless another ici axis is -1", "1");
    add_mesh_keys<A::fsdp_transpose>(
        k, "ici_fsdp_transpose_parallelism", "dcn_fsdp_transpose_parallelism",
        "FSDP on the weights' other dimension: sharded as fsdp", "1", "1");
    add_mesh_keys<A::context>(k, "ici_context_parallelism", "dcn_context_parallelism",
                              "each sequence split (keys and values all-gathered)", "1", "1");
    add_mesh_keys<A::tensor>(k, "ici_tensor_parallelism", "dcn_tensor_parallelism",
                             "heads and MLP split, activations sharded between layers (tensor "
                             "parallelism with sequence parallelism's collectives)",
                             "1", "1");
    add_mesh_keys<A::tensor_sequence>(k, "ici_tensor_sequence_parallelism",
                                      "dcn_tensor_sequence_parallelism",
                                      "tensor parallelism with the norms split along the "
                                      "sequence: counted into tp",
                                      "1", "1");
    add_mesh_keys<A::expert>(k, "ici_expert_parallelism", "dcn_expert_parallelism",
                             "a mixture's experts spread (ep), a share of the batch each", "1",
                             "1");
    return k;
}

} // namespace

const std::vector<Key<ParallelSpec>>& parallel_keys() {
    static const std::vector<Key<ParallelSpec>> keys = [] {
        std::vector<Key<ParallelSpec>> k = core_parallel_keys();
        for (auto& m : mesh_keys())
            k.push_back(std::move(m));
        return k;
    }();
    return keys;
}

const std::vector<config::KeySection>& experiment_sections() {
    static const std::vector<config::KeySection> sections{
        config::section_of("",
                           "The experiment: a cluster, a model, how it is trained and how "
                           "it is split.",
                           top_level_keys()),
        config::section_of("model",
                           "The model (`model:`): a preset or a mapping; a mapping may "
                           "`extends:` a preset and change any key.",
                           models::model_keys(),
                           {{"mla", "Multi-head latent attention (DeepSeek-V3; needs attention: "
                                    "flash) [--multi-latent-attention]"},
                            {"moe", "A mixture of experts (Megatron-Core's names; model: "
                                    "mixtral-8x7B, deepseek-v3)"}}),
        config::section_of("training", "How it is trained (`training:`).", training_keys(),
                           {{"fusions", "Elementwise chains fused (Megatron-Core's "
                                        "TransformerConfig knobs) or eager PyTorch, one kernel "
                                        "per op as torchtitan's Llama block writes them"},
                            {"lora", "LoRA fine-tuning (Megatron-Bridge's PEFT LoRA config, "
                                     "peft/lora.py; Hu et al. 2021)"},
                            {"maxtext", "MaxText's names (with parallel's mesh keys)"}}),
        config::section_of("parallel", "How it is split over the GPUs (`parallel:`).",
                           parallel_keys(),
                           {{"split", "Uneven pipeline splits (Megatron-Core's arguments; "
                                      "layer_assignment.h)"},
                            {"fsdp", "FSDP2 and HSDP (torchtitan's names): zero 3 as PyTorch's "
                                     "FSDP2 runs it"},
                            {"mesh", "MaxText's device mesh (its names; -1: the devices "
                                     "left), instead of the sizes above"}}),
    };
    return sections;
}

std::vector<std::string> experiment_key_paths() {
    std::set<std::string> keys;
    for (const config::KeySection& section : experiment_sections()) {
        const std::string prefix = section.path.empty() ? "" : std::string(section.path) + ".";
        for (const config::KeyInfo* k : section.keys) {
            // A section that only ever is a mapping takes no single value.
            if (k->name != "model" && experiment_section(k->name) != nullptr)
                continue;
            keys.insert(prefix + std::string(k->name));
            for (std::string_view other : k->other_names)
                keys.insert(prefix + std::string(other));
        }
    }
    return {keys.begin(), keys.end()};
}

const config::KeySection* experiment_section(std::string_view path) {
    for (const auto& s : experiment_sections()) {
        if (s.path == path)
            return &s;
    }
    return nullptr;
}

} // namespace clustersim::strategies::parallel
