// The collectives against real measurements (data/reference), with the thresholds.
// The same numbers are the "collectives" section of docs/validation.md.
#include "validation/accuracy_collectives.h"
#include "validation/targets.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

using namespace clustersim::calibrate;
using namespace clustersim::validation;

namespace {
const CollectiveAccuracy& accuracy() {
    static const CollectiveAccuracy a =
        collective_accuracy(CLUSTERSIM_SOURCE_DIR "/data/reference");
    return a;
}
constexpr double kMiB = 1 << 20;
} // namespace

TEST_CASE("collectives accuracy: dgx-a100 all_reduce, 2/4/8 GPUs, 1 MiB to 1 GiB",
          "[collectives][accuracy]") {
    REQUIRE(accuracy().a100_all_reduce.size() == 3);
    for (const AccuracyCurve& c : accuracy().a100_all_reduce) {
        INFO(c.title);
        REQUIRE(c.rows.size() == 1024);
        CHECK(c.errors().mean_abs <= 0.08);
        CHECK(c.errors(64 * kMiB).mean_abs <= 0.05);
    }
}

TEST_CASE("collectives accuracy: the 8x A100 nccl-tests log's floor and plateau",
          "[collectives][accuracy]") {
    REQUIRE(accuracy().a100_log.rows.size() == 30);
    CHECK(accuracy().a100_floor.measured == Approx(40.12));
    CHECK(std::abs(accuracy().a100_floor.error()) <= 0.10);
    CHECK(accuracy().a100_plateau.measured == Approx(232.44));
    CHECK(std::abs(accuracy().a100_plateau.error()) <= 0.10);
}

TEST_CASE("collectives accuracy: H100 and H200 busbw from 16 MiB, large messages, lecture",
          "[collectives][accuracy]") {
    for (const AccuracyCurve& c : accuracy().busbw_8gpu) {
        if (c.title.rfind("dgx-a100", 0) == 0)
            continue;
        INFO(c.title);
        REQUIRE(c.rows.size() == 15);
        CHECK(c.errors(16 * kMiB).max_abs <= 0.10);
    }
    REQUIRE(accuracy().h200_16gib.size() == 4);
    for (const AccuracyRow& r : accuracy().h200_16gib) {
        INFO(r.label << ": measured " << r.measured << ", predicted " << r.predicted);
        CHECK(std::abs(r.error()) <= 0.05);
    }
    REQUIRE(accuracy().lecture.size() == 2);
    for (const AccuracyRow& r : accuracy().lecture) {
        INFO(r.label << ": measured " << r.measured << " ms, predicted " << r.predicted);
        CHECK(std::abs(r.error()) <= 0.15);
    }
}

TEST_CASE("collectives accuracy: multi-node nccl-tests files, with the algorithm NCCL ran",
          "[collectives][accuracy][multinode]") {
    const auto files = multi_node_accuracy(CLUSTERSIM_SOURCE_DIR "/data/reference");
    REQUIRE(files.size() == 12);
    // Within 8% mean from 64 MiB: the files whose runs reach their fabric's healthy rate.
    // Stated tolerances for the others (docs/validation.md, "Across nodes"): the gj-aion 4- and
    // 8-node default runs sit 12-20% below the NIC rate (their headers: "below peak", a
    // maintainer suggests fabric settings), and every H100 file's 64-512 MiB rows are slower
    // than the model (NCCL shrinks NVLSTree's chunks there; not modelled): 25% bounds them.
    const std::map<std::string, double> tolerance{
        {"a100-2node-ib-hdr-azure-ndmv4-summary.txt", 0.08},
        {"a100-2node-roce-16x100g-oci-bm-gpu4.8.nccl-tests.txt", 0.08},
        {"h100-2node-ib-ndr-default-gjaion.nccl-tests.txt", 0.08},
        {"h100-2node-ib-ndr-default-xe9680.nccl-tests.txt", 0.08},
        {"h100-2node-ib-ndr-ring-minctas24-qps2-gjaion.nccl-tests.txt", 0.08},
        {"h100-4node-ib-ndr-default-vmware.nccl-tests.txt", 0.08},
        {"h100-4node-ib-ndr-default-gjaion.nccl-tests.txt", 0.25},
        {"h100-8node-ib-ndr-default-gjaion.nccl-tests.txt", 0.25},
        {"h100-8node-ib-ndr-minctas24-qps2-gjaion.nccl-tests.txt", 0.25},
    };
    int held = 0;
    for (const auto& f : files) {
        INFO(f.file << " on " << f.hardware);
        const auto e = f.curve.errors(64 * kMiB);
        REQUIRE(e.points > 0);
        if (f.lower_confidence)
            continue;
        const auto name = f.file.substr(f.file.rfind('/') + 1);
        REQUIRE(tolerance.count(name) == 1);
        CHECK(e.mean_abs <= tolerance.at(name));
        // From 1 GiB every healthy-rate file is within 8%, the algorithm settled.
        if (tolerance.at(name) <= 0.08)
            CHECK(f.curve.errors(1024 * kMiB).mean_abs <= 0.08);
        ++held;
    }
    CHECK(held == 9);
    // The forced algorithms are the ones run: ring where NCCL_ALGO=Ring, CollNet chain on the
    // SHARP file.
    for (const auto& f : files) {
        if (f.file.find("-ring-") != std::string::npos) {
            CHECK(f.ran == "ring");
            for (const auto& r : f.curve.rows)
                CHECK(r.algorithm.rfind("ring/", 0) == 0);
        }
        if (f.file.find("collnetchain") != std::string::npos)
            CHECK(f.ran == "collnet_chain");
        if (f.file.find("h100-2node-ib-ndr-default") != std::string::npos)
            CHECK(f.curve.rows.back().algorithm == "nvls_tree/Simple");
    }
}

