#pragma once
/// \file
/// MaxText's device mesh as an experiment file gives it: the `ici_*_parallelism` and
/// `dcn_*_parallelism` keys of `parallel:` (AI-Hypercomputer/maxtext, src/maxtext/configs/
/// base.yml), and `remat_policy` of `training:`. Plain values, read by the key tables
/// (experiment_keys.cpp) and resolved into the step model's layout by device_mesh.h.
///
/// The axes are MaxText's `mesh_axes` in its order (least network-intensive first: data,
/// stage, fsdp, fsdp_transpose, context, tensor, tensor_sequence, expert; its diloco,
/// context_usp_ulysses, context_autoregressive and autoregressive axes are not modelled). `ici`
/// splits the devices of one slice (on GPUs: one node), `dcn` the slices (nodes).

#include <array>
#include <cstdint>
#include <string_view>

namespace clustersim::strategies::parallel {

/// MaxText's mesh axes, in its `mesh_axes` order.
enum class MeshAxis : std::uint8_t {
    data,
    pipeline, ///< MaxText's "stage" axis (ici_pipeline_parallelism)
    fsdp,
    fsdp_transpose,
    context,
    tensor,
    tensor_sequence,
    expert,
};
inline constexpr int kMeshAxes = 8;

/// The key's middle word: "data", "pipeline", "fsdp", ... (`ici_<name>_parallelism`).
std::string_view key_name(MeshAxis a);

struct MeshAxes {
    /// Per axis as given: 0 not given, -1 the rest, else a count.
    std::array<int, kMeshAxes> ici{};
    std::array<int, kMeshAxes> dcn{};

    /// Whether any mesh key is given.
    bool given() const {
        for (int k = 0; k < kMeshAxes; ++k)
            if (ici[static_cast<std::size_t>(k)] != 0 || dcn[static_cast<std::size_t>(k)] != 0)
                return true;
        return false;
    }
    bool operator==(const MeshAxes&) const = default;
};

/// MaxText's remat_policy (src/maxtext/layers/decoders.py, get_remat_policy): which
/// activations of a layer the backward finds saved; the rest it recomputes.
enum class RematPolicy : std::uint8_t {
    not_given,
    full,
    minimal,
    minimal_with_context,
    minimal_offloaded,
    save_dot_with_context_except_mlp,
    save_dot_except_mlpwi,
    save_dot_except_mlp,
    save_qkv_proj,
    qkv_proj_offloaded,
    save_out_proj,
};

} // namespace clustersim::strategies::parallel
