#pragma once
/// \file
/// Value types describing hardware: a GPU, a link, a node, the network between nodes, and the
/// cluster built from them. They are plain data, validated once by the loader
/// (hardware_loader.h); nothing here parses or prints. What runs on the hardware (the training
/// framework's settings) and how its values were fitted (calibration provenance) are not
/// hardware: they live in strategies/parallel (platform.h), which loads them from the same file.

#include "hardware/collective_tuning.h"
#include "hardware/dtype.h"
#include "hardware/link.h"
#include "hardware/power_clock.h"
#include "hardware/torus.h"
#include "sim/time.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::hardware {

/// One GPU: compute units, peak rates and memory. Rates are per second.
struct GpuSpec {
    std::string name;
    int sm_count = 0;
    double clock_mhz = 0; ///< boost clock
    /// Board power limit (the datasheet's maximum TDP), watts; 0 = not given.
    double power_limit_w = 0;
    /// A lower limit set by the operator (nvidia-smi --power-limit), watts; 0 = none.
    double power_cap_w = 0;
    /// SM clock a dense tensor-core load sustains at `power_limit_w` once power and temperature
    /// have settled (minutes), MHz: measured (calibrate/sustained.h); 0 = the boost clock. The
    /// GEMM efficiencies are fitted on short benchmarks, which run at the boost clock.
    double sustained_clock_mhz = 0;
    /// How the sustained clock follows the power allowed, f ~ P^exponent (power_clock.h): 1/3
    /// where the voltage falls with the clock, 1 at the voltage floor.
    double power_clock_exponent = kCubeRootExponent;

    /// The clock sustained under dense load, at the cap if there is one (power_clock.h:
    /// power_limited_clock with this GPU's power_clock_exponent).
    double sustained_clock() const;
    /// sustained_clock() / clock_mhz: the fraction of the boost-clock tensor rate sustained.
    double sustained_fraction() const {
        return clock_mhz > 0 ? sustained_clock() / clock_mhz : 1.0;
    }
    /// Dense peak FLOP/s per dtype (tensor cores where they apply); 0 = unsupported.
    std::array<double, kDtypeCount> peak_flops{};
    /// The tensor cores scale each block of 16 or 32 elements inside the MMA (block-scaled
    /// MMA: Blackwell's tcgen05.mma with scale factors, CDNA4's MX instructions): MXFP8's and
    /// NVFP4's GEMMs need it; Hopper's FP8 GEMMs take one scale per tensor.
    bool block_scaling = false;
    /// The FP8 tensor cores take their operands in any layout (Blackwell's tcgen05.mma);
    /// Hopper's FP8 wgmma takes only "TN" (both operands K-major), so a per-tensor FP8 cast
    /// there writes a transposed copy for the weight-gradient GEMM, and here it does not
    /// (Transformer Engine's nvte_is_non_tn_fp8_gemm_supported: compute capability 10.x and
    /// 13.x and above; strategies/models/fp8.h).
    bool fp8_any_layout = false;
    std::int64_t hbm_bytes = 0; ///< the datasheet's capacity ("80GB")
    /// The total the device reports (NVML's memory.total, as nvidia-smi prints it); 0: not
    /// given, hbm_bytes stands for it. What a step must fit in (usable_hbm_bytes()).
    std::int64_t hbm_reported_bytes = 0;
    double hbm_bandwidth = 0; ///< bytes/s
    std::int64_t l2_bytes = 0;

    /// The memory a step fits in: the reported total where the file gives it, else the
    /// datasheet's capacity.
    std::int64_t usable_hbm_bytes() const {
        return hbm_reported_bytes > 0 ? hbm_reported_bytes : hbm_bytes;
    }

    double peak(Dtype d) const { return peak_flops[static_cast<std::size_t>(d)]; }
    bool supports(Dtype d) const { return peak(d) > 0; }
};

/// How the GPUs of a node talk to each other.
enum class IntraNodeFabric : std::uint8_t {
    nvswitch, ///< every GPU has NVLink ports to NVSwitch chips (DGX/HGX A100, H100, H200)
    pcie,     ///< GPUs talk through PCIe switches and the host (a PCIe box)
    /// Every pair of GPUs has its own point-to-point link and there is no switch (AMD
    /// Instinct MI300X/MI325X/MI355X: 7 xGMI / Infinity Fabric links per GPU on 8 GPUs).
    xgmi_mesh,
    /// TPU chips on ICI links to their torus neighbours (hardware/torus.h); the node is a
    /// slice, its PCIe switches are the TPU hosts, and no host vertex joins them.
    torus,
};

