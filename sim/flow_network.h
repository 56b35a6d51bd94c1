#pragma once
/// \file
/// Flow-level network: resources with a capacity, flows of N bytes along a path of resources,
/// rates shared max-min fairly (progressive filling).
///
/// Rates are recomputed when a flow starts or ends; all changes at one instant are batched into
/// one recomputation (a "reshare" event), so N flows starting together cost one pass, not N.
/// Between recomputations every active flow moves at a constant rate, so the next completion is
/// known exactly; a single completion event is kept for the earliest finishing flow and is
/// cancelled whenever rates change, so no stale completion ever fires.
///
/// A recomputation re-shares only the flows connected (through shared resources, transitively)
/// to a flow that started or ended since the last one: max-min rates of a connected component
/// depend on nothing outside it, and progressive filling run over a component alone performs
/// the same arithmetic in the same order as over the whole network, so the rates are identical
/// bit for bit and a reshare costs what the affected component holds.
///
/// A flow may stand for `count` identical flows (the same path, size, start and cap): max-min
/// gives identical flows identical rates (its solution is unique, so it is symmetric in them),
/// and they finish together, so one flow that moves at their rate and charges each resource
/// `count` times it is exactly them. An all-to-all's 8 transfers from the GPUs of one node to
/// one GPU elsewhere, relayed by PXN through the same rank, are one such flow.
///
/// The network knows nothing of GPUs: a resource is anything with a capacity in bytes/s.

#include "sim/engine.h"
#include "sim/signal.h"
#include "sim/time.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace clustersim::sim {

using ResourceId = std::uint32_t;
using FlowId = std::uint64_t;

/// What a flow is: its size, the resources it crosses, and what to do when it is done.
struct FlowSpec {
    double bytes = 0;             ///< >= 0; a zero-byte flow completes after its latency
    std::vector<ResourceId> path; ///< resources crossed, each at most once
    Time latency = Time::zero();  ///< time before the first byte moves
    /// A cap of the flow's own (an endpoint or protocol limit), in bytes/s.
    double max_rate = std::numeric_limits<double>::infinity();
    std::function<void(FlowId)> on_complete; ///< called at the completion time
    /// Identical flows this one stands for (>= 1): each moves `bytes` at the flow's rate.
    std::uint32_t count = 1;
};

class FlowNetwork {
public:
    explicit FlowNetwork(Engine& engine);
    FlowNetwork(const FlowNetwork&) = delete;
    FlowNetwork& operator=(const FlowNetwork&) = delete;

    /// Adds a resource of `capacity` bytes/s (> 0). An empty name is made when asked for (by
    /// name(), or an error) by the namer, if one is set.
    ResourceId add_resource(double capacity, std::string name);
    /// Room for `n` resources in all, before adding them one by one.
    void reserve_resources(std::size_t n) { resources_.reserve(n); }
    std::size_t resource_count() const { return resources_.size(); }
    double capacity(ResourceId r) const { return resources_.at(r).capacity; }
    std::string name(ResourceId r) const;
    /// Names the resources added without a name, on demand: a topology of 100,000 GPUs has
    /// millions of links, and formatting every name up front cost more than simulating a
    /// collective on them. The namer must stay valid while names are asked for.
    void set_namer(std::function<std::string(ResourceId)> namer) { namer_ = std::move(namer); }

    /// Starts a flow now; its bytes start moving after `spec.latency`.
    FlowId start(FlowSpec spec);
    /// Starts a copy of flow `original` (in flight: waiting for its latency or moving) in the
    /// state it is in now: the same size, bytes left and cap, moving from the same instant, on
    /// `path`. On resources nothing else crosses, with the same bottleneck, the copy finishes
    /// exactly when `original` does (what symmetry relies on when it must simulate a flow it had
    /// left to a representative). Throws std::logic_error if `original` is not in flight.
    /// `max_rate`, if given, replaces the original's cap on the copy; `count` (>= 1) is the
    /// identical flows the copy stands for (0: the original's).
    FlowId start_copy(FlowId original, std::vector<ResourceId> path,
                      std::function<void(FlowId)> on_complete,
                      double max_rate = std::numeric_limits<double>::quiet_NaN(),
                      std::uint32_t count = 0);
    /// Sets the cap of flow `id` (> 0), from now on; false if it is not in flight (done, or
    /// never started). Symmetry caps a flow at the rate it has proved max-min gives it, and
    /// gives the flow its own cap back when that proof no longer holds.
    bool set_max_rate(FlowId id, double max_rate);

    /// Moves flow `id` onto `path` (resources crossed, each at most once), from now on; false if
    /// it is not in flight. Symmetry runs a representative whose rate it has proved on no
    /// resource (it cannot meet another flow there), and gives it its path back when that proof
    /// no longer holds.
    bool set_path(FlowId id, std::vector<ResourceId> path);

    /// Current rate of an active flow, of each of the identical flows it stands for (0 if it is
    /// waiting for its latency or has completed).
    double rate(FlowId id) const;
    /// Sum of the current rates of the flows crossing `r` (each counted `count` times).
    double load(ResourceId r) const;
    /// Bytes carried across `r` by completed flows.
    double bytes_carried(ResourceId r) const { return resources_.at(r).bytes_carried; }
    /// Flows moving bytes now (latency phase excluded).
    std::size_t active_flows() const { return active_.size(); }
    /// Flows started and not yet completed.
    std::size_t flows_in_flight() const { return in_flight_; }
    /// Number of max-min recomputations so far.
    std::uint64_t reshares() const { return reshares_; }
    /// Flows whose rates those recomputations computed, summed (the work they did).
    std::uint64_t flows_reshared() const { return flows_reshared_; }

