#include "hardware/hardware_keys.h"

namespace clustersim::hardware {

using config::field;
using config::Key;
using config::KeyType;

namespace {
/// The `<name>` entries stand for a key per value of an enum; their choices list the names.
std::vector<std::string> dtype_names() {
    std::vector<std::string> out;
    for (Dtype d : kAllDtypes)
        out.emplace_back(to_string(d));
    return out;
}
} // namespace

const std::vector<Key<ClusterSpec>>& hardware_root_keys() {
    using C = ClusterSpec;
    static const std::vector<Key<C>> keys{
        {{.name = "extends",
          .type = KeyType::text,
          .fallback = "none",
          .meaning = "a hardware preset or file this one changes keys of",
          .lands = "the layers below this one"}},
        {{.name = "name",
          .type = KeyType::text,
          .fallback = "the file's name",
          .meaning = "the cluster's name in reports",
          .lands = "ClusterSpec::name"},
         field<&C::name>},
        {{.name = "description",
          .type = KeyType::text,
          .fallback = "none",
          .meaning = "free text, with the source of the numbers",
          .lands = "ClusterSpec::description"},
         field<&C::description>},
        {{.name = "gpu",
          .type = KeyType::section,
          .meaning = "the GPU",
          .lands = "ClusterSpec::node.gpu"}},
        {{.name = "node",
          .type = KeyType::section,
          .meaning = "one node: its GPUs, NVLink, PCIe and NICs",
          .lands = "ClusterSpec::node"}},
        {{.name = "network",
          .type = KeyType::section,
          .meaning = "the fabric between nodes",
          .lands = "ClusterSpec::network"}},
        {{.name = "torus",
          .type = KeyType::section,
          .fallback = "none (a GPU cluster)",
          .meaning = "a TPU slice's ICI torus: its shape, hosts, links and wraparounds; the node "
                     "is then the slice",
          .lands = "ClusterSpec::torus"}},
        {{.name = "collectives",
          .type = KeyType::section,
          .meaning = "how fast the collective kernels run (NCCL's tuning model)",
          .lands = "ClusterSpec::collectives"}},
        {{.name = "compute",
          .type = KeyType::section,
          .meaning = "the kernel cost model of the GPU",
          .lands = "ClusterSpec::compute"}},
        {{.name = "price",
          .type = KeyType::section,
          .meaning = "the cloud's on-demand list price per GPU-hour, with its date and source "
                     "(not inherited by a file that extends this one)",
          .lands = "ClusterSpec::price"}},
        {{.name = "nodes",
          .fallback = "1",
          .min = 1,
          .max = 1 << 20,
          .meaning = "nodes of the cluster (an experiment's gpus or nodes resizes it)",
          .lands = "ClusterSpec::nodes"},
         field<&C::nodes>},
        {{.name = "framework",
          .type = KeyType::section,
          .meaning = "the training stack's costs, calibrated from measured steps",
          .lands = "Platform::framework",
          .group = "platform"}},
        {{.name = "calibration",
          .type = KeyType::list,
          .meaning = "where calibrated values came from (written by calibrate fit)",
          .lands = "Platform::provenance.calibration",
          .group = "platform"}},
        {{.name = "uncertainty",
          .type = KeyType::section,
          .meaning = "validation residuals of the calibrated model (written by calibrate fit)",
          .lands = "Platform::provenance.uncertainty",
          .group = "platform"}},
    };
    return keys;
}

const std::vector<Key<ListPrice>>& price_keys() {
    using P = ListPrice;
    static const std::vector<Key<P>> keys{
        {{.name = "per_gpu_hour",
          .type = KeyType::number,
          .fallback = "required",
          .number_min = 0,
          .meaning = "dollars (more than 0) for one GPU for one hour, on demand (the instance's "
                     "price / GPUs)",
          .lands = "ListPrice::per_gpu_hour",
          .example = "6.88"},
         field<&P::per_gpu_hour>},
        {{.name = "region",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "the region the price holds in",
          .lands = "ListPrice::region",
          .example = "us-east-1"},
         field<&P::region>},
        {{.name = "date",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "when the price was read, YYYY-MM-DD",
          .lands = "ListPrice::date",
          .example = "2026-11-09"},
         field<&P::date>},
        {{.name = "source",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "where the price was read (the provider's price list or API)",
          .lands = "ListPrice::source"},
         field<&P::source>},
    };
    return keys;
}

std::vector<std::string_view> platform_section_names() {
    std::vector<std::string_view> out;
    for (const auto& k : hardware_root_keys()) {
        if (k.info.group == "platform")
            out.push_back(k.info.name);
    }
    return out;
}

const std::vector<Key<GpuSpec>>& gpu_keys() {
    using G = GpuSpec;
    static const std::vector<Key<G>> keys{
        {{.name = "name",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "the GPU's name",
          .lands = "GpuSpec::name"},
         field<&G::name>},
        {{.name = "sm_count",
          .fallback = "required",
          .min = 1,
          .max = 100000,
          .meaning = "streaming multiprocessors",
          .lands = "GpuSpec::sm_count"},
         field<&G::sm_count>},
        {{.name = "clock_mhz",
          .type = KeyType::number,
          .fallback = "required",
          .number_min = 1,
          .meaning = "the boost clock, MHz",
          .lands = "GpuSpec::clock_mhz"},
         field<&G::clock_mhz>},
        {{.name = "power_limit_w",
          .type = KeyType::number,
          .fallback = "none",
          .number_min = 1,
          .meaning = "the board's power limit (its datasheet TDP), watts",
          .lands = "GpuSpec::power_limit_w"},
         field<&G::power_limit_w>},
        {{.name = "power_cap_w",
          .type = KeyType::number,
          .fallback = "none",
          .number_min = 1,
          .mirrors = "nvidia-smi --power-limit",
          .meaning = "a lower limit set by the operator, watts (needs power_limit_w)",
          .lands = "GpuSpec::power_cap_w"},
         field<&G::power_cap_w>},
        {{.name = "sustained_clock_mhz",
          .type = KeyType::number,
          .fallback = "the boost clock",
          .number_min = 1,
          .meaning = "the SM clock a dense load sustains at power_limit_w once settled, MHz "
                     "(measured: calibrate/sustained.h)",
          .lands = "GpuSpec::sustained_clock_mhz"},
         field<&G::sustained_clock_mhz>},
        {{.name = "power_clock_exponent",
          .type = KeyType::number,
          .fallback = "1/3 (the voltage falling with the clock)",
          .number_min = 0.01,
          .meaning = "how the sustained clock follows the power allowed, f ~ P^exponent, at most "
                     "1 (the voltage floor); scales the clock under power_cap_w",
          .lands = "GpuSpec::power_clock_exponent"},
         field<&G::power_clock_exponent>},
        {{.name = "block_scaling",
          .type = KeyType::boolean,
          .fallback = "false",
          .meaning = "the tensor cores apply a scale per block of 16 or 32 elements inside the "
                     "MMA (Blackwell's, CDNA4's): what MXFP8 (fp8_recipe: mxfp8) and NVFP4 "
                     "(dtype: fp4) need; Hopper's FP8 takes one scale per tensor",
          .lands = "GpuSpec::block_scaling"},
         field<&G::block_scaling>},
        {{.name = "fp8_any_layout",
          .type = KeyType::boolean,
          .fallback = "false",
          .meaning = "the FP8 tensor cores take operands in any layout (Blackwell's), so "
                     "Transformer Engine's per-tensor FP8 casts (delayed and current scaling) "
                     "write no transposed copy; Hopper's take only TN and need one",
          .lands = "GpuSpec::fp8_any_layout"},
         field<&G::fp8_any_layout>},
        {{.name = "peak_flops",
          .type = KeyType::section,
          .fallback = "required (one dtype at least)",
          .meaning = "dense peak per dtype",
          .lands = "GpuSpec::peak_flops"}},
        {{.name = "hbm",
          .type = KeyType::section,
          .fallback = "required",
          .meaning = "the GPU's memory",
          .lands = "GpuSpec::hbm_bytes, hbm_bandwidth"}},
        {{.name = "l2",
          .type = KeyType::bytes,
          .fallback = "required",
          .min = 1,
          .meaning = "L2 cache size",
          .lands = "GpuSpec::l2_bytes"},
         field<&G::l2_bytes>},
    };
    return keys;
}

const std::vector<Key<GpuSpec>>& peak_flops_keys() {
    static const std::vector<Key<GpuSpec>> keys{
        {{.name = "<dtype>",
          .type = KeyType::flop_rate,
          .fallback = "0 (unsupported)",
          .choices = dtype_names(),
          .meaning =
              "dense peak FLOP/s of this dtype (tensor cores where they apply), one "
              "key per dtype: fp64, fp32, tf32, fp16, bf16, fp8, fp4 (E2M1: NVFP4's and MXFP4's "
              "elements)",
          .lands = "GpuSpec::peak_flops[dtype]"}},
    };
    return keys;
}

const std::vector<Key<GpuSpec>>& hbm_keys() {
    using G = GpuSpec;
    static const std::vector<Key<G>> keys{
        {{.name = "capacity",
          .type = KeyType::bytes,
          .fallback = "required",
          .min = 1,
          .meaning = "memory per GPU, as the datasheet names it",
          .lands = "GpuSpec::hbm_bytes"},
         field<&G::hbm_bytes>},
        {{.name = "reported",
          .type = KeyType::bytes,
          .fallback = "capacity",
          .min = 1,
          .meaning = "the total the device reports (NVML's memory.total, nvidia-smi's "
                     "'Total'): what a step's memory must fit in (an H100 80GB reports "
                     "81,559 MiB)",
          .lands = "GpuSpec::hbm_reported_bytes",
          .example = "81559MiB"},
         field<&G::hbm_reported_bytes>},
        {{.name = "bandwidth",
          .type = KeyType::bandwidth,
          .fallback = "required",
          .meaning = "memory bandwidth",
          .lands = "GpuSpec::hbm_bandwidth"},
         field<&G::hbm_bandwidth>},
    };
    return keys;
}

const std::vector<Key<NodeSpec>>& node_keys() {
    using N = NodeSpec;
    static const std::vector<Key<N>> keys{
        {{.name = "gpus",
          .fallback = "required",
          .min = 1,
          .max = 1024,
          .meaning = "GPUs per node: its NVLink domain (NCCL's node), which may span several "
                     "trays (gpus_per_tray)",
          .lands = "NodeSpec::gpus"},
         field<&N::gpus>},
        {{.name = "gpus_per_tray",
          .fallback = "0 (any GPU count)",
          .min = 0,
          .max = 1024,
          .meaning = "GPUs per compute tray where the NVLink domain spans several (GB200 NVL72: "
                     "4 of 72): a job takes whole trays; a divisor of gpus",
          .lands = "NodeSpec::gpus_per_tray"},
         field<&N::gpus_per_tray>},
        {{.name = "gpus_used",
          .fallback = "gpus",
          .min = 1,
          .max = 1024,
          .meaning =
              "GPUs used in each node, whole trays; the others (and their NICs) stay idle as "
              "spares (a large GB200 NVL72 job uses 16 of 18 trays: 64 of 72)",
          .lands = "NodeSpec::gpus, nics"},
         field<&N::gpus_used>},
        {{.name = "fabric",
          .type = KeyType::choice,
          .fallback = "nvswitch",
          .choices = {"nvswitch", "pcie", "xgmi", "torus"},
          .meaning = "how the node's GPUs talk: NVLink to NVSwitch chips, PCIe switches and "
                     "the host, an xGMI mesh (a link between every pair of GPUs, no switch: "
                     "AMD Instinct), or a TPU slice's ICI torus (the torus: section)",
          .lands = "NodeSpec::fabric"},
         +[](N& n, std::string_view f) {
             n.fabric = f == "pcie"    ? IntraNodeFabric::pcie
                        : f == "xgmi"  ? IntraNodeFabric::xgmi_mesh
                        : f == "torus" ? IntraNodeFabric::torus
                                       : IntraNodeFabric::nvswitch;
         }},
        {{.name = "nvlink",
          .type = KeyType::section,
          .fallback = "required with fabric nvswitch",
          .meaning = "one GPU's NVLink to the NVSwitch fabric, per direction (all its links)",
          .lands = "NodeSpec::nvlink"}},
        {{.name = "xgmi",
          .type = KeyType::section,
          .fallback = "required with fabric xgmi",
          .meaning = "one xGMI link between two GPUs of the mesh, per direction",
          .lands = "NodeSpec::xgmi"}},
        {{.name = "nvswitch",
          .type = KeyType::section,
          .meaning = "the NVSwitch chips",
          .lands = "NodeSpec::nvswitch_latency, nvls"}},
        {{.name = "pcie",
          .type = KeyType::section,
          .fallback = "required",
          .meaning = "the PCIe switches",
          .lands = "NodeSpec::pcie, gpus_per_pcie_switch, nics_per_pcie_switch"}},
        {{.name = "host_link",
          .type = KeyType::section,
          .fallback = "required",
          .meaning = "a PCIe switch to the host (CPU root complex), per direction",
          .lands = "NodeSpec::host_link"}},
        {{.name = "nics",
          .fallback = "0",
          .min = 0,
          .max = 1 << 16,
          .meaning = "NICs for the compute fabric: a divisor or a multiple of gpus, at most "
                     "what the PCIe switches hold",
          .lands = "NodeSpec::nics"}},
        {{.name = "nic",
          .type = KeyType::section,
          .fallback = "required with nics",
          .meaning = "one NIC, per direction",
          .lands = "NodeSpec::nic"}},
    };
    return keys;
}

const std::vector<Key<LinkSpec>>& link_keys() {
    using L = LinkSpec;
    static const std::vector<Key<L>> keys{
        {{.name = "bandwidth",
          .type = KeyType::bandwidth,
          .fallback = "0",
          .meaning = "bandwidth per direction",
          .lands = "LinkSpec::bandwidth"},
         field<&L::bandwidth>},
        {{.name = "latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "the time before the first byte arrives",
          .lands = "LinkSpec::latency"},
         field<&L::latency>},
    };
    return keys;
}

const std::vector<Key<NodeSpec>>& nvswitch_keys() {
    using N = NodeSpec;
    static const std::vector<Key<N>> keys{
        {{.name = "latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "crossing the NVSwitch chips",
          .lands = "NodeSpec::nvswitch_latency"},
         field<&N::nvswitch_latency>},
        {{.name = "nvls",
          .type = KeyType::boolean,
          .fallback = "false",
          .mirrors = "NCCL_NVLS_ENABLE",
          .meaning = "the switches reduce (NVLink SHARP; H100 and later)",
          .lands = "NodeSpec::nvls"},
         field<&N::nvls>},
    };
    return keys;
}

const std::vector<Key<NodeSpec>>& pcie_keys() {
    using N = NodeSpec;
    static const std::vector<Key<N>> keys{
        {{.name = "bandwidth",
          .type = KeyType::bandwidth,
          .fallback = "required",
          .meaning = "each GPU's and NIC's PCIe link to its switch, per direction",
          .lands = "NodeSpec::pcie.bandwidth"},
         +[](N& n) -> double& { return n.pcie.bandwidth; }},
        {{.name = "latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "its latency",
          .lands = "NodeSpec::pcie.latency"},
         +[](N& n) -> sim::Time& { return n.pcie.latency; }},
        {{.name = "gpus_per_switch",
          .fallback = "1",
          .min = 1,
          .max = 1024,
          .meaning = "GPUs behind each PCIe switch (a divisor of node.gpus)",
          .lands = "NodeSpec::gpus_per_pcie_switch"},
         field<&N::gpus_per_pcie_switch>},
        {{.name = "nics_per_switch",
          .fallback = "as many as its GPUs",
          .min = 1,
          .max = 1024,
          .meaning = "NIC slots of each PCIe switch",
          .lands = "NodeSpec::nics_per_pcie_switch"},
         field<&N::nics_per_pcie_switch>},
    };
    return keys;
}

const std::vector<Key<NetworkSpec>>& network_keys() {
    using W = NetworkSpec;
    static const std::vector<Key<W>> keys{
        {{.name = "switch_radix",
          .fallback = "required on several nodes",
          .min = 2,
          .max = 1 << 16,
          .meaning = "ports per switch of the rail-optimised fat tree (half down, half up)",
          .lands = "NetworkSpec::switch_radix"},
         field<&W::switch_radix>},
        {{.name = "link",
          .type = KeyType::section,
          .fallback = "required on several nodes",
          .meaning = "a switch-to-switch cable, per direction",
          .lands = "NetworkSpec::link"}},
        {{.name = "switch_latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "crossing one switch",
          .lands = "NetworkSpec::switch_latency"},
         field<&W::switch_latency>},
        {{.name = "transport",
          .type = KeyType::choice,
          .fallback = "infiniband",
          .choices = {"infiniband", "roce", "efa", "tcp"},
          .meaning = "what the NICs speak; sets transport_efficiency, transport_latency and "
                     "net_latency to its defaults (hardware/specs.cpp gives their sources), "
                     "also where a file extending a preset writes it again",
          .lands = "NetworkSpec::transport"},
         +[](W& n, std::string_view t) {
             n.transport = t == "roce"  ? Transport::roce
                           : t == "efa" ? Transport::efa
                           : t == "tcp" ? Transport::tcp
                                        : Transport::infiniband;
             const TransportDefaults d = transport_defaults(n.transport);
             n.transport_efficiency = d.efficiency;
             n.transport_latency = d.latency;
             n.net_latency = d.net_latency;
         }},
        {{.name = "transport_efficiency",
          .type = KeyType::number,
          .fallback = "the transport's",
          .meaning = "payload rate relative to InfiniBand's, in (0, 1.5]",
          .lands = "NetworkSpec::transport_efficiency"}},
        {{.name = "transport_latency",
          .type = KeyType::time,
          .fallback = "the transport's",
          .meaning = "the transport's own cost, added to every network step of every "
                     "algorithm and transfer",
          .lands = "NetworkSpec::transport_latency"},
         field<&W::transport_latency>},
        {{.name = "net_latency",
          .type = KeyType::time,
          .fallback = "the transport's (EFA: 35us, else 0)",
          .mirrors = "ncclNetProperties_t::latency",
          .meaning = "the latency the NCCL network plugin reports; NCCL's tuning adds it to "
                     "the network steps of rings' all-reduce, all-gather and reduce-scatter, "
                     "trees, NVLSTree and CollNet (not to point-to-point, all-to-all or "
                     "broadcast chains), twice under Simple",
          .lands = "NetworkSpec::net_latency"},
         field<&W::net_latency>},
        {{.name = "oversubscription",
          .type = KeyType::number,
          .fallback = "1 (non-blocking)",
          .meaning = "a leaf's downlink to uplink bandwidth, 1 to 1024 (2 means 2:1)",
          .lands = "NetworkSpec::oversubscription"}},
        {{.name = "in_network_reduction",
          .type = KeyType::boolean,
          .fallback = "false",
          .meaning = "the switches reduce (NVIDIA SHARP): CollNet algorithms can run",
          .lands = "NetworkSpec::in_network_reduction"},
         field<&W::in_network_reduction>},
    };
    return keys;
}

const std::vector<Key<ComputeSpec>>& compute_keys() {
    using C = ComputeSpec;
    static const std::vector<Key<C>> keys{
        {{.name = "launch_overhead",
          .type = KeyType::time,
          .fallback = "required",
          .meaning = "the fixed cost of every kernel (launch, and the gap between kernels)",
          .lands = "ComputeSpec::launch_overhead"},
         field<&C::launch_overhead>},
        {{.name = "gemm",
          .type = KeyType::section,
          .fallback = "required",
          .meaning = "GEMMs: tiles, waves and efficiency",
          .lands = "ComputeSpec::gemm_*"}},
        {{.name = "fused_attention",
          .type = KeyType::section,
          .fallback = "required",
          .meaning = "fused attention kernels (FlashAttention)",
          .lands = "ComputeSpec::fused_attention_*"}},
        {{.name = "memory",
          .type = KeyType::section,
          .fallback = "required",
          .meaning = "memory-bound kernels",
          .lands = "ComputeSpec::memory_*"}},
    };
    return keys;
}

const std::vector<Key<ComputeSpec>>& gemm_keys() {
    using C = ComputeSpec;
    static const std::vector<Key<C>> keys{
        {{.name = "tiles",
          .type = KeyType::list,
          .fallback = "required",
          .meaning = "the CTA output tiles M x N the GEMM library chooses among (the fastest "
                     "is taken, as cuBLAS's heuristics do), 1 to 8 like [256x128, 128x128]",
          .lands = "ComputeSpec::gemm_tiles"}},
        {{.name = "full_rate_tile",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "the smallest tile whose operand loads keep the tensor cores busy, like "
                     "128x128; smaller tiles run at their operand intensity's ratio to it",
          .lands = "ComputeSpec::gemm_full_rate_tile"}},
        {{.name = "ctas_per_sm",
          .fallback = "required",
          .min = 1,
          .max = 64,
          .meaning = "CTAs resident per SM: how many tiles make a wave",
          .lands = "ComputeSpec::gemm_ctas_per_sm"},
         field<&C::gemm_ctas_per_sm>},
        {{.name = "efficiency",
          .type = KeyType::section,
          .fallback = "required for each dtype the GPU has",
          .meaning = "the sustained fraction of the dense peak large GEMMs reach",
          .lands = "ComputeSpec::gemm_efficiency"}},
        {{.name = "half_efficiency_flops",
          .type = KeyType::number,
          .fallback = "required",
          .number_min = 0,
          .meaning = "the work in FLOPs at which a GEMM reaches half its efficiency: eff(W) = "
                     "eff_max x W / (W + half)",
          .lands = "ComputeSpec::gemm_half_efficiency_flops"},
         field<&C::gemm_half_efficiency_flops>},
        {{.name = "roofline_sharpness",
          .type = KeyType::number,
          .fallback = "required",
          .number_min = 1,
          .meaning = "p of the smooth roofline (t_compute^p + t_memory^p)^(1/p): 1 adds the two "
                     "times, large values take the larger",
          .lands = "ComputeSpec::roofline_sharpness"}},
    };
    return keys;
}

const std::vector<Key<ComputeSpec>>& gemm_efficiency_keys() {
    static const std::vector<Key<ComputeSpec>> keys{
        {{.name = "<dtype>",
          .type = KeyType::number,
          .fallback = "0 (none)",
          .choices = dtype_names(),
          .meaning = "a fraction in (0, 1], one key per dtype: fp64, fp32, tf32, fp16, bf16, fp8, "
                     "fp4",
          .lands = "ComputeSpec::gemm_efficiency[dtype]"}},
    };
    return keys;
}

const std::vector<Key<TorusSpec>>& torus_keys() {
    using T = TorusSpec;
    static const std::vector<Key<T>> keys{
        {{.name = "dims",
          .fallback = "required",
          .min = 2,
          .max = 3,
          .meaning = "2 (v5e, v6e: a 2-D torus) or 3 (v4, v5p, TPU7x)",
          .lands = "TorusSpec::dims"},
         field<&T::dims>},
        {{.name = "slice",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "the slice a bare preset builds, like 4x4x4 (an experiment's gpus, chips "
                     "or slice and the commands' --gpus or --slice choose another)",
          .lands = "TorusSpec::shape",
          .example = "4x4x4"}},
        {{.name = "host",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "a host's block of chips, like 2x2x1 (v5p) or 4x2 (v5e)",
          .lands = "TorusSpec::host"}},
        {{.name = "pod",
          .type = KeyType::text,
          .fallback = "required",
          .meaning = "the pod's axes, like 16x20x28: no slice axis is longer; a full_axis "
                     "generation wraps an axis of this length",
          .lands = "TorusSpec::pod"}},
        {{.name = "max_chips",
          .fallback = "required",
          .min = 1,
          .max = 1 << 20,
          .meaning = "the largest single slice, chips",
          .lands = "TorusSpec::max_chips"},
         field<&T::max_chips>},
        {{.name = "shapes",
          .type = KeyType::list,
          .fallback = "none",
          .meaning = "the slices offered below the whole-cube rule (every slice of a 2-D "
                     "generation), like [2x2x1, 2x2x2, 2x4x4]",
          .lands = "TorusSpec::shapes"}},
        {{.name = "whole_cubes",
          .type = KeyType::boolean,
          .fallback = "false",
          .meaning = "from one 4x4x4 cube up, any shape of whole cubes within pod and "
                     "max_chips is offered (v4, v5p, TPU7x)",
          .lands = "TorusSpec::whole_cubes"},
         field<&T::whole_cubes>},
        {{.name = "wraparound",
          .type = KeyType::choice,
          .fallback = "required",
          .choices = {"cube", "full_axis"},
          .meaning = "which axes close into rings: every axis of a slice of whole 4x4x4 cubes "
                     "(optical switches: v4, v5p, TPU7x), or an axis as long as the pod's "
                     "(v5e, v6e)",
          .lands = "TorusSpec::wraparound"},
         +[](T& t, std::string_view w) {
             t.wraparound = w == "full_axis" ? Wraparound::full_axis : Wraparound::cube;
         }},
        {{.name = "devices_per_chip",
          .fallback = "1",
          .min = 1,
          .max = 8,
          .meaning = "devices JAX sees per chip (TPU7x: 2, one per die); gpus counts devices",
          .lands = "TorusSpec::devices_per_chip"},
         field<&T::devices_per_chip>},
        {{.name = "tensor_cores",
          .fallback = "1",
          .min = 1,
          .max = 8,
          .meaning = "TensorCores per chip (two as one megacore device on v4 and v5p)",
          .lands = "TorusSpec::tensor_cores"},
         field<&T::tensor_cores>},
        {{.name = "links_per_chip",
          .fallback = "required",
          .min = 1,
          .max = 64,
          .meaning = "ICI ports of a chip (4 on a 2-D torus, 6 on a 3-D one)",
          .lands = "TorusSpec::links_per_chip"},
         field<&T::links_per_chip>},
        {{.name = "nics_per_host",
          .fallback = "1",
          .min = 1,
          .max = 64,
          .meaning = "DCN NICs of a host; node.nic is one of them",
          .lands = "TorusSpec::nics_per_host"},
         field<&T::nics_per_host>},
        {{.name = "link",
          .type = KeyType::section,
          .fallback = "required",
          .meaning = "one ICI link, per direction; its latency is one hop's",
          .lands = "TorusSpec::link"}},
        {{.name = "die_link",
          .type = KeyType::section,
          .fallback = "required with devices_per_chip > 1",
          .meaning = "between the devices of one chip, per direction",
          .lands = "TorusSpec::die_link"}},
    };
    return keys;
}

std::vector<config::KeySection> hardware_key_sections() {
    using config::section_of;
    return {
        section_of("", "A hardware file: one node's GPU, its links and the fabric between nodes.",
                   hardware_root_keys(),
                   {{"platform", "Read by the platform loader (strategies/parallel/platform.h)"}}),
        section_of("gpu", "The GPU.", gpu_keys()),
        section_of("gpu.peak_flops", "Dense peak rates.", peak_flops_keys()),
        section_of("gpu.hbm", "The GPU's memory.", hbm_keys()),
        section_of("node", "One node.", node_keys()),
        section_of("node.nvlink", "A GPU's NVLink (a link).", link_keys()),
        section_of("node.xgmi", "One xGMI link of a mesh node (a link).", link_keys()),
        section_of("node.nvswitch", "The NVSwitch chips.", nvswitch_keys()),
        section_of("node.pcie", "The PCIe switches.", pcie_keys()),
        section_of("node.host_link", "A PCIe switch to the host (a link).", link_keys()),
        section_of("node.nic", "A NIC (a link).", link_keys()),
        section_of("network",
                   "The fabric between nodes: a rail-optimised two-level fat tree "
                   "(NIC i of every node on a leaf of rail i).",
                   network_keys()),
        section_of("network.link", "A switch-to-switch cable (a link).", link_keys()),
        section_of("torus",
                   "A TPU slice: chips on a 2-D or 3-D torus of ICI links (hardware/torus.h).",
                   torus_keys()),
        section_of("torus.link", "One ICI link (a link).", link_keys()),
        section_of("torus.die_link", "The link between a chip's devices (a link).", link_keys()),
        section_of("collectives",
                   "How fast the collective kernels run: NCCL's latency + bytes / bandwidth per "
                   "algorithm and protocol (hardware/collective_tuning.h).",
                   collectives_keys()),
        section_of("collectives.nvls", "NVLink SHARP.", nvls_keys()),
        section_of("collectives.tree", "The double binary tree across nodes.", tree_keys()),
        section_of("collectives.tree.channel_bandwidth",
                   "A channel's cap (also ll128_channel_bandwidth, and nvls_tree's).",
                   channel_cap_keys()),
        section_of("collectives.tree.step_latency.<protocol>",
                   "Tree step latencies of one protocol (ll, ll128, simple).",
                   tree_step_latency_keys()),
        section_of("collectives.nvls_tree", "NVLSTree's chunks and channels.", nvls_tree_keys()),
        section_of("collectives.<protocol>", "One NCCL protocol (ll, ll128, simple).",
                   protocol_keys()),
        section_of("collectives.<protocol>.<level>",
                   "One protocol on one link level (nvlink, pcie, network).", level_keys()),
        section_of("price",
                   "The cloud's on-demand list price (a cloud preset's; `scale` uses it unless "
                   "--price-per-gpu-hour is given).",
                   price_keys()),
        section_of("compute", "The kernel cost model (hardware/compute_model.h).", compute_keys()),
        section_of("compute.gemm", "GEMMs.", gemm_keys()),
        section_of("compute.gemm.efficiency", "GEMM efficiency per dtype.", gemm_efficiency_keys()),
        section_of("compute.fused_attention", "Fused attention.", fused_attention_keys()),
        section_of("compute.memory", "Memory-bound kernels.", memory_keys()),
    };
}

} // namespace clustersim::hardware
