#include "strategies/parallel/pipeline_schedule.h"

#include "base/error.h"

#include <algorithm>
#include <string>

namespace clustersim::strategies::parallel {

std::string_view to_string(PipelineSchedule s) {
    switch (s) {
    case PipelineSchedule::gpipe:
        return "gpipe";
    case PipelineSchedule::one_f_one_b:
        return "1f1b";
    case PipelineSchedule::interleaved_1f1b:
        return "interleaved-1f1b";
    }
    return "?";
}

namespace {

std::vector<PipePass> gpipe(const PipelineShape& s) {
    std::vector<PipePass> order;
    for (int j = 0; j < s.micro_batches; ++j)
        order.push_back({PassKind::forward, j, 0});
    if (!s.forward_only) {
        // Backward in reverse micro-batch order, as autograd unwinds the stacked forwards.
        for (int j = s.micro_batches - 1; j >= 0; --j)
            order.push_back({PassKind::backward, j, 0});
    }
    return order;
}

std::vector<PipePass> one_f_one_b(const PipelineShape& s, int rank) {
    const int m = s.micro_batches;
    const int warmup = std::min(s.ranks - rank - 1, m);
    std::vector<PipePass> order;
    for (int j = 0; j < warmup; ++j)
        order.push_back({PassKind::forward, j, 0});
    for (int i = 0; i < m - warmup; ++i) {
        order.push_back({PassKind::forward, warmup + i, 0});
        order.push_back({PassKind::backward, i, 0});
    }
    for (int j = m - warmup; j < m; ++j)
        order.push_back({PassKind::backward, j, 0});
    return order;
}

// Megatron-LM's forward_backward_pipelining_with_interleaving: the k-th forward (backward) of
// a rank runs micro-batch (k / (P v)) P + k % P on chunk (k % (P v)) / P (reversed for
// backward); warm-up is 2 (P - p - 1) + (v - 1) P passes, all of them when m == P.
std::vector<PipePass> interleaved(const PipelineShape& s, int rank) {
    const int P = s.ranks;
    const int v = s.virtual_stages;
    const int total = s.micro_batches * v;
    auto pass = [&](int k, PassKind kind) {
        const int in_group = k % (P * v);
        int chunk = in_group / P;
        if (kind == PassKind::backward)
            chunk = v - 1 - chunk;
        const int micro_batch = (k / (P * v)) * P + k % P;
        return PipePass{kind, micro_batch, chunk};
    };
    int warmup = total;
    if (!s.forward_only && s.micro_batches != P)
        warmup = std::min((P - rank - 1) * 2 + (v - 1) * P, total);
    const int remaining = total - warmup;
    std::vector<PipePass> order;
    for (int k = 0; k < warmup; ++k)
        order.push_back(pass(k, PassKind::forward));
    for (int i = 0; i < remaining; ++i) {
        order.push_back(pass(warmup + i, PassKind::forward));
        order.push_back(pass(i, PassKind::backward));
    }
    if (!s.forward_only) {
        for (int k = remaining; k < total; ++k)
            order.push_back(pass(k, PassKind::backward));
    }
    return order;
}

} // namespace

std::vector<std::vector<PipePass>> pipeline_order(PipelineSchedule schedule,
                                                  const PipelineShape& shape) {
    if (shape.ranks < 1 || shape.micro_batches < 1 || shape.virtual_stages < 1)
        throw InputError("a pipeline needs at least one rank, micro-batch and stage");
    if (schedule != PipelineSchedule::interleaved_1f1b && shape.virtual_stages != 1)
        throw InputError("parallel.virtual_stages = " + std::to_string(shape.virtual_stages) +
                         " needs schedule interleaved-1f1b (it is " +
                         std::string(to_string(schedule)) + ")");
    if (schedule == PipelineSchedule::interleaved_1f1b) {
        if (shape.virtual_stages < 2)
            throw InputError("interleaved-1f1b needs parallel.virtual_stages >= 2");
        if (shape.micro_batches % shape.ranks != 0)
            throw InputError("interleaved-1f1b needs the number of micro-batches (" +
                             std::to_string(shape.micro_batches) +
                             ") to be a multiple of the pipeline size pp = " +
                             std::to_string(shape.ranks) + " (as Megatron requires); use " +
                             std::to_string((shape.micro_batches / shape.ranks + 1) * shape.ranks) +
                             " micro-batches or schedule 1f1b");
    }
    std::vector<std::vector<PipePass>> orders;
    for (int p = 0; p < shape.ranks; ++p) {
        switch (schedule) {
        case PipelineSchedule::gpipe:
            orders.push_back(gpipe(shape));
            break;
        case PipelineSchedule::one_f_one_b:
            orders.push_back(shape.forward_only ? gpipe(shape) : one_f_one_b(shape, p));
            break;
        case PipelineSchedule::interleaved_1f1b:
            orders.push_back(interleaved(shape, p));
            break;
        }
    }
    return orders;
}

double ideal_bubble_fraction(PipelineSchedule schedule, const PipelineShape& s) {
    const double p1 = s.ranks - 1;
    const double vm = schedule == PipelineSchedule::interleaved_1f1b
                          ? double(s.virtual_stages) * s.micro_batches
                          : double(s.micro_batches);
    return p1 / (vm + p1);
}

int max_in_flight(const std::vector<PipePass>& order) {
    int live = 0;
    int peak = 0;
    for (const PipePass& p : order) {
        if (p.kind == PassKind::forward)
            peak = std::max(peak, ++live);
        else
            --live;
    }
    return peak;
}

} // namespace clustersim::strategies::parallel
