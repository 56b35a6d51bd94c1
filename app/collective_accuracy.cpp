#include "app/collective_accuracy.h"

#include "base/error.h"
#include "base/units.h"
#include "config/yaml_map.h"
#include "hardware/hardware_loader.h"
#include "hardware/topology.h"
#include "strategies/collectives/communicator.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

namespace clustersim::app {

namespace cl = strategies::collectives;

double AccuracyCurve::mean_abs_error(double from) const {
    double sum = 0;
    int count = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (sizes[i] >= from) {
            sum += std::abs(rows[i].error());
            ++count;
        }
    }
    return count ? sum / count : 0;
}

double AccuracyCurve::max_abs_error(double from) const {
    double worst = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (sizes[i] >= from)
            worst = std::max(worst, std::abs(rows[i].error()));
    }
    return worst;
}

namespace {

constexpr double kMiB = 1 << 20;

std::vector<std::string> data_lines(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        throw InputError(path + ": cannot open the reference file");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#')
            continue;
        lines.push_back(line);
    }
    return lines;
}

std::vector<std::string> split(const std::string& line, char sep) {
    std::vector<std::string> out;
    std::string field;
    std::istringstream s(line);
    if (sep == ' ') {
        while (s >> field)
            out.push_back(field);
    } else {
        while (std::getline(s, field, sep))
            out.push_back(field);
    }
    return out;
}

double number(const std::string& text, const std::string& where) {
    try {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used == text.size())
            return v;
    } catch (const std::exception&) {
    }
    throw InputError(where + ": expected a number, got '" + text + "'");
}

/// Topologies and communicators of the presets, built once per report.
class Predictor {
public:
    const cl::Communicator& comm(const std::string& preset, int gpus) {
        auto& topo = topologies_[preset];
        if (!topo)
            topo = std::make_unique<hardware::Topology>(hardware::load_hardware(preset));
        auto& c = comms_[{preset, gpus}];
        if (!c)
            c = std::make_unique<cl::Communicator>(cl::Communicator::first(*topo, gpus));
        return *c;
    }
    /// Predicted time (seconds) and "algo/protocol".
    std::pair<double, std::string> run(const std::string& preset, int gpus, cl::Op op,
                                       std::int64_t bytes,
                                       cl::Algorithm algo = cl::Algorithm::automatic) {
        const auto& c = comm(preset, gpus);
        cl::Collective coll;
        coll.op = op;
        coll.bytes = bytes;
        coll.algorithm = algo;
        c.validate(coll);
        const cl::Choice choice = c.choose(coll);
        return {choice.time.seconds(), std::string(cl::to_string(choice.algorithm)) + "/" +
                                           std::string(hardware::to_string(choice.protocol))};
    }

private:
    std::map<std::string, std::unique_ptr<hardware::Topology>> topologies_;
    std::map<std::pair<std::string, int>, std::unique_ptr<cl::Communicator>> comms_;
};

std::string size_label(double bytes) {
    return base::format_bytes(static_cast<std::int64_t>(bytes));
}

} // namespace

