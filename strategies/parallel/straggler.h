#pragma once
/// \file
/// The cost of scale from GPUs that are not equally fast: a synchronous step waits for its
/// slowest GPU. GPUs of one SKU differ in the clock they sustain under their power limit
/// (manufacturing variation met by power management); a step of N GPUs, which synchronise at
/// least once per step (the data-parallel gradient reduction) and within it at every
/// tensor- and pipeline-parallel exchange, runs its compute at the pace of the slowest of the
/// N. With per-GPU compute times spread normally with relative standard deviation s around
/// the median GPU's, the slowest of N is slower by s times the expected maximum of N standard
/// normals (about s sqrt(2 ln N) for large N): 0 for one GPU, growing with the count.
///
/// The spread s is FrameworkSpec::gpu_speed_spread (the hardware file's
/// `framework.gpu_speed_spread`); its source is written beside its value in each preset. The
/// TPU presets leave it 0: the measured spread comes from GPUs boosting under a power limit
/// (Sinha et al., SC'22), while a TPU runs at its one listed clock; no TPU measurement of a
/// chip-to-chip spread was at hand.
///
/// Two more costs of scale grow with N the same way, each an expected maximum:
/// - Synchronisation jitter (FrameworkSpec::sync_jitter): where a rank's host waits for its
///   GPU (a synchronisation), the work it issues next starts after a delay of OS noise and
///   launch jitter; the exchange that follows waits for the latest rank of its group, jitter
///   x E[max of the group's ranks] after the median one. A step has one on every rank at its
///   end, the gradient norm read back for clipping (megatron/core/optimizer/clip_grads.py,
///   get_grad_norm_fp32: total_norm.item()), the group all N GPUs; under Megatron's
///   non-interleaved 1F1B one more at every pipeline exchange (p2p_communication.py:
///   torch.cuda.synchronize() after batch_isend_irecv, batch_p2p_sync on by default and
///   batch_p2p_comm on where overlap_p2p_comm is off, which megatron/training/arguments.py
///   forces without virtual stages; NVIDIA/Megatron-LM@d98e8a64dd; in either schedule in the
///   Megatron-LM of 2021, @8cfef1bfe7), the group both stages' model-parallel ranks. The waits of
///   many synchronisations average out over a step: the band holds them at their expectation.
/// - Congestion between jobs' flows (FrameworkSpec::network_flow_spread): a collective across
///   nodes runs at the pace of its slowest inter-node flow, and a synchronous step waits for
///   every rank's collectives, so for the slowest of the job's flows, one per GPU (each GPU's
///   traffic leaves on its own NIC): slower than the median flow by spread x E[max of N]. A
///   flow's placement on the fabric (ECMP hashing, the jobs beside it) holds for an
///   allocation, so the band takes it at the same percentile as the slowest GPU.
/// In the flow fidelity the data-parallel collectives and the pipeline transfers run as flows
/// on the network and carry neither the congestion nor the pipeline's synchronisation waits;
/// the passes' tensor-parallel and expert collectives and the step's last wait do.

#include "strategies/parallel/framework_spec.h"

