#include "calibrate/sustained.h"

#include "base/error.h"
#include "config/csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace clustersim::calibrate {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

SustainedRecord from_table(const config::CsvTable& t) {
    SustainedRecord r;
    r.name = t.name();
    t.column("t_s");
    t.column("tflops");
    for (std::size_t i = 0; i < t.size(); ++i) {
        SustainedSample s;
        s.t_s = t.number(i, "t_s");
        s.tflops = t.number(i, "tflops");
        if (s.tflops <= 0)
            t.fail(i, fmt::format("tflops: expected a positive rate, got {}", s.tflops));
        if (!r.samples.empty() && s.t_s <= r.samples.back().t_s)
            t.fail(i, fmt::format("t_s: times must increase ({} after {})", s.t_s,
                                  r.samples.back().t_s));
        r.samples.push_back(s);
    }
    return r;
}

} // namespace

SustainedRecord read_sustained(const std::string& path) {
    return from_table(config::CsvTable::read(path));
}

SustainedRecord parse_sustained(const std::string& text, const std::string& name) {
    return from_table(config::CsvTable::parse(text, name));
}

std::string format_sustained(const std::vector<SustainedSample>& samples,
                             const std::string& header) {
    std::string out = "# clustersim-sustained: " + header + "\nt_s,tflops\n";
    for (const auto& s : samples)
        out += fmt::format("{:.3f},{:.2f}\n", s.t_s, s.tflops);
    return out;
}

SustainedFit fit_sustained(const SustainedRecord& record, double boost_clock_mhz, double burst_s,
                           double max_drift) {
    const auto& s = record.samples;
    const double length = s.empty() ? 0 : s.back().t_s;
    if (s.size() < 8 || length < 4 * burst_s)
        throw InputError(fmt::format(
            "{}: {} samples over {:.1f} s: a sustained record needs at least 8 samples and "
            "{:.0f} s (4 x the {:.0f} s burst); run the GEMM loop longer",
            record.name, s.size(), length, 4 * burst_s, burst_s));
    if (boost_clock_mhz <= 0)
        throw InputError(record.name + ": the GPU's boost clock (gpu.clock_mhz) is needed");
    std::vector<double> burst, q3, q4;
    const double quarter = 0.75 * length;
    const double eighth = 0.875 * length;
    for (const auto& x : s) {
        if (x.t_s <= burst_s)
            burst.push_back(x.tflops);
        if (x.t_s > quarter)
            (x.t_s > eighth ? q4 : q3).push_back(x.tflops);
    }
    if (burst.empty())
        burst.push_back(s.front().tflops);
    if (q3.empty() || q4.empty())
        throw InputError(record.name + ": too few samples in the last quarter to see whether "
                                       "the rate has settled; sample more often");
    SustainedFit f;
    f.burst_tflops = median(burst);
    std::vector<double> last = q3;
    last.insert(last.end(), q4.begin(), q4.end());
    f.steady_tflops = median(last);
    f.drift = std::abs(median(q4) - median(q3)) / f.steady_tflops;
    if (f.drift > max_drift)
        throw InputError(fmt::format(
            "{}: the rate still drifts by {:.1f}% across the last quarter (limit {:.1f}%): not "
            "at thermal steady state; run the GEMM loop longer",
            record.name, 100 * f.drift, 100 * max_drift));
    f.fraction = std::min(1.0, f.steady_tflops / f.burst_tflops);
    f.sustained_clock_mhz = boost_clock_mhz * f.fraction;
    return f;
}

} // namespace clustersim::calibrate
