// Checks across the entries of a measurement file (duplicates, positive times, settings that
// agree) and the merge of two files.
#include "calibrate/measurements.h"

#include "base/error.h"
#include "calibrate/measurements_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace clustersim::calibrate {

using namespace measurements_detail;

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
    for_each_list(
        [&](const auto& record, const auto& list) { check_positive_time(list, record.list, name); },
        file);
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
        // Fast accumulation is cuBLASLt's fp8 mode (CUBLASLT_MATMUL_DESC_FAST_ACCUM).
        if (g.variant == GemmVariant::fast_accum && g.dtype != hardware::Dtype::fp8)
            throw InputError(fmt::format("{}: gemms[{}]{}: variant fast_accum is an fp8 mode; "
                                         "this GEMM's inputs are {}",
                                         name, i, from(g.source), hardware::to_string(g.dtype)));
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
        const std::string what = fmt::format(
            "{}x{}x{} {} {} {}{}", g.m, g.n, g.k, hardware::to_string(g.dtype), g.layout, g.library,
            g.variant == GemmVariant::plain ? "" : " " + std::string(to_string(g.variant)));
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
    // The other strings of the environment, as its table says: versions that differ are
    // warned of; the date, host and tool of the first file stand for the merged file (runs of
    // one calibration are minutes apart, and that is no reason to warn).
    for (const auto& f : record<Environment>().fields) {
        const auto* member = std::get_if<std::string Environment::*>(&f.member.v);
        if (member == nullptr || *member == &Environment::device)
            continue;
        if (f.info.warn_on_merge)
            fill(a.**member, b.**member, f.info.name);
        else if ((a.**member).empty())
            a.** member = b.**member;
    }
    for_each_list([](const auto&, auto& dst,
                     const auto& src) { dst.insert(dst.end(), src.begin(), src.end()); },
                  into, from_file);
    return warnings;
}

} // namespace clustersim::calibrate
