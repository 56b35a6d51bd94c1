#include "calibrate/measurements.h"

#include "base/error.h"
#include "base/text.h"
#include "base/units.h"
#include "config/bounded_read.h"
#include "config/key_table.h"
#include "strategies/parallel/experiment_keys.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace clustersim::calibrate {

using hardware::Dtype;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

namespace {
constexpr std::array<std::string_view, 4> kCopyKindNames{"device_to_device", "host_to_device",
                                                         "device_to_host", "peer"};
constexpr std::array<std::string_view, 2> kCopyMethodNames{"kernel", "memcpy"};
constexpr std::array<std::string_view, 3> kLaunchMethodNames{"host_submit", "gpu_back_to_back",
                                                             "launch_and_sync"};
/// NCCL's algorithm names (NCCL_ALGO), lower case, plus our hierarchical composition.
constexpr std::array<std::string_view, 9> kAlgorithms{
    "ring",           "tree",          "direct", "nvls",        "nvls_tree",
    "collnet_direct", "collnet_chain", "pat",    "hierarchical"};
constexpr std::array<std::string_view, 4> kLayouts{"NN", "NT", "TN", "TT"};
constexpr std::array<std::string_view, kKernelClassCount> kKernelClassNames{
    "gemm", "attention", "elementwise", "collective", "copy", "other"};
constexpr std::array<std::string_view, 4> kPhases{"", "forward", "backward", "optimizer"};

template <std::size_t N>
std::string join(const std::array<std::string_view, N>& names) {
    return base::join(std::vector<std::string>(names.begin(), names.end()), ", ");
}

template <typename E, std::size_t N>
std::optional<E> find_name(const std::array<std::string_view, N>& names, std::string_view text) {
    for (std::size_t i = 0; i < N; ++i) {
        if (names[i] == text)
            return static_cast<E>(i);
    }
    return std::nullopt;
}
} // namespace

std::string_view to_string(CopyKind kind) {
    return kCopyKindNames[static_cast<std::size_t>(kind)];
}
std::optional<CopyKind> parse_copy_kind(std::string_view text) {
    return find_name<CopyKind>(kCopyKindNames, text);
}
std::string_view to_string(CopyMethod method) {
    return kCopyMethodNames[static_cast<std::size_t>(method)];
}
std::optional<CopyMethod> parse_copy_method(std::string_view text) {
    return find_name<CopyMethod>(kCopyMethodNames, text);
}
std::string_view to_string(LaunchMethod method) {
    return kLaunchMethodNames[static_cast<std::size_t>(method)];
}
std::optional<LaunchMethod> parse_launch_method(std::string_view text) {
    return find_name<LaunchMethod>(kLaunchMethodNames, text);
}
std::string_view to_string(KernelClass c) {
    return kKernelClassNames[static_cast<std::size_t>(c)];
}
std::optional<KernelClass> parse_kernel_class(std::string_view text) {
    return find_name<KernelClass>(kKernelClassNames, text);
}

sim::Time KernelMeasurement::per_call() const {
    return calls > 0 ? time / calls : time;
}

// ---------------------------------------------------------------------------------------------
// Derived rates
// ---------------------------------------------------------------------------------------------

double CollectiveMeasurement::algbw() const {
    return static_cast<double>(bytes) / time.seconds();
}
double CollectiveMeasurement::busbw() const {
    return algbw() * strategies::collectives::bus_factor(op, gpus);
}
double GemmMeasurement::flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}
double GemmMeasurement::flop_rate() const {
    return flops() / time.seconds();
}
double CopyMeasurement::bandwidth() const {
    return static_cast<double>(bytes) / time.seconds();
}
double P2pMeasurement::bandwidth() const {
    return static_cast<double>(bytes) / time.seconds();
}

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

std::string describe(const SettingValue& v) {
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

} // namespace

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

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

