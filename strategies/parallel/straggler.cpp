// The slowest of N GPUs: the expected maximum of N standard normals by quadrature (cached per
// N: a sweep asks for one count many times), its quantiles in closed form.
#include "strategies/parallel/straggler.h"

#include "strategies/parallel/experiment.h"
#include "strategies/parallel/torch_pipelining.h"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace clustersim::strategies::parallel {
namespace {

/// 1 - Phi(x), accurate in the upper tail.
double upper_tail(double x) {
    return 0.5 * std::erfc(x / std::sqrt(2.0));
}

/// ln Phi(x)^n, through the tail where Phi is close to 1 (so that n of them do not round to 1).
double log_phi_power(double x, int n) {
    return static_cast<double>(n) * std::log1p(-upper_tail(x));
}

/// E[max] = integral over x > 0 of (1 - Phi^n) minus integral over x < 0 of Phi^n. Both
/// integrands are smooth; past |x| = 10 they are below 1e-23 per GPU. Simpson's rule on 4,000
/// intervals of each half line.
double integrate_expected_max(int n) {
    constexpr int kIntervals = 4000; // even
    constexpr double kEnd = 10.0;
    const double h = kEnd / kIntervals;
    double upper = 0, lower = 0;
    for (int i = 0; i <= kIntervals; ++i) {
        const double w = (i == 0 || i == kIntervals) ? 1.0 : (i % 2 == 1 ? 4.0 : 2.0);
        const double x = i * h;
        upper += w * -std::expm1(log_phi_power(x, n)); // 1 - Phi^n
        lower += w * std::exp(log_phi_power(-x, n));
    }
    return (upper - lower) * h / 3.0;
}

} // namespace

double expected_max_standard_normal(int n) {
    if (n <= 1)
        return 0.0;
    // A few counts per process (a sweep keeps one); bounded all the same.
    thread_local std::map<int, double> cache;
    if (const auto it = cache.find(n); it != cache.end())
        return it->second;
    if (cache.size() > 256)
        cache.clear();
    return cache[n] = integrate_expected_max(n);
}

double max_standard_normal_quantile(int n, double q) {
    // q^(1/n) as the upper tail 1 - q^(1/n) = -expm1(ln q / n), exact where q^(1/n) rounds to 1.
    const double tail = -std::expm1(std::log(q) / static_cast<double>(std::max(1, n)));
    return boost::math::quantile(
        boost::math::complement(boost::math::normal_distribution<>(), tail));
}

double straggler_slowdown(double spread, int gpus) {
    if (spread <= 0 || gpus <= 1)
        return 0.0;
    return spread * expected_max_standard_normal(gpus);
}

FrameworkSpec at_slowest_gpu(FrameworkSpec fw, int gpus) {
    fw.gemm_efficiency /= 1.0 + straggler_slowdown(fw.gpu_speed_spread, gpus);
    return fw;
}

StragglerBand straggler_slowdowns(double spread, int gpus) {
    StragglerBand b;
    b.spread = spread;
    if (spread <= 0 || gpus <= 1)
        return b;
    b.slowdown = straggler_slowdown(spread, gpus);
    b.slowdown_p05 = spread * max_standard_normal_quantile(gpus, 0.05);
    b.slowdown_p95 = spread * max_standard_normal_quantile(gpus, 0.95);
    return b;
}

double sync_wait(double jitter_s, int ranks) {
    if (jitter_s <= 0 || ranks <= 1)
        return 0.0;
    return jitter_s * expected_max_standard_normal(ranks);
}

double network_slowdown(double spread, int flows, double quantile) {
    if (spread <= 0 || flows <= 1)
        return 0.0;
    return spread * (quantile > 0 && quantile < 1 ? max_standard_normal_quantile(flows, quantile)
                                                  : expected_max_standard_normal(flows));
}

bool pipeline_exchanges_synchronise(const ExperimentSpec& e) {
    // Megatron's schedules only: not DeepSpeed's engine, nor torch.distributed.pipelining
    // (torch_pipelining.h). Megatron-LM of 2021 synchronised after every exchange in its
    // interleaved schedule too (NVIDIA/Megatron-LM@8cfef1bfe7, _communicate), but there one
    // call sends and receives a forward and a backward together in the steady state: its count
    // is not this one's, and it is left out.
    if (e.parallel.pp <= 1 || e.framework.deepspeed_pipeline || e.framework.dtensor_tp ||
        torch_pipelining(e))
        return false;
    return e.parallel.schedule == PipelineSchedule::one_f_one_b;
}

namespace {

/// A rank's pipeline exchanges in a step: one after each forward and one after each backward
/// of every micro-batch on each of its model chunks.
int pipeline_exchanges(const ExperimentSpec& e) {
    const int chunks =
        e.parallel.schedule == PipelineSchedule::interleaved_1f1b ? e.parallel.virtual_stages : 1;
    return 2 * e.micro_batches() * chunks;
}

} // namespace

int step_synchronisations(const ExperimentSpec& e) {
    if (e.training.forward_only)
        return 0;
    return 1 + (pipeline_exchanges_synchronise(e) ? pipeline_exchanges(e) : 0);
}

double pipeline_sync_wait(const ExperimentSpec& e) {
    if (!pipeline_exchanges_synchronise(e))
        return 0.0;
    return sync_wait(e.framework.sync_jitter.seconds(), 2 * e.parallel.tp * e.parallel.cp);
}

double step_sync_wait(const ExperimentSpec& e) {
    if (e.training.forward_only)
        return 0.0;
    return sync_wait(e.framework.sync_jitter.seconds(), e.gpus) +
           pipeline_exchanges(e) * pipeline_sync_wait(e);
}

FrameworkSpec with_slowest_gpu_at(FrameworkSpec fw, int gpus, double slowdown) {
    fw.gemm_efficiency *= (1.0 + straggler_slowdown(fw.gpu_speed_spread, gpus)) / (1.0 + slowdown);
    return fw;
}

} // namespace clustersim::strategies::parallel
