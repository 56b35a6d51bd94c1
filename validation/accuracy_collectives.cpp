// The collectives section's numbers: the reference curves read with config::CsvTable, the
// nccl-tests log through calibrate's importer, every point predicted by CollectivePredictor and
// bus bandwidth by the one rule (strategies/collectives: bus_factor).
#include "validation/accuracy_collectives.h"

#include "base/error.h"
#include "base/units.h"
#include "calibrate/import.h"
#include "calibrate/predict.h"
#include "config/csv.h"
#include "config/yaml_map.h"
#include "hardware/hardware_loader.h"

#include <fstream>
#include <map>
#include <memory>

namespace clustersim::validation {

using namespace calibrate; // the formats, predictions and statistics this study uses

namespace cl = strategies::collectives;

ErrorStats AccuracyCurve::errors(double from) const {
    std::vector<double> e;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (sizes[i] >= from)
            e.push_back(rows[i].error());
    }
    return error_stats(e);
}

namespace {

/// Predictors of the presets, built once per report.
class Presets {
public:
    /// Predicted time (seconds) and "algo/protocol" of `op` over `bytes` (fp32) on the first
    /// `gpus` GPUs of `preset`.
    CollectivePredictor::Result run(const std::string& preset, int gpus, cl::Op op,
                                    std::int64_t bytes,
                                    cl::Algorithm algo = cl::Algorithm::automatic) {
        auto& p = predictors_[preset];
        if (!p)
            p = std::make_unique<CollectivePredictor>(hardware::load_hardware(preset));
        CollectiveMeasurement c;
        c.op = op;
        c.gpus = gpus;
        c.bytes = bytes;
        if (algo != cl::Algorithm::automatic)
            c.algorithm = cl::to_string(algo);
        return p->predict(c);
    }

private:
    std::map<std::string, std::unique_ptr<CollectivePredictor>> predictors_;
};

std::string size_label(double bytes) {
    return base::format_bytes(static_cast<std::int64_t>(bytes));
}

/// bus bandwidth (GB/s) of `bytes` in `seconds`.
double busbw_gbps(cl::Op op, int gpus, double bytes, double seconds) {
    return cl::bus_factor(op, gpus) * bytes / seconds / 1e9;
}

/// A ring all_reduce over 4 GB200 GPUs (NVLink 5, NCCL_ALGO=Ring), predicted on dgx-b200: the
/// same NVLink 5 and NVSwitch per GPU, what 4 GPUs of a DGX B200 run with NCCL_ALGO=Ring.
AccuracyCurve nvlink5_ring(Presets& P, const std::string& data_dir) {
    const std::string file = "nccl/gb200-4gpu-ring-all_reduce.csv";
    const auto csv = config::CsvTable::read(data_dir + "/" + file);
    AccuracyCurve c{"dgx-b200, ring all_reduce busbw, 4 GPUs (" + file + ")", "GB/s", {}, {}};
    for (std::size_t row = 0; row < csv.size(); ++row) {
        const double bytes = csv.number(row, "bytes");
        const auto p = P.run("dgx-b200", 4, cl::Op::all_reduce, static_cast<std::int64_t>(bytes),
                             cl::Algorithm::ring);
        c.rows.push_back({size_label(bytes), csv.number(row, "busbw"),
                          busbw_gbps(cl::Op::all_reduce, 4, bytes, p.seconds), p.detail});
        c.sizes.push_back(bytes);
    }
    return c;
}

/// rccl-tests all_reduce curves of AMD Instinct clusters, each predicted on its preset with the
/// algorithm the run used (auto, or ring where it forced NCCL_ALGO=Ring): one curve per
/// (preset, GPU count), in the file's order.
std::vector<AccuracyCurve> rccl_all_reduce(Presets& P, const std::string& data_dir) {
    const std::string file = "rccl/all_reduce-busbw.csv";
    const auto csv = config::CsvTable::read(data_dir + "/" + file);
    std::vector<AccuracyCurve> curves;
    std::string key;
    for (std::size_t row = 0; row < csv.size(); ++row) {
        const std::string& hw = csv.text(row, "hardware");
        const int gpus = static_cast<int>(csv.number(row, "gpus"));
        const std::string& algo = csv.text(row, "algo");
        const auto parsed = cl::parse_algorithm(algo);
        if (!parsed)
            throw InputError(csv.where(row) + ": algo '" + algo + "' is not an algorithm");
        const std::string here = hw + "/" + std::to_string(gpus) + "/" + algo;
        if (here != key) {
            key = here;
            curves.push_back({hw + ", " + (algo == "auto" ? "" : algo + " ") +
                                  "all_reduce busbw, " + std::to_string(gpus) + " GPUs (" + file +
                                  ")",
                              "GB/s",
                              {},
                              {}});
        }
        const double bytes = csv.number(row, "bytes");
        const auto p =
            P.run(hw, gpus, cl::Op::all_reduce, static_cast<std::int64_t>(bytes), *parsed);
        curves.back().rows.push_back({size_label(bytes), csv.number(row, "busbw"),
                                      busbw_gbps(cl::Op::all_reduce, gpus, bytes, p.seconds),
                                      p.detail});
        curves.back().sizes.push_back(bytes);
    }
    return curves;
}

} // namespace