namespace {
/// Six significant digits: derived rates are written rounded so that files are stable and
/// readable; the reader recomputes them from the times and checks them to 1%.
double round_significant(double x) {
    return base::round_significant(x, 6);
}
/// Times are exact picoseconds; as microseconds they have at most six decimals.
double micros(sim::Time t) {
    return static_cast<double>(t.picoseconds()) / 1e6;
}
double millis(sim::Time t) {
    return static_cast<double>(t.picoseconds()) / 1e9;
}

ordered_json settings_json(const Settings& s) {
    ordered_json out = ordered_json::object();
    for (const auto& [key, value] : s)
        std::visit([&, k = key](const auto& v) { out[k] = v; }, value);
    return out;
}

ordered_json to_json(const CollectiveMeasurement& c) {
    ordered_json j;
    j["op"] = to_string(c.op);
    if (!c.algorithm.empty())
        j["algorithm"] = c.algorithm;
    j["gpus"] = c.gpus;
    j["bytes"] = c.bytes;
    j["dtype"] = hardware::to_string(c.dtype);
    j["in_place"] = c.in_place;
    j["time_us"] = micros(c.time);
    j["algbw_gbps"] = round_significant(c.algbw() / 1e9);
    j["busbw_gbps"] = round_significant(c.busbw() / 1e9);
    if (c.wrong)
        j["wrong"] = *c.wrong;
    if (!c.source.empty())
        j["source"] = c.source;
    return j;
}

ordered_json to_json(const GemmMeasurement& g) {
    ordered_json j;
    j["m"] = g.m;
    j["n"] = g.n;
    j["k"] = g.k;
    j["dtype"] = hardware::to_string(g.dtype);
    j["layout"] = g.layout;
    j["library"] = g.library;
    j["time_us"] = micros(g.time);
    j["tflops"] = round_significant(g.flop_rate() / 1e12);
    if (!g.source.empty())
        j["source"] = g.source;
    return j;
}

ordered_json to_json(const CopyMeasurement& c) {
    ordered_json j;
    j["kind"] = to_string(c.kind);
    j["method"] = to_string(c.method);
    j["bytes"] = c.bytes;
    j["src_gpu"] = c.src_gpu;
    j["dst_gpu"] = c.dst_gpu;
    j["time_us"] = micros(c.time);
    j["gbps"] = round_significant(c.bandwidth() / 1e9);
    if (!c.source.empty())
        j["source"] = c.source;
    return j;
}

ordered_json to_json(const P2pMeasurement& p) {
    ordered_json j;
    j["src_gpu"] = p.src_gpu;
    j["dst_gpu"] = p.dst_gpu;
    j["bytes"] = p.bytes;
    j["time_us"] = micros(p.time);
    j["gbps"] = round_significant(p.bandwidth() / 1e9);
    if (!p.source.empty())
        j["source"] = p.source;
    return j;
}

ordered_json to_json(const LaunchMeasurement& l) {
    ordered_json j;
    j["method"] = to_string(l.method);
    j["time_us"] = micros(l.time);
    j["launches"] = l.launches;
    if (!l.source.empty())
        j["source"] = l.source;
    return j;
}

ordered_json to_json(const StepMeasurement& s) {
    ordered_json j;
    j["gpus"] = s.gpus;
    if (!s.model_preset.empty() && s.model.empty())
        j["model"] = s.model_preset;
    else {
        ordered_json m = settings_json(s.model);
        if (!s.model_preset.empty())
            m["preset"] = s.model_preset;
        j["model"] = m;
    }
    j["training"] = settings_json(s.training);
    j["parallel"] = settings_json(s.parallel);
    j["time_ms"] = millis(s.time);
    if (!s.source.empty())
        j["source"] = s.source;
    return j;
}

ordered_json to_json(const KernelMeasurement& k) {
    ordered_json j;
    j["class"] = to_string(k.kernel_class);
    j["op"] = k.op;
    j["kernel"] = k.kernel;
    if (!k.phase.empty())
        j["phase"] = k.phase;
    if (k.layer >= 0)
        j["layer"] = k.layer;
    if (k.dtype)
        j["dtype"] = hardware::to_string(*k.dtype);
    ordered_json shapes = ordered_json::array();
    for (const auto& s : k.shapes)
        shapes.push_back(s);
    j["shapes"] = shapes;
    if (k.flops > 0)
        j["flops"] = k.flops;
    if (k.bytes > 0)
        j["bytes"] = k.bytes;
    if (!k.collective.empty()) {
        j["collective"] = k.collective;
        j["gpus"] = k.gpus;
    }
    j["stream"] = k.stream;
    j["calls"] = k.calls;
    j["time_us"] = micros(k.time);
    if (!k.source.empty())
        j["source"] = k.source;
    return j;
}

ordered_json to_json(const TraceStepMeasurement& t) {
    ordered_json j;
    j["steps"] = t.steps;
    j["time_ms"] = millis(t.time);
    j["busy_ms"] = millis(t.busy);
    if (t.launch > sim::Time::zero())
        j["launch_us"] = micros(t.launch);
    j["kernels"] = t.kernels;
    if (!t.source.empty())
        j["source"] = t.source;
    return j;
}

template <typename T>
void write_list(std::string& out, std::string_view key, const std::vector<T>& items, bool last) {
    out += fmt::format("  \"{}\": [", key);
    for (std::size_t i = 0; i < items.size(); ++i) {
        out += i == 0 ? "\n    " : ",\n    ";
        out += to_json(items[i]).dump();
    }
    out += items.empty() ? "]" : "\n  ]";
    out += last ? "\n" : ",\n";
}
} // namespace

