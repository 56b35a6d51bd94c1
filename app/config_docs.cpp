#include "app/config_docs.h"

#include "base/text.h"
#include "calibrate/measurement_fields.h"
#include "calibrate/measurements.h"
#include "strategies/parallel/experiment_keys.h"
#include "strategies/parallel/framework_profile.h"
#include "strategies/parallel/platform_keys.h"

#include <fmt/format.h>

#include <set>
#include <sstream>

namespace clustersim::app {

namespace {

/// `clustersim init`'s layout: values end before this column, comments wrap at kWidth.
constexpr std::size_t kCommentColumn = 33;
constexpr std::size_t kWidth = 100;

/// `head` then `comment` from kCommentColumn, its words wrapped onto lines of their own at
/// that column (a comment alone starts at the head's indentation).
void write_commented(std::string& out, const std::string& head, std::string_view comment) {
    std::string line = head;
    std::size_t column = kCommentColumn;
    if (head.find_first_not_of(' ') == std::string::npos) {
        column = head.size(); // a comment line of its own
    } else {
        line.resize(std::max(line.size() + 1, kCommentColumn), ' ');
    }
    if (comment.empty()) {
        out += head + "\n";
        return;
    }
    line += "#";
    std::istringstream words{std::string(comment)};
    bool first = true;
    for (std::string word; words >> word; first = false) {
        if (!first && line.size() + 1 + word.size() > kWidth) {
            out += line + "\n";
            line = std::string(column, ' ') + "#";
        }
        line += " " + word;
    }
    out += line + "\n";
}

std::string choices_text(const config::KeyInfo& k, std::string_view separator) {
    std::vector<std::string> names;
    for (const auto& c : k.choices)
        names.push_back(c);
    return base::join(names, separator);
}

/// The template's comment of a key: meaning, choices, mirror, other names, default (which kind
/// of model a key is for, the docs say: the template's comments stay short).
std::string template_comment(const config::KeyInfo& k) {
    std::string c(k.meaning);
    if (k.type == config::KeyType::choice || k.type == config::KeyType::list)
        c += ": " + choices_text(k, " | ");
    if (!k.mirrors.empty())
        c += " [" + std::string(k.mirrors) + "]";
    for (std::string_view other : k.other_names)
        c += "; also read as " + std::string(other);
    if (k.required || k.fallback.starts_with("required"))
        c += "; required";
    else if (!k.fallback.empty())
        c += "; default " + std::string(k.fallback);
    return c;
}

std::string_view group_title(const config::KeySection& s, std::string_view group) {
    for (const auto& [name, title] : s.groups) {
        if (name == group)
            return title;
    }
    return group;
}

void write_section(std::string& out, const config::KeySection& s, const std::string& indent) {
    std::string_view group;
    for (const config::KeyInfo* k : s.keys) {
        if (k->group != group && !k->group.empty())
            write_commented(out, indent, std::string(group_title(s, k->group)) + ":");
        group = k->group;
        const config::KeySection* nested =
            s.path.empty() ? strategies::parallel::experiment_section(k->name) : nullptr;
        const std::string lead = indent + (k->commented ? "# " : "") + std::string(k->name) + ":";
        if (nested != nullptr) {
            write_commented(out, lead, template_comment(*k));
            write_section(out, *nested, indent + "  ");
            continue;
        }
        write_commented(out, lead + " " + std::string(k->example), template_comment(*k));
    }
}

std::string cell(std::string text) {
    std::string out;
    for (char c : text) {
        if (c == '|')
            out += "\\|";
        else
            out += c;
    }
    return out;
}

std::string values_text(const config::KeyInfo& k) {
    switch (k.type) {
    case config::KeyType::integer:
        return fmt::format("{} to {}", k.min, k.max);
    case config::KeyType::number:
        return k.number_min > -1e300 ? fmt::format(">= {}", k.number_min) : "";
    case config::KeyType::choice:
        return choices_text(k, ", ");
    case config::KeyType::list:
        return k.choices.empty() ? "" : "of " + choices_text(k, ", ");
    case config::KeyType::bytes:
        return k.min > 0 ? "positive, like 25MiB" : "like 2GiB, or 0";
    case config::KeyType::time:
        return "like 2us";
    case config::KeyType::bandwidth:
        return "like 900GB/s or 400Gb/s";
    case config::KeyType::flop_rate:
        return "like 989TFLOPS";
    case config::KeyType::boolean:
        return "true, false";
    case config::KeyType::text:
    case config::KeyType::section:
        return "";
    }
    return "";
}

void write_table(std::string& out, const std::vector<const config::KeyInfo*>& keys,
                 std::string_view prefix) {
    out += "| Key | Type | Default | Values | Mirrors | Meaning | Lands in |\n";
    out += "|---|---|---|---|---|---|---|\n";
    for (const config::KeyInfo* k : keys) {
        std::string name = "`" + std::string(prefix) + std::string(k->name) + "`";
        for (std::string_view other : k->other_names)
            name += " (or `" + std::string(other) + "`)";
        std::string meaning(k->meaning);
        if (!k->when.empty())
            meaning += " (kind: " + std::string(k->when) + ")";
        const std::string mirrors =
            k->mirrors.empty() ? std::string() : "`" + std::string(k->mirrors) + "`";
        const std::string fallback = k->required ? "required" : std::string(k->fallback);
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", cell(name), to_string(k->type),
                           cell(fallback), cell(values_text(*k)), cell(mirrors), cell(meaning),
                           cell(k->lands.empty() ? "" : "`" + std::string(k->lands) + "`"));
    }
}

} // namespace

