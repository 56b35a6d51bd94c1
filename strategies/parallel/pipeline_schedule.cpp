#include "strategies/parallel/pipeline_schedule.h"

#include "base/error.h"
#include "strategies/parallel/schedule_timing.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <stdexcept>
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
    case PipelineSchedule::zb_h1:
        return "zb-h1";
    case PipelineSchedule::zb_v:
        return "zb-v";
    case PipelineSchedule::dualpipe:
        return "dualpipe";
    }
    return "?";
}

Placement placement_of(PipelineSchedule s) {
    switch (s) {
    case PipelineSchedule::zb_v:
        return Placement::v_shape;
    case PipelineSchedule::dualpipe:
        return Placement::bidirectional;
    default:
        return Placement::looped;
    }
}

int chunks_per_rank(PipelineSchedule s, int virtual_stages) {
    switch (s) {
    case PipelineSchedule::interleaved_1f1b:
        return virtual_stages;
    case PipelineSchedule::zb_v:
    case PipelineSchedule::dualpipe:
        return 2;
    default:
        return 1;
    }
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

// ZB-H1 (Qi et al. 2023, section 2.1): 1F1B's warm-up of P-p-1 forwards, then F, B pairs with
// the W passes deferred by p micro-batches on rank p, so that every rank has P micro-batches in
// flight (1F1B's first rank's peak) and the deferred W passes fill the cool-down.
std::vector<PipePass> zb_h1(const PipelineShape& s, int rank) {
    const int m = s.micro_batches;
    const int warmup = std::min(s.ranks - rank - 1, m);
    std::vector<PipePass> order;
    int next_w = 0;
    auto weight_upto = [&](int last) {
        for (; next_w <= last; ++next_w)
            order.push_back({PassKind::weight, next_w, 0});
    };
    for (int j = 0; j < warmup; ++j)
        order.push_back({PassKind::forward, j, 0});
    for (int k = 0; k < m; ++k) {
        if (warmup + k < m)
            order.push_back({PassKind::forward, warmup + k, 0});
        order.push_back({PassKind::backward_input, k, 0});
        weight_upto(k - rank);
    }
    weight_upto(m - 1);
    return order;
}

// ZB-V as PyTorch's ScheduleZBVZeroBubble builds it (torch/distributed/pipelining/schedules.py,
// after Qi et al. 2023 section 6): chunk 0 is virtual stage p, chunk 1 is 2P-1-p. The schedule
// is laid out for max(2P-1, m) micro-batches and the passes of the ones beyond m dropped.
std::vector<PipePass> zb_v(const PipelineShape& s, int rank) {
    const int P = s.ranks;
    const int m = s.micro_batches;
    const int n = std::max(2 * P - 1, m);
    std::vector<PipePass> order;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    auto add = [&](PassKind k, int mb, int chunk) {
        if (mb < m)
            order.push_back({k, mb, chunk});
    };
    for (int i = 0; i < 2 * (P - rank) - 1; ++i)
        add(PassKind::forward, f0++, 0);
    for (int i = 0; i < rank; ++i) {
        add(PassKind::forward, f1++, 1);
        add(PassKind::forward, f0++, 0);
    }
    for (int i = 0; i < P - rank; ++i) {
        add(PassKind::forward, f1++, 1);
        add(PassKind::backward_input, b1, 1);
        add(PassKind::weight, b1++, 1);
    }
    while (f1 < f0 || f0 < n) {
        if (f0 < n)
            add(PassKind::forward, f0++, 0);
        add(PassKind::backward_input, b0, 0);
        add(PassKind::weight, b0++, 0);
        add(PassKind::forward, f1++, 1);
        add(PassKind::backward_input, b1, 1);
        add(PassKind::weight, b1++, 1);
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < rank; ++i) {
        add(PassKind::backward_input, b0++, 0);
        add(PassKind::backward_input, b1++, 1);
    }
    for (int i = 0; i < P - rank; ++i) {
        add(PassKind::backward_input, b0++, 0);
        add(PassKind::weight, w0++, 0);
    }
    while (w1 < b1)
        add(PassKind::weight, w1++, 1);
    while (w0 < b0)
        add(PassKind::weight, w0++, 0);
    return order;
}

// DualPipe as deepseek-ai/DualPipe's dualpipe/dualpipe.py (DualPipe.step) orders it, steps 1
// to 8. Its "phase" 0 is the forward direction on the first half of the ranks and the reverse
// one on the second half; here chunk 0 is always the forward direction (micro-batches 0..m/2-1,
// virtual stage p) and chunk 1 the reverse (micro-batches m/2..m-1, virtual stage 2P-1-p). A
// backward with zero bubble enabled is a B whose W is queued (FIFO) for a later weight chunk;
// otherwise the whole backward. An overlapped forward-backward pair is its F then its B.
std::vector<PipePass> dualpipe(const PipelineShape& s, int rank) {
    const int P = s.ranks;
    const int half_chunks = s.micro_batches / 2;
    const int half_ranks = P / 2;
    const int half_rank = std::min(rank, P - 1 - rank);
    const int second_half = rank >= half_ranks ? 1 : 0;
    std::vector<PipePass> order;
    int f[2] = {0, 0};
    int b[2] = {0, 0};
    std::vector<PipePass> w_queue;
    std::size_t w_next = 0;
    auto F = [&](int phase, bool joint = false) {
        const int c = phase ^ second_half;
        order.push_back({PassKind::forward, c * half_chunks + f[c]++, c, joint && !s.forward_only});
    };
    auto B = [&](int phase, bool zb) {
        const int c = phase ^ second_half;
        const int mb = c * half_chunks + b[c]++;
        if (s.forward_only)
            return;
        if (zb) {
            order.push_back({PassKind::backward_input, mb, c});
            w_queue.push_back({PassKind::weight, mb, c});
        } else {
            order.push_back({PassKind::backward, mb, c});
        }
    };
    auto W = [&] {
        if (s.forward_only)
            return;
        if (w_next >= w_queue.size())
            throw std::logic_error("dualpipe: weight chunk with none pending");
        order.push_back(w_queue[w_next++]);
    };
    // An overlapped pair: both inputs are received before either runs.
    auto FB = [&](int phase0, int phase1, bool joint = true) {
        F(phase0, joint);
        B(phase1, false);
    };
    const bool middle = rank == half_ranks - 1 || rank == half_ranks;
    for (int i = 0; i < (half_ranks - half_rank - 1) * 2; ++i)
        F(0);
    for (int i = 0; i < half_rank + 1; ++i) {
        F(0);
        F(1);
    }
    for (int i = 0; i < half_ranks - half_rank - 1; ++i) {
        B(1, true);
        W();
        F(1);
    }
    const int main_steps = half_chunks - P + half_rank + 1;
    for (int i = 0; i < main_steps; ++i) {
        FB(0, 1, !(i == 0 && middle)); // the middle ranks' first pair is not overlapped
        FB(1, 0);
    }
    for (int i = 0; i < half_ranks - half_rank - 1; ++i) {
        B(1, false);
        FB(1, 0);
    }
    const int step6 = half_rank + 1;
    bool zb = false;
    for (int i = 0; i < step6; ++i) {
        if (i == step6 / 2 && half_rank % 2 == 1)
            zb = true;
        B(1, zb);
        if (i == step6 / 2 && half_rank % 2 == 0)
            zb = true;
        B(0, zb);
    }
    for (int i = 0; i < half_ranks - half_rank - 1; ++i) {
        W();
        B(0, true);
    }
    for (int i = 0; i < half_rank + 1; ++i)
        W();
    if (w_next != w_queue.size())
        throw std::logic_error("dualpipe: weight chunks left over");
    return order;
}

std::vector<PipePass> forward_chunks(const PipelineShape& s) {
    std::vector<PipePass> order;
    for (int c = 0; c < s.virtual_stages; ++c) {
        const int per = s.placement == Placement::bidirectional ? s.micro_batches / 2 : 0;
        const int first = c * per;
        const int count = per > 0 ? per : s.micro_batches;
        for (int j = 0; j < count; ++j)
            order.push_back({PassKind::forward, first + j, c});
    }
    return order;
}

} // namespace

