// Symmetry's proof (strategies/collectives/flow_fold.h): every rate it claims is the one max-min
// gives, on hand-made cases and on random networks, and what it may not claim it leaves alone.
#include "strategies/collectives/flow_fold.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

using namespace clustersim;
using strategies::collectives::detail::FairShareProof;
using strategies::collectives::detail::FoldFlow;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Net {
    sim::Engine engine;
    sim::FlowNetwork net{engine};
    std::vector<std::vector<sim::ResourceId>> paths; // kept: FoldFlow points into them
    std::vector<std::span<const sim::ResourceId>> spans;
    std::vector<FoldFlow> flows;

    void flow(std::vector<sim::ResourceId> path, double bytes = 1e9, double cap = kInf) {
        paths.push_back(std::move(path));
        FoldFlow f;
        f.bytes = bytes;
        f.max_rate = cap;
        flows.push_back(f);
    }
    /// The proof's rates and leave flags, every resource own unless `shared` says otherwise.
    std::pair<std::vector<double>, std::vector<char>>
    prove(const std::vector<sim::ResourceId>& shared = {}, std::size_t fill_after = 4) {
        spans.assign(paths.begin(), paths.end());
        for (std::size_t i = 0; i < flows.size(); ++i)
            flows[i].route = &spans[i];
        FairShareProof proof(fill_after);
        std::vector<double> rate;
        std::vector<char> leave;
        proof.prove(
            net, flows,
            [&](sim::ResourceId e) {
                return std::find(shared.begin(), shared.end(), e) == shared.end();
            },
            rate, leave);
        return {rate, leave};
    }
    /// The network's max-min rates with every flow on it, at the start; `done`, when each
    /// flow finished.
    std::vector<double> simulate(std::vector<sim::Time>* done = nullptr) {
        std::vector<sim::FlowId> ids;
        std::vector<sim::Time> end(flows.size());
        for (std::size_t i = 0; i < flows.size(); ++i)
            ids.push_back(net.start({flows[i].bytes, paths[i], sim::Time::zero(), flows[i].max_rate,
                                     [this, &end, i](sim::FlowId) { end[i] = engine.now(); },
                                     flows[i].count}));
        engine.run_until(sim::Time::ps(1));
        std::vector<double> out;
        for (auto id : ids)
            out.push_back(net.rate(id));
        engine.run();
        if (done != nullptr)
            *done = end;
        return out;
    }
};

} // namespace

TEST_CASE("flow fold: two children sharing their parent's link get half each, proved",
          "[collectives][flow][symmetry]") {
    Net n;
    const auto up = n.net.add_resource(25e9, "parent link");
    const auto a = n.net.add_resource(32e9, "child a");
    const auto b = n.net.add_resource(32e9, "child b");
    n.flow({a, up});
    n.flow({b, up});
    const auto [rate, leave] = n.prove();
    CHECK(rate[0] == 12.5e9);
    CHECK(rate[1] == 12.5e9);
    CHECK(leave[0]);
    CHECK(leave[1]);
    CHECK(n.simulate() == rate);
}

TEST_CASE("flow fold: a flow limited elsewhere leaves the rest of a link to another, proved "
          "in a second pass",
          "[collectives][flow][symmetry]") {
    // x and y share `link` (25); x also crosses `three`, split three ways (8.33 each), so y
    // gets 25 - 8.33: a rate no single resource's fair share shows.
    Net n;
    const auto link = n.net.add_resource(25e9, "link");
    const auto three = n.net.add_resource(25e9, "three");
    n.flow({link, three}); // x
    n.flow({link});        // y
    n.flow({three});
    n.flow({three});
    const auto [rate, leave] = n.prove();
    const auto sim = n.simulate();
    for (std::size_t i = 0; i < rate.size(); ++i) {
        REQUIRE_FALSE(std::isnan(rate[i]));
        CHECK(rate[i] == Approx(sim[i]).epsilon(1e-12));
    }
    CHECK(rate[1] == Approx(25e9 - 25e9 / 3).epsilon(1e-12));
}

TEST_CASE("flow fold: what it cannot prove it leaves to the network",
          "[collectives][flow][symmetry]") {
    SECTION("flows of different sizes on one link: the smaller ends first, the other speeds up") {
        Net n;
        const auto link = n.net.add_resource(10e9, "link");
        n.flow({link}, 1e9);
        n.flow({link}, 2e9);
        const auto [rate, leave] = n.prove();
        CHECK(std::isnan(rate[0]));
        CHECK(std::isnan(rate[1]));
    }
    SECTION("a resource another party may use (not own)") {
        Net n;
        const auto link = n.net.add_resource(10e9, "link");
        const auto spine = n.net.add_resource(10e9, "spine");
        n.flow({link, spine});
        n.flow({link});
        const auto [rate, leave] = n.prove({spine});
        CHECK(std::isnan(rate[0]));
        // Nor the other: it gets what the first leaves of `link`, which depends on the spine's
        // other users.
        CHECK(std::isnan(rate[1]));
    }
    SECTION("a proved flow beside an unproved one stays on the network, under its cap") {
        Net n;
        const auto link = n.net.add_resource(10e9, "link");
        const auto spine = n.net.add_resource(10e9, "spine");
        const auto nic = n.net.add_resource(4e9, "nic");
        n.flow({link, spine}); // unproved: the spine is not own
        n.flow({link, nic});   // alone on its NIC: 4, proved
        const auto [rate, leave] = n.prove({spine});
        CHECK(std::isnan(rate[0]));
        CHECK(rate[1] == 4e9);
        CHECK_FALSE(leave[1]); // `link` holds the unproved flow: this one must load it
    }
}

