#pragma once
/// \file
/// Pipeline-parallel schedules as per-rank orders of forward and backward passes.
///
/// A schedule says, for each pipeline rank, in which order it runs the forward (F) and backward
/// (B) passes of each micro-batch on each of its model chunks. It says nothing about time: the
/// step builder turns the orders into tasks with send/recv dependencies and the event simulator
/// resolves time, so unequal stages (embedding, loss) and communication come out right, which
/// closed forms miss.
///
/// Chunks: with `v` virtual stages per rank (interleaved 1F1B), rank `p` holds chunks
/// `c = 0..v-1`, which are the model's virtual stages `c * P + p` (Megatron's round-robin
/// assignment of layer groups). Without interleaving v = 1 and the chunk is the rank's stage.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace clustersim::strategies::parallel {

enum class PipelineSchedule : std::uint8_t {
    gpipe,            ///< all forwards, then all backwards (Huang et al. 2019)
    one_f_one_b,      ///< PipeDream-Flush / Megatron 1F1B: warm-up, steady 1F1B, cool-down
    interleaved_1f1b, ///< Megatron interleaved 1F1B with virtual stages (Narayanan et al. 2021)
    /// Zero-bubble ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", arXiv
    /// 2401.10241, section 2.1): 1F1B with the backward split into an input-gradient pass (B)
    /// and a weight-gradient pass (W); rank p defers its W passes by p micro-batches, so every
    /// rank holds at most P micro-batches (1F1B's peak, on its first rank) and the W passes fill
    /// the cool-down: bubble (P-1)(F + B - 2W) with B the whole backward.
    zb_h1,
    /// Zero-bubble ZB-V (same paper, section 6): two chunks per rank placed in a V (rank p holds
    /// virtual stages p and 2P-1-p), B and W split; the order of PyTorch's
    /// ScheduleZBVZeroBubble (torch/distributed/pipelining/schedules.py).
    zb_v,
    /// DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, section 3.2.1;
    /// github.com/deepseek-ai/DualPipe, dualpipe/dualpipe.py): micro-batches enter from both
    /// ends of the pipeline, half from each; rank p holds model stage p for the forward
    /// direction and stage P-1-p for the reverse one (two copies of parameters per rank).
    dualpipe,
};

std::string_view to_string(PipelineSchedule s);

/// forward (F); backward: the whole backward (input and weight gradients together);
/// backward_input (B): the input-gradient half of a split backward, which the previous stage
/// waits for; weight (W): the weight-gradient half, which nothing downstream waits for.
enum class PassKind : std::uint8_t { forward, backward, backward_input, weight };

/// Whether a pass sends a gradient to the previous stage (backward or backward_input).
inline bool is_input_backward(PassKind k) {
    return k == PassKind::backward || k == PassKind::backward_input;
}

/// How virtual stages sit on ranks: looped (Megatron: virtual stage c*P + p on rank p),
/// v_shape (ZB-V: chunk 0 is virtual stage p, chunk 1 is 2P-1-p) and bidirectional (DualPipe:
/// the same placement as v_shape, but virtual stages 0..P-1 are the forward direction's
/// pipeline and P..2P-1 the reverse direction's, each a whole model).
enum class Placement : std::uint8_t { looped, v_shape, bidirectional };

/// One pass of one micro-batch through one model chunk of a rank. Eight bytes: a long
/// pipeline's orders hold millions of passes, read once per timing.
struct PipePass {
    PassKind kind = PassKind::forward;
    /// Starts only once the next pass's input has arrived too: the first of DualPipe's
    /// forward-backward pairs, whose receives are posted and waited for together
    /// (dualpipe.py's _forward_backward_chunk, one batch_isend_irecv for both).
    bool joint = false;
    std::uint16_t chunk = 0; ///< 0..v-1 on this rank (v is at most 1,024: experiment.cpp)
    std::int32_t micro_batch = 0;

    PipePass() = default;
    constexpr PipePass(PassKind k, int j, int c, bool joint_pair = false)
        : kind(k)
        , joint(joint_pair)
        , chunk(static_cast<std::uint16_t>(c))
        , micro_batch(j) {}
};
static_assert(sizeof(PipePass) == 8);

struct PipelineShape {
    int ranks = 1;          ///< P, pipeline-parallel size
    int micro_batches = 1;  ///< m
    int virtual_stages = 1; ///< v (chunks per rank); 1 unless interleaved
    bool forward_only = false;
    Placement placement = Placement::looped;
};

/// The placement a schedule uses.
Placement placement_of(PipelineSchedule s);
/// Chunks per rank a schedule runs: `virtual_stages` for interleaved, 2 for ZB-V and DualPipe,
/// else 1.
int chunks_per_rank(PipelineSchedule s, int virtual_stages);

