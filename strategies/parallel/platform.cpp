// Loading a platform: one layer of a hardware file at a time, the hardware keys through
// hardware/hardware_loader.h, the framework's and the provenance's sections here, then
// `finish()`, so an unknown key is refused with the same message as before the split.
#include "strategies/parallel/platform.h"

#include "base/error.h"
#include "config/preset.h"
#include "config/yaml_map.h"
#include "hardware/hardware_loader.h"
#include "strategies/parallel/framework_profile.h"
#include "strategies/parallel/platform_keys.h"
#include "strategies/parallel/provenance_loader.h"

#include <filesystem>
#include <utility>

namespace clustersim::strategies::parallel {

using config::YamlMap;
namespace fs = std::filesystem;

namespace {

void apply_framework(YamlMap m, FrameworkSpec& f) {
    config::read_keys(m, framework_keys(), f);
    // The behaviours this section writes by their own keys: no profile changes them, this
    // layer's (read first, above), a later layer's or an experiment's.
    for (int k = 0; k < kProfileKeys; ++k) {
        const auto key = static_cast<ProfileKey>(k);
        if (m.has(key_name(key)))
            f.explicit_keys |= profile_key_bit(key);
    }
    if (m.has("gemm_efficiency")) {
        f.gemm_efficiency = m.number("gemm_efficiency", 0.01);
        if (f.gemm_efficiency > 1.0)
            m.fail("gemm_efficiency", "expected a fraction in (0, 1]");
    }
    if (m.has("memory_efficiency")) {
        f.memory_efficiency = m.number("memory_efficiency", 0.01);
        if (f.memory_efficiency > 1.0)
            m.fail("memory_efficiency", "expected a fraction in (0, 1]");
    }
    if (m.has("allocator_fragmentation")) {
        f.allocator_fragmentation = m.number("allocator_fragmentation", 0.0);
        if (f.allocator_fragmentation >= 1.0)
            m.fail("allocator_fragmentation", "expected a fraction in [0, 1)");
    }
    if (m.has("gpu_speed_spread")) {
        f.gpu_speed_spread = m.number("gpu_speed_spread", 0.0);
        if (f.gpu_speed_spread >= 0.5)
            m.fail("gpu_speed_spread", "expected a relative standard deviation in [0, 0.5)");
    }
    if (m.has("network_flow_spread")) {
        f.network_flow_spread = m.number("network_flow_spread", 0.0);
        if (f.network_flow_spread >= 0.5)
            m.fail("network_flow_spread", "expected a relative standard deviation in [0, 0.5)");
    }
    m.finish();
}

void read_layer(YamlMap& root, Platform& p, bool extended) {
    hardware::read_hardware_layer(root, p.cluster, extended);
    if (root.has("framework"))
        apply_framework(root.map("framework"), p.framework);
    if (root.has("calibration"))
        apply_calibration(root, root.raw("calibration"), p.provenance.calibration);
    if (root.has("uncertainty"))
        apply_uncertainty(root.map("uncertainty"), p.provenance.uncertainty);
    root.finish();
}

Platform load_layers(const YAML::Node& doc, const std::string& file) {
    return config::load_layered<Platform>(hardware::hardware_presets(), doc, file, read_layer);
}

} // namespace

namespace {
Platform load_platform_from(const std::string& name_or_path, const fs::path& relative_to) {
    const fs::path path =
        config::resolve_preset(hardware::hardware_presets(), name_or_path, relative_to);
    Platform p =
        config::load_layered_file<Platform>(hardware::hardware_presets(), path, read_layer);
    hardware::complete(p.cluster, path.string());
    return p;
}
} // namespace

Platform load_platform(const std::string& name_or_path) {
    return load_platform_from(name_or_path, {});
}

Platform parse_platform_yaml(const std::string& text, const std::string& file) {
    const YAML::Node doc = config::parse_yaml(text, file);
    Platform p = load_layers(doc, file);
    hardware::complete(p.cluster, file);
    return p;
}

Platform load_platform_node(const YAML::Node& node, const std::string& file) {
    // A relative path is relative to the file that names it, as `model:` and `extends:` are.
    if (node.IsScalar())
        return load_platform_from(node.Scalar(), fs::path(file).parent_path());
    Platform p = load_layers(node, file);
    hardware::complete(p.cluster, file);
    return p;
}

Platform with_gpu_count(Platform platform, int gpus) {
    platform.cluster = hardware::with_gpu_count(std::move(platform.cluster), gpus);
    return platform;
}

} // namespace clustersim::strategies::parallel