    /// Recomputes the rates of every active flow now (the batched reshare event recomputes only
    /// the affected component); public so that benchmarks can time one full recomputation.
    void reshare_now();

    /// Emitted after every recomputation of rates (tests check capacities here).
    Signal<> on_rates_changed;
    /// Emitted when a flow completes, before its own callback.
    Signal<FlowId> on_flow_complete;

private:
    struct Resource {
        double capacity;
        double bytes_carried = 0;
    };
    struct Flow {
        FlowId id;
        double bytes;
        double remaining;
        double rate;
        double max_rate;
        std::vector<ResourceId> path;
        std::function<void(FlowId)> on_complete;
        std::uint32_t count = 1;       ///< identical flows it stands for
        std::uint64_t order = 0;       ///< activation order: ties in the filling follow it
        std::vector<std::uint32_t> at; ///< the flow's place in users_ of each path resource
        bool active = false;
        bool done = false; ///< completed, its callback not yet called (start_copy refuses it)
        Time activation = Time::zero(); ///< when its bytes start moving (after the latency)
    };
    static constexpr FlowId kNoFlow = std::numeric_limits<FlowId>::max();

    /// The slot of flow `id` in flight (not done), or -1.
    std::int64_t find(FlowId id) const;
    /// Puts `flow` in a free slot of slab_ (waiting or active, it keeps that slot).
    std::uint32_t place(Flow&& flow);
    void activate(std::uint32_t slot);
    void wait(std::uint32_t slot); ///< until its activation
    void release(std::uint32_t slot);
    void advance_to_now();
    void request_reshare();
    void reshare(bool everything);
    void on_completion_event();
    void schedule_next_completion();
    void finish(Flow& flow);
    void attach(std::uint32_t slot);
    void detach(std::uint32_t slot);
    void seed(ResourceId r); ///< notes that `r`'s set of flows changed (once per reshare)
    void clear_seeds();
    void collect_component();
    void compute_max_min_rates();

    Engine& engine_;
    std::vector<Resource> resources_;
    /// Names given to add_resource, by resource, up to the last one given: a bound topology's
    /// millions of links have none (the namer makes them), and a string beside each of them
    /// tripled the resource table (48 bytes a resource, 16 without it).
    std::vector<std::string> names_;
    std::function<std::string(ResourceId)> namer_;
    std::vector<Flow> slab_; ///< flows in flight (waiting for their latency or active), by slot
    std::vector<std::uint32_t> free_slab_;
    std::vector<std::uint32_t> active_; ///< slots of the active flows, in activation order
    std::uint64_t next_order_ = 0;
    /// Per resource, the slots of the active flows crossing it (unordered), and once a flow
    /// standing for several has started (`counted_`), the flows they stand for (the sum of
    /// their counts).
    std::vector<std::vector<std::uint32_t>> users_;
    std::vector<std::uint32_t> weight_;
    bool counted_ = false;
    /// Resources whose set of flows changed, and flows started, since the last reshare.
    std::vector<ResourceId> seed_resources_;
    std::vector<char> seeded_; ///< per resource: in seed_resources_ already
    std::vector<std::uint32_t> seed_flows_;
    /// The flows the next filling pass recomputes (slots, in activation order) and the marks
    /// of the search that collects them (per slot and per resource, by pass number).
    std::vector<std::uint32_t> component_;
    std::vector<std::uint32_t> flow_mark_, resource_mark_;
    std::uint32_t mark_ = 0;
    std::vector<ResourceId> stack_;
    /// Flows in their latency phase that become active at one instant, by one event: the
    /// flows of a round start together with one latency, and an event (a 64-byte slot in the
    /// engine) per flow cost 350,000 of them and 67 MB on a 100,000-GPU all-reduce. Flows join
    /// the group of the last event queued only (Engine::scheduled), so the events run in the
    /// order one per flow would have.
    struct WaitGroup {
        Time at;
        std::vector<std::uint32_t> slots;
    };
    std::vector<WaitGroup> wait_groups_;
    std::vector<std::uint32_t> free_wait_groups_;
    std::uint32_t open_group_ = 0;
    std::uint64_t open_group_seq_ = 0; ///< the sequence number of its event
    bool group_open_ = false;          ///< open_group_'s event has not run
    FlowId next_id_ = 0;
    std::size_t in_flight_ = 0;
    Time last_update_ = Time::zero();
    bool reshare_pending_ = false;
    bool completion_scheduled_ = false;
    EventId completion_event_{};
    std::uint64_t reshares_ = 0;
    std::uint64_t flows_reshared_ = 0;

    // Scratch space of the max-min computation, kept to avoid reallocating on every pass.
    // count_, version_, dirty_, key_ and remaining_capacity_ are indexed by resource, count_
    // and version_ zero between passes; frozen_ by flow slot.
    std::vector<std::uint32_t> count_, version_;
    std::vector<double> remaining_capacity_;
    std::vector<double> key_; ///< the share a resource's live heap entry carries
    std::vector<char> frozen_;
    std::vector<char> dirty_; ///< resources whose share a batch of freezes changed
    std::vector<ResourceId> touched_;
    struct HeapEntry {
        double share;
        std::uint32_t index; // resource id, or nr + flow index for a flow's own cap
        std::uint32_t version;
        bool operator>(const HeapEntry& o) const {
            return share != o.share ? share > o.share : index > o.index;
        }
    };
    std::vector<HeapEntry> heap_;
    std::vector<ResourceId> changed_;
    /// Slots of the flows completing in one event: each is moved out of its slot only when its
    /// callback is due (a list of the flows themselves held a round's 350,000 at once).
    std::vector<std::uint32_t> done_;
};

} // namespace clustersim::sim
