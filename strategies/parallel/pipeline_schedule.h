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
#include <string_view>
#include <vector>

namespace clustersim::strategies::parallel {

enum class PipelineSchedule : std::uint8_t {
    gpipe,            ///< all forwards, then all backwards (Huang et al. 2019)
    one_f_one_b,      ///< PipeDream-Flush / Megatron 1F1B: warm-up, steady 1F1B, cool-down
    interleaved_1f1b, ///< Megatron interleaved 1F1B with virtual stages (Narayanan et al. 2021)
};

std::string_view to_string(PipelineSchedule s);

enum class PassKind : std::uint8_t { forward, backward };

/// One pass of one micro-batch through one model chunk of a rank.
struct PipePass {
    PassKind kind;
    std::int32_t micro_batch;
    std::int32_t chunk; ///< 0..v-1 on this rank
};

struct PipelineShape {
    int ranks = 1;          ///< P, pipeline-parallel size
    int micro_batches = 1;  ///< m
    int virtual_stages = 1; ///< v (chunks per rank); 1 unless interleaved
    bool forward_only = false;
};

/// The order of passes on each rank: result[p] is rank p's sequence.
/// Throws InputError when the shape does not suit the schedule (interleaving needs
/// m % P == 0 and v >= 2, as Megatron requires).
std::vector<std::vector<PipePass>> pipeline_order(PipelineSchedule schedule,
                                                  const PipelineShape& shape);

/// The model's virtual stage of chunk `chunk` on rank `rank`: chunk * P + rank.
inline int virtual_stage(int chunk, int rank, int ranks) {
    return chunk * ranks + rank;
}

/// Closed-form bubble fraction of the step with equal stages and free communication:
/// (P-1)/(m+P-1) for GPipe and 1F1B, (P-1)/(v*m + P-1) for interleaved 1F1B.
double ideal_bubble_fraction(PipelineSchedule schedule, const PipelineShape& shape);

/// Most micro-batches whose activations a rank holds at once under the schedule (before
/// recompute): m for GPipe, min(P - p, m) for 1F1B on rank p.
int max_in_flight(const std::vector<PipePass>& order);

} // namespace clustersim::strategies::parallel
