// libFuzzer target: a hardware file either loads into a valid ClusterSpec (and, when small
// enough, a topology) or fails with an InputError; nothing else may escape.
#include "base/error.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    using namespace clustersim;
    try {
        const hardware::ClusterSpec spec = hardware::parse_hardware_yaml(text, "fuzz.yaml");
        if (spec.gpu_count() <= 256) {
            const hardware::Topology topo(spec);
            if (topo.gpu_count() > 1)
                (void)topo.gpu_route(0, topo.gpu_count() - 1);
        }
    } catch (const InputError&) {
    }
    return 0;
}
