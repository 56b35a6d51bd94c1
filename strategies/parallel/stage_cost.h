#pragma once
/// \file
/// The cost of a virtual stage of the pipeline: its forward, backward and split backward passes
/// on the pass clock (pass_clock.h), the data-parallel gradient buckets its backward fills, its
/// activations, parameters and gathered bytes; and the context every stage of a plan is costed
/// in (layer works, communicators, the pass environment), with a cache of the stages costed so
/// far. Internal to the step model: step_plan.cpp builds the context and drives the costing,
/// param_gathers.h re-costs stages whose parameter gathers it moves ahead.

#include "hardware/compute_model.h"
#include "strategies/models/layer_work.h"
#include "strategies/parallel/collective_times.h"
#include "strategies/parallel/pass_clock.h"
#include "strategies/parallel/step_plan.h"

#include <array>
#include <memory>
#include <utility>
#include <vector>

namespace clustersim::strategies::parallel::detail {

/// Everything that depends on the experiment but not on a stage's recompute choice.
/// The kinds of layer a stage may hold (PlanContext::kinds) and its layer groups: every kind
/// under each of the three recomputes.
inline constexpr std::size_t kLayerKinds = 4;
inline constexpr std::size_t kLayerGroups = 3 * kLayerKinds;
/// Layers of a stage per group: recompute full, selective, none, each by kind.
using GroupCounts = std::array<int, kLayerGroups>;

struct PlanContext {
    /// Every member from its initialiser, the layer works as LayerWork's default constructor
    /// leaves them (their op lists' slots uninitialised): an aggregate initialisation of this
    /// struct cleared all its ~97 KiB first (a memset per configuration).
    PlanContext(const ExperimentSpec& experiment, const FrameworkSpec& framework, bool zero3_)
        : e(experiment)
        , cm(experiment.cluster)
        , tp_times(nullptr)
        , fw(framework)
        , zero3(zero3_) {}

    const ExperimentSpec& e;
    const hardware::ComputeModel cm;
    models::LayerWork embedding;
    models::LayerWork head;
    std::unique_ptr<collectives::Communicator> tp_comm;
    CollectiveTimes tp_times;
    FrameworkSpec fw;
    /// The data-parallel (shard) group of pipeline rank 0 (the others are alike): parameter
    /// gathers.
    std::unique_ptr<collectives::Communicator> dp_comm;
    CollectiveTimes dp_times{nullptr};
    /// Experts laid out apart under ZeRO-3 (FSDP2 with expert parallelism): the routed experts'
    /// gathers over the expert-data-parallel group of pipeline rank 0 (torchtitan's efsdp).
    std::unique_ptr<collectives::Communicator> edp_comm;
    CollectiveTimes edp_times{nullptr};
    PassEnv env;
    bool zero3 = false; ///< parameters gathered per layer in every pass
    /// Record the stages' unit spans (build_step_plan's `unit_spans`: for a timeline only).
    bool unit_spans = false;

    /// Every kind of layer, by Recompute (none, selective, full): [0] the model's layers with
    /// experts, or its dense layers), [1] a mixture of experts' dense layers
    /// (first_k_dense_replace, moe_layer_freq), [2] and [3] the same two with sliding-window
    /// attention. Only the kinds the model has are built.
    std::array<std::array<models::LayerWork, 3>, kLayerKinds> kinds;
    /// Experts laid out apart: the expert-parallel and expert tensor-parallel groups of the
    /// first GPU (the others are alike).
    std::unique_ptr<collectives::Communicator> ep_comm{};
    CollectiveTimes ep_times{nullptr};
    std::unique_ptr<collectives::Communicator> etp_comm{};
    CollectiveTimes etp_times{nullptr};
    /// The flex dispatcher's rail: the expert-parallel group's GPUs of one local rank.
    std::unique_ptr<collectives::Communicator> ep_rail_comm{};
    CollectiveTimes ep_rail_times{nullptr};

    /// What a virtual stage's costs depend on beside this context (cost_stage): its recompute
    /// plan, how many of its layers are a mixture of experts' dense ones, and whether it holds
    /// the embedding and the head. The rest of its inputs (layer works, communicators,
    /// framework, pass environment) are the context's and fixed once the stages are costed, and
    /// the collective times cached in it are pure functions of the collective, so two stages
    /// alike in this key get identical costs: a pipeline's middle stages, with equal layer
    /// counts, are costed once per plan instead of once each.
    struct StageKey {
        int layers = 0;
        RecomputePlan recompute;
        GroupCounts counts{};
        bool embedding = false;
        bool head = false;
        /// VirtualStagePlan::gathered_ahead, gather_lead and gather_beside: a chunk's parameter
        /// gather issued ahead changes its first forward's cost.
        bool gathered_ahead = false;
        sim::Time gather_lead;
        sim::Time gather_beside;
        bool operator==(const StageKey&) const = default;
    };
    /// The stages costed so far, by key (a handful per plan: searched in order).
    std::vector<std::pair<StageKey, VirtualStagePlan>> stage_costs{};

    const models::LayerWork& layer_of(models::Recompute r) const {
        return kinds[0][static_cast<std::size_t>(r)];
    }
};

/// Costs, activations, gradient buckets and gathered bytes of virtual stage `st` under recompute
/// plan `rp`, or those of a stage costed before with the same key (PlanContext::StageKey); the
/// stage keeps its place (index, rank, chunk, first layer, transfers).
void cost_stage(PlanContext& ctx, VirtualStagePlan& st, const RecomputePlan& rp);

/// The plan with every one of `layers` layers under recompute `r`.
RecomputePlan uniform(models::Recompute r, int layers);

} // namespace clustersim::strategies::parallel::detail