CollectiveAccuracy collective_accuracy(const std::string& data_dir) {
    CollectiveAccuracy acc;
    Predictor P;

    // 1. nccl-tests all_reduce on one A100 node, 2/4/8 GPUs, 1 MiB to 1 GiB (out-of-place).
    for (int n : {2, 4, 8}) {
        const std::string file = "a100-node/nccl-all-reduce-" + std::to_string(n) + "gpu.csv";
        AccuracyCurve curve{
            "dgx-a100, all_reduce, " + std::to_string(n) + " GPUs (" + file + ")", "us", {}, {}};
        for (const std::string& line : data_lines(data_dir + "/" + file)) {
            const auto f = split(line, ',');
            if (f.size() < 4 || f[0].rfind("size", 0) == 0)
                continue;
            const double bytes = number(f[0], file);
            const double measured_us = number(f[3], file) / 1000;
            const auto [t, algo] =
                P.run("dgx-a100", n, cl::Op::all_reduce, static_cast<std::int64_t>(bytes));
            curve.rows.push_back({size_label(bytes), measured_us, t * 1e6, algo});
            curve.sizes.push_back(bytes);
        }
        acc.a100_all_reduce.push_back(std::move(curve));
    }

    // 2. A whole nccl-tests log, 8 B to 4 GiB on 8 A100.
    {
        const std::string file = "nccl/a100-8gpu-all_reduce.nccl-tests.txt";
        acc.a100_log = {"dgx-a100, all_reduce, 8 GPUs (" + file + ")", "us", {}, {}};
        double last_busbw = 0;
        for (const std::string& line : data_lines(data_dir + "/" + file)) {
            const auto f = split(line, ' ');
            if (f.size() < 8)
                continue;
            const double bytes = number(f[0], file);
            const auto [t, algo] =
                P.run("dgx-a100", 8, cl::Op::all_reduce, static_cast<std::int64_t>(bytes));
            acc.a100_log.rows.push_back({size_label(bytes), number(f[5], file), t * 1e6, algo});
            acc.a100_log.sizes.push_back(bytes);
            last_busbw = number(f[7], file);
        }
        if (acc.a100_log.rows.empty())
            throw InputError(file + ": no rows");
        acc.a100_floor = acc.a100_log.rows.front();
        acc.a100_floor.label = "latency floor, " + acc.a100_floor.label + " (us)";
        const AccuracyRow& last = acc.a100_log.rows.back();
        const double bytes = acc.a100_log.sizes.back();
        acc.a100_plateau = {"bus bandwidth plateau, " + last.label + " (GB/s)", last_busbw,
                            1.75 * bytes / (last.predicted * 1e-6) / 1e9, last.algorithm};
    }

    // 3. busbw of 8-GPU nodes, 1 KiB to 8 GiB (the default algorithm).
    {
        const std::string file = "nccl/busbw-8gpu-all_reduce-a100-h100-h200.csv";
        const std::vector<std::pair<std::string, int>> columns{
            {"dgx-h100", 2}, {"hgx-h200", 3}, {"dgx-a100", 1}};
        std::vector<AccuracyCurve> curves;
        for (const auto& [preset, col] : columns)
            curves.push_back(
                {preset + ", all_reduce busbw, 8 GPUs (" + file + ")", "GB/s", {}, {}});
        for (const std::string& line : data_lines(data_dir + "/" + file)) {
            const auto f = split(line, ',');
            if (f.size() < 4 || f[0] == "bytes")
                continue;
            const double bytes = number(f[0], file);
            for (std::size_t i = 0; i < columns.size(); ++i) {
                const auto [t, algo] = P.run(columns[i].first, 8, cl::Op::all_reduce,
                                             static_cast<std::int64_t>(bytes));
                curves[i].rows.push_back({size_label(bytes),
                                          number(f[size_t(columns[i].second)], file),
                                          1.75 * bytes / t / 1e9, algo});
                curves[i].sizes.push_back(bytes);
            }
        }
        acc.busbw_8gpu = std::move(curves);
    }

    // 4. 8x H200: large messages by collective (16 GiB) and by GPU count (8 GiB).
    {
        const std::string file = data_dir + "/nccl/h200-8gpu-large-messages.yaml";
        config::YamlMap root(config::load_yaml_file(file), file);
        config::YamlMap big = root.map("collectives_16GiB_8gpus");
        const std::int64_t S16 = std::int64_t(16) << 30;
        const struct {
            const char* key;
            cl::Op op;
            cl::Algorithm algo;
            double factor;
        } items[] = {{"all_reduce_ring", cl::Op::all_reduce, cl::Algorithm::ring, 1.75},
                     {"all_reduce_nvls", cl::Op::all_reduce, cl::Algorithm::nvls, 1.75},
                     {"all_gather", cl::Op::all_gather, cl::Algorithm::automatic, 0.875},
                     {"reduce_scatter", cl::Op::reduce_scatter, cl::Algorithm::automatic, 0.875}};
        for (const auto& it : items) {
            const auto [t, algo] = P.run("hgx-h200", 8, it.op, S16, it.algo);
            acc.h200_16gib.push_back({it.key, big.number(it.key, 0),
                                      it.factor * static_cast<double>(S16) / t / 1e9, algo});
        }
        const YAML::Node by_count = root.raw("all_reduce_8GiB_by_gpu_count");
        const std::int64_t S8 = std::int64_t(8) << 30;
        for (auto it = by_count.begin(); it != by_count.end(); ++it) {
            const int n = static_cast<int>(number(it->first.Scalar(), file));
            config::YamlMap entry(it->second, file, "all_reduce_8GiB_by_gpu_count");
            const double factor = 2.0 * (n - 1) / n;
            const auto [tr, ar] = P.run("hgx-h200", n, cl::Op::all_reduce, S8, cl::Algorithm::ring);
            acc.h200_by_count.push_back({std::to_string(n) + " GPUs, NVLS off",
                                         entry.number("busbw_no_nvls", 0),
                                         factor * static_cast<double>(S8) / tr / 1e9, ar});
            const std::string chosen = entry.str("algo");
            if (chosen == "nvls") {
                const auto [tn, an] =
                    P.run("hgx-h200", n, cl::Op::all_reduce, S8, cl::Algorithm::nvls);
                acc.h200_by_count.push_back({std::to_string(n) + " GPUs, NVLS",
                                             entry.number("busbw", 0),
                                             factor * static_cast<double>(S8) / tn / 1e9, an});
            } else {
                (void)entry.number("busbw", 0);
            }
        }
    }

    // 5. The lecture: 4 of the 8 H100 of a node, 100*1024^2 fp32 elements.
    {
        const std::string file = data_dir + "/lecture/cs336-parallelism-2.yaml";
        config::YamlMap root(config::load_yaml_file(file), file);
        config::YamlMap bench = root.map("collective_benchmarks");
        for (const char* key : {"all_reduce", "reduce_scatter"}) {
            config::YamlMap b = bench.map(key);
            const int n = static_cast<int>(b.integer("world_size", 1, 1024));
            const std::int64_t elements =
                b.integer(std::string(key) == "all_reduce" ? "elements" : "input_elements", 1,
                          std::int64_t(1) << 40);
            const YAML::Node range = b.raw("measured_seconds");
            if (!range.IsSequence() || range.size() != 2)
                b.fail("measured_seconds", "expected [min, max]");
            const double measured = (range[0].as<double>() + range[1].as<double>()) / 2 * 1e3; // ms
            const auto [t, algo] = P.run("dgx-h100", n,
                                         std::string(key) == "all_reduce" ? cl::Op::all_reduce
                                                                          : cl::Op::reduce_scatter,
                                         elements * 4);
            acc.lecture.push_back({std::string(key) + ", " + std::to_string(n) + " GPUs, " +
                                       size_label(static_cast<double>(elements * 4)),
                                   measured, t * 1e3, algo});
        }
    }
    return acc;
}

