#pragma once
/// \file
/// Many variants of one experiment file, built fast: what a sweep needs for each of its
/// configurations.
///
///     ExperimentVariants v("configs/experiments/gpt3-175B-64xA100.yaml");
///     ExperimentSpec e = v.read({{"parallel.tp", "4"}, {"parallel.pp", "16"}});
///     validate_experiment(e);   // InputError: the reason the configuration cannot run
///
/// `read(overrides)` gives exactly what `load_experiment(path, overrides)` gives before
/// validation, but the file is parsed once, and the hardware and the model (which load presets
/// from disk) are read once per distinct value of the keys that change them; the training and
/// parallel sections, which are small, are re-read per variant from their keys and scalar
/// values taken once from the file (config::ScalarMap, by the loader's own readers), and from
/// their YAML only where that read refuses (for the message, with file, line and key) or where
/// the file has what only the YAML reader reads. A variant costs a few microseconds.
///
/// Keys: `keys()` lists what can be varied: every key of the experiment's tables
/// (experiment_keys.h, experiment_key_paths()), the ones the loaders read by, so it never falls
/// behind them: the top-level keys that take a value, and every key of training, parallel and
/// the model (`model.layers`, ...).

#include "strategies/parallel/experiment.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace YAML {
class Node;
}

namespace clustersim::strategies::parallel {

using Settings = std::vector<std::pair<std::string, std::string>>;

class ExperimentVariants {
public:
    /// Parses `path` and reads it once with `fixed` applied (as `--set` would), so that an
    /// experiment that cannot be read fails here. Throws InputError.
    explicit ExperimentVariants(const std::string& path, Settings fixed = {});
    ~ExperimentVariants();
    ExperimentVariants(const ExperimentVariants&) = delete;
    ExperimentVariants& operator=(const ExperimentVariants&) = delete;

    const std::string& path() const { return path_; }

    /// The experiment with the fixed settings and then `overrides` applied, NOT validated.
    /// Throws InputError when a value cannot be read (wrong type, unknown key), as
    /// load_experiment would. Thread-safe.
    ExperimentSpec read(const Settings& overrides) const;

    /// The keys `read` accepts, sorted: "gpus", "hardware", "model", "model.layers", ...,
    /// "parallel.tp", ..., "training.micro_batch", ...
    const std::vector<std::string>& keys() const { return keys_; }
    bool is_key(const std::string& key) const;

    /// `read` by the YAML path alone (the training and parallel sections cloned from the
    /// document and re-read with YamlMap): what `read` must equal, for tests.
    ExperimentSpec read_from_yaml(const Settings& overrides) const;

private:
    struct Heavy;    ///< a cluster and a model, read once per value of their keys
    struct Sections; ///< the training and parallel sections as config::ScalarSections
    using Setting = std::pair<std::string, std::string>;
    /// The light settings (training.*, parallel.*) of fixed_ and then `overrides`, in order.
    std::vector<const Setting*> light_settings(const Settings& overrides,
                                               Settings* heavy_out) const;
    /// Reads the training and parallel sections with `light` applied onto `e` from the
    /// sections' scalar values; false (e untouched) where the YAML path must read them.
    bool read_light_quickly(const std::vector<const Setting*>& light, ExperimentSpec& e) const;
    /// The same from the document's YAML, with YamlMap's messages.
    void read_light_from_yaml(const std::vector<const Setting*>& light, ExperimentSpec& e) const;
    std::shared_ptr<const Heavy> heavy(const Settings& heavy_overrides) const;

    std::string path_;
    Settings fixed_;
    std::unique_ptr<YAML::Node> doc_; ///< the parsed file (never modified)
    std::unique_ptr<const Sections> sections_;
    std::vector<std::string> keys_;
    mutable std::mutex mutex_;
    mutable std::map<Settings, std::shared_ptr<const Heavy>> heavy_cache_;
};

/// True for keys whose change re-reads the hardware or the model (everything but training.*
/// and parallel.*).
bool is_heavy_key(const std::string& key);

} // namespace clustersim::strategies::parallel