std::string format_measurements(const MeasurementFile& file, const std::string& name) {
    check_measurements(file, name);
    const Environment& e = file.environment;
    ordered_json env;
    env["device"] = e.device;
    env["device_count"] = e.device_count;
    auto opt = [&](std::string_view key, const std::string& v) {
        if (!v.empty())
            env[std::string(key)] = v;
    };
    opt("driver_version", e.driver_version);
    opt("cuda_version", e.cuda_version);
    opt("nccl_version", e.nccl_version);
    opt("cublas_version", e.cublas_version);
    opt("date", e.date);
    opt("host", e.host);
    opt("tool", e.tool);

    std::string out = "{\n";
    out += fmt::format("  \"format\": \"{}\",\n", kMeasurementFormat);
    out += fmt::format("  \"version\": {},\n", kMeasurementVersion);
    out += "  \"environment\": ";
    // The environment is small: indented, one key per line, with the file's indentation.
    std::string env_text = env.dump(2);
    std::string indented;
    for (char c : env_text) {
        indented += c;
        if (c == '\n')
            indented += "  ";
    }
    out += indented + ",\n";
    write_list(out, "collectives", file.collectives, false);
    write_list(out, "gemms", file.gemms, false);
    write_list(out, "copies", file.copies, false);
    write_list(out, "p2p", file.p2p, false);
    write_list(out, "launches", file.launches, false);
    const bool more = !file.kernels.empty() || !file.trace_steps.empty();
    write_list(out, "steps", file.steps, !more);
    // Written only when present, so files without them read as before.
    if (more) {
        write_list(out, "kernels", file.kernels, file.trace_steps.empty());
        if (!file.trace_steps.empty())
            write_list(out, "trace_steps", file.trace_steps, true);
    }
    out += "}\n";
    return out;
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

namespace {
/// The longest excerpt of a value that an error message echoes.
constexpr std::size_t kShowChars = 40;

/// Appends `v` as JSON text to `out` until `out` holds more than `limit` characters; stops
/// there, so a 20 MB string or a value nested 10^5 deep costs no more than a short one.
void show_into(const json& v, std::string& out, std::size_t limit) {
    if (out.size() > limit)
        return;
    if (v.is_string()) {
        // Dump only a prefix of a long string (plus its quotes and escapes).
        const std::string& s = v.get_ref<const std::string&>();
        const json part = s.size() > limit ? json(s.substr(0, limit)) : v;
        out += part.dump(-1, ' ', false, json::error_handler_t::replace);
        return;
    }
    if (v.is_array()) {
        out += '[';
        bool first = true;
        for (const json& e : v) {
            if (out.size() > limit)
                return;
            if (!first)
                out += ',';
            first = false;
            show_into(e, out, limit);
        }
        out += ']';
        return;
    }
    if (v.is_object()) {
        out += '{';
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (out.size() > limit)
                return;
            if (!first)
                out += ',';
            first = false;
            show_into(json(it.key()), out, limit);
            out += ':';
            show_into(it.value(), out, limit);
        }
        out += '}';
        return;
    }
    out += v.dump();
}

/// A short excerpt of a value for an error message: at most kShowChars characters.
std::string show(const json& v) {
    std::string text;
    show_into(v, text, kShowChars);
    if (text.size() > kShowChars)
        text = text.substr(0, kShowChars - 3) + "...";
    return text;
}

/// The deepest nesting of arrays and objects a measurement file may have (the format needs
/// four); deeper input is refused before parsing, so nothing downstream recurses without bound.
constexpr int kMaxJsonDepth = 64;

/// Throws InputError at the line and column where `text` nests deeper than kMaxJsonDepth.
/// Brackets inside strings do not count.
void check_json_depth(std::string_view text, const std::string& name) {
    int depth = 0;
    int line = 1;
    std::size_t line_start = 0;
    bool in_string = false;
    bool escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
            line_start = i + 1;
        }
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth)
                throw InputError(fmt::format("{}:{}:{}: nested deeper than {} levels of arrays "
                                             "and objects; a measurement file needs a few",
                                             name, line, i - line_start + 1, kMaxJsonDepth));
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
}

/// Reads one JSON object's keys, each getter naming its JSON path in errors; `finish()`
/// refuses keys no getter asked for.
class ObjectReader {
public:
    ObjectReader(const json& j, const std::string& file, std::string path)
        : j_(j)
        , file_(file)
        , path_(std::move(path)) {
        if (!j_.is_object())
            fail_here(fmt::format("expected an object, got {}", show(j_)));
    }

    [[noreturn]] void fail(std::string_view key, const std::string& what) const {
        throw InputError(fmt::format("{}: {}: {}", file_, sub(key), what));
    }
    [[noreturn]] void fail_here(const std::string& what) const {
        throw InputError(fmt::format("{}: {}: {}", file_, path_.empty() ? "(top)" : path_, what));
    }
    std::string sub(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }
    const std::string& path() const { return path_; }

    bool has(std::string_view key) {
        seen_.insert(std::string(key));
        return j_.contains(key);
    }
    const json& get(std::string_view key) {
        if (!has(key))
            fail_here(fmt::format("missing key '{}'", base::excerpt(key)));
        return j_.at(std::string(key));
    }
    std::string str(std::string_view key) {
        const json& v = get(key);
        if (!v.is_string())
            fail(key, fmt::format("expected a string, got {}", show(v)));
        return v.get<std::string>();
    }
    std::string str_or(std::string_view key, std::string fallback) {
        return has(key) ? str(key) : std::move(fallback);
    }
    std::int64_t integer(std::string_view key, std::int64_t min, std::int64_t max) {
        const json& v = get(key);
        if (!v.is_number_integer())
            fail(key, fmt::format("expected an integer, got {}", show(v)));
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max))
            fail(key, fmt::format("expected an integer from {} to {}, got {}", min, max, show(v)));
        const auto x = v.get<std::int64_t>();
        if (x < min || x > max)
            fail(key, fmt::format("expected an integer from {} to {}, got {}", min, max, x));
        return x;
    }
    int small_int(std::string_view key, int min, int max) {
        return static_cast<int>(integer(key, min, max));
    }
    double positive_number(std::string_view key) {
        const json& v = get(key);
        if (!v.is_number())
            fail(key, fmt::format("expected a positive number, got {}", show(v)));
        const double x = v.get<double>();
        if (!(x > 0) || !std::isfinite(x))
            fail(key, fmt::format("expected a positive number, got {}", show(v)));
        return x;
    }
    bool boolean(std::string_view key) {
        const json& v = get(key);
        if (!v.is_boolean())
            fail(key, fmt::format("expected true or false, got {}", show(v)));
        return v.get<bool>();
    }
    /// A time in `unit_seconds` units: positive, finite, and representable.
    sim::Time time(std::string_view key, double unit_seconds) {
        const double x = positive_number(key);
        const sim::Time t = sim::Time::from_seconds(x * unit_seconds);
        if (t <= sim::Time::zero())
            fail(key, fmt::format("expected a time of at least one picosecond, got {}", x));
        if (t == sim::Time::max())
            fail(key, fmt::format("time {} is out of range", x));
        return t;
    }
    /// A derived rate, when written, must agree with the one computed from the time.
    void check_rate(std::string_view key, double computed, std::string_view from) {
        if (!has(key))
            return;
        const double given = positive_or_zero(key);
        if (std::abs(given - computed) > 0.01 * computed + 0.005)
            fail(key, fmt::format("{} disagrees with {} = {:.6g}: derived rates are checked "
                                  "against the time (fix the time, or drop the key)",
                                  given, from, computed));
    }
    void finish() {
        for (const auto& [key, value] : j_.items()) {
            if (seen_.count(key) == 0)
                fail_here(
                    fmt::format("unknown key '{}' (valid: {})", base::excerpt(key), join_seen()));
        }
    }

