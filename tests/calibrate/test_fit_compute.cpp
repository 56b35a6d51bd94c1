// calibrate fit on kernels: launch overhead (median), HBM efficiency by size from copies, the
// GEMM efficiency surface; parameters recovered from points a known model made, and the A100
// rows of the GEMM table.
#include "fit_data.h"

#include "base/error.h"
#include "calibrate/fit.h"
#include "calibrate/validation.h"
#include "hardware/compute_model.h"
#include "hardware/hardware_loader.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace clustersim;
using namespace clustersim::calibrate;
using namespace clustersim::calibrate::testing;
using hardware::Dtype;

namespace {

const FitPart* find_part(const FitResult& r, const std::string& name) {
    const auto it = std::find_if(r.parts.begin(), r.parts.end(),
                                 [&](const FitPart& p) { return p.name == name; });
    return it == r.parts.end() ? nullptr : &*it;
}

MeasurementFile synthetic_gemms(const hardware::ClusterSpec& truth) {
    MeasurementFile f;
    f.environment.device = kA100;
    const hardware::ComputeModel model(truth);
    const std::int64_t sizes[] = {256, 1024, 2048, 4096, 8192};
    for (Dtype d : {Dtype::fp16, Dtype::bf16})
        for (auto m : sizes)
            for (auto k : {std::int64_t{512}, std::int64_t{4096}}) {
                GemmMeasurement g;
                g.m = m;
                g.n = 2 * m;
                g.k = k;
                g.dtype = d;
                g.time = sim::Time::from_seconds(model.gemm_seconds(g.m, g.n, g.k, d));
                f.gemms.push_back(g);
            }
    return f;
}

} // namespace

TEST_CASE("fit launches: the median of the back-to-back launch gap", "[calibrate][fit]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    MeasurementFile f;
    f.environment.device = kA100;
    for (auto [method, us] : {std::pair{LaunchMethod::gpu_back_to_back, 2.1},
                              std::pair{LaunchMethod::gpu_back_to_back, 2.5},
                              std::pair{LaunchMethod::host_submit, 3.0}}) {
        LaunchMeasurement l;
        l.method = method;
        l.time = sim::Time::from_seconds(us * 1e-6);
        l.launches = 256;
        f.launches.push_back(l);
    }
    // Two back-to-back points of different counts are distinct points.
    f.launches[1].launches = 512;
    const FitResult r = fit_hardware(base, {{"launch.json", f}});
    CHECK(r.fitted.cluster.compute.launch_overhead == sim::Time::ns(2300));
    REQUIRE(r.records.size() == 1);
    CHECK(r.records[0].key == "compute.launch_overhead");
    CHECK(r.records[0].value == "2.300us");
    CHECK(r.records[0].points == 2);

    // Host-side launches alone say nothing about the gap between kernels.
    f.launches.erase(f.launches.begin(), f.launches.begin() + 2);
    CHECK_THROWS_WITH(fit_hardware(base, {{"host.json", f}}),
                      Catch::Contains("host.json: nothing could be fitted") &&
                          Catch::Contains("no gpu_back_to_back launch points"));
}

TEST_CASE("fit copies: HBM efficiency and its half-efficiency size", "[calibrate][fit]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    hardware::ClusterSpec truth = base.cluster;
    truth.compute.memory_efficiency = 0.86;
    truth.compute.memory_half_efficiency_bytes = 3'000'000;
    const hardware::ComputeModel model(truth);
    MeasurementFile f;
    f.environment.device = kA100;
    for (std::int64_t bytes = 64 << 10; bytes <= (std::int64_t{4} << 30); bytes *= 4) {
        CopyMeasurement c;
        c.kind = CopyKind::device_to_device;
        c.method = CopyMethod::kernel;
        c.bytes = bytes;
        c.time = sim::Time::from_seconds(model.memory_bound_seconds(2 * bytes));
        f.copies.push_back(c);
    }
    const FitResult r = fit_hardware(base, {{"copies.json", f}});
    CHECK(r.fitted.cluster.compute.memory_efficiency == Approx(0.86).epsilon(0.005));
    CHECK(static_cast<double>(r.fitted.cluster.compute.memory_half_efficiency_bytes) ==
          Approx(3e6).epsilon(0.03));
    const FitPart* p = find_part(r, "copies");
    REQUIRE(p);
    CHECK(p->after.mean_abs < 0.002);
    // 64 KiB to 16 MiB: source and destination fit in the A100's 40 MiB L2, so they measure the
    // cache, and are left out (64 MiB and up: 4 points remain).
    CHECK(p->points == 4);
    CHECK(std::any_of(p->notes.begin(), p->notes.end(), [](const std::string& n) {
        return n == "5 device-to-device copies left out: source and destination fit in the "
                    "40 MiB L2 cache";
    }));
    // ... and validation skips them.
    const Validation v = validate_measurements(base, f, "copies.json");
    CHECK(v.of(PointKind::copy).size() == 4);
    REQUIRE(v.skipped.size() == 1);
    CHECK_THAT(v.skipped[0], Catch::StartsWith("5 copies skipped: source and destination fit "
                                               "in the 40 MiB L2 cache"));

    // One size: the efficiency only.
    f.copies.erase(f.copies.begin(), f.copies.end() - 1);
    f.copies.push_back(f.copies[0]);
    f.copies[1].method = CopyMethod::memcpy;
    f.copies.push_back(f.copies[0]); // the same copy on another GPU
    f.copies[2].src_gpu = f.copies[2].dst_gpu = 1;
    const FitResult one = fit_hardware(base, {{"one.json", f}});
    const FitPart* q = find_part(one, "copies");
    REQUIRE(q);
    CHECK(std::any_of(q->notes.begin(), q->notes.end(), [](const std::string& n) {
        return n.find("half_efficiency_bytes: not fitted: every copy has the same size") !=
               std::string::npos;
    }));
}