std::vector<std::vector<PipePass>> pipeline_order(PipelineSchedule schedule,
                                                  const PipelineShape& shape) {
    if (shape.ranks < 1 || shape.micro_batches < 1 || shape.virtual_stages < 1)
        throw InputError("a pipeline needs at least one rank, micro-batch and stage");
    if (shape.virtual_stages > std::numeric_limits<std::uint16_t>::max()) // PipePass::chunk
        throw InputError("parallel.virtual_stages = " + std::to_string(shape.virtual_stages) +
                         " is more than 65535 chunks per rank");
    if (schedule != PipelineSchedule::interleaved_1f1b &&
        shape.virtual_stages != chunks_per_rank(schedule, 1))
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
    if (shape.placement != placement_of(schedule))
        throw InputError(std::string("schedule ") + std::string(to_string(schedule)) +
                         " needs its own placement of stages on ranks");
    if ((schedule == PipelineSchedule::zb_v || schedule == PipelineSchedule::dualpipe) &&
        shape.virtual_stages != 2)
        throw InputError(std::string(to_string(schedule)) + " runs two chunks per rank");
    if (schedule == PipelineSchedule::dualpipe) {
        // DualPipe.step's assertions: an even pp, an even number of micro-batches, at least 2 pp.
        if (shape.ranks % 2 != 0)
            throw InputError("dualpipe needs an even pipeline size pp (it is " +
                             std::to_string(shape.ranks) + ")");
        if (shape.micro_batches % 2 != 0 || shape.micro_batches < 2 * shape.ranks)
            throw InputError("dualpipe needs an even number of micro-batches >= 2 pp = " +
                             std::to_string(2 * shape.ranks) + " (it is " +
                             std::to_string(shape.micro_batches) + ")");
    }
    std::vector<std::vector<PipePass>> orders;
    for (int p = 0; p < shape.ranks; ++p) {
        if (shape.forward_only &&
            (schedule == PipelineSchedule::zb_v || schedule == PipelineSchedule::dualpipe)) {
            orders.push_back(forward_chunks(shape));
            continue;
        }
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
        case PipelineSchedule::zb_h1:
            orders.push_back(shape.forward_only ? gpipe(shape) : zb_h1(shape, p));
            break;
        case PipelineSchedule::zb_v:
            orders.push_back(zb_v(shape, p));
            break;
        case PipelineSchedule::dualpipe:
            orders.push_back(dualpipe(shape, p));
            break;
        }
        // Built by push_back: up to twice the room the passes need, held by the plan for the
        // whole step (a sweep thread's largest scratch with the timings: 705,600 passes for
        // Turing-530B on pp 105 with 3,360 micro-batches).
        orders.back().shrink_to_fit();
    }
    return orders;
}

