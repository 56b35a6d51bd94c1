#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <stdexcept>

namespace clustersim::sim {

FlowNetwork::FlowNetwork(Engine& engine)
    : engine_(engine) {
}

ResourceId FlowNetwork::add_resource(double capacity, std::string name) {
    if (!(capacity > 0) || !std::isfinite(capacity))
        throw std::invalid_argument("resource '" + name + "' needs a positive finite capacity");
    resources_.push_back(Resource{capacity, std::move(name)});
    return static_cast<ResourceId>(resources_.size() - 1);
}

FlowId FlowNetwork::start(FlowSpec spec) {
    if (!(spec.bytes >= 0) || !std::isfinite(spec.bytes))
        throw std::invalid_argument("flow size must be a finite number of bytes >= 0");
    if (!(spec.max_rate > 0))
        throw std::invalid_argument("flow max_rate must be positive");
    for (ResourceId r : spec.path) {
        if (r >= resources_.size())
            throw std::invalid_argument("flow path names an unknown resource");
    }
    const FlowId id = next_id_++;
    ++in_flight_;
    Flow flow{id,
              spec.bytes,
              spec.bytes,
              0.0,
              spec.max_rate,
              std::move(spec.path),
              std::move(spec.on_complete)};
    if (spec.latency == Time::zero()) {
        activate(std::move(flow));
        return id;
    }
    std::uint32_t slot;
    if (!free_waiting_.empty()) {
        slot = free_waiting_.back();
        free_waiting_.pop_back();
        waiting_[slot] = std::move(flow);
    } else {
        slot = static_cast<std::uint32_t>(waiting_.size());
        waiting_.push_back(std::move(flow));
    }
    engine_.after(spec.latency, [this, slot] {
        Flow f = std::move(waiting_[slot]);
        free_waiting_.push_back(slot);
        activate(std::move(f));
    });
    return id;
}

void FlowNetwork::activate(Flow&& flow) {
    if (flow.remaining <= 0) {
        finish(flow);
        return;
    }
    // Bring every active flow's progress up to now before the rates change.
    advance_to_now();
    active_.push_back(std::move(flow));
    request_reshare();
}

void FlowNetwork::advance_to_now() {
    const Time now = engine_.now();
    if (now == last_update_)
        return;
    const double dt = (now - last_update_).seconds();
    for (Flow& f : active_)
        f.remaining -= f.rate * dt;
    last_update_ = now;
}

void FlowNetwork::request_reshare() {
    if (reshare_pending_)
        return;
    reshare_pending_ = true;
    engine_.after(Time::zero(), [this] { reshare_now(); });
}

void FlowNetwork::reshare_now() {
    reshare_pending_ = false;
    advance_to_now();
    compute_max_min_rates();
    ++reshares_;
    on_rates_changed.emit();
    schedule_next_completion();
}

void FlowNetwork::schedule_next_completion() {
    if (completion_scheduled_) {
        engine_.cancel(completion_event_);
        completion_scheduled_ = false;
    }
    double earliest = std::numeric_limits<double>::infinity();
    for (const Flow& f : active_) {
        if (f.rate > 0)
            earliest = std::min(earliest, std::max(0.0, f.remaining) / f.rate);
    }
    if (!std::isfinite(earliest))
        return;
    completion_event_ = engine_.at(engine_.now() + Time::from_seconds_ceil(earliest), [this] {
        completion_scheduled_ = false;
        on_completion_event();
    });
    completion_scheduled_ = true;
}

void FlowNetwork::on_completion_event() {
    advance_to_now();
    // A flow is done when what is left would take under a picosecond (rounding of the
    // completion time to whole picoseconds leaves at most that much).
    std::vector<Flow> done;
    auto is_done = [](const Flow& f) {
        return f.remaining <= std::max(1e-6, f.rate * 1e-12) || f.remaining <= f.bytes * 1e-12;
    };
    auto split = std::stable_partition(active_.begin(), active_.end(),
                                       [&](const Flow& f) { return !is_done(f); });
    for (auto it = split; it != active_.end(); ++it)
        done.push_back(std::move(*it));
    active_.erase(split, active_.end());
    // Rates change for the survivors; batch with anything the callbacks start at this instant.
    request_reshare();
    for (Flow& f : done)
        finish(f);
}

void FlowNetwork::finish(Flow& flow) {
    for (ResourceId r : flow.path)
        resources_[r].bytes_carried += flow.bytes;
    --in_flight_;
    on_flow_complete.emit(flow.id);
    if (flow.on_complete) {
        auto cb = std::move(flow.on_complete);
        cb(flow.id);
    }
}

double FlowNetwork::rate(FlowId id) const {
    for (const Flow& f : active_) {
        if (f.id == id)
            return f.rate;
    }
    return 0;
}

double FlowNetwork::load(ResourceId r) const {
    double sum = 0;
    for (const Flow& f : active_) {
        if (std::find(f.path.begin(), f.path.end(), r) != f.path.end())
            sum += f.rate;
    }
    return sum;
}

void FlowNetwork::compute_max_min_rates() {
    // Progressive filling: repeatedly take the resource whose fair share (remaining capacity
    // over unfrozen flows) is smallest, freeze its flows at that share, and charge them to every
    // resource on their paths. A flow's own max_rate acts as a private resource. The heap is
    // lazy: an entry whose version is out of date is skipped.
    // The per-resource scratch arrays are sized to all resources once and kept zeroed between
    // passes; a pass touches (and resets) only the resources its active flows cross, so its cost
    // follows the flows, not the size of the network (a 100,000-GPU fabric has millions of
    // resources and a collective's step crosses a few thousand).
    const std::size_t nr = resources_.size();
    const std::size_t nf = active_.size();
    for (const Flow& f : active_) {
        if (f.path.empty() && !std::isfinite(f.max_rate))
            throw std::logic_error("a flow with an empty path needs a finite max_rate");
    }
    if (count_.size() < nr) {
        count_.resize(nr, 0);
        version_.resize(nr, 0);
        dirty_.resize(nr, 0);
        slot_.resize(nr, 0);
        remaining_capacity_.resize(nr, 0);
    }
    frozen_.assign(nf, 0);
    touched_.clear();
    for (const Flow& f : active_) {
        for (ResourceId r : f.path) {
            if (count_[r]++ == 0) {
                slot_[r] = static_cast<std::uint32_t>(touched_.size());
                touched_.push_back(r);
            }
        }
    }
    // Flows by resource, in flow order: offset_ and members_ indexed by a resource's slot.
    const std::size_t nt = touched_.size();
    offset_.assign(nt + 1, 0);
    for (std::size_t j = 0; j < nt; ++j)
        offset_[j + 1] = offset_[j] + count_[touched_[j]];
    members_.resize(offset_[nt]);
    {
        std::vector<std::uint32_t> fill(offset_.begin(), offset_.end() - 1);
        for (std::uint32_t i = 0; i < nf; ++i) {
            for (ResourceId r : active_[i].path)
                members_[fill[slot_[r]]++] = i;
        }
    }

    struct Entry {
        double share;
        std::uint32_t index; // resource id, or nr + flow index for a flow's own cap
        std::uint32_t version;
        bool operator>(const Entry& o) const {
            return share != o.share ? share > o.share : index > o.index;
        }
    };
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    for (ResourceId r : touched_) {
        remaining_capacity_[r] = resources_[r].capacity;
        heap.push(Entry{remaining_capacity_[r] / count_[r], r, 0});
    }
    for (std::uint32_t i = 0; i < nf; ++i) {
        if (std::isfinite(active_[i].max_rate))
            heap.push(Entry{active_[i].max_rate, static_cast<std::uint32_t>(nr + i), 0});
    }

    // Freezing a resource's flows changes the share of every resource on their paths; those
    // are collected and re-queued once per batch (not once per flow), which is all the heap
    // can see anyway: nothing is popped until the batch is done.
    std::vector<ResourceId> changed;
    auto freeze = [&](std::uint32_t i, double rate) {
        frozen_[i] = 1;
        active_[i].rate = rate;
        for (ResourceId q : active_[i].path) {
            remaining_capacity_[q] = std::max(0.0, remaining_capacity_[q] - rate);
            --count_[q];
            if (!dirty_[q]) {
                dirty_[q] = 1;
                changed.push_back(q);
            }
        }
    };
    auto requeue = [&] {
        for (ResourceId q : changed) {
            dirty_[q] = 0;
            ++version_[q];
            if (count_[q] > 0)
                heap.push(Entry{remaining_capacity_[q] / count_[q], q, version_[q]});
        }
        changed.clear();
    };

    while (!heap.empty()) {
        const Entry e = heap.top();
        heap.pop();
        if (e.index >= nr) {
            const std::uint32_t i = e.index - static_cast<std::uint32_t>(nr);
            if (!frozen_[i]) {
                freeze(i, e.share);
                requeue();
            }
            continue;
        }
        const ResourceId r = e.index;
        if (e.version != version_[r] || count_[r] == 0)
            continue;
        const std::uint32_t j = slot_[r];
        for (std::uint32_t k = offset_[j]; k < offset_[j + 1]; ++k) {
            const std::uint32_t i = members_[k];
            if (!frozen_[i])
                freeze(i, e.share);
        }
        requeue();
    }
    // Leave the scratch zeroed for the next pass (every flow is frozen now, so the counts are
    // already 0; the versions are not).
    for (ResourceId r : touched_) {
        count_[r] = 0;
        version_[r] = 0;
    }
}

} // namespace clustersim::sim
