#include "hardware/collective_tuning.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace clustersim::hardware {

std::optional<Protocol> parse_protocol(std::string_view s) {
    std::string lower(s);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "ll")
        return Protocol::ll;
    if (lower == "ll128")
        return Protocol::ll128;
    if (lower == "simple")
        return Protocol::simple;
    return std::nullopt;
}

bool CollectiveTuning::present() const {
    return std::all_of(protocols.begin(), protocols.end(), [](const ProtocolTuning& p) {
        return p.chunk_bytes > 0 && (p.level(LinkLevel::nvlink).efficiency > 0 ||
                                     p.level(LinkLevel::pcie).efficiency > 0);
    });
}

} // namespace clustersim::hardware
