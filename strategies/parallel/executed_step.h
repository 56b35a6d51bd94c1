#pragma once
/// \file
/// What the two executors of a step plan (analytic_executor.h, flow_executor.h) return: for
/// each pipeline rank, when each of its passes, pipeline transfers, data-parallel collectives
/// and its optimizer step ran. Both fidelities fill the same record, so the breakdown, the
/// timeline and the tests read one shape whichever executor ran. Internal to the step model.

#include "sim/time.h"
#include "strategies/parallel/pipeline_schedule.h"
#include "strategies/parallel/step_plan.h"

#include <optional>
#include <string>
#include <vector>

namespace clustersim::strategies::parallel::detail {

/// A labelled span of one stream (from the start of the step).
struct Interval {
    sim::Time start;
    sim::Time end;
    std::string label;
};

/// The transfer of a pass's input from the neighbouring virtual stage.
struct InputTransfer {
    sim::Time start; ///< when the sender's pass ended and the transfer began
    sim::Time end;   ///< when it arrived
};

/// One pass as it ran.
struct ExecutedPass {
    PipePass pass{};
    int vs = 0;
    sim::Time start;
    sim::Time end;
    /// None for the first virtual stage's forward and the last one's backward: their inputs
    /// come from no other stage.
    std::optional<InputTransfer> input;
    sim::Time released; ///< when its rank went on (after a blocking send: later than end)
    /// Beyond its planned time: what the data-parallel collectives running beside it cost it
    /// (overlap_interference.h); end - start includes it.
    sim::Time overlap_slowdown;
};

/// What each rank did, in either fidelity.
struct ExecutedRank {
    /// Empty for a rank that does not end last when the analytic executor runs without a
    /// timeline (run_analytic).
    std::vector<ExecutedPass> passes;
    std::vector<Interval> sends; ///< its pipeline transfers (for the timeline)
    std::vector<Interval> dp;
    sim::Time last_pass_end;
    sim::Time optimizer_start;
    sim::Time optimizer_end;
    sim::Time end;
};

/// "F3", "B3", "W3", "F3.1" (micro-batch, chunk when a rank runs several).
std::string pass_label(const PipePass& p, int virtual_stages);
/// "grad all-reduce 25 MiB".
std::string collective_label(const DpCollective& d);
/// Index of the last pass of each chunk that produces weight gradients (a whole backward or a
/// W pass) in a rank's order (-1: none): the chunk's gradients are complete after it.
std::vector<int> last_backward_of_chunk(const std::vector<PipePass>& order, int chunks);

} // namespace clustersim::strategies::parallel::detail
