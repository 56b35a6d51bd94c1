#include "strategies/parallel/experiment_variants.h"

#include "base/error.h"
#include "config/yaml_map.h"
#include "strategies/parallel/experiment_reader.h"

#include <algorithm>
#include <set>

namespace clustersim::strategies::parallel {

namespace {

constexpr const char* kProbe = "__clustersim_probe__";

/// The keys listed by YamlMap::finish() in its error ("... (valid keys here: a, b, c)").
std::vector<std::string> listed_keys(const std::string& message) {
    static const std::string marker = "(valid keys here: ";
    const auto start = message.find(marker);
    if (start == std::string::npos)
        return {};
    const auto from = start + marker.size();
    const auto end = message.find(')', from);
    std::vector<std::string> keys;
    std::string list = message.substr(from, end == std::string::npos ? end : end - from);
    for (std::size_t pos = 0; pos <= list.size();) {
        const auto comma = list.find(", ", pos);
        const std::string k = list.substr(pos, comma == std::string::npos ? comma : comma - pos);
        if (!k.empty())
            keys.push_back(k);
        if (comma == std::string::npos)
            break;
        pos = comma + 2;
    }
    return keys;
}

bool starts_with(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

} // namespace

bool is_heavy_key(const std::string& key) {
    return !starts_with(key, "training.") && !starts_with(key, "parallel.");
}

struct ExperimentVariants::Heavy {
    ExperimentSpec base; ///< read with the heavy overrides; training and parallel as in the file
};

ExperimentVariants::ExperimentVariants(const std::string& path, Settings fixed)
    : path_(path)
    , fixed_(std::move(fixed)) {
    YAML::Node doc = config::load_yaml_file(path);
    if (!doc.IsMap())
        throw InputError(path + ": expected a mapping with hardware, model, training, parallel");
    doc_ = std::make_unique<YAML::Node>(doc);
    (void)read({}); // an experiment (with its fixed settings) that cannot be read fails here
    keys_ = probe_keys();
}

ExperimentVariants::~ExperimentVariants() = default;

bool ExperimentVariants::is_key(const std::string& key) const {
    return std::binary_search(keys_.begin(), keys_.end(), key);
}

std::shared_ptr<const ExperimentVariants::Heavy>
ExperimentVariants::heavy(const Settings& overrides) const {
    YAML::Node d;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto it = heavy_cache_.find(overrides);
        if (it != heavy_cache_.end())
            return it->second;
        // yaml-cpp nodes share their memory: clone under the lock, work on the copy outside.
        d = YAML::Clone(*doc_);
    }
    for (const auto& [key, value] : overrides) {
        // `gpus` replaces a file's `nodes` and the other way round, as --gpus means.
        if (key == "gpus" && d["nodes"])
            d.remove("nodes");
        if (key == "nodes" && d["gpus"])
            d.remove("gpus");
        detail::override_key(d, key, value);
    }
    auto h = std::make_shared<Heavy>();
    h->base = detail::read_experiment_document(d, path_);
    std::lock_guard<std::mutex> lock(mutex_);
    return heavy_cache_.emplace(overrides, std::move(h)).first->second;
}

ExperimentSpec ExperimentVariants::read(const Settings& overrides) const {
    Settings heavy_overrides, light;
    for (const Settings* list : {&fixed_, &overrides}) {
        for (const auto& kv : *list)
            (is_heavy_key(kv.first) ? heavy_overrides : light).push_back(kv);
    }
    const auto h = heavy(heavy_overrides);
    ExperimentSpec e = h->base;
    if (light.empty())
        return e;
    // The two small sections, re-read with the overrides as the loader reads them.
    YAML::Node d(YAML::NodeType::Map);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const YAML::Node& src = *doc_;
        for (const char* section : {"training", "parallel"}) {
            if (src[section])
                d[section] = YAML::Clone(src[section]);
        }
    }
    for (const auto& [key, value] : light)
        detail::override_key(d, key, value);
    e.training = TrainingSpec{};
    config::YamlMap root(d, path_);
    if (!root.has("training"))
        root.missing("training", "global_batch at least");
    detail::read_training_section(root.map("training"), e.training);
    e.parallel = ParallelSpec{};
    if (root.has("parallel"))
        detail::read_parallel_section(root.map("parallel"), e.parallel);
    return e;
}

std::vector<std::string> ExperimentVariants::probe_keys() const {
    // Each loader refuses an unknown key by listing the keys it reads: ask each with a key it
    // cannot know, and take its list. The schema stays in the loaders, in one place.
    auto probe = [&](const auto& read_it) -> std::vector<std::string> {
        try {
            read_it();
        } catch (const InputError& e) {
            return listed_keys(e.what());
        }
        return {};
    };
    YAML::Node root_doc, model_doc, training, parallel;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const YAML::Node& src = *doc_;
        root_doc = YAML::Clone(src);
        model_doc = YAML::Clone(src);
        training = src["training"] ? YAML::Clone(src["training"]) : YAML::Node(YAML::NodeType::Map);
        parallel = src["parallel"] ? YAML::Clone(src["parallel"]) : YAML::Node(YAML::NodeType::Map);
    }
    root_doc[kProbe] = "0";
    detail::override_key(model_doc, std::string("model.") + kProbe, "0");
    training[kProbe] = "0";
    parallel[kProbe] = "0";

    std::set<std::string> keys;
    for (const auto& k : probe([&] { detail::read_experiment_document(root_doc, path_); })) {
        if (k == "hardware" || k == "gpus" || k == "nodes" || k == "model")
            keys.insert(k);
    }
    for (const auto& k : probe([&] { detail::read_experiment_document(model_doc, path_); })) {
        if (k != "extends" && k != "name" && k != "description")
            keys.insert("model." + k);
    }
    TrainingSpec t;
    for (const auto& k : probe([&] {
             detail::read_training_section(config::YamlMap(training, path_, "training"), t);
         }))
        keys.insert("training." + k);
    ParallelSpec p;
    for (const auto& k : probe([&] {
             detail::read_parallel_section(config::YamlMap(parallel, path_, "parallel"), p);
         }))
        keys.insert("parallel." + k);
    return {keys.begin(), keys.end()};
}

} // namespace clustersim::strategies::parallel
