#include "strategies/collectives/flow_fold.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace clustersim::strategies::collectives::detail {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The margin keeps rounding in the filling's running sums from making a resource whose flows'
// bounds fit exactly look full.
constexpr double kMargin = 1 - 1e-9;
} // namespace

void FairShareProof::prove(const sim::FlowNetwork& net, std::span<const FoldFlow> flows,
                           const std::function<bool(sim::ResourceId)>& own,
                           std::vector<double>& rate, std::vector<char>& leave,
                           std::uintptr_t series) {
    const std::size_t n = flows.size();
    rate.assign(n, kNaN);
    leave.assign(n, 0);
    u_.resize(n);
    b_.resize(n);
    open_.clear();
    index(net, flows, own, series);
    // Passes over the flows not proved yet, each on what the proved ones leave; the filling
    // once they have visited the flows about as often as it does (its reverse index and heap):
    // a round they prove in a few passes (a ring's, a tree's) keeps their answer.
    std::size_t visits = 0;
    bool filled = false;
    while (!open_.empty()) {
        if (!filled && visits >= fill_after_ * n) {
            filled = true;
            if (fill(flows, fill_rate_)) {
                rate = fill_rate_;
                open_.clear();
                leave.assign(n, 1);
                return;
            }
        }
        visits += open_.size();
        if (!pass(flows, rate))
            break;
    }
    if (open_.empty()) {
        leave.assign(n, 1);
        return;
    }
    for (std::uint32_t i : open_) {
        for (std::uint32_t k : path(i))
            crossed_[k].unproved = true;
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(rate[i]))
            continue;
        bool alone = true;
        for (std::uint32_t k : path(static_cast<std::uint32_t>(i)))
            alone = alone && !crossed_[k].unproved;
        leave[i] = alone ? 1 : 0;
    }
}

void FairShareProof::index(const sim::FlowNetwork& net, std::span<const FoldFlow> flows,
                           const std::function<bool(sim::ResourceId)>& own, std::uintptr_t series) {
    const std::size_t n = flows.size();
    if (use_.size() < net.resource_count())
        use_.resize(net.resource_count(), 0);
    ++call_;
    touched_.clear();
    std::swap(slots_, last_slots_);
    std::swap(first_slot_, last_first_);
    std::swap(path_id_, last_path_id_);
    more_ = series != 0;
    if (!more_ || series != series_) {
        // Places are kept only between the rounds of one series (tables kept from phase to
        // phase, of NVLSTree's on 100,000 GPUs, would hold the resources of all of them).
        for (const Crossed& c : crossed_)
            use_[c.resource] = 0;
        crossed_.clear();
        stamp_.clear();
        last_path_id_.clear();
    }
    series_ = series;
    slots_.clear();
    first_slot_.resize(n + 1);
    path_id_.resize(more_ ? n : 0);
    const std::size_t last_n = last_path_id_.size();
    const std::size_t shift = last_n > n ? last_n - n : 0;
    // A place made by this proof is its own from the start; one kept from the series' last
    // proof is taken (its counts cleared) when first crossed. Without a series every place is
    // this proof's, and no stamps nor list of them are kept (a round on 100,000 GPUs crosses
    // two million resources).
    auto place = [&](sim::ResourceId e) {
        if (use_[e] == 0) {
            crossed_.push_back({e, 0, net.capacity(e), 0, 0, own(e), false});
            use_[e] = static_cast<std::uint32_t>(crossed_.size());
            if (more_) {
                stamp_.push_back(call_);
                touched_.push_back(use_[e] - 1);
            }
        }
        return use_[e] - 1;
    };
    // The bounds u, summed per resource with the flows' count; each flow's resources as places
    // in the tables, read by the passes without the network's.
    for (std::size_t i = 0; i < n; ++i) {
        const FoldFlow& f = flows[i];
        const auto start = static_cast<std::uint32_t>(slots_.size());
        first_slot_[i] = start;
        const std::uintptr_t id = f.route != nullptr ? reinterpret_cast<std::uintptr_t>(f.route)
                                  : f.has_edge()     ? (std::uintptr_t{f.edge} << 1) | 1
                                                     : 0;
        if (more_)
            path_id_[i] = id;
        const std::size_t j = i < last_n && last_path_id_[i] == id ? i : i + shift;
        if (j < last_n && last_path_id_[j] == id) {
            slots_.insert(slots_.end(), last_slots_.begin() + last_first_[j],
                          last_slots_.begin() + last_first_[j + 1]);
        } else {
            for (sim::ResourceId e : f.path())
                slots_.push_back(place(e));
        }
        double u = f.max_rate;
        for (std::uint32_t s = start; s < slots_.size(); ++s) {
            const std::uint32_t k = slots_[s];
            Crossed& c = crossed_[k];
            if (more_ && stamp_[k] != call_) {
                stamp_[k] = call_;
                c = {c.resource, 0, c.capacity, 0, 0, own(c.resource), false};
                touched_.push_back(k);
            }
            u = std::min(u, c.capacity);
        }
        u_[i] = u;
        open_.push_back(static_cast<std::uint32_t>(i));
        // A flow standing for `count` is that many on each resource (times 1 is exact).
        for (std::uint32_t s = start; s < slots_.size(); ++s) {
            Crossed& c = crossed_[slots_[s]];
            c.load += u * f.count;
            c.open += f.count;
        }
    }
    first_slot_[n] = static_cast<std::uint32_t>(slots_.size());
    if (!more_) { // nothing follows to reuse them: give their room back
        std::vector<std::uint32_t>().swap(last_slots_);
        std::vector<std::uint32_t>().swap(last_first_);
        std::vector<std::uintptr_t>().swap(last_path_id_);
    }
    const std::size_t nc = crossed_.size();
    term_.resize(nc);
    uniform_.resize(nc);
    seen_.resize(nc);
    fixed_.resize(nc);
    each_place([&](std::uint32_t k) { fixed_[k] = Fixed{}; });
    first_pass_ = true;
}