/// One node (server): its GPUs, their interconnect, PCIe and NICs.
struct NodeSpec {
    int gpus = 0;
    /// GPUs per compute tray where one NVLink domain spans several trays (a GB200 NVL72 rack is
    /// one node of 72 GPUs on 18 trays of 4): a job takes whole trays. 0: any GPU count.
    int gpus_per_tray = 0;
    /// GPUs used in each node, whole trays, as the hardware file asks (`node.gpus_used`); the
    /// loader then makes it `gpus` and scales `nics` with it (0: all of them).
    int gpus_used = 0;
    GpuSpec gpu;
    IntraNodeFabric fabric = IntraNodeFabric::nvswitch;
    /// NVLink bandwidth of one GPU to the NVSwitch fabric, per direction (all its links).
    LinkSpec nvlink;
    /// One xGMI link between two GPUs of a mesh (fabric xgmi_mesh), per direction.
    LinkSpec xgmi;
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
    /// NIC slots of each PCIe switch (0: as many as it has GPUs). NICs per node may not exceed
    /// (gpus / gpus_per_pcie_switch) x this.
    int nics_per_pcie_switch = 0;
    /// NICs for the compute fabric. With fewer NICs than GPUs, NIC i sits on the PCIe switch of
    /// GPU i * gpus / nics and the GPUs of that switch share it (GPU g uses NIC g * nics / gpus);
    /// with more, the nics / gpus ports of a GPU are striped as one (NCCL's network plugins
    /// spread a GPU's channels over them), so the graph holds one port per GPU of their sum.
    int nics = 0;
    LinkSpec nic;
    /// Where `nics` was set ("file:line:col"; empty for a default), for errors that only the
    /// cluster's size reveals (0 NICs on a cluster of several nodes).
    std::string nics_at;

    /// NIC slots of the node's PCIe switches.
    int nic_slots() const {
        const int per_switch =
            nics_per_pcie_switch > 0 ? nics_per_pcie_switch : gpus_per_pcie_switch;
        return gpus_per_pcie_switch > 0 ? gpus / gpus_per_pcie_switch * per_switch : 0;
    }
    /// NIC ports the graph builds per node: one per NIC, or one per GPU when a GPU has several.
    int nic_ports() const { return nics > gpus ? gpus : nics; }
    /// Bandwidth of one built port: a NIC's, or the sum of a GPU's NICs.
    double nic_port_bandwidth() const {
        return nics > gpus ? nic.bandwidth * nics / gpus : nic.bandwidth;
    }
};

/// What the NICs speak. Each transport has a payload efficiency relative to InfiniBand's (the
/// `collectives:` network efficiencies are InfiniBand's) and a latency added to every network
/// step (hardware/transport defaults: transport_defaults()).
enum class Transport : std::uint8_t {
    infiniband, ///< native InfiniBand verbs
    roce,       ///< RDMA over Converged Ethernet v2
    efa,        ///< AWS Elastic Fabric Adapter (SRD over Ethernet, libfabric)
    tcp,        ///< TCP/IP sockets, GPUDirect-TCPX/TCPXO (Google Cloud A3)
};
std::string_view to_string(Transport t);

struct TransportDefaults {
    double efficiency = 1;                     ///< payload per wire byte relative to InfiniBand
    sim::Time latency = sim::Time::zero();     ///< added to each network step
    sim::Time net_latency = sim::Time::zero(); ///< the network plugin's (NetworkSpec)
};
/// The defaults of a transport (their sources are in specs.cpp).
TransportDefaults transport_defaults(Transport t);

/// The fabric between nodes: a rail-optimised two-level fat tree. NIC i of every node connects
/// to a leaf of rail i; every leaf connects to every spine.
struct NetworkSpec {
    int switch_radix = 0; ///< ports per switch; half face down, half up
    LinkSpec link;        ///< a switch-to-switch cable, per direction
    sim::Time switch_latency = sim::Time::zero();
    Transport transport = Transport::infiniband;
    /// Payload efficiency relative to InfiniBand and latency per network step (set by
    /// `transport`, overridable).
    double transport_efficiency = 1;
    sim::Time transport_latency = sim::Time::zero();
    /// The latency the NCCL network plugin reports for its devices (ncclNetProperties_t::
    /// latency; 0 for NCCL's own InfiniBand and socket transports). NCCL's tuning adds it to the
    /// network steps of the algorithms it times, twice under the Simple protocol, whose steps
    /// also wait for a flush (src/graph/tuning.cc, ncclTopoTuneModel: `interLat +=
    /// graphs[a]->latencyInter; if (p == NCCL_PROTO_SIMPLE) interLat += ...`, with
    /// latencyInter the NIC's latency, src/graph/search.cc). AWS's plugin reports 75 us on
    /// p4d, p4de, p5 and p5e and 35 us on later P instances (aws/aws-ofi-nccl,
    /// src/platform-aws.cpp, platform_data_map).
    sim::Time net_latency = sim::Time::zero();
    /// Leaf downlink to uplink bandwidth (2 = 2:1): each leaf's uplinks carry 1/oversubscription
    /// of what its nodes can send. 1 = non-blocking.
    double oversubscription = 1;
    /// The switches reduce in the network (NVIDIA SHARP): CollNet algorithms can run.
    bool in_network_reduction = false;
};

/// A GEMM output tile computed by one CTA.
struct GemmTile {
    int m = 0;
    int n = 0;
};
inline constexpr int kMaxGemmTiles = 8;

