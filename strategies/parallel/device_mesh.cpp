// MaxText's mesh resolved into the step model's layout, and placed on the torus as JAX's
// create_device_mesh places it (device_mesh.h says what each axis becomes and why).
#include "strategies/parallel/device_mesh.h"

#include "base/text.h"
#include "hardware/torus.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

namespace clustersim::strategies::parallel {

std::string_view key_name(MeshAxis a) {
    switch (a) {
    case MeshAxis::data:
        return "data";
    case MeshAxis::pipeline:
        return "pipeline";
    case MeshAxis::fsdp:
        return "fsdp";
    case MeshAxis::fsdp_transpose:
        return "fsdp_transpose";
    case MeshAxis::context:
        return "context";
    case MeshAxis::tensor:
        return "tensor";
    case MeshAxis::tensor_sequence:
        return "tensor_sequence";
    case MeshAxis::expert:
        return "expert";
    }
    return "?";
}

namespace {

using Sizes = std::array<int, kMeshAxes>;

std::size_t at(MeshAxis a) {
    return static_cast<std::size_t>(a);
}

std::string mesh_key(int k, bool dcn) {
    return fmt::format("parallel.{}_{}_parallelism", dcn ? "dcn" : "ici",
                       key_name(static_cast<MeshAxis>(k)));
}

InputError refusal(const ExperimentSpec& e, const std::string& what, const std::string& key) {
    return InputError(SourceLocation{e.file, 0, 0, key}, what, InputError::KeyShown::no);
}

/// The given axes as `what` their product (", " joined "fsdp 16 x tensor 4").
std::string product_text(const Sizes& v) {
    std::string out;
    for (int k = 0; k < kMeshAxes; ++k)
        if (v[static_cast<std::size_t>(k)] > 1)
            out += fmt::format("{}{} {}", out.empty() ? "" : " x ",
                               key_name(static_cast<MeshAxis>(k)), v[static_cast<std::size_t>(k)]);
    return out.empty() ? "1" : out;
}

/// MaxText's fill_unspecified_mesh_axes (src/maxtext/utils/maxtext_utils.py): at most one -1,
/// which takes `target` over the others' product; the product must be `target`. An axis not
/// given is 1, but `automatic` (ici fsdp, dcn data: base.yml's -1) takes the rest when no
/// other axis of the network is -1.
std::optional<InputError> fill(const ExperimentSpec& e, Sizes& v, MeshAxis automatic, int target,
                               bool dcn, const std::string& unit) {
    int rest = -1;
    for (int k = 0; k < kMeshAxes; ++k) {
        if (v[static_cast<std::size_t>(k)] != -1)
            continue;
        if (rest >= 0)
            return refusal(e,
                           fmt::format("{} and {} are both -1; at most one {} axis takes the {} "
                                       "left (MaxText's rule): give one of them a count",
                                       mesh_key(rest, dcn).substr(9), mesh_key(k, dcn).substr(9),
                                       dcn ? "dcn" : "ici", unit),
                           mesh_key(k, dcn));
        rest = k;
    }
    for (int k = 0; k < kMeshAxes; ++k) {
        int& n = v[static_cast<std::size_t>(k)];
        if (n == 0)
            n = k == static_cast<int>(automatic) && rest < 0 ? -1 : 1;
        if (n == -1)
            rest = k;
    }
    std::int64_t product = 1;
    for (int n : v)
        product *= n > 0 ? n : 1;
    if (rest >= 0) {
        if (target % product != 0)
            return refusal(e,
                           fmt::format("the other {} axes multiply to {} ({}), which does not "
                                       "divide the {} {}, so -1 has no whole size; give axes "
                                       "whose product divides {}",
                                       dcn ? "dcn" : "ici", product, product_text(v), target, unit,
                                       target),
                           mesh_key(rest, dcn));
        v[static_cast<std::size_t>(rest)] = static_cast<int>(target / product);
        return std::nullopt;
    }
    if (product == target)
        return std::nullopt;
    // Blame the largest axis given, and say what it would have to be.
    int blame = 0;
    for (int k = 1; k < kMeshAxes; ++k)
        if (v[static_cast<std::size_t>(k)] > v[static_cast<std::size_t>(blame)])
            blame = k;
    const std::int64_t others = product / v[static_cast<std::size_t>(blame)];
    const std::string fix = target % others == 0
                                ? fmt::format("{} {} with the others as given",
                                              mesh_key(blame, dcn).substr(9), target / others)
                                : fmt::format("axes whose product is {}", target);
    return refusal(e,
                   fmt::format("the {} axes multiply to {} ({}), not the {} {}: use {}, or -1 on "
                               "one axis for the {} left",
                               dcn ? "dcn" : "ici", product, product_text(v), target, unit, fix,
                               unit),
                   mesh_key(blame, dcn));
}

/// Each logical axis's torus axes, as _create_device_mesh_for_nd_torus assigns them.
struct TorusPlacement {
    std::vector<int> physical;                    ///< x, y, z (and a chip's devices)
    std::array<std::vector<int>, kMeshAxes> axes; ///< per logical axis, ascending
};

/// The first `r` of `free` (indices ascending, in itertools.combinations' order) whose sizes
/// multiply to `size`; empty when none.
bool first_combination(const std::vector<int>& sizes, int r, std::int64_t size, int from,
                       std::vector<int>& chosen) {
    if (r == 0) {
        std::int64_t p = 1;
        for (int a : chosen)
            p *= sizes[static_cast<std::size_t>(a)];
        return p == size;
    }
    for (int a = from; a < static_cast<int>(sizes.size()); ++a) {
        chosen.push_back(a);
        if (first_combination(sizes, r - 1, size, a + 1, chosen))
            return true;
        chosen.pop_back();
    }
    return false;
}

std::optional<InputError> place_on_torus(const ExperimentSpec& e, const Sizes& ici,
                                         TorusPlacement& t) {
    const hardware::TorusSpec& torus = e.cluster.torus;
    t.physical = {torus.shape[0], torus.shape[1], torus.shape[2]};
    if (torus.devices_per_chip > 1)
        t.physical.push_back(torus.devices_per_chip);
    std::vector<int> free = t.physical;
    for (int k = kMeshAxes - 1; k >= 0; --k) {
        const int size = ici[static_cast<std::size_t>(k)];
        if (size == 1)
            continue;
        std::vector<int> chosen;
        for (int r = std::min(3, static_cast<int>(free.size())); r >= 1 && chosen.empty(); --r)
            if (!first_combination(free, r, size, 0, chosen))
                chosen.clear();
        if (chosen.empty()) {
            std::string left;
            for (int n : free)
                left += fmt::format("{}{}", left.empty() ? "" : "x", n);
            return refusal(
                e,
                fmt::format("{} {} is not a product of whole torus axes of the slice {} "
                            "(axes left by the axes placed before it: {}), so JAX's "
                            "create_device_mesh cannot place it (MaxText's "
                            "allow_split_physical_axes is off); choose sizes that are products "
                            "of the slice's axes, or another slice shape",
                            mesh_key(k, false).substr(9), size,
                            hardware::to_string(torus.shape, torus.dims), left),
                mesh_key(k, false));
        }
        for (int a : chosen)
            free[static_cast<std::size_t>(a)] = 0;
        t.axes[static_cast<std::size_t>(k)] = chosen;
    }
    return std::nullopt;
}

/// The device (in the slice) at the ici mesh position `idx`.
int torus_device(const hardware::TorusSpec& torus, const TorusPlacement& t, const Sizes& idx) {
    std::array<int, 4> coord{};
    for (int k = 0; k < kMeshAxes; ++k) {
        int v = idx[static_cast<std::size_t>(k)];
        const auto& axes = t.axes[static_cast<std::size_t>(k)];
        for (auto a = axes.rbegin(); a != axes.rend(); ++a) {
            const int n = t.physical[static_cast<std::size_t>(*a)];
            coord[static_cast<std::size_t>(*a)] = v % n;
            v /= n;
        }
    }
    hardware::TorusPlace place;
    place.chip = {coord[0], coord[1], coord[2]};
    place.core = coord[3];
    return hardware::device_at(torus, place);
}

/// Megatron-Core's rank r (gpu_of) as a position on the mesh: tp = tensor x tensor_sequence,
/// dp = data x fsdp x fsdp_transpose x expert (expert fastest, as expert_gpu_of's ranks need).
Sizes mesh_position(int r, const ParallelSpec& p, const Sizes& size) {
    Sizes idx{};
    const int t = r % p.tp;
    int q = r / p.tp;
    const int c = q % p.cp;
    q /= p.cp;
    const int d = q % p.dp;
    const int ex = size[at(MeshAxis::expert)], ft = size[at(MeshAxis::fsdp_transpose)];
    const int shard = size[at(MeshAxis::fsdp)] * ft * ex;
    idx[at(MeshAxis::pipeline)] = q / p.dp;
    idx[at(MeshAxis::tensor)] = t / size[at(MeshAxis::tensor_sequence)];
    idx[at(MeshAxis::tensor_sequence)] = t % size[at(MeshAxis::tensor_sequence)];
    idx[at(MeshAxis::context)] = c;
    idx[at(MeshAxis::data)] = d / shard;
    idx[at(MeshAxis::fsdp)] = d % shard / (ft * ex);
    idx[at(MeshAxis::fsdp_transpose)] = d % (ft * ex) / ex;
    idx[at(MeshAxis::expert)] = d % ex;
    return idx;
}

/// device_order: the device of each rank (create_hybrid_device_mesh's blocks of slices).
void place_ranks(ExperimentSpec& e, const Sizes& ici, const Sizes& dcn, int per_slice,
                 const TorusPlacement* torus) {
    Sizes size{};
    for (std::size_t k = 0; k < size.size(); ++k)
        size[k] = ici[k] * dcn[k];
    ParallelSpec& p = e.parallel;
    p.device_order.assign(static_cast<std::size_t>(e.gpus), 0);
    for (int r = 0; r < e.gpus; ++r) {
        const Sizes idx = mesh_position(r, p, size);
        Sizes in_slice{};
        int slice = 0, local = 0;
        for (std::size_t k = 0; k < idx.size(); ++k) {
            slice = slice * dcn[k] + idx[k] / ici[k];
            in_slice[k] = idx[k] % ici[k];
            local = local * ici[k] + in_slice[k];
        }
        if (torus != nullptr)
            local = torus_device(e.cluster.torus, *torus, in_slice);
        p.device_order[static_cast<std::size_t>(r)] = slice * per_slice + local;
    }
}

/// remat_policy as the step model's recompute (device_mesh.h).
std::optional<InputError> apply_remat(ExperimentSpec& e) {
    using R = RematPolicy;
    const R r = e.training.remat;
    if (r == R::not_given)
        return std::nullopt;
    RecomputePolicy policy = RecomputePolicy::full;
    std::uint8_t modules = models::recompute_bit(models::RecomputeModule::core_attn);
    // The attention's output ("context") saved by the with_context policies: its kernel does
    // not run again (core_attn off; models::LayerConfig::remat_backward_reads).
    const bool context = r == R::minimal_with_context || r == R::save_dot_with_context_except_mlp;
    if (r == R::minimal || r == R::minimal_with_context || r == R::minimal_offloaded) {
        policy = RecomputePolicy::selective;
    } else if (r == R::save_dot_except_mlp || r == R::save_dot_except_mlpwi ||
               r == R::save_dot_with_context_except_mlp) {
        policy = RecomputePolicy::selective;
        modules |= models::recompute_bit(e.model.is_moe() ? models::RecomputeModule::moe
                                                          : models::RecomputeModule::mlpwi);
    }
    if (context)
        modules &=
            static_cast<std::uint8_t>(~models::recompute_bit(models::RecomputeModule::core_attn));
    ParallelSpec& p = e.parallel;
    const bool same = p.recompute == policy &&
                      (policy != RecomputePolicy::selective || p.recompute_modules == modules);
    if (p.recompute != RecomputePolicy::none && !same)
        return refusal(e,
                       "remat_policy is MaxText's name for what parallel.recompute says; give one "
                       "of them",
                       "training.remat_policy");
    p.recompute = policy;
    p.recompute_modules = modules;
    return std::nullopt;
}

/// The batch from per_device_batch_size (or global_batch), in whole sequences per batch shard
/// and micro-batch.
std::optional<InputError> apply_batch(ExperimentSpec& e, int batch_shards, int micro_batches) {
    TrainingSpec& t = e.training;
    const int shards = batch_shards * micro_batches;
    const char* unit = micro_batches > 1 ? "batch shard and pipeline micro-batch" : "batch shard";
    if (t.per_device_batch_size > 0) {
        const double sequences = t.per_device_batch_size * e.gpus;
        const double whole = std::round(sequences / shards) * shards;
        if (whole < shards || std::abs(sequences - whole) > 1e-9 * std::max(1.0, sequences))
            return refusal(
                e,
                fmt::format("per_device_batch_size {} x {} devices = {} sequences, over {} {}s "
                            "(data x fsdp x fsdp_transpose x expert{}) leaves a fraction of a "
                            "sequence per {}; use a multiple of {}",
                            base::round_significant(t.per_device_batch_size, 6), e.gpus,
                            base::round_significant(sequences, 6), shards, unit,
                            micro_batches > 1 ? ", times the stages" : "", unit,
                            base::round_significant(static_cast<double>(shards) / e.gpus, 6)),
                "training.per_device_batch_size");
        t.global_batch = static_cast<std::int64_t>(whole);
    } else if (t.global_batch % shards != 0) {
        return refusal(e,
                       fmt::format("global_batch {} is not a whole number of sequences per {} "
                                   "({} of them); use a multiple of {}",
                                   t.global_batch, unit, shards, shards),
                       "training.global_batch");
    }
    t.micro_batch = static_cast<int>(t.global_batch / shards);
    return std::nullopt;
}

} // namespace

// check-function-size: the mesh's sizes into ParallelSpec, one assignment each.
std::optional<InputError> resolve_mesh(ExperimentSpec& e) {
    if (auto error = apply_remat(e))
        return error;
    ParallelSpec& p = e.parallel;
    if (!p.mesh.given() && e.training.per_device_batch_size <= 0)
        return std::nullopt;
    // MaxText's defaults (base.yml): FSDP over a slice, data parallelism over the slices.
    if (!p.mesh.given() &&
        (p.tp != 1 || p.pp != 1 || p.cp != 1 || p.ep != 1 || p.zero != 0 || p.dp != 0))
        return refusal(e,
                       "per_device_batch_size is MaxText's and goes with its mesh keys "
                       "(ici_*, dcn_*_parallelism); with tp, pp, cp, ep, dp or zero give "
                       "global_batch and micro_batch",
                       "training.per_device_batch_size");
    const int per_slice = std::min(e.gpus, e.cluster.node.gpus);
    if (e.gpus % per_slice != 0)
        return refusal(e,
                       fmt::format("MaxText's ici axes split one slice (node) of {} devices: "
                                   "use a multiple of {}",
                                   per_slice, per_slice),
                       "gpus");
    const char* slice_unit = e.cluster.torus.present() ? "devices of a slice" : "GPUs of a node";
    Sizes ici = p.mesh.ici, dcn = p.mesh.dcn;
    if (auto error = fill(e, ici, MeshAxis::fsdp, per_slice, false, slice_unit))
        return error;
    if (auto error = fill(e, dcn, MeshAxis::data, e.gpus / per_slice, true,
                          e.cluster.torus.present() ? "slices" : "nodes"))
        return error;
    TorusPlacement torus;
    if (e.cluster.torus.present())
        if (auto error = place_on_torus(e, ici, torus))
            return error;
    const auto both = [&](MeshAxis a) { return ici[at(a)] * dcn[at(a)]; };
    const int data = both(MeshAxis::data);
    const int shard =
        both(MeshAxis::fsdp) * both(MeshAxis::fsdp_transpose) * both(MeshAxis::expert);
    p.tp = both(MeshAxis::tensor) * both(MeshAxis::tensor_sequence);
    p.pp = both(MeshAxis::pipeline);
    p.cp = both(MeshAxis::context);
    p.ep = both(MeshAxis::expert);
    p.dp = data * shard;
    p.cp_comm_type = models::CpCommType::all_gather;
    p.sequence_parallel = p.tp > 1 && e.model.is_transformer();
    p.schedule = p.pp > 1 ? PipelineSchedule::gpipe : PipelineSchedule::one_f_one_b;
    // Weights sharded over fsdp, fsdp_transpose and expert, and over context as MaxText's
    // rules shard `embed` (ParallelSpec::shard_cp): ZeRO-3, hybrid with a data axis beside it.
    const bool sharded = both(MeshAxis::fsdp) * both(MeshAxis::fsdp_transpose) * p.cp > 1;
    p.zero = sharded ? 3 : 0;
    p.dp_replicate = sharded ? data : 1;
    p.dp_shard = sharded && data > 1 ? shard : 0;
    // The mesh keeps its given values (a -1 refills when a sweep changes another axis); MaxText's
    // defaults are written in, so that validating again takes the same path.
    if (!p.mesh.given()) {
        p.mesh.ici[at(MeshAxis::fsdp)] = -1;
        p.mesh.dcn[at(MeshAxis::data)] = -1;
    }
    place_ranks(e, ici, dcn, per_slice, e.cluster.torus.present() ? &torus : nullptr);
    return apply_batch(e, p.dp, p.pp);
}

} // namespace clustersim::strategies::parallel