CollectiveAccuracy collective_accuracy(const std::string& data_dir) {
    CollectiveAccuracy acc;
    Presets P;

    // 1. nccl-tests all_reduce on one A100 node, 2/4/8 GPUs, 1 MiB to 1 GiB (out-of-place).
    for (int n : {2, 4, 8}) {
        const std::string file = "a100-node/nccl-all-reduce-" + std::to_string(n) + "gpu.csv";
        const auto csv = config::CsvTable::read(data_dir + "/" + file);
        AccuracyCurve curve{
            "dgx-a100, all_reduce, " + std::to_string(n) + " GPUs (" + file + ")", "us", {}, {}};
        // Columns: size(B), count, type, then time(ns) and busbw of out-of-place, of in-place.
        for (std::size_t i = 0; i < csv.size(); ++i) {
            const double bytes = csv.number_at(i, 0);
            const double measured_us = csv.number_at(i, 3) / 1000;
            const auto p =
                P.run("dgx-a100", n, cl::Op::all_reduce, static_cast<std::int64_t>(bytes));
            curve.rows.push_back({size_label(bytes), measured_us, p.seconds * 1e6, p.detail});
            curve.sizes.push_back(bytes);
        }
        acc.a100_all_reduce.push_back(std::move(curve));
    }

    // 2. A whole nccl-tests log, 8 B to 4 GiB on 8 A100 (out-of-place).
    {
        const std::string file = "nccl/a100-8gpu-all_reduce.nccl-tests.txt";
        acc.a100_log = {"dgx-a100, all_reduce, 8 GPUs (" + file + ")", "us", {}, {}};
        const MeasurementFile log = import_files({data_dir + "/" + file}, {}).measurements;
        const CollectiveMeasurement* last = nullptr;
        for (const auto& c : log.collectives) {
            if (c.in_place)
                continue;
            const double bytes = static_cast<double>(c.bytes);
            const auto p = P.run("dgx-a100", c.gpus, c.op, c.bytes);
            acc.a100_log.rows.push_back(
                {size_label(bytes), c.time.seconds() * 1e6, p.seconds * 1e6, p.detail});
            acc.a100_log.sizes.push_back(bytes);
            last = &c;
        }
        if (last == nullptr)
            throw InputError(file + ": no rows");
        acc.a100_floor = acc.a100_log.rows.front();
        acc.a100_floor.label = "latency floor, " + acc.a100_floor.label + " (us)";
        const AccuracyRow& row = acc.a100_log.rows.back();
        acc.a100_plateau = {"bus bandwidth plateau, " + row.label + " (GB/s)", last->busbw() / 1e9,
                            busbw_gbps(last->op, last->gpus, static_cast<double>(last->bytes),
                                       row.predicted * 1e-6),
                            row.algorithm};
    }

    // 3. busbw of 8-GPU nodes, 1 KiB to 8 GiB (the default algorithm).
    {
        const std::string file = "nccl/busbw-8gpu-all_reduce-a100-h100-h200.csv";
        const auto csv = config::CsvTable::read(data_dir + "/" + file);
        const std::vector<std::pair<std::string, std::string>> columns{
            {"dgx-h100", "h100_busbw"}, {"hgx-h200", "h200_busbw"}, {"dgx-a100", "a100_busbw"}};
        std::vector<AccuracyCurve> curves;
        for (const auto& [preset, col] : columns)
            curves.push_back(
                {preset + ", all_reduce busbw, 8 GPUs (" + file + ")", "GB/s", {}, {}});
        for (std::size_t row = 0; row < csv.size(); ++row) {
            const double bytes = csv.number(row, "bytes");
            for (std::size_t i = 0; i < columns.size(); ++i) {
                const auto p = P.run(columns[i].first, 8, cl::Op::all_reduce,
                                     static_cast<std::int64_t>(bytes));
                curves[i].rows.push_back({size_label(bytes), csv.number(row, columns[i].second),
                                          busbw_gbps(cl::Op::all_reduce, 8, bytes, p.seconds),
                                          p.detail});
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
        } items[] = {{"all_reduce_ring", cl::Op::all_reduce, cl::Algorithm::ring},
                     {"all_reduce_nvls", cl::Op::all_reduce, cl::Algorithm::nvls},
                     {"all_gather", cl::Op::all_gather, cl::Algorithm::automatic},
                     {"reduce_scatter", cl::Op::reduce_scatter, cl::Algorithm::automatic}};
        for (const auto& it : items) {
            const auto p = P.run("hgx-h200", 8, it.op, S16, it.algo);
            acc.h200_16gib.push_back({it.key, big.number(it.key, 0),
                                      busbw_gbps(it.op, 8, static_cast<double>(S16), p.seconds),
                                      p.detail});
        }
        const YAML::Node by_count = root.raw("all_reduce_8GiB_by_gpu_count");
        const std::int64_t S8 = std::int64_t(8) << 30;
        for (auto it = by_count.begin(); it != by_count.end(); ++it) {
            const auto n_value = config::parse_number(it->first.Scalar());
            if (!n_value)
                throw InputError(file + ": expected a number, got '" + it->first.Scalar() + "'");
            const int n = static_cast<int>(*n_value);
            config::YamlMap entry(it->second, file, "all_reduce_8GiB_by_gpu_count");
            const auto ring = P.run("hgx-h200", n, cl::Op::all_reduce, S8, cl::Algorithm::ring);
            acc.h200_by_count.push_back(
                {std::to_string(n) + " GPUs, NVLS off", entry.number("busbw_no_nvls", 0),
                 busbw_gbps(cl::Op::all_reduce, n, static_cast<double>(S8), ring.seconds),
                 ring.detail});
            const std::string chosen = entry.str("algo");
            if (chosen == "nvls") {
                const auto nvls = P.run("hgx-h200", n, cl::Op::all_reduce, S8, cl::Algorithm::nvls);
                acc.h200_by_count.push_back(
                    {std::to_string(n) + " GPUs, NVLS", entry.number("busbw", 0),
                     busbw_gbps(cl::Op::all_reduce, n, static_cast<double>(S8), nvls.seconds),
                     nvls.detail});
            } else {
                (void)entry.number("busbw", 0);
            }
        }
    }

    // 6. NVLink 5: a ring all_reduce over 4 GB200 GPUs, predicted on dgx-b200.
    acc.nvlink5_ring = nvlink5_ring(P, data_dir);
    // 7. AMD Instinct: rccl-tests all_reduce on the xGMI mesh and across RoCE.
    acc.rccl_all_reduce = rccl_all_reduce(P, data_dir);

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
            const auto p = P.run("dgx-h100", n,
                                 std::string(key) == "all_reduce" ? cl::Op::all_reduce
                                                                  : cl::Op::reduce_scatter,
                                 elements * 4);
            acc.lecture.push_back({std::string(key) + ", " + std::to_string(n) + " GPUs, " +
                                       size_label(static_cast<double>(elements * 4)),
                                   measured, p.seconds * 1e3, p.detail});
        }
    }
    return acc;
}

