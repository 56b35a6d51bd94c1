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
    const auto id = static_cast<ResourceId>(resources_.size());
    if (!(capacity > 0) || !std::isfinite(capacity))
        throw std::invalid_argument("resource '" + (name.empty() && namer_ ? namer_(id) : name) +
                                    "' needs a positive finite capacity");
    resources_.push_back(Resource{capacity});
    if (!name.empty()) {
        names_.resize(resources_.size());
        names_.back() = std::move(name);
    }
    return id;
}

std::string FlowNetwork::name(ResourceId r) const {
    (void)resources_.at(r); // an unknown resource throws std::out_of_range, as before
    if (r < names_.size() && !names_[r].empty())
        return names_[r];
    return namer_ ? namer_(r) : std::string{};
}

FlowId FlowNetwork::start(FlowSpec spec) {
    if (!(spec.bytes >= 0) || !std::isfinite(spec.bytes))
        throw std::invalid_argument("flow size must be a finite number of bytes >= 0");
    if (!(spec.max_rate > 0))
        throw std::invalid_argument("flow max_rate must be positive");
    if (spec.count < 1)
        throw std::invalid_argument("a flow stands for at least one flow");
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
              std::move(spec.on_complete),
              spec.count,
              0,
              {},
              false,
              false,
              engine_.now()};
    if (spec.latency == Time::zero()) {
        activate(place(std::move(flow)));
        return id;
    }
    flow.activation = engine_.now() + spec.latency;
    wait(place(std::move(flow)));
    return id;
}

std::uint32_t FlowNetwork::place(Flow&& flow) {
    std::uint32_t slot;
    if (!free_slab_.empty()) {
        slot = free_slab_.back();
        free_slab_.pop_back();
        slab_[slot] = std::move(flow);
    } else {
        slot = static_cast<std::uint32_t>(slab_.size());
        slab_.push_back(std::move(flow));
    }
    return slot;
}

void FlowNetwork::release(std::uint32_t slot) {
    slab_[slot].id = kNoFlow;
    slab_[slot].done = false;
    slab_[slot].path.clear();
    free_slab_.push_back(slot);
}

void FlowNetwork::wait(std::uint32_t slot) {
    const Time at = slab_[slot].activation;
    if (group_open_ && open_group_seq_ + 1 == engine_.scheduled() &&
        wait_groups_[open_group_].at == at) {
        wait_groups_[open_group_].slots.push_back(slot);
        return;
    }
    std::uint32_t g;
    if (!free_wait_groups_.empty()) {
        g = free_wait_groups_.back();
        free_wait_groups_.pop_back();
    } else {
        g = static_cast<std::uint32_t>(wait_groups_.size());
        wait_groups_.emplace_back();
    }
    wait_groups_[g].at = at;
    wait_groups_[g].slots.assign(1, slot);
    open_group_ = g;
    engine_.at(at, [this, g] {
        if (open_group_ == g)
            group_open_ = false;
        // Activations may start flows (a zero-byte flow completes at once): those wait in
        // groups of their own, and this group's list is read by index as it stays put.
        for (std::size_t i = 0; i < wait_groups_[g].slots.size(); ++i)
            activate(wait_groups_[g].slots[i]);
        wait_groups_[g].slots.clear();
        free_wait_groups_.push_back(g);
    });
    open_group_seq_ = engine_.scheduled() - 1;
    group_open_ = true;
}

std::int64_t FlowNetwork::find(FlowId id) const {
    for (std::size_t slot = 0; slot < slab_.size(); ++slot) {
        if (slab_[slot].id == id && !slab_[slot].done)
            return static_cast<std::int64_t>(slot);
    }
    return -1;
}

FlowId FlowNetwork::start_copy(FlowId original, std::vector<ResourceId> path,
                               std::function<void(FlowId)> on_complete, double max_rate,
                               std::uint32_t count) {
    for (ResourceId r : path) {
        if (r >= resources_.size())
            throw std::invalid_argument("flow path names an unknown resource");
    }
    if (!std::isnan(max_rate) && !(max_rate > 0))
        throw std::invalid_argument("flow max_rate must be positive");
    const std::int64_t at = find(original);
    if (at < 0)
        throw std::logic_error("start_copy: the original flow is not in flight");
    const Flow* from = &slab_[static_cast<std::size_t>(at)];
    const bool moving = from->active;
    if (moving)
        advance_to_now(); // the bytes it has left now
    const FlowId id = next_id_++;
    ++in_flight_;
    Flow flow{id,
              from->bytes,
              from->remaining,
              0.0,
              std::isnan(max_rate) ? from->max_rate : max_rate,
              std::move(path),
              std::move(on_complete),
              count == 0 ? from->count : count,
              0,
              {},
              false,
              false,
              from->activation};
    const std::uint32_t slot = place(std::move(flow));
    if (moving)
        activate(slot);
    else
        wait(slot);
    return id;
}