namespace {

std::string pct(double e) {
    return fmt::format("{:+.1f}%", 100 * e);
}
std::string verdict(bool ok) {
    return ok ? "yes" : "**no**";
}

std::string rows_table(const AccuracyCurve& c, double from = 0) {
    std::string md = fmt::format("| size | measured ({0}) | predicted ({0}) | error | algorithm |\n"
                                 "|---:|---:|---:|---:|---|\n",
                                 c.unit);
    for (std::size_t i = 0; i < c.rows.size(); ++i) {
        if (c.sizes[i] < from)
            continue;
        const auto& r = c.rows[i];
        md += fmt::format("| {} | {:.2f} | {:.2f} | {} | {} |\n", r.label, r.measured, r.predicted,
                          pct(r.error()), r.algorithm);
    }
    return md;
}

std::string points_table(const std::vector<AccuracyRow>& rows, const std::string& unit,
                         double limit) {
    std::string md = fmt::format(
        "| point | measured ({0}) | predicted ({0}) | error | within {1:.0f}% | algorithm |\n"
        "|---|---:|---:|---:|---|---|\n",
        unit, 100 * limit);
    for (const auto& r : rows)
        md += fmt::format("| {} | {:.2f} | {:.2f} | {} | {} | {} |\n", r.label, r.measured,
                          r.predicted, pct(r.error()), verdict(std::abs(r.error()) <= limit),
                          r.algorithm);
    return md;
}

} // namespace

