#include "strategies/parallel/executed_step.h"

#include "base/units.h"

#include <charconv>
#include <iterator>

namespace clustersim::strategies::parallel::detail {

std::string pass_label(const PipePass& p, int virtual_stages) {
    // Written in one string (a timeline labels every pass, and every layer slice with it).
    auto append = [](std::string& s, int n) {
        char digits[16];
        s.append(digits, static_cast<std::size_t>(
                             std::to_chars(std::begin(digits), std::end(digits), n).ptr - digits));
    };
    std::string s(1, p.kind == PassKind::forward ? 'F' : p.kind == PassKind::weight ? 'W' : 'B');
    append(s, p.micro_batch);
    if (virtual_stages > 1) {
        s += '.';
        append(s, p.chunk);
    }
    return s;
}

std::string collective_label(const DpCollective& d) {
    return (d.expert      ? "expert "
            : d.replicate ? "replicate "
                          : "") +
           std::string(to_string(d.role)) + " " + base::format_bytes(d.collective.bytes);
}

std::vector<int> last_backward_of_chunk(const std::vector<PipePass>& order, int chunks) {
    std::vector<int> last(static_cast<std::size_t>(chunks), -1);
    // From the end, until every chunk's is found: the last backwards come at the end of an
    // order, which has 2 m v passes.
    int found = 0;
    for (std::size_t i = order.size(); i-- > 0 && found < chunks;) {
        if (order[i].kind != PassKind::backward && order[i].kind != PassKind::weight)
            continue;
        int& l = last[static_cast<std::size_t>(order[i].chunk)];
        if (l < 0) {
            l = static_cast<int>(i);
            ++found;
        }
    }
    return last;
}

} // namespace clustersim::strategies::parallel::detail
