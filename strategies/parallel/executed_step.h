#pragma once
/// \file
/// What the two executors of a step plan (analytic_executor.h, flow_executor.h) return: for
/// each pipeline rank, when each of its passes, pipeline transfers, data-parallel collectives
/// and its optimizer step ran. Both fidelities fill the same record, so the breakdown, the
/// timeline and the tests read one shape whichever executor ran. Internal to the step model.

#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/step_plan.h"

#include <optional>
#include <string>
#include <vector>

namespace clustersim::strategies::parallel::detail {

/// A labelled span of one stream (seconds from the start of the step).
struct Interval {
    double start = 0;
    double end = 0;
    std::string label;
};

/// The transfer of a pass's input from the neighbouring virtual stage.
struct InputTransfer {
    double start = 0; ///< when the sender's pass ended and the transfer began
    double end = 0;   ///< when it arrived
};

/// One pass as it ran.
struct ExecutedPass {
    PipePass pass{};
    int vs = 0;
    double start = 0;
    double end = 0;
    /// None for the first virtual stage's forward and the last one's backward: their inputs
    /// come from no other stage.
    std::optional<InputTransfer> input;
    double released = 0; ///< when its rank went on (after a blocking send: later than end)
};

/// What each rank did, in either fidelity.
struct ExecutedRank {
    std::vector<ExecutedPass> passes;
    std::vector<Interval> sends; ///< its pipeline transfers (for the timeline)
    std::vector<Interval> dp;
    double last_pass_end = 0;
    double optimizer_start = 0;
    double optimizer_end = 0;
    double end = 0;
};

/// "F3", "B3", "F3.1" (micro-batch, chunk when interleaved).
std::string pass_label(const PipePass& p, int virtual_stages);
/// "grad all-reduce 25 MiB".
std::string collective_label(const DpCollective& d);
/// Index of the last backward pass of each chunk in a rank's order (-1: none).
std::vector<int> last_backward_of_chunk(const std::vector<PipePass>& order, int chunks);

} // namespace clustersim::strategies::parallel::detail
