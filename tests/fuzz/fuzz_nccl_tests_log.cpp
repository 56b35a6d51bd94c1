// libFuzzer target: an nccl-tests log either imports or fails with an InputError naming the
// line; nothing else may escape. The file name says the op and GPU count, as a user's would.
#include "base/error.h"
#include "calibrate/import.h"
#include "fuzz/stretch.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Long lines: 0x7F c stands for 65,536 copies of c (fuzz/stretch.h).
    const std::string stretched =
        clustersim::fuzz::stretch(std::string_view(reinterpret_cast<const char*>(data), size));
    const std::string_view text = stretched;
    using namespace clustersim;
    try {
        (void)calibrate::import_nccl_tests_log(text, "all_reduce_perf-8gpu.log", {});
    } catch (const InputError&) {
    }
    return 0;
}