private:
    double positive_or_zero(std::string_view key) {
        const json& v = get(key);
        if (!v.is_number() || !(v.get<double>() >= 0))
            fail(key, fmt::format("expected a non-negative number, got {}", show(v)));
        return v.get<double>();
    }
    std::string join_seen() const {
        return base::join(std::vector<std::string>(seen_.begin(), seen_.end()), ", ");
    }

    const json& j_;
    const std::string& file_;
    std::string path_;
    std::set<std::string> seen_;
};

Dtype read_dtype(ObjectReader& r, std::string_view key) {
    const std::string s = r.str(key);
    const auto d = hardware::parse_dtype(s);
    if (!d || s != hardware::to_string(*d))
        r.fail(key, fmt::format("expected one of fp64, fp32, tf32, fp16, bf16, fp8, got '{}'",
                                base::excerpt(s)));
    return *d;
}

template <std::size_t N>
std::string read_choice(ObjectReader& r, std::string_view key,
                        const std::array<std::string_view, N>& names, std::string_view what) {
    const std::string s = r.str(key);
    if (std::find(names.begin(), names.end(), s) == names.end())
        r.fail(key,
               fmt::format("unknown {} '{}' (valid: {})", what, base::excerpt(s), join(names)));
    return s;
}

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50; // 1 PiB: far beyond any buffer
constexpr int kMaxGpus = kMaxMeasurementGpus;

CollectiveMeasurement read_collective(ObjectReader& r) {
    CollectiveMeasurement c;
    // Exactly as written by format_measurements: parse_op's other spellings are for people.
    const std::string op = r.str("op");
    const auto parsed = strategies::collectives::parse_op(op);
    if (!parsed || op != strategies::collectives::to_string(*parsed))
        r.fail("op", fmt::format("unknown collective '{}' (valid: {})", base::excerpt(op),
                                 strategies::collectives::op_names()));
    c.op = *parsed;
    if (r.has("algorithm"))
        c.algorithm = read_choice(r, "algorithm", kAlgorithms, "algorithm");
    c.gpus = r.small_int("gpus", 1, kMaxGpus);
    c.bytes = r.integer("bytes", 1, kMaxBytes);
    c.dtype = read_dtype(r, "dtype");
    c.in_place = r.boolean("in_place");
    c.time = r.time("time_us", 1e-6);
    if (r.has("wrong"))
        c.wrong = r.integer("wrong", 0, kMaxBytes);
    c.source = r.str_or("source", "");
    r.check_rate("algbw_gbps", c.algbw() / 1e9, "bytes / time_us");
    r.check_rate("busbw_gbps", c.busbw() / 1e9, "algbw x the bus factor");
    return c;
}

GemmMeasurement read_gemm(ObjectReader& r) {
    GemmMeasurement g;
    g.m = r.integer("m", 1, kMaxBytes);
    g.n = r.integer("n", 1, kMaxBytes);
    g.k = r.integer("k", 1, kMaxBytes);
    g.dtype = read_dtype(r, "dtype");
    g.layout = read_choice(r, "layout", kLayouts, "layout");
    g.library = r.str("library");
    if (g.library.empty())
        r.fail("library", "expected a library name like 'cublaslt', got ''");
    g.time = r.time("time_us", 1e-6);
    g.source = r.str_or("source", "");
    r.check_rate("tflops", g.flop_rate() / 1e12, "2 m n k / time_us");
    return g;
}

CopyMeasurement read_copy(ObjectReader& r) {
    CopyMeasurement c;
    c.kind = *parse_copy_kind(read_choice(r, "kind", kCopyKindNames, "copy kind"));
    c.method = *parse_copy_method(read_choice(r, "method", kCopyMethodNames, "copy method"));
    c.bytes = r.integer("bytes", 1, kMaxBytes);
    c.src_gpu = r.small_int("src_gpu", 0, kMaxGpus);
    c.dst_gpu = r.small_int("dst_gpu", 0, kMaxGpus);
    c.time = r.time("time_us", 1e-6);
    c.source = r.str_or("source", "");
    r.check_rate("gbps", c.bandwidth() / 1e9, "bytes / time_us");
    return c;
}

P2pMeasurement read_p2p(ObjectReader& r) {
    P2pMeasurement p;
    p.src_gpu = r.small_int("src_gpu", 0, kMaxGpus);
    p.dst_gpu = r.small_int("dst_gpu", 0, kMaxGpus);
    p.bytes = r.integer("bytes", 1, kMaxBytes);
    p.time = r.time("time_us", 1e-6);
    p.source = r.str_or("source", "");
    r.check_rate("gbps", p.bandwidth() / 1e9, "bytes / time_us");
    return p;
}

