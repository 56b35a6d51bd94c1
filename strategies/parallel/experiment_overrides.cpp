// `--set key=value` on an experiment: parsed, then written into the experiment's YAML tree
// before it is read, so that an override meets the same checks as the file.
#include "base/error.h"
#include "strategies/parallel/experiment.h"
#include "strategies/parallel/experiment_reader.h"

#include <string>
#include <vector>

namespace clustersim::strategies::parallel {

std::pair<std::string, std::string> parse_override(const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
        throw InputError("--set: expected KEY=VALUE like parallel.tp=4, got '" + text + "'");
    return {text.substr(0, eq), text.substr(eq + 1)};
}

namespace detail {

/// Sets `key` (dotted) to `value` in the YAML tree. A preset name where a mapping is needed
/// (`model: gpt3-175B` with `--set model.layers=48`) becomes `{extends: gpt3-175B}` first.
void override_key(YAML::Node root, const std::string& key, const std::string& value) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1)
        parts.push_back(key.substr(start, dot - start));
    parts.push_back(key.substr(start));
    for (const auto& p : parts) {
        if (p.empty())
            throw InputError("--set: malformed key '" + key + "'");
    }
    YAML::Node node;
    node.reset(root);
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        YAML::Node child = node[parts[i]];
        if (child.IsScalar()) {
            const std::string preset = child.Scalar();
            child = YAML::Node(YAML::NodeType::Map);
            child["extends"] = preset;
            node[parts[i]] = child;
        } else if (!child.IsDefined() || child.IsNull()) {
            child = YAML::Node(YAML::NodeType::Map);
            node[parts[i]] = child;
        } else if (!child.IsMap()) {
            throw InputError("--set " + key + ": '" + parts[i] + "' is not a mapping");
        }
        // reset() rebinds the handle; operator= would overwrite the node's content.
        node.reset(node[parts[i]]);
    }
    node[parts.back()] = value;
}

} // namespace detail

} // namespace clustersim::strategies::parallel
