// clustersim init: a commented experiment file with every key, its unit and its default, to
// start from. A test loads it and checks it names every key the loaders accept.
#include "app/cli.h"
#include "app/output.h"
#include "base/error.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

namespace clustersim::app {

/// The template. Values are those of a small but real run (GPT-3 175B's shape with 12 layers
/// on one DGX A100), so that `clustersim run` on it works as written; defaults are in the
/// comments.
const char* const kExperimentTemplate =
    R"(# A clustersim experiment: a cluster, a model, how it is trained and how it is split.
# Run it with `clustersim run FILE`; change any key from the command line with
# `--set parallel.tp=4`. Sizes take units (25MiB, 1GB), times too (2us). Knob names follow
# Megatron-LM where it has one (in brackets).
name: my-experiment              # default: the file's name
description: what this run is for

hardware: dgx-a100               # a preset (`clustersim list`), a path to a hardware file, or a
                                 # mapping that `extends:` one and overrides any key
gpus: 8                          # or `nodes: 1`; default: one node of the hardware

model:                           # a preset (`model: gpt3-175B`) or a mapping; a mapping may
  extends: gpt3-175B             # `extends:` a preset and change any key
  kind: transformer              # transformer | mlp (the lecture's x = gelu(x @ W), with `dim`)
  layers: 12                     # transformer layers [--num-layers]
  hidden: 12288                  # [--hidden-size]
  heads: 96                      # attention heads [--num-attention-heads]
  kv_heads: 96                   # key/value heads, grouped-query attention [--num-query-groups];
                                 # default: heads
  ffn: 49152                     # MLP width [--ffn-hidden-size]; default: 4 x hidden
  seq: 2048                      # sequence length [--seq-length]
  vocab: 51200                   # vocabulary, padded as Megatron pads it
  vocab_divisible_by: 128        # [--make-vocab-size-divisible-by]; default 128
  attention: unfused             # unfused | flash [--use-flash-attn]; default unfused
  activation: gelu               # gelu | swiglu [--swiglu]; default gelu
  norm: layernorm                # layernorm | rmsnorm [--normalization]; default layernorm
  position_embedding: learned    # learned | rope [--position-embedding-type]; default learned
  tied_embeddings: true          # LM head shares the word embeddings; default true
  bias: true                     # linear layers have biases [--disable-bias-linear: false]
  dropout: 0.1                   # hidden and attention dropout, [0, 1); default 0.1
  # A mixture of experts (Megatron-Core's names; `model: mixtral-8x7B`, `deepseek-v3`):
  # num_experts: 8               # routed experts per layer [--num-experts]; default 0 (dense)
  # moe_router_topk: 2           # experts per token [--moe-router-topk]; default 2
  # moe_ffn_hidden_size: 14336   # each expert's MLP width [--moe-ffn-hidden-size]; default ffn
  # moe_shared_expert_intermediate_size: 0  # always-on shared experts' width; default 0
  # first_k_dense_replace: 0     # the first layers keep a dense MLP of ffn; default 0
  # moe_expert_capacity_factor: 1.25  # tokens per expert above it are dropped; default dropless
  # moe_load_imbalance: 1        # busiest expert-parallel rank's tokens over the mean; default 1
  # Multi-head latent attention (DeepSeek-V3, needs attention: flash) [--multi-latent-attention]:
  # kv_lora_rank: 512            # key/value latent [--kv-lora-rank]; default 0 (none)
  # q_lora_rank: 1536            # query latent [--q-lora-rank]
  # qk_head_dim: 128             # per-head query/key dimensions [--qk-head-dim]
  # qk_pos_emb_head_dim: 64      # and their rotary ones [--qk-pos-emb-head-dim]
  # v_head_dim: 128              # per-head value dimensions [--v-head-dim]

training:
  global_batch: 16               # samples per step, all replicas [--global-batch-size]; required
  micro_batch: 1                 # samples per micro-batch [--micro-batch-size]; default 1
  dtype: fp16                    # fp32 | tf32 | fp16 | bf16 | fp8 (H100/H200); default bf16
  optimizer: adam                # adam | adamw | sgd; default adam
  fp8_recipe: delayed            # with dtype fp8: delayed (Transformer Engine) | tensorwise
                                 # (dynamic, as torchao runs it) [--fp8-recipe]; default delayed
  forward_only: false            # no backward, no optimizer (inference-style); default false
  # Elementwise chains fused (Megatron-Core's TransformerConfig knobs; default true each) or
  # eager PyTorch, one kernel per op as torchtitan's Llama block writes them (false):
  apply_rope_fusion: true        # RoPE [--no-rope-fusion]; false also copies GQA's keys/values
  bias_activation_fusion: true   # SwiGLU/GeLU [--no-bias-swiglu-fusion, --no-bias-gelu-fusion]
  masked_softmax_fusion: true    # unfused attention's softmax [--no-masked-softmax-fusion]
  norm_fusion: true              # RMSNorm in one kernel (torchtitan's norm_type fused_rmsnorm)
  compile: false                 # torch.compile (torchtitan's [training] compile): every chain
                                 # fused whatever the four above say; default false

parallel:
  tp: 8                          # tensor parallel [--tensor-model-parallel-size]; default 1
  pp: 1                          # pipeline stages [--pipeline-model-parallel-size]; default 1
  dp: 1                          # data parallel; default gpus / (tp x pp x cp)
  cp: 1                          # context parallel [--context-parallel-size]; default 1
  cp_comm_type: p2p              # p2p | all_gather [--cp-comm-type]; default p2p
  schedule: 1f1b                 # gpipe | 1f1b | interleaved-1f1b | zb-h1 | zb-v | dualpipe;
                                 # default 1f1b; torchtitan's name for it,
                                 #  pipeline_schedule: 1f1b, is read too
  virtual_stages: 1              # model chunks per GPU for interleaved-1f1b; default 1
  account_for_embedding_in_pipeline_split: false  # the embedding and the loss as a layer
  account_for_loss_in_pipeline_split: false       # each of an even split; default false
                                 # other uneven splits [Megatron-Core's arguments]:
                                 #  decoder_first_pipeline_num_layers: 15 and
                                 #  decoder_last_pipeline_num_layers: 15 (layers of the
                                 # first/last pipeline rank), or
                                 #  pipeline_model_parallel_layout: "Et|(tt|)*30L" (E
                                 # embedding, t layer, L loss, | between stages)
  sequence_parallel: true        # [--sequence-parallel]; default false
  recompute: selective           # none | selective | full | auto [--recompute-granularity];
                                 # default none
  selective_recompute: attention # attention (Megatron's) | op (torchtitan's
                                 # selective_ac_option op, tp 1); default attention
  recompute_modules: [core_attn] # what Megatron's selective recomputes: core_attn |
                                 # layernorm | mla_up_proj | mlp | moe_act | shared_experts
                                 # | moe [--recompute-modules]; default [core_attn]
  zero: 0                        # ZeRO stage 0-3 (FSDP = 3); default 0; torchtitan's
                                 #  fsdp: true or  data_parallel_shard_degree: -1 is zero 3
                                 # as FSDP2 (its copies on the compute stream)
                                 # (HSDP:  data_parallel_replicate_degree: R > 1 shards
                                 # over dp / R, all-reduces the shards over R)
  overlap_grad_reduce: true      # gradient reduction overlapped with the backward, in buckets
                                 # [--overlap-grad-reduce]; default true; its old name,
                                 #  dp_overlap: true, is still read
  overlap_param_gather: false    # zero 1-2: parameter all-gather overlapped with the next
                                 # forward [--overlap-param-gather]; default false
  tp_comm_overlap: false         # TP all-gather/reduce-scatter overlapped with the GEMMs
                                 # (needs sequence_parallel) [--tp-comm-overlap]; default false;
                                 # torchtitan's  enable_async_tensor_parallel: true is
                                 # PyTorch's async TP (symmetric memory) instead
  dp_bucket: 25MiB               # bytes per gradient bucket; default 25MiB (PyTorch DDP)
  pp_overlap: false              # pipeline sends overlap the next pass
                                 # [--overlap-p2p-communication]; default false
  ep: 1                          # mixtures of experts: experts over ep GPUs
                                 # [--expert-model-parallel-size]; default 1
  etp: 8                         # each expert split over etp GPUs
                                 # [--expert-tensor-parallel-size]; default tp
  moe_token_dispatcher: alltoall # alltoall: a copy per (token, expert); flex: DeepEP, a copy
                                 # per destination node across nodes, per GPU inside one
                                 # [--moe-token-dispatcher-type]; default alltoall
)";

void register_init(CLI::App& app, Io io, int& /*exit_code*/) {
    auto* cmd = app.add_subcommand(
        "init", "Write a commented experiment file with every key, its unit and default");
    auto path = std::make_shared<std::string>();
    auto force = std::make_shared<bool>(false);
    cmd->add_option("--out,-o", *path, "Write the template to this file (default: print it)");
    cmd->add_flag("--force", *force, "Replace the --out file when it exists");
    cmd->callback([io, path, force] {
        if (path->empty()) {
            io.out << kExperimentTemplate;
            return;
        }
        // The file is likely the user's experiment, edited since the last init.
        std::error_code ec;
        if (!*force && std::filesystem::is_regular_file(*path, ec))
            throw InputError("--out " + *path +
                             ": the file exists; pass --force to replace it with the template");
        write_file_atomically(*path, kExperimentTemplate);
    });
}

} // namespace clustersim::app