LaunchMeasurement read_launch(ObjectReader& r) {
    LaunchMeasurement l;
    l.method = *parse_launch_method(read_choice(r, "method", kLaunchMethodNames, "launch method"));
    l.time = r.time("time_us", 1e-6);
    l.launches = r.integer("launches", 1, kMaxBytes);
    l.source = r.str_or("source", "");
    return l;
}

KernelMeasurement read_kernel(ObjectReader& r) {
    KernelMeasurement k;
    k.kernel_class =
        *parse_kernel_class(read_choice(r, "class", kKernelClassNames, "kernel class"));
    k.op = r.str("op");
    k.kernel = r.str("kernel");
    if (r.has("phase")) {
        k.phase = read_choice(r, "phase", kPhases, "phase");
        if (k.phase.empty())
            r.fail("phase", "expected forward, backward or optimizer (leave the key out when "
                            "not known)");
    }
    if (r.has("layer"))
        k.layer = r.small_int("layer", 0, kMaxGpus);
    if (r.has("dtype"))
        k.dtype = read_dtype(r, "dtype");
    const json& shapes = r.get("shapes");
    if (!shapes.is_array())
        r.fail("shapes", "expected a list of lists of dimensions, got " + show(shapes));
    for (const auto& s : shapes) {
        if (!s.is_array())
            r.fail("shapes", "expected a list of lists of dimensions, got " + show(s));
        std::vector<std::int64_t> dims;
        for (const auto& d : s) {
            if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
                r.fail("shapes", "expected non-negative integer dimensions, got " + show(d));
            dims.push_back(d.get<std::int64_t>());
        }
        k.shapes.push_back(std::move(dims));
    }
    if (r.has("flops"))
        k.flops = r.positive_number("flops");
    if (r.has("bytes"))
        k.bytes = r.integer("bytes", 1, kMaxBytes);
    if (r.has("collective")) {
        const std::string op = r.str("collective");
        const auto parsed = strategies::collectives::parse_op(op);
        if (!parsed || op != strategies::collectives::to_string(*parsed))
            r.fail("collective",
                   fmt::format("unknown collective '{}' (valid: {})", base::excerpt(op),
                               strategies::collectives::op_names()));
        k.collective = op;
        k.gpus = r.small_int("gpus", 1, kMaxGpus);
    }
    k.stream = r.small_int("stream", 0, std::numeric_limits<int>::max());
    k.calls = r.integer("calls", 1, kMaxBytes);
    k.time = r.time("time_us", 1e-6);
    k.source = r.str_or("source", "");
    return k;
}

TraceStepMeasurement read_trace_step(ObjectReader& r) {
    TraceStepMeasurement t;
    t.steps = r.small_int("steps", 1, std::numeric_limits<int>::max());
    t.time = r.time("time_ms", 1e-3);
    t.busy = r.time("busy_ms", 1e-3);
    if (r.has("launch_us"))
        t.launch = r.time("launch_us", 1e-6);
    t.kernels = r.integer("kernels", 0, kMaxBytes);
    t.source = r.str_or("source", "");
    return t;
}

Settings read_settings(const json& j, std::string_view section, const std::string& file,
                       const std::string& path, std::string* preset) {
    if (!j.is_object())
        throw InputError(fmt::format("{}: {}: expected an object, got {}", file, path, show(j)));
    Settings out;
    for (const auto& [key, v] : j.items()) {
        const std::string where = fmt::format("{}: {}.{}", file, path, key);
        if (preset != nullptr && key == "preset") {
            if (!v.is_string() || v.get<std::string>().empty())
                throw InputError(where + ": expected a model preset name, got " + show(v));
            *preset = v.get<std::string>();
            continue;
        }
        SettingValue value;
        if (v.is_boolean())
            value = v.get<bool>();
        else if (v.is_number_integer())
            value = v.get<std::int64_t>();
        else if (v.is_number())
            value = v.get<double>();
        else if (v.is_string())
            value = v.get<std::string>();
        else
            throw InputError(where + ": expected a number, string or boolean, got " + show(v));
        check_setting(section, key, value, where);
        out[key] = value;
    }
    return out;
}

StepMeasurement read_step(ObjectReader& r, const std::string& file) {
    StepMeasurement s;
    s.gpus = r.small_int("gpus", 1, kMaxGpus);
    const json& model = r.get("model");
    if (model.is_string()) {
        s.model_preset = model.get<std::string>();
        if (s.model_preset.empty())
            r.fail("model", "expected a model preset name or an object, got \"\"");
    } else {
        s.model = read_settings(model, "model", file, r.sub("model"), &s.model_preset);
    }
    s.training = r.has("training") ? read_settings(r.get("training"), "training", file,
                                                   r.sub("training"), nullptr)
                                   : Settings{};
    s.parallel = r.has("parallel") ? read_settings(r.get("parallel"), "parallel", file,
                                                   r.sub("parallel"), nullptr)
                                   : Settings{};
    s.time = r.time("time_ms", 1e-3);
    s.source = r.str_or("source", "");
    return s;
}

template <typename T, typename F>
std::vector<T> read_list(ObjectReader& top, const json& root, std::string_view key,
                         const std::string& file, F read_one) {
    std::vector<T> out;
    if (!top.has(key))
        return out;
    const json& list = root.at(std::string(key));
    if (!list.is_array())
        top.fail(key, fmt::format("expected a list, got {}", show(list)));
    out.reserve(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
        ObjectReader r(list[i], file, fmt::format("{}[{}]", key, i));
        out.push_back(read_one(r));
        r.finish();
    }
    return out;
}
} // namespace