/// Parameters of the kernel cost model (hardware/compute_model.h), the `compute:` section of a
/// hardware file. Every value is a datasheet figure or a fit to measurements; the presets say
/// which in a comment next to it.
struct ComputeSpec {
    /// Fixed cost of every kernel (launch and the gap between back-to-back kernels).
    sim::Time launch_overhead = sim::Time::zero();
    /// The CTA output tiles (M x N) the GEMM library chooses among (the fastest is taken, as
    /// cuBLAS's heuristics do), and CTAs resident per SM: waves of tiles over the SMs.
    std::array<GemmTile, kMaxGemmTiles> gemm_tiles{};
    int gemm_tile_count = 0;
    int gemm_ctas_per_sm = 0;
    /// The smallest tile whose operand loads keep the tensor cores busy; a smaller tile runs at
    /// the ratio of its operand intensity m*n/(m+n) to this tile's (L2-to-SM feed bound).
    GemmTile gemm_full_rate_tile;
    /// Sustained fraction of the dense peak that large GEMMs reach, per dtype (0 = none given).
    std::array<double, kDtypeCount> gemm_efficiency{};
    /// Work (FLOPs) at which a GEMM reaches half its sustained efficiency: the fill and drain
    /// of the tile pipeline, eff(W) = eff_max * W / (W + half).
    double gemm_half_efficiency_flops = -1;
    /// Exponent p of the smooth roofline (t_compute^p + t_memory^p)^(1/p); large p = max().
    double roofline_sharpness = 0;
    /// Sustained fraction of the dense peak a fused attention kernel (FlashAttention) reaches:
    /// its softmax and rescaling keep the tensor cores from GEMM rates.
    double fused_attention_efficiency = 0;
    /// The SFU's exp2 results per SM per clock (MUFU.EX2): the softmax's exponentials, one per
    /// score each pass evaluates (the backward recomputes them); 0 = not costed apart.
    double fused_attention_exp2_per_sm_clock = 0;
    /// The share of those exponentials' SFU time a fused attention kernel does not hide under
    /// its MMAs, in [0, 1].
    double fused_attention_exposed_exp = 0;
    /// FP8 attention's backward (Transformer Engine's fp8_dpa, cuDNN's FP8 SDPA): scores per SM
    /// per clock at which the kernel quantizes the recomputed probabilities P and their
    /// gradient dS to FP8 for its products, per-tensor scales (Float8CurrentScaling,
    /// DelayedScaling) and MXFP8 blocks of 32; 0 = FP8 attention not measured on this GPU.
    double fused_attention_fp8_backward_scores_per_sm_clock = 0;
    double fused_attention_mxfp8_backward_scores_per_sm_clock = 0;
    /// Sustained fraction of HBM bandwidth that large memory-bound kernels reach.
    double memory_efficiency = 0;
    /// Bytes moved at which a memory-bound kernel reaches half its sustained bandwidth.
    std::int64_t memory_half_efficiency_bytes = -1;

    double gemm_eff(Dtype d) const { return gemm_efficiency[static_cast<std::size_t>(d)]; }
};

/// The provider's on-demand list price of one GPU for one hour, as a cloud preset states it:
/// a planner's cost (`scale`) uses it unless told another. A price is a product's, so a file
/// that extends another does not inherit it (a p4de is not priced as the p4d it extends).
struct ListPrice {
    double per_gpu_hour = 0; ///< dollars; 0: no price stated
    std::string region;      ///< where the price holds ("us-east-1")
    std::string date;        ///< when it was read, YYYY-MM-DD
    std::string source;      ///< where it was read from

    bool operator==(const ListPrice&) const = default;
};

/// A whole cluster: `nodes` identical nodes on one network.
struct ClusterSpec {
    std::string name;        ///< preset name or file stem
    std::string description; ///< free text from the file
    NodeSpec node;
    NetworkSpec network;
    CollectiveTuning collectives; ///< collective kernels (NCCL-style latency/bandwidth)
    ComputeSpec compute;          ///< kernel cost model of the node's GPU
    ListPrice price;              ///< the cloud's list price, where the file states one
    /// A TPU slice's torus (torus.present()): the node is the slice, `nodes` the slices.
    TorusSpec torus;
    int nodes = 1;

    int gpu_count() const { return node.gpus * nodes; }
};

/// The same cluster resized to hold at least `gpus` GPUs (whole nodes). On a torus, `gpus`
/// devices on one slice of the shape documented for that count (with_slice for several).
ClusterSpec with_gpu_count(ClusterSpec spec, int gpus);

/// A torus cluster of slices of `shape` (hardware/torus.h), as many as `gpus` devices fill
/// (0: one slice); throws InputError for a shape the generation does not offer, or a device
/// count that is not whole slices. Sets the node (devices, hosts, NICs) from the shape.
ClusterSpec with_slice(ClusterSpec spec, const TorusShape& shape, int gpus = 0);

/// The whole numbers of trays of `tray` GPUs next to `gpus`, as an error suggests them: "8 or
/// 12" for 10 on trays of 4, "4" for 2.
std::string whole_trays_near(int gpus, int tray);

} // namespace clustersim::hardware
