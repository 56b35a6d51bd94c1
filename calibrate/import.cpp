#include "calibrate/import.h"

#include "base/error.h"
#include "calibrate/import_util.h"
#include "calibrate/kineto.h"
#include "calibrate/line_scan.h"
#include "config/bounded_read.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace clustersim::calibrate {
namespace detail {

std::vector<std::string_view> split_words(std::string_view text) {
    std::vector<std::string_view> words;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
            ++i;
        std::size_t j = i;
        while (j < text.size() && text[j] != ' ' && text[j] != '\t')
            ++j;
        if (j > i)
            words.push_back(text.substr(i, j - i));
        i = j;
    }
    return words;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

std::optional<std::int64_t> parse_integer(std::string_view s) {
    s = trim(s);
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
        return std::nullopt;
    return v;
}

namespace {
std::string squash(std::string_view s) {
    std::string out;
    for (char c : lower(s)) {
        if (c != '_' && c != '-' && c != ' ' && c != '.')
            out += c;
    }
    return out;
}
} // namespace

std::optional<CollectiveOp> op_from_file_name(const std::string& path) {
    const std::string stem = squash(std::filesystem::path(path).filename().string());
    // Every op the name contains, by position; an op inside a longer one found at an
    // overlapping position ("reduce" inside "allreduce") does not count.
    struct Hit {
        std::size_t begin, end;
        CollectiveOp op;
    };
    std::vector<Hit> hits;
    for (const CollectiveOp op : strategies::collectives::kAllOps) {
        const std::string name = squash(to_string(op));
        for (std::size_t pos = stem.find(name); pos != std::string::npos;
             pos = stem.find(name, pos + 1))
            hits.push_back(Hit{pos, pos + name.size(), op});
    }
    std::set<CollectiveOp> ops;
    for (const auto& h : hits) {
        const bool inside = std::any_of(hits.begin(), hits.end(), [&](const Hit& o) {
            return o.end - o.begin > h.end - h.begin && o.begin <= h.begin && h.end <= o.end;
        });
        if (!inside)
            ops.insert(h.op);
    }
    if (ops.size() != 1)
        return std::nullopt;
    return *ops.begin();
}

std::optional<int> gpus_from_file_name(const std::string& path) {
    // Reads `(?:^|[^0-9a-z])(\d{1,6})[-_x ]?gpus?(?:[^a-z]|$)` over the lowercase name, each
    // match after the previous one's end (as std::sregex_iterator did), by LineScan: a name
    // is the user's text, and std::regex recursed per character on long ones.
    const std::string name = lower(std::filesystem::path(path).filename().string());
    const auto is_lower = [](char c) { return c >= 'a' && c <= 'z'; };
    std::set<int> found;
    std::size_t from = 0;
    for (std::size_t at = 0; at < name.size(); ++at) {
        std::size_t digits_at = at;
        if (at > 0 || !is_digit(name[0])) {
            if (at < from || is_digit(name[at]) || is_lower(name[at]))
                continue;
            digits_at = at + 1;
        }
        LineScan s(name, digits_at);
        const auto digits = s.digits();
        if (digits.empty() || digits.size() > 6)
            continue;
        if (!s.literal("gpu")) {
            if (s.at_end() || std::string_view("-_x ").find(s.rest()[0]) == std::string_view::npos)
                continue;
            s.one(s.rest()[0]);
            if (!s.literal("gpu"))
                continue;
        }
        s.one('s');
        if (!s.at_end() && is_lower(s.rest()[0]))
            continue;
        found.insert(std::stoi(std::string(digits)));
        from = s.at_end() ? name.size() : s.pos() + 1;
        at = from - 1;
    }
    if (found.size() != 1 || *found.begin() < 1)
        return std::nullopt;
    return *found.begin();
}

std::optional<hardware::Dtype> dtype_from_type_name(std::string_view name) {
    const std::string n = lower(name);
    if (n == "f8e4m3" || n == "fp8e4m3" || n == "float8e4m3")
        return hardware::Dtype::fp8;
    if (n == "float32" || n == "fp32")
        return hardware::Dtype::fp32;
    return hardware::parse_dtype(n);
}

std::optional<double> seconds_per_unit(std::string_view unit) {
    const std::string u = lower(trim(unit));
    if (u == "ns")
        return 1e-9;
    if (u == "us" || u == "\xC2\xB5s" || u == "\xCE\xBCs")
        return 1e-6;
    if (u == "ms")
        return 1e-3;
    if (u == "s")
        return 1.0;
    return std::nullopt;
}

std::string check_printed_rate(std::string_view what, double printed_gbps, double computed_gbps) {
    if (std::abs(printed_gbps - computed_gbps) <= 0.006 + 0.01 * computed_gbps)
        return "";
    return fmt::format("{} {:.2f} GB/s disagrees with the {:.4g} GB/s that size and time give",
                       what, printed_gbps, computed_gbps);
}

std::string describe_point(const CollectiveMeasurement& c) {
    return fmt::format("{}, {} GPUs, {} B, {}, {}", to_string(c.op), c.gpus, c.bytes,
                       hardware::to_string(c.dtype), c.in_place ? "in-place" : "out-of-place");
}

Environment initial_environment(const ImportOptions& options) {
    Environment e;
    if (!options.device.empty())
        e.device = options.device;
    return e;
}

void warn_unknown_device(const ImportResult& result, const std::string& name,
                         std::vector<std::string>& warnings) {
    if (result.measurements.environment.device == "unknown")
        warnings.push_back(name + ": the file does not name the GPU; recorded as 'unknown' "
                                  "(pass --device NAME)");
}

} // namespace detail

