// libFuzzer target: the units parser must either parse or throw UnitsError, never crash.
#include "base/error.h"
#include "base/units.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    using namespace clustersim;
    try {
        (void)base::parse_bytes(text);
    } catch (const UnitsError&) {
    }
    try {
        (void)base::parse_bandwidth(text);
    } catch (const UnitsError&) {
    }
    try {
        (void)base::parse_time(text);
    } catch (const UnitsError&) {
    }
    try {
        (void)base::parse_flop_rate(text);
    } catch (const UnitsError&) {
    }
    return 0;
}
