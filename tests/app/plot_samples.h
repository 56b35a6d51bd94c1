#pragma once
// Sample charts with realistic made-up data, shaped like what `run --timeline`, `scale --plot`,
// `bubble --plot` and `collective` will draw. They exercise the plotting module in the tests
// and produce docs/images/*.svg (tests/app/test_plot_samples.cpp, "[samples]"), which real
// runs will replace. Nothing here is a model of anything: a toy list scheduler places the
// pipeline's micro-batches so that the timeline has the right shape.

#include "app/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace clustersim::app::samples {

enum class PipelineSchedule { gpipe, one_f_one_b };

struct PipelineSample {
    GanttChart chart;
    double bubble_closed_form = 0; // (p-1)/(m+p-1)
};

/// A p-stage pipeline with m micro-batches: forward `tf`, backward `tb` per micro-batch and
/// stage, an activation or gradient send of `tc` between stages, then a data-parallel
/// all-reduce and the optimizer step. Streams: compute, PP comm, DP comm.
inline PipelineSample pipeline_sample(PipelineSchedule schedule, int p, int m,
                                      bool with_streams = true) {
    const double tf = 2.1e-3, tb = 4.3e-3, tc = 0.18e-3, t_ar = 3.2e-3, t_opt = 0.9e-3;
    struct Op {
        bool forward;
        int mb;
    };
    std::vector<std::vector<Op>> order(static_cast<std::size_t>(p));
    for (int s = 0; s < p; ++s) {
        auto& o = order[static_cast<std::size_t>(s)];
        if (schedule == PipelineSchedule::gpipe) {
            for (int i = 0; i < m; ++i)
                o.push_back({true, i});
            for (int i = 0; i < m; ++i)
                o.push_back({false, i});
        } else {
            const int warmup = std::min(p - s - 1, m);
            for (int i = 0; i < warmup; ++i)
                o.push_back({true, i});
            for (int i = 0; i < m - warmup; ++i) {
                o.push_back({true, warmup + i});
                o.push_back({false, i});
            }
            for (int i = m - warmup; i < m; ++i)
                o.push_back({false, i});
        }
    }
    // Arrival times of activations (forward) and gradients (backward) at each stage.
    const double never = -1;
    std::vector<std::vector<double>> f_ready(
        static_cast<std::size_t>(p), std::vector<double>(static_cast<std::size_t>(m), never));
    auto b_ready = f_ready;
    auto f_done = f_ready;
    for (int i = 0; i < m; ++i)
        f_ready[0][static_cast<std::size_t>(i)] = 0;
    std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
    std::vector<double> free_at(static_cast<std::size_t>(p), 0);
    std::vector<double> comm_free(static_cast<std::size_t>(p), 0);

    GanttChart c;
    for (int s = 0; s < p; ++s) {
        GanttLane lane{fmt::format("stage {} / GPU {}", s, s), {}};
        lane.streams.push_back({with_streams ? "compute" : "", true});
        if (with_streams) {
            lane.streams.push_back({"PP comm", false});
            lane.streams.push_back({"DP comm", false});
        }
        c.lanes.push_back(lane);
    }
    const auto send = [&](int from, double at) {
        auto& cf = comm_free[static_cast<std::size_t>(from)];
        const double start = std::max(at, cf);
        cf = start + tc;
        if (with_streams)
            c.bars.push_back({static_cast<std::size_t>(from), 1, start, start + tc,
                              std::string(gantt_kind::pp_comm), ""});
        return start + tc;
    };
    for (bool progress = true; progress;) {
        progress = false;
        for (int s = 0; s < p; ++s) {
            const auto su = static_cast<std::size_t>(s);
            while (next[su] < order[su].size()) {
                const Op op = order[su][next[su]];
                const auto mb = static_cast<std::size_t>(op.mb);
                const double ready = op.forward ? f_ready[su][mb] : b_ready[su][mb];
                if (ready < 0)
                    break;
                const double start = std::max(ready, free_at[su]);
                const double end = start + (op.forward ? tf : tb);
                free_at[su] = end;
                c.bars.push_back(
                    {su, 0, start, end,
                     std::string(op.forward ? gantt_kind::forward : gantt_kind::backward),
                     fmt::format("{}{}", op.forward ? 'F' : 'B', op.mb)});
                if (op.forward) {
                    f_done[su][mb] = end;
                    if (s + 1 < p)
                        f_ready[su + 1][mb] = send(s, end);
                    else
                        b_ready[su][mb] = end; // the loss: backward starts on the last stage
                } else if (s > 0) {
                    b_ready[su - 1][mb] = send(s, end);
                }
                ++next[su];
                progress = true;
            }
        }
    }
    double step_end = 0;
    for (int s = 0; s < p; ++s) {
        const auto su = static_cast<std::size_t>(s);
        double t = free_at[su];
        if (with_streams) {
            c.bars.push_back({su, 2, t, t + t_ar, std::string(gantt_kind::dp_comm), "all-reduce"});
            t += t_ar;
        }
        c.bars.push_back({su, 0, t, t + t_opt, std::string(gantt_kind::optimizer), "opt"});
        step_end = std::max(step_end, t + t_opt);
    }
    c.end_s = step_end;
    const double bubble = static_cast<double>(p - 1) / (m + p - 1);
    const char* name = schedule == PipelineSchedule::gpipe ? "GPipe" : "1F1B";
    c.title = fmt::format("{} pipeline schedule, one training step", name);
    c.subtitle = fmt::format("{}, p={}, m={}: bubble (p-1)/(m+p-1) = {:.0f}%  (sample data)", name,
                             p, m, bubble * 100);
    return {c, bubble};
}