namespace {

/// Random networks of few capacities (so that shares tie): every rate the proof claims is the
/// network's, kept to the flow's end; flows stand for 1 to `most` identical flows each; the
/// filling tried after `fill_after` visits of the flows (0: first).
void random_networks(unsigned seed, std::uint32_t most, std::size_t fill_after = 4) {
    std::mt19937 rng(seed);
    int proved = 0, flows = 0;
    for (int trial = 0; trial < 300; ++trial) {
        Net n;
        const int resources = 2 + static_cast<int>(rng() % 6);
        for (int r = 0; r < resources; ++r) // few capacities, so that shares tie
            n.net.add_resource(std::array{10e9, 25e9, 32e9}[rng() % 3], "");
        const int count = 1 + static_cast<int>(rng() % 8);
        for (int f = 0; f < count; ++f) {
            std::vector<sim::ResourceId> path;
            for (sim::ResourceId r = 0; r < static_cast<sim::ResourceId>(resources); ++r)
                if (rng() % 3 == 0)
                    path.push_back(r);
            if (path.empty())
                path.push_back(static_cast<sim::ResourceId>(rng() % resources));
            const double cap = rng() % 4 == 0 ? 6e9 : kInf;
            n.flow(path, rng() % 5 == 0 ? 2e9 : 1e9, cap);
            if (most > 1)
                n.flows.back().count = 1 + static_cast<std::uint32_t>(rng() % most);
        }
        const auto [rate, leave] = n.prove({}, fill_after);
        std::vector<sim::Time> done;
        const auto sim = n.simulate(&done);
        for (std::size_t i = 0; i < rate.size(); ++i) {
            ++flows;
            if (std::isnan(rate[i]))
                continue;
            ++proved;
            INFO("trial " << trial << " flow " << i);
            CHECK(rate[i] == Approx(sim[i]).epsilon(1e-12));
            // ... and it keeps that rate to its end, whatever finishes before it.
            CHECK(done[i].seconds() == Approx(n.flows[i].bytes / rate[i]).epsilon(1e-9));
        }
    }
    // Most flows of such networks are proved; the test means something only if many are.
    CHECK(proved > flows / 2);
}

} // namespace

TEST_CASE("flow fold: on random networks every proved rate is max-min's",
          "[collectives][flow][symmetry]") {
    random_networks(7, 1);
}

TEST_CASE("flow fold: a flow standing for several is proved as they would be",
          "[collectives][flow][symmetry]") {
    // FoldFlow::count, as sim::FlowSpec::count: counted that many times on each resource.
    random_networks(8, 4);
}

TEST_CASE("flow fold: the filling's certificate claims only max-min's rates, kept to the end",
          "[collectives][flow][symmetry]") {
    // The filling first (it proves every flow of a round or none), then the passes.
    random_networks(7, 1, 0);
    random_networks(8, 4, 0);
}

TEST_CASE("flow fold: a staircase of shares the passes climb step by step is one filling",
          "[collectives][flow][symmetry]") {
    // Resource j (capacity 10 + j) holds flow j alone and flow j - 1 beside it: flow 0 is
    // limited at resource 0, flow 1 takes what it leaves at resource 1, and so on, each a
    // level of its own (a pass each). Every flow lasts at least as long as those after it,
    // so the filling's certificate holds: all proved, at the network's rates, to their ends.
    for (std::size_t fill_after : {std::size_t{0}, std::size_t{4}}) {
        Net n;
        const int steps = 40;
        for (int j = 0; j < steps; ++j)
            n.net.add_resource(1e9 * (10 + j), "");
        for (int j = 0; j < steps; ++j) {
            std::vector<sim::ResourceId> path{static_cast<sim::ResourceId>(j)};
            if (j + 1 < steps)
                path.push_back(static_cast<sim::ResourceId>(j + 1));
            n.flow(path);
        }
        const auto [rate, leave] = n.prove({}, fill_after);
        std::vector<sim::Time> done;
        const auto sim = n.simulate(&done);
        INFO("filling after " << fill_after);
        for (int j = 0; j < steps; ++j) {
            REQUIRE_FALSE(std::isnan(rate[static_cast<std::size_t>(j)]));
            CHECK(rate[static_cast<std::size_t>(j)] ==
                  Approx(sim[static_cast<std::size_t>(j)]).epsilon(1e-12));
            CHECK(leave[static_cast<std::size_t>(j)] == 1);
        }
    }
}