bool FlowNetwork::set_max_rate(FlowId id, double max_rate) {
    if (!(max_rate > 0))
        throw std::invalid_argument("flow max_rate must be positive");
    const std::int64_t at = find(id);
    if (at < 0)
        return false;
    const auto slot = static_cast<std::uint32_t>(at);
    if (slab_[slot].max_rate == max_rate)
        return true;
    if (slab_[slot].active) {
        advance_to_now(); // its bytes so far moved at the old rate
        seed_flows_.push_back(slot);
        request_reshare();
    }
    slab_[slot].max_rate = max_rate;
    return true;
}

bool FlowNetwork::set_path(FlowId id, std::vector<ResourceId> path) {
    for (ResourceId r : path) {
        if (r >= resources_.size())
            throw std::invalid_argument("flow path names an unknown resource");
    }
    const std::int64_t at = find(id);
    if (at < 0)
        return false;
    const auto slot = static_cast<std::uint32_t>(at);
    if (!slab_[slot].active) { // waiting for its latency: it takes the path when it starts
        slab_[slot].path = std::move(path);
        return true;
    }
    advance_to_now(); // its bytes so far moved at its rate on the old path
    detach(slot);
    slab_[slot].path = std::move(path);
    slab_[slot].active = true;
    attach(slot);
    seed_flows_.push_back(slot);
    request_reshare();
    return true;
}

void FlowNetwork::activate(std::uint32_t slot) {
    if (slab_[slot].remaining <= 0) {
        // finish() calls back, which may start flows (and move slab_): finish a copy.
        Flow flow = std::move(slab_[slot]);
        release(slot);
        finish(flow);
        return;
    }
    // Bring every active flow's progress up to now before the rates change.
    advance_to_now();
    slab_[slot].order = next_order_++;
    slab_[slot].active = true;
    active_.push_back(slot);
    attach(slot);
    seed_flows_.push_back(slot);
    request_reshare();
}

void FlowNetwork::attach(std::uint32_t slot) {
    if (users_.size() < resources_.size())
        users_.resize(resources_.size());
    Flow& f = slab_[slot];
    // Counts per resource are kept from the first flow that stands for several (until then a
    // resource's flows are its users: a table of millions of resources saved).
    if (f.count > 1 && !counted_) { // every flow so far stands for one
        weight_.resize(resources_.size(), 0);
        for (std::size_t r = 0; r < resources_.size(); ++r)
            weight_[r] = static_cast<std::uint32_t>(users_[r].size());
        counted_ = true;
    }
    if (counted_ && weight_.size() < resources_.size())
        weight_.resize(resources_.size(), 0);
    f.at.resize(f.path.size());
    for (std::size_t k = 0; k < f.path.size(); ++k) {
        auto& users = users_[f.path[k]];
        f.at[k] = static_cast<std::uint32_t>(users.size());
        users.push_back(slot);
        if (counted_)
            weight_[f.path[k]] += f.count;
        seed(f.path[k]);
    }
}

void FlowNetwork::seed(ResourceId r) {
    if (seeded_.size() < resources_.size())
        seeded_.resize(resources_.size(), 0);
    if (!seeded_[r]) {
        seeded_[r] = 1;
        seed_resources_.push_back(r);
    }
}

void FlowNetwork::clear_seeds() {
    for (ResourceId r : seed_resources_)
        seeded_[r] = 0;
    seed_resources_.clear();
    seed_flows_.clear();
}

void FlowNetwork::detach(std::uint32_t slot) {
    Flow& f = slab_[slot];
    for (std::size_t k = 0; k < f.path.size(); ++k) {
        const ResourceId r = f.path[k];
        auto& users = users_[r];
        const auto last_place = static_cast<std::uint32_t>(users.size() - 1);
        const std::uint32_t moved = users.back();
        users[f.at[k]] = moved;
        users.pop_back();
        if (counted_)
            weight_[r] -= f.count;
        if (moved != slot) { // the flow that took this place: point it there
            Flow& m = slab_[moved];
            for (std::size_t j = 0; j < m.path.size(); ++j) {
                if (m.path[j] == r && m.at[j] == last_place) {
                    m.at[j] = f.at[k];
                    break;
                }
            }
        }
        seed(r);
    }
    f.active = false;
}

void FlowNetwork::advance_to_now() {
    const Time now = engine_.now();
    if (now == last_update_)
        return;
    const double dt = (now - last_update_).seconds();
    for (std::uint32_t slot : active_) {
        Flow& f = slab_[slot];
        f.remaining -= f.rate * dt;
    }
    last_update_ = now;
}

