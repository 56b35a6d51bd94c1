#include "strategies/collectives/size_limit.h"

namespace clustersim::strategies::collectives {

namespace {
/// bytes x GPUs below 2^62 (plan.h splits as i * bytes / parts).
std::int64_t largest_by_arithmetic(const Communicator& comm) {
    return (std::int64_t{1} << 62) / std::max(1, comm.size());
}
} // namespace

bool within_limits(const Communicator& comm, const Collective& c) {
    return c.bytes <= largest_by_arithmetic(comm) && comm.predict(c) <= kLongestPrediction;
}

std::int64_t largest_bytes(const Communicator& comm, Collective c) {
    // The closed-form time grows with the size; bisect on it between the smallest size and
    // the arithmetic bound (about 62 closed forms).
    std::int64_t lo = 0;
    std::int64_t hi = largest_by_arithmetic(comm);
    c.bytes = round_bytes(c.op, hi, c.dtype, comm.size());
    if (c.bytes > 0 && comm.predict(c) <= kLongestPrediction)
        return c.bytes;
    while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        c.bytes = round_bytes(c.op, mid, c.dtype, comm.size());
        if (c.bytes <= 0 || comm.predict(c) <= kLongestPrediction)
            lo = mid;
        else
            hi = mid;
    }
    return round_bytes(c.op, lo, c.dtype, comm.size());
}

} // namespace clustersim::strategies::collectives