/// Throughput and scaling efficiency against GPU count, with ideal linear scaling dashed.
inline LineChart scaling_sample() {
    LineChart c;
    c.title = "GPT-3 175B on A100 clusters: weak scaling";
    c.subtitle = "best tp x pp x dp per GPU count (sample data)";
    c.x = {"GPUs", AxisScale::log2, TickFormat::integer, {}, {}, true};
    c.y = {"throughput (tokens/s)", AxisScale::log10, TickFormat::number, {}, {}, true};
    c.y2 = Axis{"scaling efficiency", AxisScale::linear, TickFormat::percent, 0.0, 1.0, true};
    Series thr{"throughput", {}, {}, LineStyle::solid, true, false, "thr"};
    Series ideal{"ideal (linear)", {}, {}, LineStyle::dashed, false, false, "ideal"};
    Series eff{"efficiency", {}, {}, LineStyle::solid, true, true, "eff"};
    const double per_gpu = 148.0; // tokens/s per GPU at 64 GPUs
    for (int n = 64; n <= 4096; n *= 2) {
        const double e =
            1.0 - 0.045 * std::log2(n / 64.0) - 0.004 * std::pow(std::log2(n / 64.0), 2);
        thr.x.push_back(n);
        thr.y.push_back(per_gpu * n * e);
        ideal.x.push_back(n);
        ideal.y.push_back(per_gpu * n);
        eff.x.push_back(n);
        eff.y.push_back(e);
    }
    c.series = {thr, ideal, eff};
    return c;
}

/// Bubble fraction against micro-batches: simulated points next to the closed forms.
inline LineChart bubble_sample() {
    const int p = 8, v = 3;
    LineChart c;
    c.title = "Pipeline bubble against micro-batches";
    c.subtitle =
        fmt::format("p = {} stages, interleaved with v = {} virtual stages (sample data)", p, v);
    c.footnote = "dashed: closed forms, GPipe and 1F1B (p-1)/(m+p-1), interleaved (p-1)/(v m+p-1)";
    c.x = {"micro-batches per step (m)", AxisScale::log2, TickFormat::number, {}, {}, true};
    c.y = {"bubble fraction of the step", AxisScale::linear, TickFormat::percent, {}, 1.0, true};
    Series gp{"GPipe", {}, {}, LineStyle::solid, true, false, "gpipe"};
    Series ofob{"1F1B", {}, {}, LineStyle::solid, true, false, "1f1b"};
    Series il{"interleaved 1F1B", {}, {}, LineStyle::solid, true, false, "il"};
    Series cf{"(p-1)/(m+p-1)", {}, {}, LineStyle::dashed, false, false, "gpipe"};
    Series cfi{"(p-1)/(v m+p-1)", {}, {}, LineStyle::dashed, false, false, "il"};
    for (int m = 1; m <= 128; m *= 2) {
        const double closed = (p - 1.0) / (m + p - 1.0);
        const double closed_i = (p - 1.0) / (v * m + p - 1.0);
        gp.x.push_back(m);
        gp.y.push_back(closed * 1.04 + 0.006);
        ofob.x.push_back(m);
        ofob.y.push_back(closed * 1.02 + 0.004);
        cf.x.push_back(m);
        cf.y.push_back(closed);
        cfi.x.push_back(m);
        cfi.y.push_back(closed_i);
        if (m >= 8) { // interleaving needs m to be a multiple of p
            il.x.push_back(m);
            il.y.push_back(closed_i * 1.08 + 0.01);
        }
    }
    c.series = {gp, ofob, il, cf, cfi};
    return c;
}

/// Bus bandwidth against message size, nccl-tests style: log2 bytes on x.
inline LineChart busbw_sample() {
    LineChart c;
    c.title = "all-reduce bus bandwidth, 8x H100 (NVLink 4 + NVSwitch)";
    c.subtitle = "busbw = algbw * 2(n-1)/n, as nccl-tests reports (sample data)";
    c.x = {"message size", AxisScale::log2, TickFormat::bytes, {}, {}, true};
    c.y = {"bus bandwidth (GB/s)", AxisScale::linear, TickFormat::number, {}, {}, true};
    Series ring{"ring, simulated", {}, {}, LineStyle::solid, true, false, "ring"};
    Series nvls{"NVLS, simulated", {}, {}, LineStyle::solid, true, false, "nvls"};
    Series meas{"ring, measured", {}, {}, LineStyle::dashed, true, false, "meas"};
    const double n = 8, peak_ring = 360e9, peak_nvls = 470e9;
    for (int e = 3; e <= 33; ++e) {
        const double bytes = std::ldexp(1.0, e);
        const auto busbw = [&](double peak, double alpha) {
            const double t = alpha + 2 * (n - 1) / n * bytes / peak;
            return bytes / t * 2 * (n - 1) / n / 1e9;
        };
        ring.x.push_back(bytes);
        ring.y.push_back(busbw(peak_ring, 14e-6));
        nvls.x.push_back(bytes);
        nvls.y.push_back(busbw(peak_nvls, 22e-6));
        if (e % 2 == 1) {
            meas.x.push_back(bytes);
            meas.y.push_back(busbw(peak_ring * 0.96, 16e-6) * (1 + 0.02 * std::sin(e)));
        }
    }
    c.series = {ring, nvls, meas};
    return c;
}

} // namespace clustersim::app::samples