MeasurementFile parse_measurements(std::string_view json_text, const std::string& name) {
    check_json_depth(json_text, name);
    json root;
    try {
        // A key given twice in one object is refused, as the YAML readers refuse it: JSON
        // parsers keep one of the two silently (nlohmann the last), so one of the user's
        // values would be ignored without a word.
        std::vector<std::set<std::string>> keys;
        std::string duplicate;
        const json::parser_callback_t refuse_duplicates = [&](int, json::parse_event_t event,
                                                              json& parsed) {
            if (event == json::parse_event_t::object_start) {
                keys.emplace_back();
            } else if (event == json::parse_event_t::object_end) {
                keys.pop_back();
            } else if (event == json::parse_event_t::key && !keys.empty() &&
                       !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
                duplicate = parsed.get<std::string>();
            }
            return true;
        };
        root = json::parse(json_text.begin(), json_text.end(), refuse_duplicates);
        if (!duplicate.empty())
            throw InputError(fmt::format("{}: key '{}' appears twice in one object; JSON keeps "
                                         "only one of them: remove the other",
                                         name, base::excerpt(duplicate)));
    } catch (const json::out_of_range& e) {
        // A number beyond double's range ("1e400"): nlohmann says which, but not where; find
        // the token it quotes to name its line and column.
        std::string what = e.what();
        const auto close = what.find("] ");
        if (close != std::string::npos)
            what = what.substr(close + 2);
        std::string where;
        const auto q1 = what.find('\'');
        const auto q2 = q1 == std::string::npos ? q1 : what.find('\'', q1 + 1);
        if (q2 != std::string::npos && q2 > q1 + 1) {
            const auto at = json_text.find(what.substr(q1 + 1, q2 - q1 - 1));
            if (at != std::string_view::npos) {
                const std::string_view before = json_text.substr(0, at);
                const auto line = 1 + std::count(before.begin(), before.end(), '\n');
                const auto nl = before.rfind('\n');
                where = fmt::format(":{}:{}", line,
                                    at - (nl == std::string_view::npos ? 0 : nl + 1) + 1);
            }
        }
        throw InputError(fmt::format("{}{}: not valid JSON: {} (numbers must be finite doubles)",
                                     name, where, base::excerpt(what, 80)));
    } catch (const json::exception& e) {
        // parse_error (out_of_range is caught above).
        // nlohmann's message: "[json.exception.parse_error.101] parse error at line 3, column
        // 5: syntax error ..."; keep the part after the bracketed id.
        std::string what = e.what();
        const auto close = what.find("] ");
        if (close != std::string::npos)
            what = what.substr(close + 2);
        // Cut: its "last read: '...'" can quote a 20 MB token.
        throw InputError(fmt::format("{}: not valid JSON: {}", name, base::excerpt(what, 200)));
    }
    MeasurementFile file;
    ObjectReader top(root, name, "");
    const std::string format = top.str("format");
    if (format != kMeasurementFormat)
        top.fail("format", fmt::format("expected \"{}\", got \"{}\"", kMeasurementFormat,
                                       base::excerpt(format)));
    const json& version = top.get("version");
    if (!version.is_number_integer())
        top.fail("version", "expected an integer, got " + show(version));
    file.version = static_cast<int>(version.get<std::int64_t>());
    if (file.version < 1 || file.version > kMeasurementVersion)
        top.fail("version", fmt::format("version {} is not supported: this clustersim reads "
                                        "versions 1 to {}",
                                        version.get<std::int64_t>(), kMeasurementVersion));
    {
        ObjectReader env(top.get("environment"), name, "environment");
        Environment& e = file.environment;
        e.device = env.str("device");
        if (e.device.empty())
            env.fail("device", "expected the GPU's name (or \"unknown\"), got \"\"");
        e.device_count = env.small_int("device_count", 0, kMaxGpus);
        e.driver_version = env.str_or("driver_version", "");
        e.cuda_version = env.str_or("cuda_version", "");
        e.nccl_version = env.str_or("nccl_version", "");
        e.cublas_version = env.str_or("cublas_version", "");
        e.date = env.str_or("date", "");
        e.host = env.str_or("host", "");
        e.tool = env.str_or("tool", "");
        env.finish();
    }
    file.collectives =
        read_list<CollectiveMeasurement>(top, root, "collectives", name, read_collective);
    file.gemms = read_list<GemmMeasurement>(top, root, "gemms", name, read_gemm);
    file.copies = read_list<CopyMeasurement>(top, root, "copies", name, read_copy);
    file.p2p = read_list<P2pMeasurement>(top, root, "p2p", name, read_p2p);
    file.launches = read_list<LaunchMeasurement>(top, root, "launches", name, read_launch);
    file.steps = read_list<StepMeasurement>(top, root, "steps", name,
                                            [&](ObjectReader& r) { return read_step(r, name); });
    file.kernels = read_list<KernelMeasurement>(top, root, "kernels", name, read_kernel);
    file.trace_steps =
        read_list<TraceStepMeasurement>(top, root, "trace_steps", name, read_trace_step);
    top.finish();
    check_measurements(file, name);
    return file;
}

MeasurementFile read_measurements(const std::string& path) {
    return parse_measurements(
        config::read_bounded(path, config::kMaxDataFileBytes, "a measurement file"), path);
}

// ---------------------------------------------------------------------------------------------
// Checks and merging
// ---------------------------------------------------------------------------------------------

