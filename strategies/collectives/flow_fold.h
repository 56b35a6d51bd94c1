#pragma once
/// \file
/// Symmetry's proof (internal to the flow runner): which flows of a round get, under max-min
/// sharing, a rate that can be told without simulating them, and which of those may be left to
/// an identical representative.
///
/// Bounds. A flow's max-min rate x is at most u = min(its cap, the least capacity on its path).
/// A resource whose flows' u sum to no more than its capacity never limits any of them. Let b be
/// the least of the flow's cap, cap_q / n_q over the resources q on its path that may limit (n_q
/// flows there) and cap_q over the others: then x >= b (progressive filling freezes a flow at a
/// resource that fills, where every flow then gets at least cap_q / n_q, or at a resource that
/// cannot fill, where every flow is at its u >= b; or at its cap). So x = b when b is the
/// flow's cap, or when the flow crosses a resource r where every flow has b = cap_r / n_r
/// ("uniform"): all n_r of them get at least cap_r / n_r, and r holds no more.
///
/// Passes. With some flows proved at rates x, the others' max-min rates are those of the
/// network whose capacities are what the proved flows leave (the full solution restricted to
/// them keeps every bottleneck): the same bounds on that network prove more flows, pass after
/// pass (a parent's link shared by a child limited elsewhere and one that takes the rest).
///
/// Over time. The rates stay what they were proved to be while the round's flows finish, if
/// the unproved flows of a uniform resource have the same size and start (they finish together)
/// and the flows proved there before last at least as long: r keeps its flows to the end, and as
/// flows leave elsewhere b only grows. So a proved flow moves at b from start to end, and proved
/// flows of the same size, rate and start finish at the same instant.
///
/// Rounding. The proof's shares are computed as the network computes them, but a share on what
/// proved flows leave sums their rates in another order than the network's filling: rates equal
/// in exact terms may differ in their last bits (a relative 1e-16, far below a picosecond of a
/// round). Times agree with the full simulation to the picosecond (the tests, and collective's
/// --fidelity flow against flow-full), not by construction bit for bit.
///
/// One filling. Where every resource the round crosses is its own, and the passes below have
/// not proved every flow after visiting them a few times over, the rates are computed as the
/// network would, by progressive filling (each flow frozen at the resource
/// whose share is least, or at its cap), and held to a certificate: a flow at its cap, or at a
/// resource r whose flows all start with it and last at least as long. Such rates are max-min's
/// (each flow has its cap or a full resource where no flow moves faster: the allocation is the
/// unique max-min one) and stay it to each flow's end (at any instant the flows left keep their
/// resources r whole, so the same certificate holds for them). When every flow is certified
/// they are all proved at once: an all-to-all, whose ECMP collisions at the spines made the
/// passes below prove one level of shares each (430 passes over 2.1 M flows on 4,096 GPUs),
/// costs one filling and a few passes. Otherwise the passes go on.
///
/// Leaving flows out. A proved flow is simulated capped at b, or, if no unproved flow crosses
/// its resources, left to a representative (an identical proved flow, simulated capped at b):
/// the flows left on the network then get from max-min exactly their rates in the full network
/// (the full solution, restricted to them, is feasible and gives each flow a bottleneck: a proved
/// one its cap, an unproved one the resource that limits it in the full network, which holds
/// the same flows at the same rates), and the solution is unique.
///
/// Counts are of the round's flows: every resource of a proved flow, and of the flows of its
/// uniform resource, must carry no other flow while the round runs (`own`). A flow standing
/// for `count` identical flows (sim::FlowSpec::count) is counted as them: `count` times on each
/// of its resources, its bound and rate charged `count` times; what is proved of it is proved
/// of each (identical flows have identical max-min rates).

#include "sim/flow_network.h"
#include "sim/time.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace clustersim::strategies::collectives::detail {

/// No edge: FoldFlow::edge and the runner's flows of memory work (a sentinel, not a flag: with
/// the count beside it a flow stays 40 bytes, and a round holds hundreds of thousands).
constexpr sim::ResourceId kNoEdge = ~sim::ResourceId{0};

/// A flow of a round as the proof sees it: its path is `*route`, or `edge` alone (has_edge()),
/// or nothing (arithmetic only).
struct FoldFlow {
    const std::span<const sim::ResourceId>* route = nullptr;
    sim::ResourceId edge = kNoEdge;
    std::uint32_t count = 1; ///< identical flows it stands for (sim::FlowSpec::count)
    double bytes = 0;
    sim::Time latency;
    double max_rate = 0;
    bool has_edge() const { return edge != kNoEdge; }
    std::span<const sim::ResourceId> path() const {
        if (route != nullptr)
            return *route;
        if (has_edge())
            return {&edge, 1};
        return {};
    }
};

class FairShareProof {
public:
    /// `fill_after`: the passes' visits of flows, in units of the round's flows, after which the
    /// filling is tried (about what it costs; tests give 0 to try it first).
    explicit FairShareProof(std::size_t fill_after = 4)
        : fill_after_(fill_after) {}

    /// Per flow of `flows`: `rate`, the rate max-min gives it, proved (NaN: not proved), and
    /// `leave`, whether it may be left to an identical representative. `own(e)`: resource `e`
    /// carries only the round's flows while it runs (asked once per resource crossed).
    /// `series`: rounds of one series (one phase of one collective: they cross mostly the same
    /// resources) share what the proof learns of their paths; 0: none follows.
    void prove(const sim::FlowNetwork& net, std::span<const FoldFlow> flows,
               const std::function<bool(sim::ResourceId)>& own, std::vector<double>& rate,
               std::vector<char>& leave, std::uintptr_t series = 0);

