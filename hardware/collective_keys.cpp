// The key tables of a hardware file's `collectives:` section (hardware/hardware_keys.h): what
// each key means, its default and where it lands in CollectiveTuning. Read by
// collective_tuning_loader.cpp and documented by scripts/gen-config-docs.sh.
#include "hardware/hardware_keys.h"

namespace clustersim::hardware {

using config::field;
using config::Key;
using config::KeyType;

namespace {
/// The `<name>` entries stand for a key per value of an enum; their choices list the names.
std::vector<std::string> level_names() {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < kLinkLevelCount; ++i)
        out.emplace_back(to_string(static_cast<LinkLevel>(i)));
    return out;
}
std::vector<std::string> protocol_names() {
    std::vector<std::string> out;
    for (Protocol p : kAllProtocols) {
        std::string key(to_string(p));
        for (char& c : key)
            c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        out.push_back(key);
    }
    return out;
}
} // namespace

const std::vector<Key<CollectiveTuning>>& collectives_keys() {
    using T = CollectiveTuning;
    static const std::vector<Key<T>> keys{
        {{.name = "launch_latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "the fixed cost of one collective call (launch, host/device sync)",
          .lands = "CollectiveTuning::launch_latency"},
         field<&T::launch_latency>},
        {{.name = "memory_passes",
          .type = KeyType::number,
          .fallback = "0",
          .number_min = 0,
          .meaning = "HBM bytes per user-buffer byte the kernel moves in series with its "
                     "transfers",
          .lands = "CollectiveTuning::memory_passes"},
         field<&T::memory_passes>},
        {{.name = "pxn",
          .type = KeyType::boolean,
          .fallback = "true",
          .mirrors = "NCCL_PXN_DISABLE: false",
          .meaning = "sends to another node relay over NVLink to the GPU on the peer's rail",
          .lands = "CollectiveTuning::pxn"},
         field<&T::pxn>},
        {{.name = "protocols",
          .type = KeyType::choice,
          .fallback = "all",
          .choices = {"all", "simple"},
          .mirrors = "NCCL_PROTO",
          .meaning = "the protocols NCCL may choose: all, or Simple only (AWS's plugin sets "
                     "NCCL_PROTO=Simple where EFA cannot deliver 128-byte pieces in order)",
          .lands = "CollectiveTuning::simple_protocol_only"},
         +[](T& t, std::string_view p) { t.simple_protocol_only = p == "simple"; }},
        {{.name = "library",
          .type = KeyType::choice,
          .fallback = "nccl",
          .choices = {"nccl", "rccl"},
          .meaning = "whose rule picks the algorithm and protocol left open (--algo auto): nccl, "
                     "the cheapest predicted (NCCL's own cost model's aim); rccl, RCCL 2.21's "
                     "tuning model 5 and its per-size correction tables (8-GPU xGMI nodes)",
          .lands = "CollectiveTuning::library"},
         +[](T& t, std::string_view v) {
             t.library = v == "rccl" ? CollectiveLibrary::rccl : CollectiveLibrary::nccl;
         }},
        {{.name = "nvls",
          .type = KeyType::section,
          .meaning = "NVLink SHARP's in-switch reduction",
          .lands = "CollectiveTuning::nvls"}},
        {{.name = "tree",
          .type = KeyType::section,
          .meaning = "NCCL's double binary tree across nodes",
          .lands = "CollectiveTuning::tree"}},
        {{.name = "nvls_tree",
          .type = KeyType::section,
          .meaning = "NCCL's NVLSTree across nodes",
          .lands = "CollectiveTuning::nvls_tree_channel, nvls_tree_pipeline"}},
        {{.name = "<protocol>",
          .type = KeyType::section,
          .choices = protocol_names(),
          .meaning = "one section per NCCL protocol: ll, ll128, simple",
          .lands = "CollectiveTuning::protocols"}},
    };
    return keys;
}

const std::vector<Key<NvlsTuning>>& nvls_keys() {
    using V = NvlsTuning;
    static const std::vector<Key<V>> keys{
        {{.name = "latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "per call, on top of Simple's latencies",
          .lands = "NvlsTuning::latency"},
         field<&V::latency>},
        {{.name = "efficiency",
          .type = KeyType::number,
          .fallback = "0 (not given)",
          .meaning = "payload bandwidth over the NVLink bandwidth of a GPU's switch ports, in "
                     "(0, 1]",
          .lands = "NvlsTuning::efficiency"}},
    };
    return keys;
}