namespace {
/// An import's input, bounded: a profiler trace (gzip or JSON, told by its head) up to
/// kMaxTraceFileBytes, anything else up to kMaxDataFileBytes.
std::string read_text(const std::string& path) {
    config::BoundedFile file(path, "a file to import (an nccl-tests log, a CSV table, "
                                   "measurement JSON or a profiler trace)");
    if (file.read_up_to(config::kMaxDataFileBytes))
        return file.take();
    if (!looks_like_trace(file.text()))
        file.refuse(config::kMaxDataFileBytes);
    if (!file.read_up_to(config::kMaxTraceFileBytes))
        file.refuse(config::kMaxTraceFileBytes);
    return file.take();
}

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && detail::lower(s.substr(s.size() - suffix.size())) == suffix;
}
} // namespace

ImportResult import_text(std::string_view text, const std::string& name,
                         const ImportOptions& options) {
    if (is_gzip(text)) {
        std::vector<std::string> warnings;
        ImportResult r =
            import_text(gunzip(text, name, config::kMaxTraceFileBytes, &warnings), name, options);
        r.warnings.insert(r.warnings.begin(), warnings.begin(), warnings.end());
        return r;
    }
    if (looks_like_trace(text))
        return import_kineto(text, name, options);
    if (ends_with(name, ".csv"))
        return import_csv(text, name, options);
    const std::string_view body =
        detail::trim(text.substr(0, std::min<std::size_t>(64, text.size())));
    if (ends_with(name, ".json") || (!body.empty() && body.front() == '{')) {
        ImportResult r;
        r.measurements = parse_measurements(text, name);
        if (!options.device.empty()) {
            const std::string& d = r.measurements.environment.device;
            if (d != "unknown" && d != options.device)
                throw InputError(fmt::format("{}: the file says device '{}' but --device says '{}'",
                                             name, d, options.device));
            r.measurements.environment.device = options.device;
        }
        return r;
    }
    return import_nccl_tests_log(text, name, options);
}

ImportResult import_files(const std::vector<std::string>& paths, const ImportOptions& options) {
    if (paths.empty())
        throw InputError("no files to import");
    ImportResult all;
    all.measurements.environment = detail::initial_environment(options);
    for (const auto& path : paths) {
        ImportResult one = import_text(read_text(path), path, options);
        all.warnings.insert(all.warnings.end(), one.warnings.begin(), one.warnings.end());
        auto merged = merge_measurements(all.measurements, one.measurements, path);
        all.warnings.insert(all.warnings.end(), merged.begin(), merged.end());
    }
    // GEMMs from profiler traces: the same shape in two traces (hidden 1024 at micro-batch 2
    // and sequence 8192 has the GEMMs of micro-batch 4 at 4096) is one point, the first kept.
    {
        std::set<std::string> seen;
        std::vector<GemmMeasurement> kept;
        std::size_t dropped = 0;
        for (auto& g : all.measurements.gemms) {
            const std::string key = fmt::format("{}x{}x{} {} {} {}", g.m, g.n, g.k,
                                                hardware::to_string(g.dtype), g.layout, g.library);
            if (g.library == "torch" && !seen.insert(key).second) {
                ++dropped;
                continue;
            }
            kept.push_back(std::move(g));
        }
        all.measurements.gemms = std::move(kept);
        if (dropped > 0)
            all.warnings.push_back(fmt::format("{} GEMM shapes of profiler traces appear in "
                                               "earlier traces too: the first trace's kept",
                                               dropped));
    }
    // Duplicates across files (each file's own were refused with their line).
    check_measurements(all.measurements, paths.size() == 1 ? paths.front() : "the imported files");
    return all;
}

} // namespace clustersim::calibrate