bool FairShareProof::pass(std::span<const FoldFlow> flows, std::vector<double>& rate) {
    // The places an unproved flow crosses: all of them in the first pass, which proves most
    // flows of a round; after it, a list of those still crossed, so that a pass costs what is
    // left to prove (an all-to-all's flows are proved over dozens of passes).
    const auto each_live = [&](auto&& visit) {
        if (first_pass_) {
            each_place([&](std::uint32_t k) {
                if (crossed_[k].open > 0)
                    visit(k);
            });
        } else {
            for (std::uint32_t k : live_)
                visit(k);
        }
    };
    each_live([&](std::uint32_t k) {
        const Crossed& c = crossed_[k];
        // As the network computes its first share there, when nothing is proved.
        const double share = (c.capacity - c.fixed) / static_cast<double>(c.open);
        const bool limits = !(c.load + c.fixed <= c.capacity * kMargin);
        term_[k] = !c.own ? -1 : limits ? share : c.capacity;
        uniform_[k] = limits ? share : -1;
        seen_[k] = {kNaN, sim::Time::zero(), kInf};
    });
    for (std::uint32_t i : open_) {
        const FoldFlow& f = flows[i];
        double b = f.max_rate;
        for (std::uint32_t k : path(i))
            b = std::min(b, term_[k]);
        const bool all_own = !(b < 0);
        b_[i] = all_own ? b : kNaN;
        for (std::uint32_t k : path(i)) {
            Seen& x = seen_[k];
            if (std::isnan(x.first_bytes)) {
                x.first_bytes = f.bytes;
                x.first_latency = f.latency;
            }
            if (!all_own || x.first_bytes != f.bytes || x.first_latency != f.latency)
                x.least_b = -1;
            else
                x.least_b = std::min(x.least_b, b);
        }
    }
    each_live([&](std::uint32_t k) {
        if (seen_[k].least_b != uniform_[k])
            uniform_[k] = -1;
    });
    // Proved: at its cap, or at the share of a uniform resource whose proved flows last as long.
    proved_.clear();
    for (std::uint32_t i : open_) {
        const FoldFlow& f = flows[i];
        const double b = b_[i];
        if (std::isnan(b))
            continue;
        bool proved = b == f.max_rate;
        const double duration = f.bytes / b;
        for (std::uint32_t k : path(i)) {
            if (proved)
                break;
            proved = uniform_[k] == b && fixed_[k].outlast(f.latency, duration);
        }
        if (proved)
            proved_.push_back(i);
    }
    if (proved_.empty())
        return false;
    if (proved_.size() == open_.size()) { // all proved: nothing is left to share
        for (std::uint32_t i : proved_)
            rate[i] = b_[i];
        open_.clear();
        return false;
    }
    // What the proved flows leave matters only where an unproved flow still goes: those places
    // are marked (a few), and the proved flows' rates charged there alone (charging every place
    // cost a cache miss per hop of every proved flow).
    for (std::uint32_t i : proved_)
        rate[i] = b_[i];
    std::erase_if(open_, [&](std::uint32_t i) { return !std::isnan(rate[i]); });
    if (mark_.size() < crossed_.size())
        mark_.resize(crossed_.size(), 0);
    live_.clear();
    for (std::uint32_t i : open_) {
        for (std::uint32_t k : path(i)) {
            if (!mark_[k]) {
                mark_[k] = 1;
                live_.push_back(k);
            }
        }
    }
    for (std::uint32_t i : proved_) {
        const FoldFlow& f = flows[i];
        const double b = b_[i];
        const double duration = f.bytes / b;
        for (std::uint32_t k : path(i)) {
            if (!mark_[k])
                continue;
            Crossed& c = crossed_[k];
            c.fixed += b * f.count;
            c.load -= u_[i] * f.count;
            c.open -= f.count;
            Fixed& x = fixed_[k];
            x.end = x.count == 0 ? duration : std::min(x.end, duration);
            x.mixed = x.mixed || (x.count > 0 && x.latency != f.latency);
            x.latency = f.latency;
            ++x.count;
        }
    }
    for (std::uint32_t k : live_)
        mark_[k] = 0;
    first_pass_ = false;
    return true;
}