std::string experiment_template() {
    std::string out =
        "# A clustersim experiment: a cluster, a model, how it is trained and how it is split.\n"
        "# Run it with `clustersim run FILE`; change any key from the command line with\n"
        "# `--set parallel.tp=4`. Sizes take units (25MiB, 1GB), times too (2us). Knob names "
        "follow\n"
        "# Megatron-LM where it has one (in brackets). docs/experiments.md says more of each "
        "key.\n";
    write_section(out, strategies::parallel::experiment_sections().front(), "");
    return out;
}

namespace {

/// The framework profiles (strategies/parallel/framework_profile.h): what each sets, and why.
void write_profiles(std::string& out) {
    namespace par = strategies::parallel;
    out += "\n### Profiles (`profile:`, or an experiment's `training.framework`)\n\n"
           "A profile sets these behaviours together. Under the hardware file's profile a key "
           "written in its framework: section keeps its value; an experiment's "
           "training.framework sets all five (the experiment names the stack it runs). Fitted "
           "costs (host_overhead, microbatch_overhead, "
           "the efficiencies) are the hardware file's under every profile.\n\n| Key |";
    const auto names = par::framework_profile_names();
    for (const auto& n : names)
        out += " " + n + " |";
    out += "\n|---|";
    for (std::size_t i = 0; i < names.size(); ++i)
        out += "---|";
    out += "\n";
    for (int k = 0; k < par::kProfileKeys; ++k) {
        const auto key = static_cast<par::ProfileKey>(k);
        out += fmt::format("| `{}` |", par::key_name(key));
        for (std::size_t i = 0; i < names.size(); ++i)
            out += fmt::format(" {} |",
                               par::profile_setting(static_cast<par::FrameworkProfile>(i), key));
        out += "\n";
    }
    out += "\n";
    for (std::size_t i = 0; i < names.size(); ++i)
        out += fmt::format("- `{}`: {}\n", names[i],
                           par::profile_reason(static_cast<par::FrameworkProfile>(i)));
}

} // namespace

std::string keys_markdown(std::string_view title, std::string_view intro,
                          const std::vector<config::KeySection>& sections) {
    std::string out = fmt::format("# {}\n\n", title);
    out += "<!-- Generated from the key tables by `clustersim init --docs`; "
           "scripts/gen-config-docs.sh writes it and CI checks it. Edit the tables, not this. "
           "-->\n\n";
    out += std::string(intro) + "\n";
    for (const config::KeySection& s : sections) {
        out +=
            fmt::format("\n## {}\n\n{}\n\n",
                        s.path.empty() ? "Top level" : "`" + std::string(s.path) + ":`", s.meaning);
        const std::string prefix = s.path.empty() ? "" : std::string(s.path) + ".";
        std::vector<const config::KeyInfo*> plain;
        std::set<std::string_view> groups;
        for (const config::KeyInfo* k : s.keys) {
            if (k->group.empty())
                plain.push_back(k);
            else
                groups.insert(k->group);
        }
        write_table(out, plain, prefix);
        if (s.path == "framework")
            write_profiles(out);
        // Groups in the order their first key comes.
        std::vector<std::string_view> order;
        for (const config::KeyInfo* k : s.keys) {
            if (!k->group.empty() && std::find(order.begin(), order.end(), k->group) == order.end())
                order.push_back(k->group);
        }
        for (std::string_view g : order) {
            out += fmt::format("\n### {}\n\n", group_title(s, g));
            std::vector<const config::KeyInfo*> in_group;
            for (const config::KeyInfo* k : s.keys) {
                if (k->group == g)
                    in_group.push_back(k);
            }
            write_table(out, in_group, prefix);
        }
    }
    return out;
}

std::string experiments_markdown() {
    return keys_markdown(
        "Experiment files",
        "An experiment file says what to simulate: a cluster, a model, how it is trained and how "
        "it is split. `clustersim init` writes one with every key; `clustersim run FILE` runs "
        "it. Every key below can be changed from the command line (`--set parallel.tp=4`), "
        "varied by a sweep (`sweep --vary parallel.tp=1,2,4`) and given as a step "
        "measurement's setting (`calibrate import ... --set parallel.cp=2`, "
        "docs/measurements.md). Unknown keys are errors. Sizes and times take units (25MiB, "
        "2us). Rules over several keys (tp x pp x cp x dp = gpus, and the like) are checked "
        "after reading and say what would fix them.",
        strategies::parallel::experiment_sections());
}

