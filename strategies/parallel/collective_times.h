#pragma once
/// \file
/// Predicted times of the collectives a step plan issues, per communicator: a cache by
/// (op, bytes, dtype) in front of the communicator's algorithm choice, and what each takes from
/// the compute beside it (overlap_interference.h). Internal to the step model; inline, as the
/// pass clock asks for every collective it issues.

#include "strategies/collectives/communicator.h"
#include "strategies/models/layer_work.h"
#include "strategies/parallel/overlap_interference.h"
#include "strategies/parallel/step_plan.h"
#include "strategies/parallel/straggler.h"

#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace clustersim::strategies::parallel::detail {

/// The collective a layer's tensor-parallel (or expert) communication runs as.
inline collectives::Op to_collective(models::TpOp op) {
    switch (op) {
    case models::TpOp::all_reduce:
        return collectives::Op::all_reduce;
    case models::TpOp::all_gather:
        return collectives::Op::all_gather;
    case models::TpOp::reduce_scatter:
        return collectives::Op::reduce_scatter;
    case models::TpOp::all_to_all:
        return collectives::Op::all_to_all;
    }
    return collectives::Op::all_reduce;
}

/// A communicator over `gpus`: shared from the plan's cache when it has one, else built into
/// `owned` (which must outlive its use).
inline const collectives::Communicator*
communicator(const StepPlan& plan, const std::vector<int>& gpus,
             std::unique_ptr<collectives::Communicator>& owned) {
    if (plan.communicators != nullptr)
        return &plan.communicators->get(gpus);
    owned = std::make_unique<collectives::Communicator>(*plan.topology, gpus);
    return owned.get();
}

/// How many times longer a collective over `comm` takes for the congestion between jobs'
/// flows (straggler.h): 1 + the slowdown of the slowest of the job's `flows` inter-node flows
/// (a synchronous step waits for every rank's collective, so for the slowest flow of all the
/// GPUs whose traffic crosses the fabric, one per GPU's NIC); 1 within a node.
inline double congestion_stretch(const FrameworkSpec& fw, const collectives::Communicator* comm,
                                 int flows) {
    if (comm == nullptr || fw.network_flow_spread <= 0 || comm->node_count() < 2)
        return 1.0;
    return 1.0 + network_slowdown(fw.network_flow_spread, flows, fw.network_quantile);
}

/// Predicted times of collectives on one communicator, cached by (op, bytes, dtype).
class CollectiveTimes {
public:
    explicit CollectiveTimes(const collectives::Communicator* comm)
        : comm_(comm) {}
    /// On a shared fabric: each collective across nodes at the pace of the slowest of the
    /// job's `flows` inter-node flows.
    CollectiveTimes(const collectives::Communicator* comm, const FrameworkSpec& fw, int flows)
        : comm_(comm)
        , stretch_(congestion_stretch(fw, comm, flows)) {}
    sim::Time time(const collectives::Collective& c) { return entry(c).time; }
    /// Whether its communicator spans nodes: its collectives are inter-node flows, which the
    /// congestion between jobs stretches (straggler.h).
    bool crosses_nodes() const { return comm_ != nullptr && comm_->node_count() > 1; }
    /// The collectives run as a library's kernels of `sms` SMs (the flex dispatcher's:
    /// flex_dispatcher_sms in ep_overlap.h), not NCCL's CTAs; 0: NCCL's. Before any load().
    void run_on_sms(int sms) { sms_ = sms; }
    /// What `c` takes from the compute beside it while it runs (overlap_interference.h).
    CommLoad load(const collectives::Collective& c) {
        Entry& e = entry(c);
        if (!e.has_load) {
            collectives::Collective rounded = c;
            rounded.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, comm_->size());
            e.load = sms_ > 0 ? kernel_load(*comm_, rounded, sms_, e.time.seconds())
                              : nccl_load(*comm_, rounded, e.algorithm, e.time.seconds());
            e.has_load = true;
        }
        return e.load;
    }

private:
    /// A collective's time, the algorithm it runs with and (once asked for) its load.
    struct Entry {
        sim::Time time;
        collectives::Algorithm algorithm = collectives::Algorithm::ring;
        bool has_load = false;
        CommLoad load;
    };
    Entry& entry(const collectives::Collective& c) {
        if (comm_ == nullptr || comm_->size() < 2) {
            none_ = Entry{};
            none_.has_load = true;
            return none_;
        }
        const auto key =
            std::make_tuple(static_cast<int>(c.op), c.bytes, static_cast<int>(c.dtype));
        auto it = cache_.find(key);
        if (it != cache_.end())
            return it->second;
        collectives::Collective rounded = c;
        rounded.bytes = collectives::round_bytes(c.op, c.bytes, c.dtype, comm_->size());
        Entry e;
        if (rounded.bytes > 0) {
            const collectives::Choice choice = comm_->choose(rounded);
            e.time = stretch_ == 1.0 ? choice.time
                                     : sim::Time::from_seconds(choice.time.seconds() * stretch_);
            e.algorithm = choice.algorithm;
        } else {
            e.has_load = true;
        }
        return cache_.emplace(key, e).first->second;
    }
    const collectives::Communicator* comm_;
    double stretch_ = 1.0;
    int sms_ = 0;
    std::map<std::tuple<int, std::int64_t, int>, Entry> cache_;
    Entry none_;
};

} // namespace clustersim::strategies::parallel::detail
