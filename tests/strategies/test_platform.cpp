// The platform loader (strategies/parallel/platform.h) reads the whole hardware file: hardware,
// `framework:`, `calibration:` and `uncertainty:`; hardware::load_hardware reads the same file
// as hardware alone, skipping the upper sections but still refusing unknown keys.
#include "base/error.h"
#include "hardware/hardware_loader.h"
#include "strategies/parallel/platform.h"
#include "support/scratch.h"

#include <catch2/catch.hpp>

#include <functional>
#include <string>

using namespace clustersim;
using namespace clustersim::strategies::parallel;

using clustersim::test::input_error_of;

TEST_CASE("platform: a preset's framework section is read, the hardware is the same as "
          "load_hardware's",
          "[strategies][platform]") {
    const Platform p = load_platform("dgx-a100");
    const hardware::ClusterSpec hw = hardware::load_hardware("dgx-a100");
    CHECK(p.cluster.name == hw.name);
    CHECK(p.cluster.node.gpu.name == hw.node.gpu.name);
    CHECK(p.cluster.compute.launch_overhead == hw.compute.launch_overhead);
    // configs/hardware/dgx-a100.yaml: host_overhead: 54.70us, memory_efficiency: 0.9693,
    // gpu_speed_spread: 0.015.
    CHECK(p.framework.host_overhead == sim::Time::ns(54'700));
    CHECK(p.framework.memory_efficiency == Approx(0.9693));
    CHECK(p.framework.gpu_speed_spread == Approx(0.015));
    CHECK_FALSE(p.provenance.uncertainty.present());
}

TEST_CASE("platform: layers override the framework field by field", "[strategies][platform]") {
    const Platform base = load_platform("dgx-a100");
    const Platform p = parse_platform_yaml(
        "extends: dgx-a100\nnodes: 2\nframework: {fp32_grad_reduce: false, align_param_gather: "
        "true}\n",
        "layer.yaml");
    CHECK(p.cluster.nodes == 2);
    CHECK_FALSE(p.framework.fp32_grad_reduce);
    CHECK_FALSE(base.framework.align_param_gather); // Megatron-Core 0.8's chain by default
    CHECK(p.framework.align_param_gather);
    CHECK(p.framework.host_overhead == base.framework.host_overhead);
    const Platform sized = with_gpu_count(p, 24);
    CHECK(sized.cluster.nodes == 3);
    CHECK_FALSE(sized.framework.fp32_grad_reduce);
}

TEST_CASE("platform: load_hardware skips the upper sections, load_platform checks them",
          "[strategies][platform][hardware]") {
    const std::string text = "extends: dgx-a100\nframework: {gemm_efficiency: 1.5}\n"
                             "uncertainty: {basis: guessed}\ncalibration: 3\n";
    CHECK(hardware::parse_hardware_yaml(text, "hw.yaml").node.gpu.name ==
          hardware::load_hardware("dgx-a100").node.gpu.name);
    CHECK_THAT(input_error_of([&] { (void)parse_platform_yaml(text, "hw.yaml"); }),
               Catch::StartsWith("hw.yaml:2:") &&
                   Catch::Contains("framework.gemm_efficiency': expected a fraction in (0, 1]"));
    // Unknown keys are refused by both, with the same list of valid keys.
    const std::string bad = "extends: dgx-a100\ncolour: red\n";
    const std::string hw_error =
        input_error_of([&] { (void)hardware::parse_hardware_yaml(bad, "b"); });
    CHECK_THAT(hw_error, Catch::Contains("unknown key 'colour'") && Catch::Contains("framework"));
    CHECK(input_error_of([&] { (void)parse_platform_yaml(bad, "b"); }) == hw_error);
    CHECK_THAT(input_error_of([&] {
                   (void)parse_platform_yaml("extends: dgx-a100\nframework: {x: 1}\n", "f.yaml");
               }),
               Catch::Contains("unknown key 'framework.x'"));
}
