#include "strategies/transfer.h"

#include "base/error.h"
#include "hardware/flow_binding.h"
#include "hardware/time_limit.h"
#include "sim/engine.h"
#include "sim/flow_network.h"

#include <fmt/format.h>

namespace clustersim::strategies {

TransferResult simulate_transfer(const hardware::Topology& topology, int from, int to,
                                 std::int64_t bytes) {
    if (bytes <= 0)
        throw InputError("a transfer needs a positive number of bytes, got " +
                         std::to_string(bytes));
    if (from == to)
        throw InputError("a transfer needs two different GPUs, got gpu" + std::to_string(from) +
                         " twice");
    TransferResult result{topology.gpu_route(from, to), sim::Time::zero(), 0, 0};
    // Alone on its path the flow takes latency + bytes / bottleneck; past the longest
    // prediction its completion would overflow the clock (hardware/time_limit.h).
    const double longest = hardware::kLongestPrediction.seconds();
    if (result.route.bottleneck > 0 &&
        result.route.latency.seconds() + static_cast<double>(bytes) / result.route.bottleneck >
            longest)
        throw InputError(fmt::format(
            "{} B from gpu{} to gpu{} is past what the simulator can time (at most {:.1f} days); "
            "the largest size it takes on this path is {} B",
            bytes, from, to, longest / 86400,
            static_cast<std::int64_t>((longest - result.route.latency.seconds()) *
                                      result.route.bottleneck)));
    sim::Engine engine;
    sim::FlowNetwork net(engine);
    hardware::bind_topology(net, topology);
    sim::Time done = sim::Time::zero();
    net.start(sim::FlowSpec{static_cast<double>(bytes), hardware::flow_path(result.route),
                            result.route.latency, std::numeric_limits<double>::infinity(),
                            [&](sim::FlowId) { done = engine.now(); }});
    engine.run();
    result.time = done;
    result.achieved_bandwidth = static_cast<double>(bytes) / done.seconds();
    result.events = engine.events_processed();
    return result;
}

} // namespace clustersim::strategies