const std::vector<Key<TreeTuning>>& tree_keys() {
    static const std::vector<Key<TreeTuning>> keys{
        {{.name = "channel_bandwidth",
          .type = KeyType::section,
          .mirrors = "perChMaxTreeBws",
          .meaning = "Simple: the most one channel carries, bus bandwidth",
          .lands = "TreeTuning::channel"}},
        {{.name = "ll128_channel_bandwidth",
          .type = KeyType::section,
          .mirrors = "perChMaxTreeLL128Bws",
          .meaning = "LL128: the same",
          .lands = "TreeTuning::ll128_channel"}},
        {{.name = "step_latency",
          .type = KeyType::section,
          .meaning = "the Tree row of NCCL's hardware latencies, per protocol and link level",
          .lands = "TreeTuning::step_latency"}},
    };
    return keys;
}

const std::vector<Key<ChannelCap>>& channel_cap_keys() {
    using Cap = ChannelCap;
    static const std::vector<Key<Cap>> keys{
        {{.name = "two_nodes",
          .type = KeyType::bandwidth,
          .fallback = "0 (no cap)",
          .meaning = "per channel, communicators on 2 nodes",
          .lands = "ChannelCap::two_nodes"},
         field<&Cap::two_nodes>},
        {{.name = "more_nodes",
          .type = KeyType::bandwidth,
          .fallback = "0 (no cap)",
          .meaning = "per channel, on 3 or more nodes",
          .lands = "ChannelCap::more_nodes"},
         field<&Cap::more_nodes>},
    };
    return keys;
}

const std::vector<Key<TreeTuning>>& tree_step_latency_keys() {
    static const std::vector<Key<TreeTuning>> keys{
        {{.name = "<level>",
          .type = KeyType::time,
          .fallback = "the protocol section's",
          .choices = level_names(),
          .meaning = "one key per link level: nvlink, pcie, network",
          .lands = "TreeTuning::step_latency[protocol][level]"}},
    };
    return keys;
}

const std::vector<Key<NvlsTreePipeline>>& nvls_tree_keys() {
    using P = NvlsTreePipeline;
    static const std::vector<Key<P>> keys{
        {{.name = "channel_bandwidth",
          .type = KeyType::section,
          .mirrors = "perChMaxNVLSTreeBws",
          .meaning = "the most one channel carries, as tree's",
          .lands = "CollectiveTuning::nvls_tree_channel"}},
        {{.name = "channels",
          .fallback = "0 (no pipeline fill)",
          .min = 1,
          .max = 1024,
          .mirrors = "NVLS_NCHANNELS_SM90",
          .meaning = "the CTAs NVLSTree runs",
          .lands = "NvlsTreePipeline::channels"},
         field<&P::channels>},
        {{.name = "chunk",
          .type = KeyType::bytes,
          .fallback = "0",
          .min = 1,
          .mirrors = "NCCL_NVLS_CHUNKSIZE",
          .meaning = "one chunk per head per step",
          .lands = "NvlsTreePipeline::chunk_bytes"},
         field<&P::chunk_bytes>},
        {{.name = "chunk_at_4_nodes",
          .type = KeyType::bytes,
          .fallback = "0",
          .min = 1,
          .mirrors = "treeMaxChunkSize",
          .meaning = "the chunk from 4 nodes on",
          .lands = "NvlsTreePipeline::chunk_bytes_4_nodes"},
         field<&P::chunk_bytes_4_nodes>},
    };
    return keys;
}

const std::vector<Key<ProtocolTuning>>& protocol_keys() {
    using P = ProtocolTuning;
    static const std::vector<Key<P>> keys{
        {{.name = "base_latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "per call, on top of the launch latency",
          .lands = "ProtocolTuning::base_latency"},
         field<&P::base_latency>},
        {{.name = "chunk",
          .type = KeyType::bytes,
          .fallback = "0",
          .min = 1,
          .meaning = "the payload of one pipeline chunk (chain and tree algorithms)",
          .lands = "ProtocolTuning::chunk_bytes"},
         field<&P::chunk_bytes>},
        {{.name = "<level>",
          .type = KeyType::section,
          .choices = level_names(),
          .meaning = "one section per link level: nvlink, pcie, network",
          .lands = "ProtocolTuning::levels"}},
    };
    return keys;
}

const std::vector<Key<LevelTuning>>& level_keys() {
    using L = LevelTuning;
    static const std::vector<Key<L>> keys{
        {{.name = "step_latency",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "per pipeline step crossing this level",
          .lands = "LevelTuning::step_latency"},
         field<&L::step_latency>},
        {{.name = "efficiency",
          .type = KeyType::number,
          .fallback = "0 (not given)",
          .meaning = "payload bandwidth over link bandwidth, in (0, 1]",
          .lands = "LevelTuning::efficiency"}},
    };
    return keys;
}

} // namespace clustersim::hardware