std::string collective_accuracy_markdown(const std::string& data_dir) {
    const CollectiveAccuracy a = collective_accuracy(data_dir);
    std::string md =
        "Predicted with `clustersim collective` (analytic fidelity, `--algo auto` unless the "
        "measurement names the algorithm) on the presets as committed. The presets' "
        "`collectives:` values are NCCL's tuning.cc latencies plus a few parameters fitted over "
        "whole curves by `scripts/fit-collectives.py` (launch latency, Simple NVLink efficiency, "
        "memory passes, NVLS latency and efficiency; nothing per point). Error = predicted / "
        "measured - 1.\n\n";

    md += "### all_reduce time on one A100 node, 1 MiB to 1 GiB (1,024 sizes per file)\n\n"
          "Out-of-place times. Thresholds: mean |error| <= 8% over all sizes, <= 5% from "
          "64 MiB.\n\n"
          "| GPUs | mean abs error | within 8% | mean abs error >= 64 MiB | within 5% | max abs "
          "error |\n|---:|---:|---|---:|---|---:|\n";
    for (std::size_t i = 0; i < a.a100_all_reduce.size(); ++i) {
        const AccuracyCurve& c = a.a100_all_reduce[i];
        const double all = c.mean_abs_error(), big = c.mean_abs_error(64 * kMiB);
        md += fmt::format("| {} | {:.1f}% | {} | {:.1f}% | {} | {:.1f}% |\n", 2 << i, 100 * all,
                          verdict(all <= 0.08), 100 * big, verdict(big <= 0.05),
                          100 * c.max_abs_error());
    }
    md += "\nEvery 128th size of the 8-GPU file:\n\n";
    {
        AccuracyCurve sample = a.a100_all_reduce.back();
        AccuracyCurve s{sample.title, sample.unit, {}, {}};
        for (std::size_t i = 0; i < sample.rows.size(); i += 128) {
            s.rows.push_back(sample.rows[i]);
            s.sizes.push_back(sample.sizes[i]);
        }
        s.rows.push_back(sample.rows.back());
        s.sizes.push_back(sample.sizes.back());
        md += rows_table(s);
    }

    md += "\n### The whole nccl-tests log of 8x A100 (8 B to 4 GiB)\n\n"
          "Thresholds: latency floor and bus bandwidth plateau within 10%.\n\n";
    md += points_table({a.a100_floor, a.a100_plateau}, "as labelled", 0.10);
    md += fmt::format("\nEvery row (mean |error| {:.1f}%; the mid-range, where NCCL switches "
                      "protocols, is the least accurate):\n\n",
                      100 * a.a100_log.mean_abs_error());
    md += rows_table(a.a100_log);

    md += "\n### all_reduce bus bandwidth on 8-GPU nodes (1 KiB to 8 GiB)\n\n"
          "Threshold for dgx-h100 and hgx-h200: every size from 16 MiB within 10% (the A100 "
          "column is shown for reference).\n\n"
          "| preset | max abs error >= 16 MiB | within 10% | mean abs error, all sizes |\n"
          "|---|---:|---|---:|\n";
    for (const auto& c : a.busbw_8gpu)
        md += fmt::format("| {} | {:.1f}% | {} | {:.1f}% |\n", c.title.substr(0, c.title.find(',')),
                          100 * c.max_abs_error(16 * kMiB),
                          verdict(c.max_abs_error(16 * kMiB) <= 0.10), 100 * c.mean_abs_error());
    for (const auto& c : a.busbw_8gpu)
        md += "\n" + c.title + ":\n\n" + rows_table(c);

    md += "\n### Large messages on 8x H200 (nccl/h200-8gpu-large-messages.yaml)\n\n"
          "16 GiB, bus bandwidth; threshold 5%.\n\n";
    md += points_table(a.h200_16gib, "GB/s", 0.05);
    md += "\n8 GiB all_reduce by GPU count (not a threshold of the issue; shown within 5%):\n\n";
    md += points_table(a.h200_by_count, "GB/s", 0.05);

    md += "\n### The lecture's benchmark (lecture/cs336-parallelism-2.yaml)\n\n"
          "4 of the 8 H100 of a node; measured = the middle of the lecture's range over ranks. "
          "Threshold 15%. The lecture times one call after one warm-up with torch.distributed, "
          "so its times include more fixed overhead than nccl-tests' averages.\n\n";
    md += points_table(a.lecture, "ms", 0.15);
    return md;
}

} // namespace clustersim::app
