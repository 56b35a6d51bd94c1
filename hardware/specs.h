#pragma once
/// \file
/// Value types describing hardware: a GPU, a link, a node, the network between nodes, and the
/// cluster built from them. They are plain data, validated once by the loader
/// (hardware_loader.h); nothing here parses or prints.

#include "hardware/collective_tuning.h"
#include "hardware/dtype.h"
#include "sim/time.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

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
    /// Sustained fraction of HBM bandwidth that large memory-bound kernels reach.
    double memory_efficiency = 0;
    /// Bytes moved at which a memory-bound kernel reaches half its sustained bandwidth.
    std::int64_t memory_half_efficiency_bytes = -1;

    double gemm_eff(Dtype d) const { return gemm_efficiency[static_cast<std::size_t>(d)]; }
};

/// The training software stack as it behaves on this hardware (Megatron-LM on PyTorch by
/// default): what end-to-end steps show beyond the kernels' microbenchmarks. Calibrated from
/// measured training steps (`clustersim calibrate fit`); used by the training-step model.
struct FrameworkSpec {
    /// Host (CPU) time to issue one kernel (Python, PyTorch dispatch, the launch call). A GPU
    /// starves when its kernels are shorter than this: small models are host-bound.
    sim::Time host_overhead = sim::Time::zero();
    /// Fraction of the microbenchmark rate GEMMs (and attention kernels) reach inside training:
    /// transposed layouts, epilogues, mixed shapes. 1 = as the compute model predicts.
    double gemm_efficiency = 1.0;
    /// The same for memory-bound kernels (unfused elementwise ops, softmax, optimizer).
    double memory_efficiency = 1.0;
    /// Time one pipeline send/receive costs beyond its transfer: the P2P call, its handshake
    /// and the device synchronisation Megatron puts around it.
    sim::Time p2p_overhead = sim::Time::zero();
    /// Host time per micro-batch and pipeline stage outside the layers, with the GPU idle: the
    /// batch fetched and broadcast to the tensor-parallel ranks (Megatron's get_batch, whose
    /// size exchange synchronises host and device), masks and position ids, the loss and its
    /// data-parallel average, the schedule's bookkeeping. Transformer models only: they run
    /// Megatron's loop; the MLP runs the lecture's plain PyTorch loop, which has none of this.
    sim::Time microbatch_overhead = sim::Time::zero();
    /// Extra host time to issue a tensor-parallel collective beyond `host_overhead`: the
    /// autograd wrapper, the process group's stream and event handling, the NCCL enqueue.
    sim::Time collective_overhead = sim::Time::zero();
    /// Data-parallel gradients are reduced in 32-bit (Megatron's
    /// --accumulate-allreduce-grads-in-fp32, ZeRO's fp32 reduction); false: in the training
    /// dtype when it is 16-bit (Megatron-LM's fp16 default, DeepSpeed's fp16 engine).
    bool fp32_grad_reduce = true;
    /// GPU memory the stack takes before the model: CUDA context, NCCL buffers, cuBLAS
    /// workspaces, allocator slack. Counted in every GPU's peak memory.
    std::int64_t runtime_memory = 0;
};

/// Where one calibrated value of a hardware file came from (the `calibration:` section that
/// `clustersim calibrate fit` writes): the data it was fitted to and how well it fits.
struct CalibrationRecord {
    std::string key;                ///< dotted key it sets, e.g. "collectives.launch_latency"
    std::string value;              ///< as written in the file, e.g. "31.2us"
    std::string method;             ///< e.g. "huber-nelder-mead"
    std::vector<std::string> files; ///< measurement files
    int points = 0;                 ///< measured points the fit used
    double mean_abs_error = 0;      ///< mean |predicted / measured - 1| over them after the fit
    double max_abs_error = 0;       ///< largest |predicted / measured - 1|
};

/// Distribution of measured / predicted - 1 over validated points of one kind.
struct ResidualBand {
    int points = 0; ///< 0: none (uncalibrated for this kind)
    double p10 = 0, p50 = 0, p90 = 0;
    bool present() const { return points > 0; }
};

/// How far to trust this hardware file's predictions, by kind (the `uncertainty:` section).
struct Uncertainty {
    std::string basis; ///< "held-out" or "in-sample": what the residuals were measured on
    ResidualBand collectives, gemms, steps;
    bool present() const { return collectives.present() || gemms.present() || steps.present(); }
};

/// A whole cluster: `nodes` identical nodes on one network.
struct ClusterSpec {
    std::string name;        ///< preset name or file stem
    std::string description; ///< free text from the file
    NodeSpec node;
    NetworkSpec network;
    CollectiveTuning collectives; ///< collective kernels (NCCL-style latency/bandwidth)
    ComputeSpec compute;          ///< kernel cost model of the node's GPU
    FrameworkSpec framework;      ///< the training software stack (training-step model)
    std::vector<CalibrationRecord> calibration; ///< origin of calibrated values (may be empty)
    Uncertainty uncertainty;                    ///< validation residuals; absent: uncalibrated
    int nodes = 1;

    int gpu_count() const { return node.gpus * nodes; }
};

/// The same cluster resized to hold at least `gpus` GPUs (whole nodes).
ClusterSpec with_gpu_count(ClusterSpec spec, int gpus);

} // namespace clustersim::hardware
