// The `collectives:` section of hardware files. YAML is read here and in hardware_loader.cpp
// only; the rest of clustersim sees the CollectiveTuning value.
#include "hardware/collective_tuning_loader.h"

#include "config/yaml_map.h"
#include "hardware/hardware_keys.h"

#include <string>

namespace clustersim::hardware {

using config::YamlMap;
namespace {

void read_efficiency(YamlMap& m, std::string_view key, double& out) {
    if (!m.has(key))
        return;
    const double v = m.number(key, 0);
    if (!(v > 0 && v <= 1))
        m.fail(key, "expected a fraction of the link bandwidth in (0, 1], got " + m.str(key));
    out = v;
}

void apply_level(YamlMap m, LevelTuning& level) {
    config::read_keys(m, level_keys(), level);
    read_efficiency(m, "efficiency", level.efficiency);
    m.finish();
}

void apply_protocol(YamlMap m, ProtocolTuning& p) {
    config::read_keys(m, protocol_keys(), p);
    for (std::size_t i = 0; i < kLinkLevelCount; ++i) {
        const auto name = to_string(static_cast<LinkLevel>(i));
        if (m.has(name))
            apply_level(m.map(name), p.levels[i]);
    }
    m.finish();
}

} // namespace

void apply_collectives(YamlMap m, CollectiveTuning& t) {
    config::read_keys(m, collectives_keys(), t);
    if (m.has("nvls")) {
        YamlMap n = m.map("nvls");
        config::read_keys(n, nvls_keys(), t.nvls);
        read_efficiency(n, "efficiency", t.nvls.efficiency);
        n.finish();
    }
    if (m.has("tree")) {
        YamlMap n = m.map("tree");
        auto read_cap = [&](const char* key, ChannelCap& cap) {
            if (!n.has(key))
                return;
            YamlMap c = n.map(key);
            config::read_keys(c, channel_cap_keys(), cap);
            c.finish();
        };
        read_cap("channel_bandwidth", t.tree.channel);
        read_cap("ll128_channel_bandwidth", t.tree.ll128_channel);
        if (n.has("step_latency")) {
            YamlMap l = n.map("step_latency");
            for (Protocol p : kAllProtocols) {
                std::string key(to_string(p));
                for (char& c : key)
                    c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
                if (!l.has(key))
                    continue;
                YamlMap per = l.map(key);
                for (std::size_t i = 0; i < kLinkLevelCount; ++i) {
                    const auto name = to_string(static_cast<LinkLevel>(i));
                    per.read_time(name, t.tree.step_latency[static_cast<std::size_t>(p)][i]);
                }
                per.finish();
            }
            l.finish();
        }
        n.finish();
    }
    if (m.has("nvls_tree")) {
        YamlMap n = m.map("nvls_tree");
        if (n.has("channel_bandwidth")) {
            YamlMap c = n.map("channel_bandwidth");
            config::read_keys(c, channel_cap_keys(), t.nvls_tree_channel);
            c.finish();
        }
        config::read_keys(n, nvls_tree_keys(), t.nvls_tree_pipeline);
        n.finish();
    }
    for (Protocol p : kAllProtocols) {
        std::string key(to_string(p));
        for (char& c : key)
            c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        if (m.has(key))
            apply_protocol(m.map(key), t.protocols[static_cast<std::size_t>(p)]);
    }
    m.finish();
}

} // namespace clustersim::hardware