void FlowNetwork::request_reshare() {
    if (reshare_pending_)
        return;
    reshare_pending_ = true;
    engine_.after(Time::zero(), [this] { reshare(false); });
}

void FlowNetwork::reshare_now() {
    reshare(true);
}

void FlowNetwork::reshare(bool everything) {
    reshare_pending_ = false;
    advance_to_now();
    if (everything) {
        component_ = active_;
        clear_seeds();
    } else {
        collect_component();
    }
    compute_max_min_rates();
    ++reshares_;
    flows_reshared_ += component_.size();
    on_rates_changed.emit();
    schedule_next_completion();
}

void FlowNetwork::collect_component() {
    // Every flow reachable from a changed resource or a started flow, through resources
    // shared; the flows outside keep their rates (their component is as it was).
    component_.clear();
    if (++mark_ == 0) { // wrapped: clear the marks once every 2^32 passes
        std::fill(flow_mark_.begin(), flow_mark_.end(), 0);
        std::fill(resource_mark_.begin(), resource_mark_.end(), 0);
        mark_ = 1;
    }
    if (flow_mark_.size() < slab_.size())
        flow_mark_.resize(slab_.size(), 0);
    if (resource_mark_.size() < resources_.size())
        resource_mark_.resize(resources_.size(), 0);
    stack_.clear();
    auto push_resource = [&](ResourceId r) {
        if (resource_mark_[r] != mark_) {
            resource_mark_[r] = mark_;
            stack_.push_back(r);
        }
    };
    auto add_flow = [&](std::uint32_t slot) {
        if (flow_mark_[slot] == mark_)
            return;
        flow_mark_[slot] = mark_;
        component_.push_back(slot);
        for (ResourceId r : slab_[slot].path)
            push_resource(r);
    };
    for (ResourceId r : seed_resources_)
        push_resource(r);
    for (std::uint32_t slot : seed_flows_) {
        if (slab_[slot].active)
            add_flow(slot);
    }
    clear_seeds();
    while (!stack_.empty()) {
        const ResourceId r = stack_.back();
        stack_.pop_back();
        for (std::uint32_t slot : users_[r])
            add_flow(slot);
    }
    std::sort(component_.begin(), component_.end(),
              [&](std::uint32_t a, std::uint32_t b) { return slab_[a].order < slab_[b].order; });
}

