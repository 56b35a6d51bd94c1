// Writing a measurement file: one JSON document, each entry on one line, derived rates
// rounded so that files are stable.
#include "calibrate/measurements.h"

#include "calibrate/measurements_detail.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace clustersim::calibrate {

using ordered_json = nlohmann::ordered_json;

using namespace measurements_detail;

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

} // namespace clustersim::calibrate