TEST_CASE("collectives accuracy: NVLink 5 ring on 4 GB200 GPUs, predicted on dgx-b200",
          "[collectives][accuracy][blackwell]") {
    const AccuracyCurve& c = accuracy().nvlink5_ring;
    REQUIRE(c.rows.size() == 10);
    for (std::size_t i = 0; i < c.rows.size(); ++i) {
        INFO(c.rows[i].label << ": measured " << c.rows[i].measured << " GB/s, predicted "
                             << c.rows[i].predicted << " (" << c.rows[i].algorithm << ")");
        CHECK(c.rows[i].algorithm.rfind("ring/", 0) == 0);
        if (c.sizes[i] >= 64 * kMiB)
            CHECK(std::abs(c.rows[i].error()) <= targets::kNewHardwareFrom64MiB);
    }
}

TEST_CASE("collectives accuracy: AMD Instinct rccl-tests all_reduce on the xGMI mesh and over "
          "RoCE, from 64 MiB",
          "[collectives][accuracy][xgmi]") {
    // hardware-facts 4.1-4.4 (rccl/all_reduce-busbw.csv). Fitted on mi300x: the xGMI Simple
    // efficiency to the 8-GPU curve's 8 GB plateau, the RoCE efficiency and network step
    // latency to the 16-GPU curve from 256 MiB; the mi325x and mi355x curves check them.
    std::map<std::string, const AccuracyCurve*> by_title;
    for (const AccuracyCurve& c : accuracy().rccl_all_reduce)
        by_title[c.title.substr(0, c.title.find(" ("))] = &c;
    const std::map<std::string, std::size_t> expected{
        {"mi300x, all_reduce busbw, 8 GPUs", 10},
        {"mi300x, all_reduce busbw, 16 GPUs", 7},
        {"mi325x, ring all_reduce busbw, 8 GPUs", 3},
        {"mi325x, ring all_reduce busbw, 16 GPUs", 3},
        {"mi325x, ring all_reduce busbw, 32 GPUs", 3},
        {"mi325x, ring all_reduce busbw, 64 GPUs", 3},
        {"mi355x, all_reduce busbw, 16 GPUs", 9},
    };
    REQUIRE(by_title.size() == expected.size());
    for (const auto& [title, rows] : expected) {
        INFO(title);
        REQUIRE(by_title.count(title) == 1);
        const AccuracyCurve& c = *by_title.at(title);
        REQUIRE(c.rows.size() == rows);
        // The 2-node MI300X run's 128 MiB point (173.7 GB/s): RCCL's tables pick tree/Simple
        // there (collectives.library: rccl, tuning_model_5), which the model puts at 231 GB/s;
        // the run's own RCCL 2.22.3 switched to the ring by 256 MiB, where 2.21.5's tables
        // keep the tree. The rest of that curve, from 256 MiB, holds the target.
        const double from = title == "mi300x, all_reduce busbw, 16 GPUs" ? 256 * kMiB : 64 * kMiB;
        for (std::size_t i = 0; i < c.rows.size(); ++i) {
            if (c.sizes[i] < from)
                continue;
            const AccuracyRow& r = c.rows[i];
            INFO(r.label << ": measured " << r.measured << ", predicted " << r.predicted << " ("
                         << r.algorithm << ")");
            CHECK(std::abs(r.error()) <= targets::kNewHardwareFrom64MiB);
        }
    }
    // The documented exception, so that a change to it is seen.
    const AccuracyCurve& two_nodes = *by_title.at("mi300x, all_reduce busbw, 16 GPUs");
    CHECK(two_nodes.rows[2].label == "128 MiB");
    CHECK(two_nodes.rows[2].error() > targets::kNewHardwareFrom64MiB);
}
