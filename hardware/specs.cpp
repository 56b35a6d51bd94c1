#include "hardware/specs.h"

#include "base/error.h"
#include "hardware/power_clock.h"

#include <fmt/format.h>

#include <string>

namespace clustersim::hardware {

std::string_view to_string(Transport t) {
    switch (t) {
    case Transport::infiniband:
        return "infiniband";
    case Transport::roce:
        return "roce";
    case Transport::efa:
        return "efa";
    case Transport::tcp:
        return "tcp";
    }
    return "?";
}

TransportDefaults transport_defaults(Transport t) {
    using sim::Time;
    switch (t) {
    case Transport::infiniband:
        // The reference: the collectives' network efficiencies and NCCL's tuning.cc network
        // latencies are InfiniBand's.
        return {1.0, Time::zero()};
    case Transport::roce:
        // Headers per 4096-byte MTU packet: InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B;
        // RoCE v2 Ethernet 14 + FCS 4 + preamble 8 + inter-frame gap 12 + IPv4 20 + UDP 8 + BTH
        // 12 + ICRC 4 = 82 B (IBTA RoCE v2 annex; IEEE 802.3): (4096/4178) / (4096/4122).
        // Latency: assumption, ~1 us more per message through Ethernet switches (ECN/PFC
        // queueing) than InfiniBand's cut-through switches.
        return {4122.0 / 4178.0, Time::us(1)};
    case Transport::efa:
        // SRD over Ethernet with 8 KiB payloads (9001-byte MTU): wire overhead ~1% as RoCE's
        // arithmetic gives for that MTU; but SRD's sender-side multipath spraying and
        // libfabric's provider path add per-message cost. Assumption (no EFA measurements
        // here): 0.95 of InfiniBand's payload rate. The cost per network step is what AWS's
        // NCCL plugin reports as its devices' latency, which NCCL's tuning adds to the network
        // steps it times (NetworkSpec::net_latency): 35 us, its value for the P instances after
        // p5e (aws/aws-ofi-nccl src/platform-aws.cpp, platform_data_map: "p5en/p6-b200",
        // "p6-b300", "p-series"); the p4d, p4de and p5 presets give their 75 us.
        return {0.95, Time::zero(), Time::us(35)};
    case Transport::tcp:
        // TCP/IP sockets (NCCL's socket transport, Google's GPUDirect-TCPX/TCPXO plugins):
        // IPv4 20 + TCP 32 (with timestamps) + Ethernet 38 bytes per 8244-byte MTU segment
        // (Google Cloud A3 GPU NICs) ~ 0.99 of the wire; the plugins' receive-side packet
        // steering and flow control cost more. Assumption (no data): 0.9 of InfiniBand's payload
        // rate and 25 us more per network step (socket and proxy progress).
        return {0.9, Time::us(25)};
    }
    return {};
}

double GpuSpec::sustained_clock() const {
    const double f = sustained_clock_mhz > 0 ? sustained_clock_mhz : clock_mhz;
    if (power_cap_w > 0 && power_limit_w > 0 && power_cap_w < power_limit_w)
        return power_limited_clock(f, power_limit_w, power_cap_w, power_clock_exponent);
    return f;
}

std::string whole_trays_near(int gpus, int tray) {
    const int below = gpus / tray * tray, above = below + tray;
    return below > 0 ? fmt::format("{} or {}", below, above) : std::to_string(above);
}

ClusterSpec with_slice(ClusterSpec spec, const TorusShape& shape, int gpus) {
    TorusSpec& t = spec.torus;
    if (!t.present())
        throw InputError("hardware '" + spec.name + "' has no torus: a slice shape needs a TPU");
    const std::string why = why_not_offered(t, shape);
    if (!why.empty())
        throw InputError("slice: " + why);
    t.shape = shape;
    if (t.dims == 2)
        t.shape[2] = 1;
    NodeSpec& n = spec.node;
    const int per_slice = t.devices();
    if (gpus > 0 && gpus % per_slice != 0)
        throw InputError(fmt::format("{} devices are not whole slices of {} ({} devices each on "
                                     "hardware '{}'): use {}",
                                     gpus, to_string(shape, t.dims), per_slice, spec.name,
                                     whole_trays_near(gpus, per_slice)));
    n.gpus = per_slice;
    n.gpus_per_tray = 0;
    n.gpus_per_pcie_switch = t.chips_per_host() * t.devices_per_chip;
    n.nics_per_pcie_switch = 0;
    n.nics = t.chips() / t.chips_per_host() * t.nics_per_host;
    if (n.nics > n.nic_slots())
        n.nics_per_pcie_switch = t.nics_per_host;
    spec.nodes = gpus > 0 ? gpus / per_slice : 1;
    return spec;
}

ClusterSpec with_gpu_count(ClusterSpec spec, int gpus) {
    if (gpus <= 0)
        throw InputError("a GPU count must be positive, got " + std::to_string(gpus));
    if (spec.torus.present()) {
        const TorusSpec& t = spec.torus;
        const int chips = gpus / t.devices_per_chip;
        const TorusShape shape =
            gpus % t.devices_per_chip == 0 ? shape_for_chips(t, chips) : TorusShape{0, 0, 0};
        if (shape[0] == 0)
            throw InputError(fmt::format(
                "gpus: {} devices ({} a chip) is no slice hardware '{}' offers; it offers {}{} "
                "(give the shape with --slice or slice:, and several slices as a multiple of "
                "its devices)",
                gpus, t.devices_per_chip, spec.name, offered_shapes(t),
                t.devices_per_chip > 1 ? ", in chips" : ""));
        return with_slice(std::move(spec), shape, gpus);
    }
    const int tray = spec.node.gpus_per_tray;
    if (tray > 0 && gpus % tray != 0)
        throw InputError(fmt::format("{} GPUs is not a whole number of trays: hardware '{}' takes "
                                     "{} GPUs a tray (node.gpus_per_tray); use {}",
                                     gpus, spec.name, tray, whole_trays_near(gpus, tray)));
    spec.nodes = (gpus + spec.node.gpus - 1) / spec.node.gpus;
    if (spec.nodes > 1 && spec.node.nics == 0)
        throw InputError((spec.node.nics_at.empty() ? std::string()
                                                    : spec.node.nics_at + ": key 'node.nics': ") +
                         "hardware '" + spec.name + "' has no NICs, so it cannot span " +
                         std::to_string(gpus) + " GPUs (one node holds " +
                         std::to_string(spec.node.gpus) +
                         "); give node.nics: 1 or more and node.nic.bandwidth");
    return spec;
}

} // namespace clustersim::hardware