namespace {
std::string from(const std::string& source) {
    return source.empty() ? std::string() : " (from " + source + ")";
}

std::string settings_key(const Settings& s) {
    std::string out;
    for (const auto& [k, v] : s)
        out += k + "=" + describe(v) + ";";
    return out;
}

/// Finds points that appear twice; `key_of` gives the identity and a description.
template <typename T, typename K>
void check_unique(const std::vector<T>& items, std::string_view list, const std::string& name,
                  K key_of) {
    std::map<std::string, std::size_t> first;
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto [key, what] = key_of(items[i]);
        auto [it, inserted] = first.emplace(key, i);
        if (!inserted)
            throw InputError(fmt::format("{}: {}[{}]{}: duplicate point ({}): first as {}[{}]{}",
                                         name, list, i, from(items[i].source), what, list,
                                         it->second, from(items[it->second].source)));
    }
}

template <typename T>
void check_positive_time(const std::vector<T>& items, std::string_view list,
                         const std::string& name) {
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (items[i].time <= sim::Time::zero())
            throw InputError(fmt::format("{}: {}[{}]{}: time must be positive", name, list, i,
                                         from(items[i].source)));
    }
}

std::optional<std::int64_t> int_setting(const Settings& s, const std::string& key) {
    auto it = s.find(key);
    if (it == s.end())
        return std::nullopt;
    if (const auto* v = std::get_if<std::int64_t>(&it->second))
        return *v;
    return std::nullopt;
}
} // namespace

void check_measurements(const MeasurementFile& file, const std::string& name) {
    if (file.environment.device.empty())
        throw InputError(name + ": environment.device: expected the GPU's name or \"unknown\"");
    check_positive_time(file.collectives, "collectives", name);
    check_positive_time(file.gemms, "gemms", name);
    check_positive_time(file.copies, "copies", name);
    check_positive_time(file.p2p, "p2p", name);
    check_positive_time(file.launches, "launches", name);
    check_positive_time(file.steps, "steps", name);
    check_positive_time(file.kernels, "kernels", name);
    check_positive_time(file.trace_steps, "trace_steps", name);
    for (std::size_t i = 0; i < file.kernels.size(); ++i) {
        const auto& k = file.kernels[i];
        if (k.calls < 1 || k.bytes < 0 || !(k.flops >= 0) || k.stream < 0 ||
            (k.collective.empty() != (k.gpus == 0)) || k.gpus < 0)
            throw InputError(fmt::format("{}: kernels[{}]{}: calls must be positive, bytes and "
                                         "flops not negative, and gpus given exactly for NCCL "
                                         "kernels",
                                         name, i, from(k.source)));
    }
    for (std::size_t i = 0; i < file.trace_steps.size(); ++i) {
        const auto& t = file.trace_steps[i];
        if (t.steps < 1 || t.kernels < 0 || t.busy > t.time)
            throw InputError(fmt::format("{}: trace_steps[{}]{}: steps must be positive and the "
                                         "GPU busy time at most the step time",
                                         name, i, from(t.source)));
    }

    for (std::size_t i = 0; i < file.collectives.size(); ++i) {
        const auto& c = file.collectives[i];
        if (c.gpus < 1 || c.bytes < 1 || (c.wrong && *c.wrong < 0))
            throw InputError(fmt::format("{}: collectives[{}]{}: gpus and bytes must be positive",
                                         name, i, from(c.source)));
    }
    for (std::size_t i = 0; i < file.gemms.size(); ++i) {
        const auto& g = file.gemms[i];
        if (g.m < 1 || g.n < 1 || g.k < 1 ||
            std::find(kLayouts.begin(), kLayouts.end(), g.layout) == kLayouts.end())
            throw InputError(fmt::format(
                "{}: gemms[{}]{}: m, n, k must be positive and layout one of NN, NT, TN, TT", name,
                i, from(g.source)));
    }
    for (std::size_t i = 0; i < file.copies.size(); ++i) {
        const auto& c = file.copies[i];
        const bool peer = c.kind == CopyKind::peer;
        if (c.bytes < 1 || c.src_gpu < 0 || c.dst_gpu < 0 || peer != (c.src_gpu != c.dst_gpu))
            throw InputError(fmt::format(
                "{}: copies[{}]{}: bytes must be positive, and src_gpu differ from dst_gpu "
                "exactly for peer copies (got {} from gpu{} to gpu{})",
                name, i, from(c.source), to_string(c.kind), c.src_gpu, c.dst_gpu));
    }
    for (std::size_t i = 0; i < file.p2p.size(); ++i) {
        const auto& p = file.p2p[i];
        if (p.bytes < 1 || p.src_gpu < 0 || p.dst_gpu < 0 || p.src_gpu == p.dst_gpu)
            throw InputError(
                fmt::format("{}: p2p[{}]{}: bytes must be positive and src_gpu differ from dst_gpu",
                            name, i, from(p.source)));
    }
    for (std::size_t i = 0; i < file.launches.size(); ++i) {
        if (file.launches[i].launches < 1)
            throw InputError(fmt::format("{}: launches[{}]{}: launches must be positive", name, i,
                                         from(file.launches[i].source)));
    }
    for (std::size_t i = 0; i < file.steps.size(); ++i) {
        const auto& s = file.steps[i];
        const std::string where = fmt::format("{}: steps[{}]{}", name, i, from(s.source));
        if (s.gpus < 1)
            throw InputError(where + ": gpus must be positive");
        for (const auto& [k, v] : s.model)
            check_setting("model", k, v, where + ": model." + k);
        for (const auto& [k, v] : s.training)
            check_setting("training", k, v, where + ": training." + k);
        for (const auto& [k, v] : s.parallel)
            check_setting("parallel", k, v, where + ": parallel." + k);
        if (s.model_preset.empty() && s.model.count("kind") == 0)
            throw InputError(where + ": model: expected a preset name or an object with 'kind' "
                                     "(transformer or mlp)");
        const auto tp = int_setting(s.parallel, "tp");
        const auto pp = int_setting(s.parallel, "pp");
        const auto dp = int_setting(s.parallel, "dp");
        if (tp && pp && dp && *tp * *pp * *dp != s.gpus)
            throw InputError(fmt::format("{}: parallel: tp {} x pp {} x dp {} = {} but gpus is {}",
                                         where, *tp, *pp, *dp, *tp * *pp * *dp, s.gpus));
    }

    check_unique(file.collectives, "collectives", name, [](const CollectiveMeasurement& c) {
        const std::string what =
            fmt::format("{}{}, {} GPUs, {} B, {}, {}", to_string(c.op),
                        c.algorithm.empty() ? "" : " " + c.algorithm, c.gpus, c.bytes,
                        hardware::to_string(c.dtype), c.in_place ? "in-place" : "out-of-place");
        return std::pair{what, what};
    });
    check_unique(file.gemms, "gemms", name, [](const GemmMeasurement& g) {
        const std::string what = fmt::format("{}x{}x{} {} {} {}", g.m, g.n, g.k,
                                             hardware::to_string(g.dtype), g.layout, g.library);
        return std::pair{what, what};
    });
    check_unique(file.copies, "copies", name, [](const CopyMeasurement& c) {
        const std::string what = fmt::format("{} {} {} B gpu{} -> gpu{}", to_string(c.kind),
                                             to_string(c.method), c.bytes, c.src_gpu, c.dst_gpu);
        return std::pair{what, what};
    });
    check_unique(file.p2p, "p2p", name, [](const P2pMeasurement& p) {
        const std::string what = fmt::format("gpu{} -> gpu{} {} B", p.src_gpu, p.dst_gpu, p.bytes);
        return std::pair{what, what};
    });
    check_unique(file.launches, "launches", name, [](const LaunchMeasurement& l) {
        const std::string what = fmt::format("{}, {} launches", to_string(l.method), l.launches);
        return std::pair{what, what};
    });
    check_unique(file.kernels, "kernels", name, [](const KernelMeasurement& k) {
        std::string shapes;
        for (const auto& s : k.shapes)
            shapes += fmt::format("[{}]", fmt::join(s, ","));
        const std::string what = fmt::format(
            "{} {} {} {} layer {} {} {} stream {}", to_string(k.kernel_class), k.op, k.kernel,
            k.phase, k.layer, k.dtype ? hardware::to_string(*k.dtype) : "-", shapes, k.stream);
        return std::pair{what + "|" + k.source, what};
    });
    check_unique(file.steps, "steps", name, [](const StepMeasurement& s) {
        const std::string key =
            fmt::format("{}|{}|{}|{}|{}", s.gpus, s.model_preset, settings_key(s.model),
                        settings_key(s.training), settings_key(s.parallel));
        std::string what = fmt::format("{} GPUs", s.gpus);
        for (const auto& o : s.overrides())
            what += ", " + o;
        return std::pair{key, what};
    });
}

