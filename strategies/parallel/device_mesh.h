#pragma once
/// \file
/// MaxText's device mesh (mesh_axes.h) resolved into the step model's layout: the sizes of
/// ParallelSpec, the batch, the recompute, and where each rank runs.
///
/// What each axis becomes (AI-Hypercomputer/maxtext, src/maxtext/configs/base.yml,
/// logical_axis_rules, says what each shards):
/// - data: replicas (the batch split, weights whole): data parallelism; with FSDP beside it,
///   hybrid sharding (ParallelSpec::dp_replicate).
/// - fsdp, fsdp_transpose: the batch split and every weight sharded, on one dimension or the
///   other: one FSDP group of their product, as ZeRO-3 (param_gathers.h: each layer's weights
///   all-gathered before its forward and its backward, its gradients reduce-scattered after,
///   prefetched one layer ahead, which is how XLA's scheduler overlaps them with the layers).
///   The two differ in which dimension is cut, not in what travels.
/// - context: context parallelism with MaxText's default context_parallel_strategy
///   all_gather (keys and values all-gathered).
/// - tensor, tensor_sequence: tensor parallelism of their product. MaxText shards the
///   activations between layers on the embedding (tensor) or the norms on the sequence
///   (tensor_sequence) over them: an all-gather before each block's first GEMMs and a
///   reduce-scatter after its last, the collectives of Megatron's sequence parallelism, which
///   is switched on with it. XLA's overlap of these collectives with the GEMMs (async
///   collective fusion and collective matmul, LIBTPU_INIT_ARGS) is not assumed: give
///   `enable_async_tensor_parallel: true` beside the mesh keys where the run turns it on.
/// - expert: a mixture's experts (ep); it also splits the batch of the dense layers, so it
///   counts into the data-parallel size.
/// - stage: pipeline stages, GPipe's schedule (MaxText's pipeline runs every micro-batch's
///   forward, then the backwards), with num_pipeline_microbatches' default of one
///   micro-batch per stage; circular repeats are not modelled.
/// Without a pipeline, one micro-batch of the whole batch per step (no gradient accumulation).
///
/// Where the ranks run: the ici axes are placed on a slice's torus as JAX's
/// create_device_mesh places them (jax-ml/jax, jax/_src/mesh_utils.py:
/// _create_device_mesh_for_nd_torus): from the most network-intensive axis (the last) to the
/// first, each takes the largest set of whole torus axes whose product is its size (the
/// first such set in itertools.combinations' order), and within it its index runs over those
/// axes row-major; an axis no set fits is refused, as JAX refuses it unless MaxText's
/// allow_split_physical_axes (off by default) is set. A chip's devices (TPU7x) are a fourth
/// physical axis after z. The dcn axes join slices as create_hybrid_device_mesh does: an
/// axis's index is its slice block times its ici size plus its ici index, slices row-major
/// over the dcn mesh. On GPUs the ici mesh is one node's GPUs in order (create_device_mesh's
/// reshape), dcn the nodes.
///
/// Host overhead: XLA runs the step as one compiled program, so nothing is launched from the
/// host per op; the TPU presets have no `framework:` section, so its host, micro-batch and
/// collective overheads are zero, and the per-op fixed cost is the compute model's
/// launch_overhead (a fused op's pipeline fill, an assumption in each preset).
///
/// remat_policy onto the step model's recompute (decoders.py, get_remat_policy: what each
/// saves; what it does not save and the backward needs is recomputed; a GEMM whose output only
/// enters the residual sum, the MLP's down projection, needs nothing recomputed). The recompute
/// is JAX's remat (models::LayerConfig::remat_backward_reads): only what the backward reads.
/// - minimal, minimal_with_context, minimal_offloaded (every projection saved by name): the
///   norms, RoPE, the residual add and the MLP's activation again, and the attention kernel
///   (core_attn) unless its output is saved too (the with_context policies).
/// - save_dot_except_mlp, save_dot_except_mlpwi, save_dot_with_context_except_mlp (the MLP's
///   input projections recomputed): as minimal with the `mlpwi` module (the input projections
///   and the activation, not the down projection); a mixture's whole `moe` module.
/// - full, save_qkv_proj, qkv_proj_offloaded, save_out_proj (the attention and the MLP
///   recomputed): full recompute up to the MLP's down projection (not it, its reduction nor
///   the residual add after it), an upper bound by one projection for the last three.
/// Offloading to the host is not modelled (its transfers overlap the layers).

#include "base/error.h"
#include "strategies/parallel/experiment.h"

#include <optional>

namespace clustersim::strategies::parallel {

/// Resolves the mesh, per_device_batch_size and remat_policy of `e` (when given) into its
/// parallel sizes, batch, recompute and device_order; the same result when called again. The
/// InputError names the key to change and the values that would work: axes whose product is
/// not the devices of a slice (or the slices), two -1 axes on one network, an axis the torus
/// cannot hold, a per_device_batch_size that leaves a fraction of a sequence per batch shard.
std::optional<InputError> resolve_mesh(ExperimentSpec& e);

} // namespace clustersim::strategies::parallel
