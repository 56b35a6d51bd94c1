#include "strategies/parallel/collective_regime.h"

#include "base/error.h"
#include "hardware/dtype.h"

namespace clustersim::strategies::parallel {

namespace cl = collectives;

std::string_view to_string(MessageRegime regime) {
    return regime == MessageRegime::latency ? "latency" : "bandwidth";
}

std::optional<MessageRegime> parse_regime(std::string_view s) {
    if (s == "latency")
        return MessageRegime::latency;
    if (s == "bandwidth")
        return MessageRegime::bandwidth;
    return std::nullopt;
}

std::optional<MessageRegime> message_regime(const cl::Communicator& comm, const cl::Collective& c,
                                            const cl::Choice& choice) {
    cl::Collective smallest = c;
    smallest.bytes =
        hardware::bytes_per_element(c.dtype) * (cl::splits_per_rank(c.op) ? comm.size() : 1);
    try {
        // alpha: the time of one element per rank, whose bytes cost next to nothing.
        const double alpha = comm.predict(smallest, choice.algorithm, choice.protocol).seconds();
        const double t = comm.predict(c, choice.algorithm, choice.protocol).seconds();
        return t <= 2 * alpha ? MessageRegime::latency : MessageRegime::bandwidth;
    } catch (const InputError&) {
        return std::nullopt;
    }
}

} // namespace clustersim::strategies::parallel