std::string hardware_markdown() {
    return keys_markdown(
        "Hardware files",
        "A hardware file describes one node and the fabric between nodes (configs/hardware: "
        "`clustersim list` names the presets). A file may `extends:` a preset (or another "
        "file) and change any key; an experiment's `hardware:` may be such a mapping. Sizes, "
        "times, bandwidths and FLOP rates take units (80GiB, 2us, 900GB/s, 400Gb/s, "
        "989TFLOPS). The presets' comments give each value's source. Unknown keys are errors. "
        "A key below is written nested: `gpu.hbm.capacity` is\n\n"
        "```yaml\ngpu:\n  hbm:\n    capacity: 80GiB\n```",
        strategies::parallel::hardware_sections());
}

namespace {

std::string field_presence(const calibrate::FieldInfo& f) {
    if (!f.with.empty())
        return "with `" + std::string(f.with) + "`";
    switch (f.presence) {
    case calibrate::Presence::required:
        return "yes";
    case calibrate::Presence::optional:
        return "no: left out when not known";
    case calibrate::Presence::defaulted:
        return f.type == calibrate::FieldType::rate ? "no: checked when given" : "no";
    }
    return "";
}

std::string field_values(const calibrate::FieldInfo& f) {
    switch (f.type) {
    case calibrate::FieldType::integer:
        return fmt::format("{} to {}", f.min, f.max);
    case calibrate::FieldType::number:
    case calibrate::FieldType::time:
        return "positive";
    case calibrate::FieldType::choice: {
        std::vector<std::string> names;
        for (const auto& c : f.choices) {
            if (!c.empty())
                names.push_back("`" + c + "`");
        }
        return base::join(names, ", ");
    }
    case calibrate::FieldType::rate:
        return "`" + std::string(f.formula) + "`, within 1%";
    case calibrate::FieldType::text:
        return f.if_empty.empty() ? "" : "not empty";
    case calibrate::FieldType::dims:
        return "integers >= 0";
    case calibrate::FieldType::boolean:
        return "true, false";
    case calibrate::FieldType::settings:
    case calibrate::FieldType::model:
        return "";
    }
    return "";
}

void write_fields(std::string& out, const calibrate::RecordInfo& r) {
    out += "| Key | Type | Unit | Required | Values | Mirrors | Meaning | Lands in |\n";
    out += "|---|---|---|---|---|---|---|---|\n";
    for (const calibrate::FieldInfo* f : r.fields) {
        auto code = [](std::string_view text) {
            return text.empty() ? std::string() : "`" + std::string(text) + "`";
        };
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", code(f->name),
                           to_string(f->type), cell(std::string(f->unit)), cell(field_presence(*f)),
                           cell(field_values(*f)), cell(std::string(f->mirrors)),
                           cell(std::string(f->meaning)), cell(code(f->lands)));
    }
}

} // namespace

std::string measurement_fields_markdown() {
    const auto& records = calibrate::measurement_records();
    std::string out =
        "<!-- Generated from the field tables (calibrate/measurement_fields.cpp) by `clustersim "
        "init --docs measurements`; scripts/gen-config-docs.sh writes it and CI checks it. Edit "
        "the tables, not this. -->\n\n";
    out += "## Top level\n\n| Key | Type | Meaning |\n|---|---|---|\n";
    out += fmt::format("| `format` | string | always `\"{}\"` |\n", calibrate::kMeasurementFormat);
    out += fmt::format("| `version` | integer | `{}`; a reader refuses versions newer than it "
                       "knows |\n",
                       calibrate::kMeasurementVersion);
    out += "| `environment` | object | where the measurements were taken (below) |\n";
    for (const calibrate::RecordInfo& r : records) {
        if (r.list.empty())
            continue;
        out +=
            fmt::format("| `{}` | list | the points (below); a missing list is empty{} |\n", r.list,
                        r.optional_list ? "; written only when it or a list after it has "
                                          "points"
                                        : "");
    }
    out += "\nEvery point is one object on one line, its keys in the order of its table below. "
           "A time is positive, in the unit its key names (`time_us`, `time_ms`), exact to the "
           "picosecond. A rate is derived from sizes and times, written rounded to six "
           "significant digits, and optional when reading; when a file gives one, it must agree "
           "with the time to 1% (so a hand-edited time cannot leave a stale bandwidth). A key "
           "that is \"left out when not known\" is written only when its value is known (not "
           "empty, not its default). Unknown keys are errors.\n";
    for (const calibrate::RecordInfo& r : records) {
        out += r.list.empty() ? std::string("\n### `environment`\n\n")
                              : fmt::format("\n### `{}`\n\n", r.list);
        out += std::string(r.meaning) + "\n\n";
        write_fields(out, r);
    }
    return out;
}

} // namespace clustersim::app
