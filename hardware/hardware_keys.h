#pragma once
/// \file
/// The keys of a hardware file, declared once per section (config/key_table.h): the loaders
/// (hardware_loader.cpp, collective_tuning_loader.cpp) read the keys with a target by these
/// tables, and docs/hardware-files.md is written from them. A section keyed by an enum (a
/// dtype, a protocol, a link level) is one table entry named `<dtype>` and the like, read by a
/// loop over the enum. The framework:, calibration: and uncertainty: sections are the
/// platform's (strategies/parallel/platform_keys.h).

#include "config/key_table.h"
#include "hardware/specs.h"

#include <vector>

namespace clustersim::hardware {

const std::vector<config::Key<ClusterSpec>>& hardware_root_keys();
const std::vector<config::Key<GpuSpec>>& gpu_keys();
/// gpu.peak_flops.<dtype> and compute.gemm.efficiency.<dtype>: one entry each.
const std::vector<config::Key<GpuSpec>>& peak_flops_keys();
const std::vector<config::Key<GpuSpec>>& hbm_keys();
const std::vector<config::Key<NodeSpec>>& node_keys();
/// node.nvlink, node.host_link, node.nic and network.link.
const std::vector<config::Key<LinkSpec>>& link_keys();
const std::vector<config::Key<NodeSpec>>& nvswitch_keys();
const std::vector<config::Key<NodeSpec>>& pcie_keys();
const std::vector<config::Key<NetworkSpec>>& network_keys();
const std::vector<config::Key<ListPrice>>& price_keys();
/// torus: (a TPU slice, hardware/torus.h).
const std::vector<config::Key<TorusSpec>>& torus_keys();
const std::vector<config::Key<ComputeSpec>>& compute_keys();
const std::vector<config::Key<ComputeSpec>>& gemm_keys();
const std::vector<config::Key<ComputeSpec>>& gemm_efficiency_keys();
const std::vector<config::Key<ComputeSpec>>& fused_attention_keys();
const std::vector<config::Key<ComputeSpec>>& memory_keys();
const std::vector<config::Key<CollectiveTuning>>& collectives_keys();
const std::vector<config::Key<NvlsTuning>>& nvls_keys();
const std::vector<config::Key<TreeTuning>>& tree_keys();
const std::vector<config::Key<ChannelCap>>& channel_cap_keys();
/// collectives.tree.step_latency.<protocol>.<level>
const std::vector<config::Key<TreeTuning>>& tree_step_latency_keys();
const std::vector<config::Key<NvlsTreePipeline>>& nvls_tree_keys();
/// collectives.<protocol>: ll, ll128, simple.
const std::vector<config::Key<ProtocolTuning>>& protocol_keys();
/// collectives.<protocol>.<level>: nvlink, pcie, network.
const std::vector<config::Key<LevelTuning>>& level_keys();

/// The hardware sections in file order, for the docs ("" is the top level).
std::vector<config::KeySection> hardware_key_sections();

/// The top-level keys that other loaders read (framework:, calibration:, uncertainty:): the
/// hardware loader leaves them to those.
std::vector<std::string_view> platform_section_names();

} // namespace clustersim::hardware