/// The order of passes on each rank: result[p] is rank p's sequence.
/// Throws InputError when the shape does not suit the schedule (interleaving needs
/// m % P == 0 and v >= 2, as Megatron requires).
std::vector<std::vector<PipePass>> pipeline_order(PipelineSchedule schedule,
                                                  const PipelineShape& shape);

/// Every rank's order, as pipeline_order gives it.
using PassOrders = std::vector<std::vector<PipePass>>;

/// pipeline_order, built once per (schedule, shape) and shared: a sweep's configurations share
/// a few shapes (recompute, ZeRO, sequence parallelism and the like leave the orders as they
/// are), and a long pipeline's orders are megabytes. The memo keeps the most recently built
/// orders up to a bound on their passes; thread-safe.
std::shared_ptr<const PassOrders> shared_pipeline_order(PipelineSchedule schedule,
                                                        const PipelineShape& shape);

/// The model's virtual stage of chunk `chunk` on rank `rank`: chunk * P + rank.
inline int virtual_stage(int chunk, int rank, int ranks) {
    return chunk * ranks + rank;
}

/// The virtual stage of chunk `chunk` on rank `rank` under the shape's placement.
inline int virtual_stage(int chunk, int rank, const PipelineShape& s) {
    if (s.placement == Placement::looped)
        return chunk * s.ranks + rank;
    return chunk == 0 ? rank : 2 * s.ranks - 1 - rank;
}
/// The rank that runs virtual stage `vs`.
inline int rank_of_stage(int vs, const PipelineShape& s) {
    if (s.placement == Placement::looped)
        return vs % s.ranks;
    return vs < s.ranks ? vs : 2 * s.ranks - 1 - vs;
}
/// Virtual stages in all: P * chunks.
inline int stage_count(const PipelineShape& s) {
    return s.ranks * s.virtual_stages;
}
/// Model stages (distinct layer groups): P for DualPipe (both directions run the same model),
/// else the virtual stages.
inline int model_stage_count(const PipelineShape& s) {
    return s.placement == Placement::bidirectional ? s.ranks : stage_count(s);
}
/// The model stage (layer group) of virtual stage `vs`.
inline int model_stage(int vs, const PipelineShape& s) {
    return s.placement == Placement::bidirectional ? vs % s.ranks : vs;
}
/// Whether a micro-batch enters the pipeline at `vs` (its forward has no input from another
/// stage) or leaves it there (the loss; its backward has no input from another stage).
inline bool route_start(int vs, const PipelineShape& s) {
    return model_stage(vs, s) == 0;
}
inline bool route_end(int vs, const PipelineShape& s) {
    return model_stage(vs, s) == model_stage_count(s) - 1;
}
/// Durations of one micro-batch's passes on one model stage, for the closed forms: F the
/// forward, B the whole backward, W its weight-gradient part.
struct PassTimes {
    double f = 1;
    double b = 2;
    double w = 1;
};

/// Closed-form bubble fraction of the step with equal stages and free communication:
/// (P-1)/(m+P-1) for GPipe and 1F1B, (P-1)/(v*m + P-1) for interleaved 1F1B. The split
/// schedules' bubbles depend on F, B and W (`t`): ZB-H1 (P-1)(F+B-2W) (Qi et al. 2023, and the
/// table of github.com/deepseek-ai/DualPipe's README), DualPipe (P/2-1)(F&B+B-3W) with F&B, the
/// overlapped pair, taken as F+B (nothing to overlap without expert all-to-all); ZB-V has no
/// closed form for unequal F, B, W: its bubble is the schedule timed with these durations.
/// The fraction is bubble / (m (F+B) + bubble).
double ideal_bubble_fraction(PipelineSchedule schedule, const PipelineShape& shape,
                             const PassTimes& t = {});

/// 1F1B over unequal stages (stage i's forward f_i and backward b_i, t_i = f_i + b_i, free
/// transfers), m micro-batches: the step lies between
///   lower = sum_i t_i + (m-1) t_{P-1}   (the last stage alternates F and B with no warm-up:
///           the first forward reaches it after sum_{i<P-1} f_i, it works m t_{P-1}, the last
///           backward drains through sum_{i<P-1} b_i)
///   upper = sum_i t_i + (m-1) max_i t_i (the slowest stage sets the steady state's pace)
/// and equals the upper bound when the last stage is the slowest (then the bounds meet); with
/// equal stages both are (m + P - 1) t. A slowest stage earlier in the pipeline finishes sooner
/// than the upper bound: its warm-up forwards overlap the round trip of the stages after it.
struct StepBounds {
    double lower = 0;
    double upper = 0;
};
StepBounds one_f_one_b_bounds(const std::vector<PassTimes>& stages, int micro_batches);

/// Most micro-batches whose activations a rank holds at once under the schedule (before
/// recompute): m for GPipe, min(P - p, m) for 1F1B on rank p. A micro-batch counts from its
/// forward until its backward, or its weight-gradient pass when the backward is split.
int max_in_flight(const std::vector<PipePass>& order);

} // namespace clustersim::strategies::parallel