std::vector<std::string> merge_measurements(MeasurementFile& into, const MeasurementFile& from_file,
                                            const std::string& from_name) {
    std::vector<std::string> warnings;
    Environment& a = into.environment;
    const Environment& b = from_file.environment;
    const bool a_known = !a.device.empty() && a.device != "unknown";
    const bool b_known = !b.device.empty() && b.device != "unknown";
    if (a_known && b_known && a.device != b.device)
        throw InputError(fmt::format(
            "{}: device '{}' differs from '{}' of the files before it: one measurement file "
            "describes one GPU model (import them into separate files)",
            from_name, base::excerpt(b.device), base::excerpt(a.device)));
    if (!a_known && b_known)
        a.device = b.device;
    a.device_count = std::max(a.device_count, b.device_count);
    auto fill = [&](std::string& mine, const std::string& theirs, std::string_view what) {
        if (theirs.empty() || mine == theirs)
            return;
        if (mine.empty()) {
            mine = theirs;
            return;
        }
        warnings.push_back(fmt::format("{}: {} '{}' differs from '{}' of the files before it; "
                                       "keeping '{}'",
                                       from_name, what, base::excerpt(theirs), base::excerpt(mine),
                                       base::excerpt(mine)));
    };
    fill(a.driver_version, b.driver_version, "driver_version");
    fill(a.cuda_version, b.cuda_version, "cuda_version");
    fill(a.nccl_version, b.nccl_version, "nccl_version");
    fill(a.cublas_version, b.cublas_version, "cublas_version");
    // The date, host and tool of the first file stand for the merged file: runs of one
    // calibration are minutes apart, and that is no reason to warn.
    if (a.date.empty())
        a.date = b.date;
    if (a.host.empty())
        a.host = b.host;
    if (a.tool.empty())
        a.tool = b.tool;
    auto append = [](auto& dst, const auto& src) { dst.insert(dst.end(), src.begin(), src.end()); };
    append(into.collectives, from_file.collectives);
    append(into.gemms, from_file.gemms);
    append(into.copies, from_file.copies);
    append(into.p2p, from_file.p2p);
    append(into.launches, from_file.launches);
    append(into.steps, from_file.steps);
    append(into.kernels, from_file.kernels);
    append(into.trace_steps, from_file.trace_steps);
    return warnings;
}

} // namespace clustersim::calibrate