TEST_CASE("fit GEMMs: efficiency per dtype and fill/drain work", "[calibrate][fit]") {
    const auto base = strategies::parallel::load_platform("dgx-a100");
    hardware::ClusterSpec truth = base.cluster;
    truth.compute.gemm_efficiency[static_cast<std::size_t>(Dtype::fp16)] = 0.75;
    truth.compute.gemm_efficiency[static_cast<std::size_t>(Dtype::bf16)] = 0.7;
    truth.compute.gemm_half_efficiency_flops = 1.2e9;
    const FitResult r = fit_hardware(base, {{"gemms.json", synthetic_gemms(truth)}});
    CHECK(r.fitted.cluster.compute.gemm_eff(Dtype::fp16) == Approx(0.75).epsilon(0.01));
    CHECK(r.fitted.cluster.compute.gemm_eff(Dtype::bf16) == Approx(0.7).epsilon(0.01));
    CHECK(r.fitted.cluster.compute.gemm_half_efficiency_flops == Approx(1.2e9).epsilon(0.05));
    // Dtypes without points keep the base's values and are not written.
    CHECK(r.fitted.cluster.compute.gemm_eff(Dtype::tf32) ==
          base.cluster.compute.gemm_eff(Dtype::tf32));
    for (const auto& rec : r.records)
        CHECK(rec.key != "compute.gemm.efficiency.tf32");
}

TEST_CASE("fit GEMMs: the A100 rows of the matmul table", "[calibrate][fit][accuracy]") {
    // data/reference/gemm/matmul-throughput.csv: source,gpu,dtype,m,n,k,tflops,peak_tflops.
    std::ifstream in(kData + "/gemm/matmul-throughput.csv");
    REQUIRE(in);
    MeasurementFile f;
    f.environment.device = kA100;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#' || line.starts_with("source"))
            continue;
        std::vector<std::string> c;
        std::stringstream s(line);
        for (std::string x; std::getline(s, x, ',');)
            c.push_back(x);
        if (c[1] != "a100-sxm4-80gb" && c[1] != "a100-sxm4")
            continue;
        GemmMeasurement g;
        g.m = std::stoll(c[3]);
        g.n = std::stoll(c[4]);
        g.k = std::stoll(c[5]);
        g.dtype = c[2] == "bf16" ? Dtype::bf16 : Dtype::fp16;
        g.time = sim::Time::from_seconds(g.flops() / (std::stod(c[6]) * 1e12));
        f.gemms.push_back(g);
    }
    REQUIRE(f.gemms.size() == 9);
    const auto base = strategies::parallel::load_platform("dgx-a100");
    const FitResult r = fit_hardware(base, {{"matmul-a100.json", f}});
    const FitPart* p = find_part(r, "gemms");
    REQUIRE(p);
    INFO("mean |error| " << 100 * p->before.mean_abs << "% -> " << 100 * p->after.mean_abs
                         << "%, max " << 100 * p->after.max_abs << "%");
    // The preset's values come from one fit over every GPU of the table; fitted to the A100
    // rows alone the error can only shrink.
    CHECK(p->after.mean_abs <= p->before.mean_abs + 1e-9);
    CHECK(p->after.mean_abs < 0.06);
    // bf16 has one row: 9 points still determine fp16, bf16 and the fill/drain work.
    CHECK(r.fitted.cluster.compute.gemm_eff(Dtype::fp16) > 0.7);
    CHECK(r.fitted.cluster.compute.gemm_eff(Dtype::fp16) <= 1.0);
}
