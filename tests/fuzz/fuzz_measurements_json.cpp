// libFuzzer target: a measurement file either reads (and then writes and reads back to the
// same text: the format round-trips) or fails with an InputError; nothing else may escape,
// however deep or long the JSON.
#include "base/error.h"
#include "calibrate/measurements.h"
#include "fuzz/stretch.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Long lines: 0x7F c stands for 65,536 copies of c (fuzz/stretch.h).
    const std::string stretched =
        clustersim::fuzz::stretch(std::string_view(reinterpret_cast<const char*>(data), size));
    const std::string_view text = stretched;
    using namespace clustersim;
    calibrate::MeasurementFile file;
    try {
        file = calibrate::parse_measurements(text, "fuzz.json");
    } catch (const InputError&) {
        return 0;
    }
    const std::string written = calibrate::format_measurements(file, "fuzz.json");
    const calibrate::MeasurementFile again = calibrate::parse_measurements(written, "fuzz.json");
    if (calibrate::format_measurements(again, "fuzz.json") != written)
        std::abort(); // what the writer writes, the reader must read back unchanged
    return 0;
}