void FlowNetwork::schedule_next_completion() {
    if (completion_scheduled_) {
        engine_.cancel(completion_event_);
        completion_scheduled_ = false;
    }
    double earliest = std::numeric_limits<double>::infinity();
    for (std::uint32_t slot : active_) {
        const Flow& f = slab_[slot];
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
    auto is_done = [](const Flow& f) {
        return f.remaining <= std::max(1e-6, f.rate * 1e-12) || f.remaining <= f.bytes * 1e-12;
    };
    auto split = std::stable_partition(active_.begin(), active_.end(),
                                       [&](std::uint32_t slot) { return !is_done(slab_[slot]); });
    done_.assign(split, active_.end());
    for (std::uint32_t slot : done_) {
        detach(slot);
        slab_[slot].done = true;
    }
    active_.erase(split, active_.end());
    // Rates change for the survivors; batch with anything the callbacks start at this instant.
    request_reshare();
    // finish() may start flows but never completes one, so done_ is not touched meanwhile; a
    // callback may move slab_, so each flow is moved out before its own.
    for (std::uint32_t slot : done_) {
        Flow f = std::move(slab_[slot]);
        release(slot);
        finish(f);
    }
    done_.clear();
}

void FlowNetwork::finish(Flow& flow) {
    for (ResourceId r : flow.path)
        resources_[r].bytes_carried += flow.bytes * flow.count;
    --in_flight_;
    on_flow_complete.emit(flow.id);
    if (flow.on_complete) {
        auto cb = std::move(flow.on_complete);
        cb(flow.id);
    }
}

double FlowNetwork::rate(FlowId id) const {
    for (std::uint32_t slot : active_) {
        if (slab_[slot].id == id)
            return slab_[slot].rate;
    }
    return 0;
}

double FlowNetwork::load(ResourceId r) const {
    double sum = 0;
    for (std::uint32_t slot : active_) {
        const Flow& f = slab_[slot];
        if (std::find(f.path.begin(), f.path.end(), r) != f.path.end())
            sum += f.rate * f.count;
    }
    return sum;
}

void FlowNetwork::compute_max_min_rates() {
    // Progressive filling: repeatedly take the resource whose fair share (remaining capacity
    // over unfrozen flows) is smallest, freeze its flows at that share, and charge them to every
    // resource on their paths. A flow's own max_rate acts as a private resource.
    // The per-resource scratch arrays are sized to all resources once and kept zeroed between
    // passes; a pass touches (and resets) only the resources its flows cross, so its cost
    // follows the flows, not the size of the network (a 100,000-GPU fabric has millions of
    // resources and a collective's step crosses a few thousand). A resource's flows are its
    // users_ (the component is closed under sharing, so they all belong to it): the order in
    // which one batch freezes them does not matter, each charging the same share.
    const std::size_t nr = resources_.size();
    const std::size_t nf = component_.size();
    for (std::uint32_t slot : component_) {
        const Flow& f = slab_[slot];
        if (f.path.empty() && !std::isfinite(f.max_rate))
            throw std::logic_error("a flow with an empty path needs a finite max_rate");
    }
    if (count_.size() < nr) {
        count_.resize(nr, 0);
        version_.resize(nr, 0);
        dirty_.resize(nr, 0);
        remaining_capacity_.resize(nr, 0);
        key_.resize(nr, 0);
    }
    if (frozen_.size() < slab_.size())
        frozen_.resize(slab_.size(), 0);
    using Entry = HeapEntry;
    heap_.clear();
    touched_.clear();
    for (std::uint32_t slot : component_) {
        frozen_[slot] = 0;
        for (ResourceId r : slab_[slot].path) {
            if (count_[r] == 0) {
                count_[r] = counted_ ? weight_[r] : static_cast<std::uint32_t>(users_[r].size());
                remaining_capacity_[r] = resources_[r].capacity;
                key_[r] = remaining_capacity_[r] / count_[r];
                touched_.push_back(r);
                heap_.push_back(Entry{key_[r], r, 0});
            }
        }
    }
    for (std::uint32_t i = 0; i < nf; ++i) {
        const double cap = slab_[component_[i]].max_rate;
        if (std::isfinite(cap))
            heap_.push_back(Entry{cap, static_cast<std::uint32_t>(nr + i), 0});
    }
    // The heap's storage is kept between passes (a binary heap on heap_, as priority_queue),
    // built at once from the first shares.
    std::make_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
    auto push = [&](Entry e) {
        heap_.push_back(e);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
    };

    // Freezing a resource's flows changes the share of every resource on their paths; those
    // are collected once per batch. A share only grows as flows freeze at the smallest share
    // (k flows at s <= R/n leave (R - ks)/(n - k) >= R/n), so a resource's heap key may stay
    // as it is, too low, and be brought up to date when it reaches the top, which most never
    // do before their flows are frozen elsewhere: one heap operation where there was one per
    // change. Only a share that rounding made smaller than the key is queued again at once;
    // either way the resource taken is the one with the smallest (share, id) in up-to-date
    // terms, the order of the eager queue this replaces, so the rates are the same bit for bit.
    std::vector<ResourceId>& changed = changed_;
    changed.clear();
    auto freeze = [&](std::uint32_t slot, double rate) {
        frozen_[slot] = 1;
        Flow& f = slab_[slot];
        f.rate = rate;
        // rate * 1 is rate: a flow of one does the arithmetic it did before counts.
        const double charge = rate * f.count;
        for (ResourceId q : f.path) {
            remaining_capacity_[q] = std::max(0.0, remaining_capacity_[q] - charge);
            count_[q] -= f.count;
            if (!dirty_[q]) {
                dirty_[q] = 1;
                changed.push_back(q);
            }
        }
    };
    auto requeue = [&] {
        for (ResourceId q : changed) {
            dirty_[q] = 0;
            if (count_[q] > 0) {
                const double share = remaining_capacity_[q] / count_[q];
                if (share < key_[q]) {
                    key_[q] = share;
                    push(Entry{share, q, ++version_[q]});
                }
            }
        }
        changed.clear();
    };

    while (!heap_.empty()) {
        const Entry e = heap_.front();
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
        heap_.pop_back();
        if (e.index >= nr) {
            const std::uint32_t slot = component_[e.index - static_cast<std::uint32_t>(nr)];
            if (!frozen_[slot]) {
                freeze(slot, e.share);
                requeue();
            }
            continue;
        }
        const ResourceId r = e.index;
        if (e.version != version_[r] || count_[r] == 0)
            continue;
        const double share = remaining_capacity_[r] / count_[r];
        if (share != e.share) { // grown since queued: back in at its place
            key_[r] = share;
            push(Entry{share, r, e.version});
            continue;
        }
        for (std::uint32_t slot : users_[r]) {
            if (!frozen_[slot])
                freeze(slot, share);
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
