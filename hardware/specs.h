#pragma once
/// \file
/// Value types describing hardware: a GPU, a link, a node, the network between nodes, and the
/// cluster built from them. They are plain data, validated once by the loader
/// (hardware_loader.h); nothing here parses or prints.

#include "hardware/dtype.h"
#include "sim/time.h"

#include <array>
#include <cstdint>
#include <string>

namespace clustersim::hardware {

/// One GPU: compute units, peak rates and memory. Rates are per second.
struct GpuSpec {
    std::string name;
    int sm_count = 0;
    double clock_mhz = 0; ///< boost clock
    /// Dense peak FLOP/s per dtype (tensor cores where they apply); 0 = unsupported.
    std::array<double, kDtypeCount> peak_flops{};
    std::int64_t hbm_bytes = 0;
    double hbm_bandwidth = 0; ///< bytes/s
    std::int64_t l2_bytes = 0;

    double peak(Dtype d) const { return peak_flops[static_cast<std::size_t>(d)]; }
    bool supports(Dtype d) const { return peak(d) > 0; }
};

/// A link: bandwidth per direction (bytes/s) and the latency before the first byte arrives.
struct LinkSpec {
    double bandwidth = 0;
    sim::Time latency = sim::Time::zero();
};

/// How the GPUs of a node talk to each other.
enum class IntraNodeFabric : std::uint8_t {
    nvswitch, ///< every GPU has NVLink ports to NVSwitch chips (DGX/HGX A100, H100, H200)
    pcie,     ///< GPUs talk through PCIe switches and the host (a PCIe box)
};

/// One node (server): its GPUs, their interconnect, PCIe and NICs.
struct NodeSpec {
    int gpus = 0;
    GpuSpec gpu;
    IntraNodeFabric fabric = IntraNodeFabric::nvswitch;
    /// NVLink bandwidth of one GPU to the NVSwitch fabric, per direction (all its links).
    LinkSpec nvlink;
    /// Latency of crossing the NVSwitch chips.
    sim::Time nvswitch_latency = sim::Time::zero();
    /// The NVSwitch fabric can reduce in the switch (NVLink SHARP, "NVLS"; H100 and later).
    bool nvls = false;
    /// PCIe link of each GPU and NIC to its PCIe switch, per direction.
    LinkSpec pcie;
    /// GPUs (and as many NICs) behind each PCIe switch.
    int gpus_per_pcie_switch = 1;
    /// PCIe switch to host (CPU root complex), per direction.
    LinkSpec host_link;
    /// NICs for the compute fabric; NIC i sits beside GPU i * gpus / nics.
    int nics = 0;
    LinkSpec nic;
};

/// The InfiniBand fabric between nodes: a rail-optimised two-level fat tree. NIC i of every
/// node connects to a leaf of rail i; every leaf connects to every spine.
struct NetworkSpec {
    int switch_radix = 0; ///< ports per switch; half face down, half up
    LinkSpec link;        ///< a switch-to-switch cable, per direction
    sim::Time switch_latency = sim::Time::zero();
};

/// A whole cluster: `nodes` identical nodes on one network.
struct ClusterSpec {
    std::string name;        ///< preset name or file stem
    std::string description; ///< free text from the file
    NodeSpec node;
    NetworkSpec network;
    int nodes = 1;

    int gpu_count() const { return node.gpus * nodes; }
};

/// The same cluster resized to hold at least `gpus` GPUs (whole nodes).
ClusterSpec with_gpu_count(ClusterSpec spec, int gpus);

} // namespace clustersim::hardware