namespace clustersim::strategies::parallel {

struct ExperimentSpec;

/// E[max of n independent standard normals]: 0 for n = 1, 1/sqrt(pi) for 2, 1.5/sqrt(pi) for 3,
/// 3.2414 for 1,000. n >= 1. Exact to 1e-9 (numerical integration of 1 - Phi^n and Phi^n over
/// the two half lines, where Phi is the standard normal's distribution function).
double expected_max_standard_normal(int n);

/// The q-quantile of the max of n independent standard normals: Phi^-1(q^(1/n)). 0 < q < 1.
double max_standard_normal_quantile(int n, double q);

/// How much slower the slowest of `gpus` GPUs computes than the median one, as a fraction, with
/// per-GPU spread `spread` (a relative standard deviation): spread x E[max of gpus normals].
/// 0 where spread is 0 or gpus is 1.
double straggler_slowdown(double spread, int gpus);

/// The framework as the slowest of `gpus` GPUs runs it: its GEMM and attention rate
/// (gemm_efficiency) divided by 1 + straggler_slowdown(fw.gpu_speed_spread, gpus).
FrameworkSpec at_slowest_gpu(FrameworkSpec fw, int gpus);

/// The slowest GPU of a step of N and the band it implies: over the allocations of N GPUs a
/// job may get from the cluster, the slowest GPU's slowdown at the 5th and the 95th percentile
/// of the slowest of N, and the step re-simulated at each (StepOptions::straggler_band).
struct StragglerBand {
    double spread = 0;       ///< the per-GPU relative standard deviation used
    double slowdown = 0;     ///< the expected slowest GPU's, folded into the step time
    double slowdown_p05 = 0; ///< the slowest GPU's at the 5th percentile of the max of N
    double slowdown_p95 = 0; ///< at the 95th
    /// The step with the slowest GPU at those percentiles; 0 where not simulated.
    double step_time_p05_s = 0;
    double step_time_p95_s = 0;
    /// Synchronisation jitter: one rank's standard deviation at a synchronisation (seconds),
    /// the synchronisations on a rank's path through a step, and their expected waits summed
    /// (in the step time).
    double sync_jitter_s = 0;
    int synchronisations = 0;
    double sync_wait_s = 0;
    /// Congestion between jobs' flows: one flow's relative standard deviation, the job's
    /// inter-node flows (one per GPU; 0 where no collective crosses nodes), and the slowest
    /// one's slowdown: expected, 5th and 95th percentile.
    double network_spread = 0;
    int network_flows = 0;
    double network_slowdown = 0;
    double network_slowdown_p05 = 0;
    double network_slowdown_p95 = 0;

    bool operator==(const StragglerBand&) const = default;
};

/// The slowdowns of the slowest of `gpus` GPUs with per-GPU spread `spread` (expected, 5th and
/// 95th percentile); the step times are left 0. All 0 where spread is 0 or gpus is 1.
StragglerBand straggler_slowdowns(double spread, int gpus);

/// The expected wait of a synchronisation of `ranks` ranks, each arriving after a delay spread
/// normally with standard deviation `jitter_s` (seconds): jitter_s x E[max of `ranks` standard
/// normals]. 0 where jitter_s is 0 or ranks is 1.
double sync_wait(double jitter_s, int ranks);

/// How much slower a collective of `flows` inter-node flows runs than at the median flow's
/// bandwidth, each flow's time spread with relative standard deviation `spread`: spread x
/// E[max of `flows` standard normals] at quantile 0, else spread x the `quantile`-quantile of
/// the max. 0 where spread is 0 or flows is 1.
double network_slowdown(double spread, int flows, double quantile = 0);

/// Whether each pipeline exchange of `e` is a host synchronisation: Megatron's non-interleaved
/// 1F1B (batch_p2p_sync after batch_isend_irecv), and its interleaved one under the 2021
/// profile (megatron-lm), pp > 1; not under DeepSpeed's PipelineEngine nor torchtitan's
/// DTensor stack (torch.distributed.pipelining, no synchronize).
bool pipeline_exchanges_synchronise(const ExperimentSpec& e);

/// The synchronisations on one rank's path through a step of `e`: the step's last (the
/// gradient norm read back), and where pipeline_exchanges_synchronise, one exchange after each
/// micro-batch's forward and one after its backward on each of the rank's model chunks. 0 for
/// a forward-only step.
int step_synchronisations(const ExperimentSpec& e);

/// Their expected waits summed over a step (seconds): the last over all e.gpus ranks, each
/// pipeline exchange over both stages' model-parallel ranks (2 x tp x cp).
double step_sync_wait(const ExperimentSpec& e);

/// The expected wait of one pipeline exchange of `e` (seconds; 0 where it does not
/// synchronise).
double pipeline_sync_wait(const ExperimentSpec& e);

/// `fw` as at_slowest_gpu would give it if the slowest GPU were `slowdown` slower than the
/// median instead of the expected: its gemm_efficiency scaled so that at_slowest_gpu(result,
/// gpus) computes at 1 / (1 + slowdown) of the median GPU's rate.
FrameworkSpec with_slowest_gpu_at(FrameworkSpec fw, int gpus, double slowdown);

} // namespace clustersim::strategies::parallel
