#pragma once
/// \file
/// Times a pipeline schedule without an event queue: the passes of all ranks form a DAG
/// (each rank runs its passes in order; a forward waits for the previous virtual stage's
/// forward of the same micro-batch plus the activation transfer; a backward waits for the next
/// virtual stage's backward plus the gradient transfer), and with fixed durations its
/// earliest-start times follow in one pass over the DAG. This is the `analytic` fidelity of a
/// training step: exact for fixed durations, and cheap enough for sweeps of thousands of
/// configurations per second. The `flow` fidelity plays the same DAG on the event engine with
/// transfers and collectives contending on the network graph; without contention the two agree.

#include "sim/time.h"
#include "strategies/parallel/pipeline_schedule.h"

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace clustersim::strategies::parallel {

/// Durations the timing needs.
struct PassDurations {
    /// Duration of a pass on virtual stage `vs` (compute, recompute and exposed TP comm); asked
    /// for every kind, once per stage, whether the orders split the backward or not (finding
    /// out would read every pass of the orders).
    std::function<sim::Time(PassKind kind, int vs)> pass;
    /// Duration of micro-batch 0's forward on `vs` when it differs from the others' (the
    /// distributed optimizer's parameter gather overlapped with it); empty: as `pass`.
    std::function<sim::Time(int vs)> first_forward;
    /// Transfer time of a micro-batch's activation from virtual stage `vs` to `vs + 1`
    /// (forward) or of its gradient from `vs + 1` to `vs` (backward); not asked where a
    /// micro-batch's route ends at `vs` (DualPipe's two pipelines).
    std::function<sim::Time(PassKind kind, int vs)> transfer;
    /// Time added to the pass at position `index` of rank `rank`'s order (what communication
    /// running beside it costs it: overlap_interference.h); empty: none.
    std::function<sim::Time(int rank, std::size_t index)> extra;
    /// The sender's compute stream waits for its sends to complete (Megatron's synchronous
    /// point-to-point communication); false: sends overlap the sender's next pass.
    bool blocking_sends = false;
};

/// Start and end of one pass, from the start of the step. Which pass it is, is its place in its
/// rank's order (the pass, and virtual_stage(pass.chunk, rank, shape) its stage), and when its
/// rank could go on is release_of's: a long pipeline has millions of passes, and timing them is
/// bound by the bytes written per pass.
struct PassTime {
    sim::Time start;
    sim::Time end;
};

/// The passes' times of every rank, in one array: a rank's after the previous rank's, each
/// rank's in its order (one allocation per timing, reused by a timing into it, where a vector
/// per rank was as many allocations of a pipeline's ranks per configuration of a sweep).
struct ScheduleTiming {
    /// Rank p's passes are passes[first[p] ...], timed[p] of them; its order's room ends at
    /// first[p + 1]. Past the last rank's room the array may hold stale times (its size only
    /// grows when a timing is reused).
    std::vector<PassTime> passes;
    std::vector<std::size_t> first;
    std::vector<std::size_t> timed;
    sim::Time makespan; ///< end of the last pass
    /// Per rank: the time its compute stream was busy with passes.
    std::vector<sim::Time> busy;

    std::size_t ranks() const { return timed.size(); }
    /// Rank p's timed passes, in its order.
    std::span<const PassTime> rank(std::size_t p) const {
        return {passes.data() + first[p], timed[p]};
    }
};

/// Times `orders` (from pipeline_order) with the given durations. `shape` gives P, m, v.
ScheduleTiming time_schedule(const std::vector<std::vector<PipePass>>& orders,
                             const PipelineShape& shape, const PassDurations& durations);

/// What a timing keeps to be timed again (retime_with_extras): the durations it was timed with,
/// by virtual stage, and when each micro-batch's forward and input-gradient backward ended on
/// each virtual stage (at `end_index`; negative: not timed).
struct TimingState {
    std::vector<sim::Time> f, f0, b, bi, w, xfer_f, xfer_b;
    bool blocking_sends = false;
    std::vector<sim::Time> fwd_end, bwd_end;
    int micro_batches = 0;
    /// Where micro-batch `j`'s end on virtual stage `vs` is: by stage, then micro-batch, so
    /// that a rank, which runs its stages' micro-batches in order, reads and writes them in
    /// order (by micro-batch first, each access of a long pipeline's timing was a cache line).
    std::size_t end_index(int j, int vs) const {
        return static_cast<std::size_t>(vs) * static_cast<std::size_t>(micro_batches) +
               static_cast<std::size_t>(j);
    }
};

/// When the rank of `pass`, on virtual stage `vs` and ending at `end` in a timing that kept
/// `state`, could go on: its end, or with blocking sends the end of the send of its output.
inline sim::Time release_of(const TimingState& state, const PipePass& pass, int vs, sim::Time end,
                            const PipelineShape& shape) {
    if (state.blocking_sends) {
        if (pass.kind == PassKind::forward && !route_end(vs, shape))
            return end + state.xfer_f[static_cast<std::size_t>(vs)];
        if (is_input_backward(pass.kind) && !route_start(vs, shape))
            return end + state.xfer_b[static_cast<std::size_t>(vs - 1)];
    }
    return end;
}

/// The same, keeping in `state` what retime_with_extras needs.
ScheduleTiming time_schedule(const std::vector<std::vector<PipePass>>& orders,
                             const PipelineShape& shape, const PassDurations& durations,
                             TimingState& state);

/// The same, into `timing` and `state`, reusing the memory they hold (a sweep times thousands
/// of configurations: the same pages serve them all).
void time_schedule(const std::vector<std::vector<PipePass>>& orders, const PipelineShape& shape,
                   const PassDurations& durations, TimingState& state, ScheduleTiming& timing);

/// Time added to passes: per rank, by position in its order (a rank's vector may be shorter
/// than its order, or empty: nothing added to the passes past its end).
using PassExtras = std::vector<std::vector<sim::Time>>;

/// Per rank of `timing`: how many of its first passes cannot move when `extra` is added to the
/// durations it was timed with, those that start before the earliest start of a pass given
/// time. A pass waits, directly or not, only on passes that end no later than it starts, so
/// one that starts before that pass waits on none given time (and is not given any itself):
/// its start and end stay. A rank's passes start in order, so these are a prefix of its order.
std::vector<std::size_t> first_movable(const ScheduleTiming& timing, const PassExtras& extra);

/// `timing` and `state`, from time_schedule(orders, shape, durations, state) with
/// `durations.extra` empty, timed again with `extra` added to the passes, in place: the same
/// result as time_schedule with an `extra` reading `extra`, the passes that cannot move
/// (first_movable) kept and only the others timed again. Long pipelines of many micro-batches,
/// whose gradient reductions overlap only their last passes, time a few passes per rank again
/// instead of all of them.
void retime_with_extras(ScheduleTiming& timing, TimingState& state,
                        const std::vector<std::vector<PipePass>>& orders,
                        const PipelineShape& shape, const PassExtras& extra);

} // namespace clustersim::strategies::parallel
