// Reading a measurement file: bounded JSON (depth, sizes), every object read key by key with
// its unit and range checked, unknown keys refused, each error naming the file and the entry.
#include "calibrate/measurements.h"

#include "base/error.h"
#include "base/units.h"
#include "calibrate/measurements_detail.h"
#include "config/bounded_read.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace clustersim::calibrate {

using hardware::Dtype;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

using namespace measurements_detail;

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

} // namespace clustersim::calibrate