bool FairShareProof::fill(std::span<const FoldFlow> flows, std::vector<double>& rate) {
    const std::size_t n = flows.size();
    const std::size_t nc = crossed_.size();
    rate.assign(n, kNaN);
    bool own = true;
    each_place([&](std::uint32_t k) { own = own && crossed_[k].own; });
    if (!own || n == 0)
        return false;
    // Each place's flows, users_[user_first_[k] .. user_end_[k]), laid out by a count over the
    // flows' places and a running sum over this proof's places (a series keeps places of other
    // proofs, which are not visited).
    if (user_first_.size() < nc) {
        user_first_.resize(nc);
        user_end_.resize(nc);
    }
    each_place([&](std::uint32_t k) { user_end_[k] = 0; });
    for (std::uint32_t s : slots_)
        ++user_end_[s];
    std::uint32_t sum = 0;
    each_place([&](std::uint32_t k) {
        user_first_[k] = sum;
        sum += user_end_[k];
        user_end_[k] = user_first_[k]; // a cursor, for now
    });
    users_.resize(slots_.size());
    changed_.clear();
    for (std::uint32_t i = 0; i < n; ++i) {
        for (std::uint32_t k : path(i))
            users_[user_end_[k]++] = i;
    }
    // Progressive filling as the network's (sim::FlowNetwork::compute_max_min_rates): the
    // place of least share (what is left of it over its flows not frozen) freezes its flows
    // at that share; a key raised by freezes elsewhere is brought up to date when it reaches
    // the top.
    left_.resize(nc);
    unfrozen_.resize(nc);
    fill_key_.resize(nc);
    fill_version_.resize(nc);
    heap_.clear();
    // (Counted from the flows: the passes before it have taken the proved ones off crossed_.)
    each_place([&](std::uint32_t k) {
        double count = 0;
        for (std::uint32_t u = user_first_[k]; u < user_end_[k]; ++u)
            count += flows[users_[u]].count;
        left_[k] = crossed_[k].capacity;
        unfrozen_[k] = count;
        fill_version_[k] = 0;
        fill_key_[k] = left_[k] / count;
        if (count > 0)
            heap_.push_back({fill_key_[k], k, 0});
    });
    constexpr std::uint32_t kAtCap = 0xffffffffU;
    constexpr std::uint32_t kNone = 0xfffffffeU;
    frozen_at_.assign(n, kNone);
    for (std::uint32_t i = 0; i < n; ++i) {
        if (std::isfinite(flows[i].max_rate))
            heap_.push_back({flows[i].max_rate, static_cast<std::uint32_t>(nc + i), 0});
    }
    const auto later = std::greater<FillEntry>();
    std::make_heap(heap_.begin(), heap_.end(), later);
    const auto freeze = [&](std::uint32_t i, double share, std::uint32_t at) {
        frozen_at_[i] = at;
        rate[i] = share;
        const double charge = share * flows[i].count;
        for (std::uint32_t q : path(i)) {
            left_[q] = std::max(0.0, left_[q] - charge);
            unfrozen_[q] -= flows[i].count;
            changed_.push_back(q);
        }
    };
    const auto requeue = [&] {
        for (std::uint32_t q : changed_) {
            if (unfrozen_[q] > 0) {
                const double share = left_[q] / unfrozen_[q];
                if (share < fill_key_[q]) {
                    fill_key_[q] = share;
                    heap_.push_back({share, q, ++fill_version_[q]});
                    std::push_heap(heap_.begin(), heap_.end(), later);
                }
            }
        }
        changed_.clear();
    };
    while (!heap_.empty()) {
        const FillEntry e = heap_.front();
        std::pop_heap(heap_.begin(), heap_.end(), later);
        heap_.pop_back();
        if (e.index >= nc) {
            const std::uint32_t i = e.index - static_cast<std::uint32_t>(nc);
            if (frozen_at_[i] == kNone) {
                freeze(i, e.share, kAtCap);
                requeue();
            }
            continue;
        }
        const std::uint32_t k = e.index;
        if (e.version != fill_version_[k] || !(unfrozen_[k] > 0))
            continue;
        const double share = left_[k] / unfrozen_[k];
        if (share != e.share) { // grown since queued: back in at its place
            fill_key_[k] = share;
            heap_.push_back({share, k, e.version});
            std::push_heap(heap_.begin(), heap_.end(), later);
            continue;
        }
        for (std::uint32_t u = user_first_[k]; u < user_end_[k]; ++u) {
            if (frozen_at_[users_[u]] == kNone)
                freeze(users_[u], share, k);
        }
        requeue();
    }
    // The certificate: every flow at its cap, or frozen at a place all of whose flows start
    // with it and last at least as long (to rounding, as Fixed::outlast). Per place, the
    // least duration of its flows (in left_) and their start if one (else a mark, in
    // fill_version_ whether they share it).
    for (std::uint32_t i = 0; i < n; ++i) {
        if (frozen_at_[i] == kNone || !(rate[i] > 0))
            return false;
    }
    bool certified = true;
    each_place([&](std::uint32_t k) {
        if (!certified || user_first_[k] == user_end_[k])
            return;
        const sim::Time start = flows[users_[user_first_[k]]].latency;
        double least = kInf;
        for (std::uint32_t u = user_first_[k]; u < user_end_[k]; ++u) {
            const FoldFlow& g = flows[users_[u]];
            certified = certified && g.latency == start;
            least = std::min(least, g.bytes / rate[users_[u]]);
        }
        left_[k] = least;
    });
    if (!certified)
        return false;
    for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t k = frozen_at_[i];
        if (k != kAtCap && left_[k] < flows[i].bytes / rate[i] * (1 - 1e-12))
            return false;
    }
    return true;
}

} // namespace clustersim::strategies::collectives::detail
