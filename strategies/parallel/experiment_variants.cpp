#include "strategies/parallel/experiment_variants.h"

#include "base/error.h"
#include "config/yaml_map.h"
#include "strategies/parallel/experiment_keys.h"
#include "strategies/parallel/experiment_reader.h"

#include <algorithm>
#include <set>

namespace clustersim::strategies::parallel {

namespace {

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

struct ExperimentVariants::Sections {
    /// How the file gives a section: a mapping (read from `section`), nothing or null (an
    /// override creates it), or something only YamlMap reads (a scalar, a list, a key given
    /// twice): then every variant is read from the YAML. A mapping or list as a value (say
    /// recompute_modules) stays in `section`; a variant whose reader reaches it is refused
    /// there and read from the YAML (correct, at the YAML read's cost).
    enum class State : std::uint8_t { scalars, absent, yaml_only };
    struct Section {
        State state = State::absent;
        config::ScalarSection scalars;
    };
    Section training;
    Section parallel;

    static Section of(const YAML::Node& doc, const char* name) {
        Section s;
        const YAML::Node node = doc[name];
        if (!node.IsDefined() || node.IsNull())
            return s;
        auto scalars = config::ScalarSection::of(node);
        s.state = scalars ? State::scalars : State::yaml_only;
        if (scalars)
            s.scalars = std::move(*scalars);
        return s;
    }
};

ExperimentVariants::ExperimentVariants(const std::string& path, Settings fixed)
    : path_(path)
    , fixed_(std::move(fixed)) {
    YAML::Node doc = config::load_yaml_file(path);
    if (!doc.IsMap())
        throw InputError(path + ": expected a mapping with hardware, model, training, parallel");
    doc_ = std::make_unique<YAML::Node>(doc);
    {
        auto sections = std::make_unique<Sections>();
        const YAML::Node& d = *doc_;
        sections->training = Sections::of(d, "training");
        sections->parallel = Sections::of(d, "parallel");
        sections_ = std::move(sections);
    }
    (void)read({}); // an experiment (with its fixed settings) that cannot be read fails here
    keys_ = experiment_key_paths();
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

std::vector<const ExperimentVariants::Setting*>
ExperimentVariants::light_settings(const Settings& overrides, Settings* heavy_out) const {
    std::vector<const Setting*> light;
    light.reserve(fixed_.size() + overrides.size());
    for (const Settings* list : {&fixed_, &overrides}) {
        for (const auto& kv : *list) {
            if (!is_heavy_key(kv.first))
                light.push_back(&kv);
            else if (heavy_out)
                heavy_out->push_back(kv);
        }
    }
    return light;
}

ExperimentSpec ExperimentVariants::read(const Settings& overrides) const {
    Settings heavy_overrides;
    const auto light = light_settings(overrides, &heavy_overrides);
    const auto h = heavy(heavy_overrides);
    ExperimentSpec e = h->base;
    if (!light.empty() && !read_light_quickly(light, e))
        read_light_from_yaml(light, e);
    return e;
}

ExperimentSpec ExperimentVariants::read_from_yaml(const Settings& overrides) const {
    Settings heavy_overrides;
    const auto light = light_settings(overrides, &heavy_overrides);
    const auto h = heavy(heavy_overrides);
    ExperimentSpec e = h->base;
    if (!light.empty())
        read_light_from_yaml(light, e);
    return e;
}

bool ExperimentVariants::read_light_quickly(const std::vector<const Setting*>& light,
                                            ExperimentSpec& e) const {
    using State = Sections::State;
    const Sections& s = *sections_;
    if (s.training.state == State::yaml_only || s.parallel.state == State::yaml_only)
        return false;
    config::ScalarMap training(s.training.scalars);
    config::ScalarMap parallel(s.parallel.scalars);
    bool training_set = false;
    bool parallel_set = false;
    for (const Setting* kv : light) {
        // "training." and "parallel." are both 9 characters; a key below a section's key
        // (parallel.tp.x) or an empty one is the YAML path's (override_key's) to refuse.
        constexpr std::size_t kPrefix = 9;
        const std::string_view key = std::string_view(kv->first).substr(kPrefix);
        if (key.empty() || key.find('.') != std::string_view::npos)
            return false;
        const bool is_training = kv->first[0] == 't';
        (is_training ? training : parallel).set(key, kv->second);
        (is_training ? training_set : parallel_set) = true;
    }
    // No training section and no override creating one: YamlMap's "missing key" message.
    if (s.training.state == State::absent && !training_set)
        return false;
    TrainingSpec t;
    ParallelSpec p;
    try {
        detail::read_training_section(training, t);
        if (s.parallel.state == State::scalars || parallel_set)
            detail::read_parallel_section(parallel, p);
    } catch (const config::ScalarMap::Refused&) {
        return false;
    }
    e.training = t;
    e.parallel = p;
    return true;
}

void ExperimentVariants::read_light_from_yaml(const std::vector<const Setting*>& light,
                                              ExperimentSpec& e) const {
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
    for (const Setting* kv : light)
        detail::override_key(d, kv->first, kv->second);
    e.training = TrainingSpec{};
    config::YamlMap root(d, path_);
    if (!root.has("training"))
        root.missing("training", "global_batch at least");
    detail::read_training_section(root.map("training"), e.training);
    e.parallel = ParallelSpec{};
    if (root.has("parallel"))
        detail::read_parallel_section(root.map("parallel"), e.parallel);
}

} // namespace clustersim::strategies::parallel