    /// Forgets the paths of the last proof (its flows' routes may not outlive their
    /// communicator; a new one may reuse their addresses).
    void forget_paths() {
        last_path_id_.clear();
        path_id_.clear();
    }

private:
    /// Places the flows' resources in the tables, with their bounds u summed per resource.
    void index(const sim::FlowNetwork& net, std::span<const FoldFlow> flows,
               const std::function<bool(sim::ResourceId)>& own, std::uintptr_t series);
    /// One pass over the flows not proved yet; false when it proves none, or all.
    bool pass(std::span<const FoldFlow> flows, std::vector<double>& rate);
    /// The filling and its certificate (above); true when every flow is proved, at `rate`.
    bool fill(std::span<const FoldFlow> flows, std::vector<double>& rate);
    /// Flow `i`'s resources' places.
    std::span<const std::uint32_t> path(std::uint32_t i) const {
        return {slots_.data() + first_slot_[i], slots_.data() + first_slot_[i + 1]};
    }
    /// Calls visit(place) for each place this proof crosses.
    template <typename Visit>
    void each_place(Visit&& visit) const {
        if (more_) {
            for (std::uint32_t k : touched_)
                visit(k);
        } else {
            for (std::uint32_t k = 0; k < crossed_.size(); ++k)
                visit(k);
        }
    }

    /// Per resource of the network: its place in the tables below, plus one (0: never crossed).
    /// Places are kept from proof to proof (most rounds cross the resources of the one before,
    /// and a look in a table of millions cost more than the rest of the proof).
    std::vector<std::uint32_t> use_;
    std::size_t fill_after_;
    std::uint32_t call_ = 0;
    std::uintptr_t series_ = 0;        ///< the last proof's series (0: its places were not kept)
    bool more_ = false;                ///< this proof's places are kept for the next of its series
    std::vector<std::uint32_t> stamp_; ///< per place: the proof that last crossed it
    std::vector<std::uint32_t> touched_; ///< the places this proof crosses
    std::vector<std::uint32_t> live_;    ///< those an unproved flow still crosses
    bool first_pass_ = true;             ///< (live_ is made after the first pass)
    std::vector<std::uint8_t> mark_;     ///< per place: in live_ (while it is made)
    /// Per flow, its resources' places: slots_[first_slot_[i] .. first_slot_[i+1]); and the
    /// last proof's, by position, with the path each position had (a round's flows mostly keep
    /// their positions from round to round, or shift by the stages a draining pipeline drops).
    std::vector<std::uint32_t> slots_, first_slot_, last_slots_, last_first_;
    std::vector<std::uintptr_t> path_id_, last_path_id_;
    // Per resource crossed, by place, in tables each of which one loop over the flows reads
    // (a round on 16,384 GPUs crosses 180,000 resources; the loops' cost is their misses).
    /// What the flows' bounds b take from a resource this pass: the share of what the proved
    /// flows leave if it may limit, its capacity if not; -1 if it is not own (no flow on it
    /// is proved).
    std::vector<double> term_;
    /// The share of a uniform resource (every unproved flow there has b = share), else -1.
    std::vector<double> uniform_;
    /// The unproved flows of a resource this pass: one's size and start, their least b.
    struct Seen {
        double first_bytes = 0; ///< NaN: none seen yet this pass
        sim::Time first_latency;
        /// -1: their sizes or starts differ, or one is not own (never a share)
        double least_b = 0;
    };
    std::vector<Seen> seen_;
    /// What each pass starts from (read once per pass, in order).
    struct Crossed {
        sim::ResourceId resource = 0;
        std::uint32_t open = 0; ///< unproved flows crossing it
        double capacity = 0;
        double load = 0;  ///< the sum of the unproved flows' bounds u
        double fixed = 0; ///< the sum of the proved flows' rates
        bool own = false;
        bool unproved = false; ///< an unproved flow crosses it (at the end)
    };
    std::vector<Crossed> crossed_;
    /// What the proved flows there leave to the others.
    struct Fixed {
        double end = 0;    ///< the least duration of the proved flows
        sim::Time latency; ///< their latency
        std::uint32_t count = 0;
        bool mixed = false; ///< their latencies differ
        /// The proved flows here last at least `duration` from the same start (to rounding:
        /// rates equal in exact terms may differ in their last bits, computed from different
        /// sums; a relative 1e-12 of a round is far below a picosecond).
        bool outlast(sim::Time at, double duration) const {
            return count == 0 || (!mixed && latency == at && end >= duration * (1 - 1e-12));
        }
    };
    std::vector<Fixed> fixed_;
    std::vector<double> u_, b_;
    std::vector<std::uint32_t> open_, proved_;
    // The filling's: per place, its flows (users_ from user_first_ to user_end_), what is left of
    // its capacity, its flows not frozen (counted), its key in the heap and that key's version; per
    // flow, the place it froze at (kAtCap: its cap).
    std::vector<std::uint32_t> user_first_, user_end_, users_, fill_version_, frozen_at_;
    std::vector<double> left_, unfrozen_, fill_key_, fill_rate_;
    struct FillEntry {
        double share;
        std::uint32_t index; ///< a place, or places + flow for a flow's cap
        std::uint32_t version;
        bool operator>(const FillEntry& o) const {
            return share != o.share ? share > o.share : index > o.index;
        }
    };
    std::vector<FillEntry> heap_;
    std::vector<std::uint32_t> changed_;
};

} // namespace clustersim::strategies::collectives::detail