std::vector<MultiNodeAccuracy> multi_node_accuracy(const std::string& data_dir) {
    // Which preset each file's header describes (the machine, its GPUs and its NICs):
    struct File {
        const char* path;
        const char* hardware;
        int nodes;
        bool lower_confidence;
    };
    static const File files[] = {
        // 8x A100-SXM4-80GB, 8x 200 Gb/s HDR InfiniBand per VM (NDmv4)
        {"a100-2node-ib-hdr-azure-ndmv4-summary.txt", "azure-ndm-a100-v4", 2, false},
        // 8x A100-SXM4-40GB, 16x 100 Gb/s RoCE v2 (OCI BM.GPU4.8)
        {"a100-2node-roce-16x100g-oci-bm-gpu4.8.nccl-tests.txt", "oci-bm-gpu4.8", 2, false},
        // H100 80GB HBM3, 8x 400 Gb/s NDR InfiniBand (ConnectX-7) per node: a DGX/HGX H100
        {"h100-2node-ib-ndr-default-gjaion.nccl-tests.txt", "dgx-h100", 2, false},
        {"h100-2node-ib-ndr-default-xe9680.nccl-tests.txt", "dgx-h100", 2, false},
        {"h100-2node-ib-ndr-ring-minctas24-qps2-gjaion.nccl-tests.txt", "dgx-h100", 2, false},
        {"h100-4node-ib-ndr-default-gjaion.nccl-tests.txt", "dgx-h100", 4, false},
        {"h100-4node-ib-ndr-default-vmware.nccl-tests.txt", "dgx-h100", 4, false},
        {"h100-8node-ib-ndr-default-gjaion.nccl-tests.txt", "dgx-h100", 8, false},
        {"h100-8node-ib-ndr-minctas24-qps2-gjaion.nccl-tests.txt", "dgx-h100", 8, false},
        // Lower confidence (their headers say why): shown, not held to a threshold.
        {"lower-confidence/a100-2node-meta-gcm-test-fixture.nccl-tests.txt", "azure-ndm-a100-v4", 2,
         true},
        {"lower-confidence/h100-2node-gcp-a3mega-tcpxo.nccl-tests.txt", "gcp-a3-mega", 2, true},
        {"lower-confidence/h100-12node-ib-sharp-collnetchain-coreweave-2023.nccl-tests.txt",
         "dgx-superpod-h100", 12, true},
        // Not read: lower-confidence/h100-128node-ring-ll128-issue322 (the run crashed before
        // nccl-tests' closing "# Avg bus bandwidth" line; the importer refuses truncated logs).
    };
    Presets P;
    std::vector<MultiNodeAccuracy> out;
    const std::string dir = data_dir + "/nccl/multi-node/";
    for (const File& f : files) {
        MultiNodeAccuracy a;
        a.file = std::string("nccl/multi-node/") + f.path;
        a.hardware = f.hardware;
        a.nodes = f.nodes;
        a.lower_confidence = f.lower_confidence;
        a.curve = {a.hardware + ", " + a.file, "us", {}, {}};
        auto add = [&](cl::Op op, int gpus, std::int64_t bytes, double measured_s,
                       const std::string& algorithm) {
            const auto algo = algorithm.empty() ? cl::Algorithm::automatic
                                                : cl::parse_algorithm(algorithm).value();
            const auto p = P.run(a.hardware, gpus, op, bytes, algo);
            a.curve.rows.push_back(
                {size_label(static_cast<double>(bytes)) +
                     (op == cl::Op::all_reduce ? std::string()
                                               : std::string(" ") + std::string(cl::to_string(op))),
                 measured_s * 1e6, p.seconds * 1e6, p.detail});
            a.curve.sizes.push_back(static_cast<double>(bytes));
            a.measured_busbw.push_back(
                busbw_gbps(op, gpus, static_cast<double>(bytes), measured_s));
            a.predicted_busbw.push_back(
                busbw_gbps(op, gpus, static_cast<double>(bytes), p.seconds));
        };
        const std::string path = dir + f.path;
        if (std::string(f.path).find("-summary.txt") != std::string::npos) {
            // The MSCCL++ page's selected numbers, not an nccl-tests table: rows of
            // `config, collective, message_size, metric, value`; busbw rows from 1 GiB.
            std::ifstream in(path);
            if (!in)
                throw InputError(path + ": cannot open the file");
            a.ran = "default";
            std::string line;
            for (int number = 1; std::getline(in, line); ++number) {
                const auto trimmed = config::trim(line);
                if (trimmed.empty() || trimmed.front() == '#')
                    continue;
                const auto w = config::split_csv_line(trimmed);
                const auto value = w.size() == 5 ? config::parse_number(w[4]) : std::nullopt;
                const auto op = w.size() == 5 ? cl::parse_op(w[1]) : std::nullopt;
                if (!value || !op)
                    throw InputError(path + ":" + std::to_string(number) +
                                     ": expected 'config, collective, message_size, metric, "
                                     "value', got '" +
                                     std::string(trimmed) + "'");
                if (w[0].rfind(std::to_string(f.nodes) + "nodes_x_8gpu", 0) != 0 ||
                    w[3] != "busbw_GBps")
                    continue;
                const auto bytes = base::parse_bytes(w[2] + "iB"); // nccl-tests' 1G = 1 GiB
                const int gpus = 8 * f.nodes;
                const double busbw = *value * 1e9;
                const double seconds =
                    cl::bus_factor(*op, gpus) * static_cast<double>(bytes) / busbw;
                add(*op, gpus, bytes, seconds, "");
            }
        } else {
            const MeasurementFile m = import_files({path}, {}).measurements;
            for (const auto& c : m.collectives) {
                if (c.in_place)
                    continue;
                if (a.ran.empty() || (a.ran == "default" && !c.algorithm.empty()))
                    a.ran = c.algorithm.empty() ? "default" : c.algorithm;
                if (c.gpus != 8 * f.nodes)
                    throw InputError(c.source + ": " + std::to_string(c.gpus) + " ranks, but " +
                                     std::to_string(f.nodes) + " nodes of 8 GPUs were expected");
                add(c.op, c.gpus, c.bytes, c.time.seconds(), c.algorithm);
            }
        }
        if (a.curve.rows.empty())
            throw InputError(path + ": no rows");
        out.push_back(std::move(a));
    }
    return out;
}

} // namespace clustersim::validation
