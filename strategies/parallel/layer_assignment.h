#pragma once
/// \file
/// Which transformer layers each pipeline stage holds: the split of the model's layers over
/// the model stages (pipeline rank x virtual chunk), computed once when an experiment is
/// validated and read by the step plan.
///
/// Evenly by default (the layers divisible by the model stages, as before these knobs), or as
/// Megatron-Core splits unevenly (megatron/core/transformer/transformer_block.py,
/// get_num_layers_to_build; megatron/core/transformer/pipeline_parallel_layer_layout.py):
/// - decoder_first_pipeline_num_layers / decoder_last_pipeline_num_layers
///   (--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers): the first
///   (last) pipeline rank holds that many layers over all its chunks, split evenly among them;
///   the other ranks share the rest evenly;
/// - account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split: the
///   embedding (the loss) counts as one layer in an even split of layers + 1 (+ 1), and the
///   first (last) model stage builds one transformer layer fewer;
/// - pipeline_model_parallel_layout: a string of stages separated by `|`, `E` the embedding,
///   `t` a transformer layer, `L` the loss (the LM head), `(...)*n` and `x*n` repeats, commas
///   cosmetic: "Et|(tt|)*30L". Its stages are the model stages in layer order (Megatron's
///   virtual stage vp x pp + rank); `m` (a multi-token-prediction layer) is refused, as the
///   models here have none.
/// Megatron-Core's rules are kept: first/last exclude the account_for knobs, the layout
/// excludes both, every rank's layers split evenly over its chunks.

#include <functional>
#include <string>
#include <vector>

namespace clustersim::strategies::parallel {

/// The knobs of an uneven split (Megatron-Core's names).
struct PipelineSplit {
    int first_stage_layers = -1; ///< decoder_first_pipeline_num_layers; -1: not given
    int last_stage_layers = -1;  ///< decoder_last_pipeline_num_layers; -1: not given
    bool account_for_embedding = false;
    bool account_for_loss = false;
    std::string layout; ///< pipeline_model_parallel_layout; empty: not given

    bool given() const {
        return first_stage_layers >= 0 || last_stage_layers >= 0 || account_for_embedding ||
               account_for_loss || !layout.empty();
    }
    bool operator==(const PipelineSplit&) const = default;
};

/// How model stages sit on ranks, for the split: `model_stages` in all over `ranks`;
/// `stage_of(chunk, rank)` the model stage of a rank's chunk (chunks = model_stages / ranks).
struct StageGrid {
    int ranks = 1;
    int model_stages = 1;
    std::function<int(int chunk, int rank)> stage_of;
};

/// Called with a message and the experiment key the fix would change; must throw.
using SplitFail = std::function<void(const std::string& what, const char* key)>;

/// Transformer layers of each model stage, in layer order (index: model stage). `layers` in
/// all; refuses (through `fail`) a split that cannot be met, saying what would fix it. A
/// layout places the model's `mtp_layers` multi-token-prediction blocks ('m') with the loss,
/// on the last stage, where the step model runs them.
std::vector<int> assign_layers(int layers, const PipelineSplit& split, const StageGrid& grid,
                               const SplitFail& fail, int mtp_layers = 0);

/// The stages of a layout string, each a string of `E`, `t`, `L`, `m`, with repeats unrolled
/// and commas dropped. Refuses (through `fail`, key parallel.pipeline_model_parallel_layout)
/// an unknown character or a malformed repeat.
std::vector<std::string> parse_layout(const std::string& layout, const SplitFail& fail);

/// Whether every model stage holds the same number of layers.
bool uniform_split(const std::vector<int>& stage_layers);

} // namespace clustersim::strategies::parallel
