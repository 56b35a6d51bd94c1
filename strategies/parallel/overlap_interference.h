#pragma once
/// \file
/// What overlapped communication costs the compute it overlaps.
///
/// A collective that runs beside compute is not free for the compute. NCCL runs a collective as
/// one kernel with one CTA per channel, each CTA resident on its own SM for the whole
/// collective (src/device/common.h: one block per channel), so the compute kernels launched
/// beside it get the other SMs; Transformer Engine's userbuffers overlaps reserve `num_sm` SMs
/// for their communication kernels (transformer_engine/pytorch/module/base.py, initialize_ub,
/// default config: num_sm 16 and set_sm_margin for the "pipeline" and "bulk" methods; num_sm 1
/// with use_ce, the copy engines, and no SM margin for "ring_exchange"); and the collective's
/// own traffic (every byte a GPU sends is read from its HBM, every byte it receives written to
/// it) shares HBM bandwidth with memory-bound kernels.
///
/// The model: while a communication kernel holding a share s of the resource a compute kernel
/// is bound by (SMs for GEMMs and attention: C / S for C CTAs on S SMs; HBM bandwidth for
/// memory-bound kernels: the collective's HBM bytes per second / the HBM bandwidth) runs, that
/// kernel progresses at (1 - s) of its rate. A GEMM of t seconds entirely under a collective
/// takes t S / (S - C); a collective of T seconds beside compute that outlasts it costs the
/// compute T s at most (the work the compute did not do while it ran). Wave quantisation is
/// not modelled: the rate scales with the SMs left, as a GEMM of many waves does.
///
/// The collective itself is taken to run at its predicted speed (the compute beside it does not
/// slow it); the slowdown shows in the breakdown folded into compute (Breakdown::
/// overlap_slowdown_s says how much).

#include "hardware/specs.h"
#include "strategies/collectives/collective.h"
#include "strategies/collectives/communicator.h"
#include "strategies/models/layer_work.h"

#include <span>

namespace clustersim::strategies::parallel {

/// What one communication kernel takes from compute while it runs.
struct CommLoad {
    double sm_share = 0;  ///< of the SMs: its CTAs / the GPU's SMs
    double hbm_share = 0; ///< of the HBM bandwidth: its traffic's bytes/s / the bandwidth

    /// The share an op of `kind` loses: SMs for tensor-core kernels, HBM for memory-bound ones.
    double of(models::OpKind kind) const {
        return kind == models::OpKind::memory_bound ? hbm_share : sm_share;
    }
};

/// Transformer Engine's default SMs for its "pipeline" and "bulk" overlaps (base.py,
/// initialize_ub: num_sm 16, set_sm_margin: the GEMM is given the other SMs).
inline constexpr int kTeOverlapSms = 16;

/// NCCL's CTAs (channels) for `c` on `comm` run with `algorithm`: NVLS and NVLSTree their
/// channels (collectives.nvls_tree.channels: NVLS_NCHANNELS_SM90); across nodes the model's
/// ring channels (one per NIC port), duplicated where ncclTopoDupChannels does at the speed
/// NCCL's inter-node search finds for a port, and doubled by ncclTopoPostset (16 for 8 GPUs
/// and 8 NICs per node, A100 HDR or H100 NDR; 4 for one H100 per node, 2 for one A100); inside
/// an NVSwitch node
/// what NCCL's ring search finds (nvswitch_ring_channels); inside a PCIe node 2. Fewer for
/// small buffers: NCCL gives each channel at least 512 threads x 64 bytes (enqueue.cc,
/// getAlgoInfo with NCCL_SIMPLE_THREAD_THRESHOLD). Point-to-point operations (all-to-all,
/// send/recv) take the same count, an approximation of NCCL's p2p channels (paths.cc,
/// ncclTopoComputeP2pChannels: 2 per peer across the network, NCCL_NCHANNELS_PER_NET_PEER,
/// which the 2 of a pair across nodes matches; 2 per NVLink of the path inside a node, 24 on a
/// DGX A100 as here, 36 on a DGX H100 where this gives 24).
/// On a TPU slice (the torus algorithm) none: XLA's collectives run on the DMA engines.
int nccl_ctas(const collectives::Communicator& comm, const collectives::Collective& c,
              collectives::Algorithm algorithm);

/// The channels of a ring inside one NVSwitch node as NCCL 2.18-2.28 builds them
/// (src/graph/search.cc, ncclTopoCompute and ncclTopoDupChannels; src/graph/connect.cc,
/// ncclTopoPostset): the ring search takes the fastest per-channel speed of its table not
/// above a GPU's NVLink bandwidth as NCCL's topology counts it, fits as many channels as that
/// bandwidth holds, duplicates them (at speeds of 25 GB/s and more; on Hopper only at 50 and
/// more or with at most 4 channels), and the postset doubles them again, to at most 32.
/// 24 on DGX A100 and DGX H100, 12 on DGX-2.
int nvswitch_ring_channels(const hardware::NodeSpec& node);

/// The load of a communication kernel of `ctas` CTAs moving `hbm_bytes` through the HBM of
/// one GPU of `gpu` in `seconds`.
CommLoad comm_load(const hardware::GpuSpec& gpu, int ctas, double hbm_bytes, double seconds);

/// The load of NCCL's `c` on `comm` taking `seconds`: nccl_ctas CTAs; HBM traffic what the
/// rank sends and receives (nccl-tests' bus bytes each way: bus_factor x bytes, each byte
/// read or written once).
CommLoad nccl_load(const collectives::Communicator& comm, const collectives::Collective& c,
                   double seconds);
/// The same for `c` run with `algorithm` (what comm.choose(c) chose).
CommLoad nccl_load(const collectives::Communicator& comm, const collectives::Collective& c,
                   collectives::Algorithm algorithm, double seconds);

/// The load of `c` on `comm` taking `seconds` when a library's kernels of `sms` SMs move it
/// (the flex dispatcher's DeepEP and HybridEP: flex_dispatcher_sms in ep_overlap.h) instead
/// of NCCL's: their SMs, and the same HBM traffic as nccl_load's.
CommLoad kernel_load(const collectives::Communicator& comm, const collectives::Collective& c,
                     int sms, double seconds);

/// Extra seconds compute takes when a communication kernel taking `share` of what it is bound
/// by runs beside `compute` seconds of it (at its full rate) for `comm` seconds: the work that
/// would have been done in the overlap at full rate, done at (1 - share) of it, never more than
/// `comm` x share (the collective ends first) nor, when the compute ends first, more than
/// compute x share / (1 - share).
double overlap_slowdown(double comm, double compute, double share);

/// A communication kernel in flight beside the compute stream, [begin, end).
struct CommSpan {
    double begin = 0;
    double end = 0;
    CommLoad load;
};

/// When a kernel of `work` seconds (alone) bound by what `kind` needs, started at `start`,
/// ends with the communication kernels `spans` in flight: piecewise, at 1 - (the sum of their
/// shares, at most 0.95) of its rate where they overlap it.
double stretched_end(double start, double work, models::OpKind kind,
                     std::span<const CommSpan> spans);

} // namespace clustersim::strategies::parallel