std::shared_ptr<const PassOrders> shared_pipeline_order(PipelineSchedule schedule,
                                                        const PipelineShape& shape) {
    // What the orders depend on, all of it.
    struct Key {
        PipelineSchedule schedule;
        int ranks, micro_batches, virtual_stages;
        bool forward_only;
        Placement placement;
        bool operator==(const Key&) const = default;
    };
    struct Entry {
        Key key;
        std::shared_ptr<const PassOrders> orders;
        std::size_t passes;
    };
    // At most 2 M passes held (16 MiB), the oldest dropped first: a sweep meets its shapes in
    // runs (the grid's last axes vary fastest), so a few recent ones serve almost every plan.
    constexpr std::size_t kMaxPasses = std::size_t{2} << 20;
    static std::mutex mutex;
    static std::vector<Entry> memo; // oldest first
    const Key key{schedule,           shape.ranks,    shape.micro_batches, shape.virtual_stages,
                  shape.forward_only, shape.placement};
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (const Entry& e : memo)
            if (e.key == key)
                return e.orders;
    }
    // Built outside the lock (a pure function of the key): two threads that miss at once both
    // build it, and the memo keeps one.
    auto orders = std::make_shared<const PassOrders>(pipeline_order(schedule, shape));
    std::size_t passes = 0;
    for (const auto& o : *orders)
        passes += o.size();
    if (passes > kMaxPasses / 4)
        return orders; // too large to keep beside others
    std::lock_guard<std::mutex> lock(mutex);
    for (const Entry& e : memo)
        if (e.key == key)
            return e.orders;
    std::size_t held = passes;
    for (const Entry& e : memo)
        held += e.passes;
    auto oldest = memo.begin();
    while (held > kMaxPasses && oldest != memo.end())
        held -= (oldest++)->passes;
    memo.erase(memo.begin(), oldest);
    memo.push_back({key, orders, passes});
    return orders;
}

double ideal_bubble_fraction(PipelineSchedule schedule, const PipelineShape& s,
                             const PassTimes& t) {
    const double m = s.micro_batches;
    const double work = m * (t.f + t.b);
    auto fraction = [&](double bubble) {
        bubble = std::max(0.0, bubble);
        return work + bubble > 0 ? bubble / (work + bubble) : 0.0;
    };
    switch (schedule) {
    case PipelineSchedule::zb_h1:
        if (s.forward_only)
            break;
        return fraction((s.ranks - 1) * (t.f + t.b - 2 * t.w));
    case PipelineSchedule::dualpipe:
        if (s.forward_only)
            break;
        return fraction((s.ranks / 2 - 1) * ((t.f + t.b) + t.b - 3 * t.w));
    case PipelineSchedule::zb_v: {
        // Each chunk holds half a stage's layers: F/2, B/2, W/2 per chunk.
        const auto orders = pipeline_order(schedule, s);
        PassDurations d;
        auto ps = [](double x) { return sim::Time::from_seconds(x * 0.5e-6); };
        d.pass = [&](PassKind k, int) {
            switch (k) {
            case PassKind::forward:
                return ps(t.f);
            case PassKind::backward:
                return ps(t.b);
            case PassKind::backward_input:
                return ps(t.b - t.w);
            case PassKind::weight:
                break;
            }
            return ps(t.w);
        };
        d.transfer = [](PassKind, int) { return sim::Time::zero(); };
        const ScheduleTiming timing = time_schedule(orders, s, d);
        const double busy = timing.busy.front().seconds();
        const double span = timing.makespan.seconds();
        return span > 0 ? (span - busy) / span : 0.0;
    }
    default:
        break;
    }
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
        else if (p.kind == PassKind::weight || p.kind == PassKind::backward)
            --live;
    }
    return peak;
}

StepBounds one_f_one_b_bounds(const std::vector<PassTimes>& stages, int micro_batches) {
    StepBounds out;
    if (stages.empty())
        return out;
    double sum = 0;
    double slowest = 0;
    for (const PassTimes& t : stages) {
        sum += t.f + t.b;
        slowest = std::max(slowest, t.f + t.b);
    }
    const double rest = micro_batches > 1 ? micro_batches - 1 : 0;
    out.lower = sum + rest * (stages.back().f + stages.back().b);
    out.upper = sum + rest * slowest;
    return out;
}

} // namespace clustersim::strategies::parallel
