#pragma once
/// \file
/// The `flow` executor of a step plan: the same passes as tasks on in-order streams (compute,
/// pipeline sends, data-parallel collectives) run by the event engine, with every pipeline
/// transfer and data-parallel collective played on the flow network of the cluster graph, so
/// that they contend for NICs and links. Tensor-parallel collectives stay inside the passes
/// (analytic): they are serial with the compute stream and, within a node, on links nothing
/// else uses. Slower than the analytic executor; it agrees with it where nothing contends.

#include "strategies/parallel/executed_step.h"
#include "strategies/parallel/step_plan.h"

#include <cstdint>
#include <vector>

namespace clustersim::strategies::parallel::detail {

struct FlowRun {
    std::vector<ExecutedRank> ranks;
    std::uint64_t events = 0; ///< engine events processed
    /// GPUs whose communication was simulated, and GPUs whose flows were all left to an
    /// identical representative (symmetry), ascending.
    std::vector<int> flow_gpus, represented_gpus;
    std::uint64_t flows = 0, represented_flows = 0;
};

/// Runs `plan` on the flow network of its topology. `symmetry`: one representative of each
/// class of identical flows (FlowOptions::symmetry, exact); false simulates every flow.
/// `max_seconds`: refuse, before it runs, a step whose flows would take at least that much CPU
/// (0: no bound).
FlowRun run_flow(const StepPlan& plan, bool symmetry = true,
                 double max_seconds = collectives::kDefaultFlowMaxSeconds);

} // namespace clustersim::strategies::parallel::detail
