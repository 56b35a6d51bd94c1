// The settings of a step measurement: the experiment file's keys, checked and applied by its
// tables (strategies/parallel/experiment_keys.h).
#include "calibrate/measurements.h"

#include "base/error.h"
#include "base/units.h"
#include "calibrate/measurements_detail.h"
#include "config/key_table.h"
#include "strategies/parallel/experiment_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <variant>

namespace clustersim::calibrate {

using namespace measurements_detail;

// ---------------------------------------------------------------------------------------------
// Step settings
// ---------------------------------------------------------------------------------------------
namespace {
// A step's settings are the experiment file's keys: its tables (strategies/parallel/
// experiment_keys.h) say which keys each section has and what each takes, so a step
// measurement can say everything an experiment can.
namespace sp = strategies::parallel;

const config::KeySection& section_keys(std::string_view section) {
    static const config::KeySection none;
    const config::KeySection* keys = sp::experiment_section(section);
    return keys != nullptr && !section.empty() ? *keys : none;
}

std::string valid_keys(std::string_view section) {
    std::vector<std::string> keys;
    for (const config::KeyInfo* k : section_keys(section).keys) {
        keys.emplace_back(k->name);
        for (std::string_view other : k->other_names)
            keys.emplace_back(other);
    }
    return base::join(keys, ", ");
}

const config::KeyInfo* find_spec(std::string_view section, std::string_view key) {
    return config::find_key(section_keys(section), key);
}

} // namespace

std::string measurements_detail::describe(const SettingValue& v) {
    return std::visit(
        [](const auto& x) -> std::string {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>)
                return x ? "true" : "false";
            else if constexpr (std::is_same_v<T, std::string>)
                return "'" + x + "'";
            else
                return fmt::format("{}", x);
        },
        v);
}

void check_setting(std::string_view section, const std::string& key, const SettingValue& value,
                   const std::string& where) {
    const config::KeyInfo* spec = find_spec(section, key);
    if (spec == nullptr)
        throw InputError(fmt::format("{}: unknown {} key '{}' (valid: {})", where, section, key,
                                     valid_keys(section)));
    const std::string got = describe(value);
    const auto* text = std::get_if<std::string>(&value);
    switch (spec->type) {
    case config::KeyType::integer: {
        const auto* v = std::get_if<std::int64_t>(&value);
        if (v == nullptr || *v < spec->min || *v > spec->max)
            throw InputError(fmt::format("{}: expected an integer from {} to {}, got {}", where,
                                         spec->min, spec->max, got));
        return;
    }
    case config::KeyType::number: {
        const auto* i = std::get_if<std::int64_t>(&value);
        const auto* d = std::get_if<double>(&value);
        const double v = i != nullptr ? static_cast<double>(*i) : d != nullptr ? *d : 0;
        if ((i == nullptr && d == nullptr) || !(v >= spec->number_min))
            throw InputError(
                fmt::format("{}: expected a number >= {}, got {}", where, spec->number_min, got));
        return;
    }
    case config::KeyType::boolean:
        if (!std::holds_alternative<bool>(value))
            throw InputError(fmt::format("{}: expected true or false, got {}", where, got));
        return;
    case config::KeyType::choice:
        if (text == nullptr ||
            std::find(spec->choices.begin(), spec->choices.end(), *text) == spec->choices.end())
            throw InputError(fmt::format("{}: expected one of {}, got {}", where,
                                         base::join(spec->choices, ", "), got));
        return;
    case config::KeyType::bytes: {
        const auto* i = std::get_if<std::int64_t>(&value);
        bool ok = i != nullptr && *i > 0;
        if (text != nullptr) {
            try {
                ok = base::parse_bytes(*text) > 0;
            } catch (const InputError&) {
                ok = false;
            }
        }
        if (!ok)
            throw InputError(
                fmt::format("{}: expected a positive size like '25MiB', got {}", where, got));
        return;
    }
    case config::KeyType::text:
    case config::KeyType::list:
        // The experiment's loader reads the text (a list as its items separated by commas).
        if (text == nullptr)
            throw InputError(fmt::format("{}: expected a string, got {}", where, got));
        return;
    case config::KeyType::time:
    case config::KeyType::bandwidth:
    case config::KeyType::flop_rate:
    case config::KeyType::section:
        break;
    }
    throw InputError(fmt::format("{}: {} takes no single value", where, key));
}

void apply_setting(StepMeasurement& step, std::string_view assignment, const std::string& where) {
    const auto eq = assignment.find('=');
    const auto dot = assignment.find('.');
    if (eq == std::string_view::npos || dot == std::string_view::npos || dot > eq)
        throw InputError(fmt::format(
            "{}: expected SECTION.KEY=VALUE (model.vocab=50257, parallel.recompute=full), got '{}'",
            where, assignment));
    const std::string section(assignment.substr(0, dot));
    const std::string key(assignment.substr(dot + 1, eq - dot - 1));
    const std::string text(assignment.substr(eq + 1));
    Settings* target = section == "model"      ? &step.model
                       : section == "training" ? &step.training
                       : section == "parallel" ? &step.parallel
                                               : nullptr;
    if (target == nullptr)
        throw InputError(fmt::format("{}: unknown section '{}' in '{}' (valid: model, training, "
                                     "parallel)",
                                     where, section, assignment));
    const config::KeyInfo* spec = find_spec(section, key);
    if (spec == nullptr)
        throw InputError(fmt::format("{}: unknown {} key '{}' (valid: {})", where, section, key,
                                     valid_keys(section)));
    SettingValue value = text;
    if (spec->type == config::KeyType::integer) {
        std::int64_t v = 0;
        std::size_t used = 0;
        try {
            v = std::stoll(text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != text.size())
            throw InputError(
                fmt::format("{}: {}.{}: expected an integer, got '{}'", where, section, key, text));
        value = v;
    } else if (spec->type == config::KeyType::number) {
        double v = 0;
        std::size_t used = 0;
        try {
            v = std::stod(text, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != text.size())
            throw InputError(
                fmt::format("{}: {}.{}: expected a number, got '{}'", where, section, key, text));
        value = v;
    } else if (spec->type == config::KeyType::boolean) {
        if (text != "true" && text != "false")
            throw InputError(fmt::format("{}: {}.{}: expected true or false, got '{}'", where,
                                         section, key, text));
        value = text == "true";
    }
    check_setting(section, key, value, fmt::format("{}: {}.{}", where, section, key));
    (*target)[key] = value;
}

std::vector<std::string> StepMeasurement::overrides() const {
    std::vector<std::string> out;
    if (!model_preset.empty())
        out.push_back("model=" + model_preset);
    auto add = [&](std::string_view section, const Settings& settings) {
        for (const auto& [key, value] : settings) {
            std::string v = describe(value);
            if (std::holds_alternative<std::string>(value))
                v = std::get<std::string>(value);
            out.push_back(fmt::format("{}.{}={}", section, key, v));
        }
    };
    add("model", model);
    add("training", training);
    add("parallel", parallel);
    return out;
}

} // namespace clustersim::calibrate
