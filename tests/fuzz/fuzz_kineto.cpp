// libFuzzer target: a PyTorch profiler trace (plain or gzip) either imports into measurements
// that can be written and read back, or fails with an InputError; nothing else may escape.
#include "base/error.h"
#include "calibrate/import.h"
#include "calibrate/kineto.h"
#include "calibrate/measurements.h"
#include "fuzz/stretch.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Long lines: 0x7F c stands for 65,536 copies of c (fuzz/stretch.h).
    const std::string text =
        clustersim::fuzz::stretch(std::string_view(reinterpret_cast<const char*>(data), size));
    using namespace clustersim;
    try {
        calibrate::ImportOptions options;
        options.device = "NVIDIA H200"; // so that traces without deviceProperties go on
        const calibrate::ImportResult r = calibrate::import_text(text, "fuzz.json", options);
        const std::string written = calibrate::format_measurements(r.measurements, "out.json");
        (void)calibrate::parse_measurements(written, "out.json");
    } catch (const InputError&) {
    }
    return 0;
}
