#include "strategies/parallel/torch_pipelining.h"

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/precision.h"
#include "strategies/parallel/step_plan.h"

#include <algorithm>

namespace clustersim::strategies::parallel {

bool torch_pipelining(const ExperimentSpec& e) {
    return e.parallel.pp > 1 && (e.parallel.fsdp2 || e.framework.dtensor_tp);
}

std::vector<std::vector<PipePass>> torch_interleaved_order(const PipelineShape& s) {
    const int P = s.ranks;
    const int v = s.virtual_stages;
    const int m = s.micro_batches;
    const int total = m * v;
    // ScheduleInterleaved1F1B (flexible since PyTorch 2.5): number_of_rounds =
    // max(1, n_microbatches // pp_group_size), microbatches_per_round = n / rounds.
    const int per_round = m / std::max(1, m / P);
    std::vector<std::vector<PipePass>> orders;
    for (int p = 0; p < P; ++p) {
        const int warmup =
            s.forward_only ? total : std::min((v - 1) * per_round + 2 * (P - 1 - p), total);
        std::vector<int> next_forward(static_cast<std::size_t>(v), 0);
        std::vector<int> next_backward(static_cast<std::size_t>(v), 0);
        auto forward = [&](int k) {
            const int chunk = (k / per_round) % v;
            return PipePass{PassKind::forward, next_forward[static_cast<std::size_t>(chunk)]++,
                            chunk};
        };
        auto backward = [&](int j) {
            const int chunk = v - 1 - (j / per_round) % v;
            return PipePass{PassKind::backward, next_backward[static_cast<std::size_t>(chunk)]++,
                            chunk};
        };
        std::vector<PipePass> order;
        for (int k = 0; k < warmup; ++k)
            order.push_back(forward(k));
        if (!s.forward_only) {
            for (int k = warmup; k < total; ++k) {
                order.push_back(forward(k));
                order.push_back(backward(k - warmup));
            }
            for (int j = total - warmup; j < total; ++j)
                order.push_back(backward(j));
        }
        orders.push_back(std::move(order));
    }
    return orders;
}

TorchStageBuffers torch_stage_buffers(const StepPlan& plan, int vs) {
    TorchStageBuffers b;
    const ExperimentSpec* e = plan.experiment;
    // DualPipe's two directions (not a torch.distributed.pipelining schedule) aside.
    if (e == nullptr || plan.shape.forward_only || !torch_pipelining(*e) ||
        plan.shape.placement == Placement::bidirectional)
        return b;
    const std::int64_t m = plan.shape.micro_batches;
    const bool first = route_start(vs, plan.shape);
    const bool last = route_end(vs, plan.shape);
    // The activation a stage sends on is what the next one receives (plan_transfers).
    const std::int64_t input = first ? 0 : plan.stage(vs - 1).send_bytes;
    std::int64_t output = plan.stage(vs).send_bytes;
    if (last) {
        // The last stage's output: the logits of its micro-batch, this rank's vocabulary shard
        // (loss_parallel: the output layer's DTensor, Shard(-1)) in the weights' 16-bit type,
        // as the head's cost counts them.
        const std::int64_t tokens =
            std::int64_t{e->model.seq} / std::max(1, e->parallel.cp) * e->training.micro_batch;
        const int tp = std::max(1, e->parallel.tp);
        output = tokens * (models::padded_vocab(e->model, tp) / tp) *
                 hardware::bytes_per_element(hardware::weight_dtype(e->training.dtype));
    }
    // A compiled loss (models::CrossEntropy::compiled) saves the 16-bit logits for its
    // backward: the tensor output_chunks keeps, counted in the head's activations while its
    // micro-batch is in flight, so not again by the forward; the backward's release of the
    // activations takes it off, and output_chunks keeps it to the step's end.
    const std::int64_t shared =
        last && e->training.cross_entropy == models::CrossEntropy::compiled ? output : 0;
    b.held = m * input + (last ? 0 : m * output);
    b.per_forward = output - input - shared;
    // The input's gradient, and the receive buffer the activations' release took off again
    // (and the compiled loss's logits, likewise).
    b.per_backward = 2 * input + shared;
    return b;
}

} // namespace clustersim::strategies::parallel
