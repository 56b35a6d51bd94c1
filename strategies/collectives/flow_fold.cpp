#include "strategies/collectives/flow_fold.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace clustersim::strategies::collectives::detail {

void FairShareProof::prove(const sim::FlowNetwork& net, std::span<const FoldFlow> flows,
                           const std::function<bool(sim::ResourceId)>& own,
                           std::vector<double>& rate, std::vector<char>& leave) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    // The margin keeps rounding in the filling's running sums from making a resource whose
    // flows' bounds fit exactly look full.
    constexpr double kMargin = 1 - 1e-9;
    const std::size_t n = flows.size();
    if (use_.size() < net.resource_count())
        use_.resize(net.resource_count(), 0);
    crossed_.clear();
    fixed_.clear();
    rate.assign(n, kNaN);
    leave.assign(n, 0);
    u_.resize(n);
    b_.resize(n);
    open_.clear();
    slots_.clear();
    first_slot_.resize(n + 1);

    // The bounds u, summed per resource with the flows' count; each flow's resources as places
    // in crossed_, read by the passes below without the network's tables.
    for (std::size_t i = 0; i < n; ++i) {
        const FoldFlow& f = flows[i];
        first_slot_[i] = static_cast<std::uint32_t>(slots_.size());
        double u = f.max_rate;
        for (sim::ResourceId e : f.path()) {
            if (use_[e] == 0) {
                crossed_.emplace_back();
                crossed_.back().capacity = net.capacity(e);
                crossed_.back().own = own(e);
                fixed_.emplace_back();
                fixed_.back().resource = e;
                use_[e] = static_cast<std::uint32_t>(crossed_.size());
            }
            slots_.push_back(use_[e] - 1);
            u = std::min(u, crossed_[use_[e] - 1].capacity);
        }
        u_[i] = u;
        open_.push_back(static_cast<std::uint32_t>(i));
        for (std::uint32_t k = first_slot_[i]; k < slots_.size(); ++k) {
            Crossed& c = crossed_[slots_[k]];
            c.load += u;
            ++c.open;
        }
    }
    first_slot_[n] = static_cast<std::uint32_t>(slots_.size());
    for (const Fixed& x : fixed_)
        use_[x.resource] = 0;
    auto path = [&](std::uint32_t i) {
        return std::span<const std::uint32_t>(slots_.data() + first_slot_[i],
                                              slots_.data() + first_slot_[i + 1]);
    };

    // Passes over the flows not proved yet, each on what the proved ones leave.
    for (std::uint32_t pass = 1; !open_.empty(); ++pass) {
        for (std::uint32_t i : open_) {
            const FoldFlow& f = flows[i];
            bool all_own = true;
            double b = f.max_rate;
            for (std::uint32_t k : path(i)) {
                Crossed& c = crossed_[k];
                if (c.pass != pass) {
                    c.pass = pass;
                    c.first_bytes = f.bytes;
                    c.first_latency = f.latency;
                    c.mixed = false;
                    c.least_b = kInf;
                    // As the network computes its first share there, when nothing is proved.
                    c.share = (c.capacity - c.fixed) / static_cast<double>(c.open);
                    c.limits = !(c.load + c.fixed <= c.capacity * kMargin);
                }
                all_own = all_own && c.own;
                b = std::min(b, c.limits ? c.share : c.capacity);
            }
            b_[i] = all_own ? b : kNaN;
            for (std::uint32_t k : path(i)) {
                Crossed& c = crossed_[k];
                if (!all_own || c.first_bytes != f.bytes || c.first_latency != f.latency)
                    c.mixed = true;
                else
                    c.least_b = std::min(c.least_b, b);
            }
        }
        // Proved: at its cap, or at the share of a uniform resource whose proved flows last
        // as long.
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
                const Crossed& c = crossed_[k];
                proved = c.limits && !c.mixed && c.least_b == c.share && c.share == b &&
                         fixed_[k].outlast(f.latency, duration);
            }
            if (proved)
                proved_.push_back(i);
        }
        if (proved_.empty())
            break;
        if (proved_.size() == open_.size()) { // all proved: nothing is left to share
            for (std::uint32_t i : proved_)
                rate[i] = b_[i];
            open_.clear();
            break;
        }
        for (std::uint32_t i : proved_) {
            const FoldFlow& f = flows[i];
            const double b = b_[i];
            const double duration = f.bytes / b;
            rate[i] = b;
            for (std::uint32_t k : path(i)) {
                Crossed& c = crossed_[k];
                c.fixed += b;
                c.load -= u_[i];
                --c.open;
                Fixed& x = fixed_[k];
                x.end = x.count == 0 ? duration : std::min(x.end, duration);
                x.mixed = x.mixed || (x.count > 0 && x.latency != f.latency);
                x.latency = f.latency;
                ++x.count;
            }
        }
        std::erase_if(open_, [&](std::uint32_t i) { return !std::isnan(rate[i]); });
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

} // namespace clustersim::strategies::collectives::detail
