#include "strategies/transfer.h"

#include "base/error.h"
#include "hardware/flow_binding.h"
#include "sim/engine.h"
#include "sim/flow_network.h"

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
