// Memory copies and kernel launch overhead.
//
// Copies: on the first GPU, device-to-device with a copy kernel (the SMs' view of HBM) and
// with cudaMemcpy (the copy engines'); host-to-device and device-to-host from pinned memory;
// and peer copies from GPU 0 to the others (cudaMemcpyPeer, with peer access enabled where
// the GPUs allow it). Launches: an empty kernel's cost on the host (one asynchronous launch
// call), on the GPU (queued back to back), and launch + synchronize (the round trip).
#include "calibrate/cuda/kernels.h"
#include "calibrate/cuda/runners.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace clustersim::calibrate::cuda {
namespace {

std::vector<std::size_t> sizes(std::size_t min, std::size_t max, std::size_t factor) {
    std::vector<std::size_t> out;
    for (std::size_t s = min; s <= max; s *= factor)
        out.push_back(s);
    return out;
}

CopyMeasurement copy_point(CopyKind kind, CopyMethod method, std::size_t bytes, int src, int dst,
                           double seconds) {
    CopyMeasurement c;
    c.kind = kind;
    c.method = method;
    c.bytes = static_cast<std::int64_t>(bytes);
    c.src_gpu = src;
    c.dst_gpu = dst;
    c.time = std::max(sim::Time::from_seconds(seconds), sim::Time::ps(1));
    return c;
}

} // namespace

std::vector<CopyMeasurement> run_copies(const Context& ctx) {
    const bool quick = ctx.options->quick;
    const int gpu = ctx.devices.front();
    check(cudaSetDevice(gpu), "cudaSetDevice");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties");
    Stream stream(gpu);
    std::vector<CopyMeasurement> out;

    // Device to device: two buffers of the largest size that fits (up to 4 GiB; 1 GiB quick).
    std::size_t largest = quick ? std::size_t{1} << 30 : std::size_t{4} << 30;
    while (largest > (std::size_t{1} << 20) && 2 * largest > free_memory(gpu) * 8 / 10)
        largest /= 2;
    {
        DeviceBuffer src(gpu, largest);
        DeviceBuffer dst(gpu, largest);
        check(fill_random(src.get(), largest / 4, ElementType::f32, 3, stream.get()),
              "fill_random");
        double best_kernel = 0;
        double best_memcpy = 0;
        for (const std::size_t bytes : sizes(quick ? 1 << 20 : 64 << 10, largest, quick ? 4 : 2)) {
            const double tk = time_median(ctx.timing, {&stream}, [&] {
                check(launch_copy(dst.get(), src.get(), bytes, prop.multiProcessorCount * 8,
                                  stream.get()),
                      "launch_copy");
            });
            out.push_back(
                copy_point(CopyKind::device_to_device, CopyMethod::kernel, bytes, gpu, gpu, tk));
            if (!out.back().cache_resident(prop.l2CacheSize))
                best_kernel = std::max(best_kernel, out.back().bandwidth());
            const double tm = time_median(ctx.timing, {&stream}, [&] {
                check(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice,
                                      stream.get()),
                      "cudaMemcpyAsync");
            });
            out.push_back(
                copy_point(CopyKind::device_to_device, CopyMethod::memcpy, bytes, gpu, gpu, tm));
            if (!out.back().cache_resident(prop.l2CacheSize))
                best_memcpy = std::max(best_memcpy, out.back().bandwidth());
        }
        // HBM traffic is twice the copy rate: every byte is read and written. Copies that fit
        // in the L2 are measured (the model skips them) but not summarised as HBM.
        ctx.report(fmt::format("  HBM copy: kernel {:.0f} GB/s, cudaMemcpy {:.0f} GB/s "
                               "(read + write: twice that)",
                               best_kernel / 1e9, best_memcpy / 1e9));
    }

    // Host <-> device, pinned host memory.
    {
        const std::size_t host_largest = quick ? std::size_t{256} << 20 : std::size_t{1} << 30;
        HostBuffer host(host_largest);
        DeviceBuffer dev(gpu, host_largest);
        double h2d = 0;
        double d2h = 0;
        for (const std::size_t bytes : sizes(quick ? 1 << 20 : 64 << 10, host_largest, 4)) {
            const double t1 = time_median(ctx.timing, {&stream}, [&] {
                check(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice,
                                      stream.get()),
                      "cudaMemcpyAsync");
            });
            out.push_back(
                copy_point(CopyKind::host_to_device, CopyMethod::memcpy, bytes, gpu, gpu, t1));
            h2d = std::max(h2d, out.back().bandwidth());
            const double t2 = time_median(ctx.timing, {&stream}, [&] {
                check(cudaMemcpyAsync(host.get(), dev.get(), bytes, cudaMemcpyDeviceToHost,
                                      stream.get()),
                      "cudaMemcpyAsync");
            });
            out.push_back(
                copy_point(CopyKind::device_to_host, CopyMethod::memcpy, bytes, gpu, gpu, t2));
            d2h = std::max(d2h, out.back().bandwidth());
        }
        ctx.report(fmt::format("  host to device {:.1f} GB/s, device to host {:.1f} GB/s",
                               h2d / 1e9, d2h / 1e9));
    }

    // Peer copies from GPU 0 (to GPU 1 only in --quick).
    const int last = quick ? std::min<int>(1, static_cast<int>(ctx.devices.size()) - 1)
                           : static_cast<int>(ctx.devices.size()) - 1;
    for (int i = 1; i <= last; ++i) {
        const int peer = ctx.devices[static_cast<std::size_t>(i)];
        int can = 0;
        check(cudaDeviceCanAccessPeer(&can, gpu, peer), "cudaDeviceCanAccessPeer");
        if (can != 0) {
            check(cudaSetDevice(gpu), "cudaSetDevice");
            const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled)
                (void)cudaGetLastError();
            else
                check(e, "cudaDeviceEnablePeerAccess");
        } else {
            ctx.warn(fmt::format("GPU {} cannot access GPU {} directly: peer copies between them "
                                 "go through host memory",
                                 gpu, peer));
        }
        const std::size_t peer_largest =
            std::min<std::size_t>(quick ? std::size_t{256} << 20 : std::size_t{1} << 30, largest);
        DeviceBuffer src(gpu, peer_largest);
        DeviceBuffer dst(peer, peer_largest);
        double best = 0;
        for (const std::size_t bytes : sizes(quick ? 1 << 20 : 64 << 10, peer_largest, 4)) {
            const double t = time_median(ctx.timing, {&stream}, [&] {
                check(cudaMemcpyPeerAsync(dst.get(), peer, src.get(), gpu, bytes, stream.get()),
                      "cudaMemcpyPeerAsync");
            });
            out.push_back(copy_point(CopyKind::peer, CopyMethod::memcpy, bytes, gpu, peer, t));
            best = std::max(best, out.back().bandwidth());
        }
        ctx.report(fmt::format("  peer copy gpu{} -> gpu{}: {:.1f} GB/s", gpu, peer, best / 1e9));
    }
    return out;
}

void raise_clocks(const Context& ctx, double seconds) {
    const auto ns = static_cast<unsigned long long>(seconds * 1e9);
    std::vector<std::unique_ptr<Stream>> streams;
    std::vector<DeviceBuffer> sinks;
    for (const int gpu : ctx.devices) {
        check(cudaSetDevice(gpu), "cudaSetDevice");
        cudaDeviceProp prop{};
        check(cudaGetDeviceProperties(&prop, gpu), "cudaGetDeviceProperties");
        streams.push_back(std::make_unique<Stream>(gpu));
        sinks.emplace_back(gpu, sizeof(float));
        check(launch_busy(ns, prop.multiProcessorCount * 4, static_cast<float*>(sinks.back().get()),
                          streams.back()->get()),
              "launch_busy");
    }
    for (const auto& s : streams)
        check(cudaStreamSynchronize(s->get()), "cudaStreamSynchronize");
}

std::vector<LaunchMeasurement> run_launches(const Context& ctx) {
    const int gpu = ctx.devices.front();
    Stream stream(gpu);
    check(cudaSetDevice(gpu), "cudaSetDevice");
    const int repetitions = ctx.timing.repetitions;
    using clock = std::chrono::steady_clock;
    std::vector<LaunchMeasurement> out;
    for (int i = 0; i < 100; ++i) // warm-up: module loading, first-launch costs
        check(launch_empty(stream.get()), "launch_empty");
    check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");

    // Host: the CPU time of one asynchronous launch. 256 launches stay well inside the
    // launch queue, so no call waits for the GPU.
    const int batch = 256;
    {
        std::vector<double> samples;
        for (int r = 0; r < repetitions; ++r) {
            const auto t0 = clock::now();
            for (int i = 0; i < batch; ++i)
                check(launch_empty(stream.get()), "launch_empty");
            const auto t1 = clock::now();
            check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
            samples.push_back(std::chrono::duration<double>(t1 - t0).count() / batch);
        }
        out.push_back(LaunchMeasurement{
            LaunchMethod::host_submit,
            std::max(sim::Time::from_seconds(median(samples)), sim::Time::ps(1)), batch, ""});
    }
    // GPU: kernels queued behind a 10 ms spin, so they run back to back however slowly the
    // host launches them.
    {
        EventPair events(gpu);
        std::vector<double> samples;
        for (int r = 0; r < repetitions; ++r) {
            check(launch_spin(10'000'000, stream.get()), "launch_spin");
            events.start(stream.get());
            for (int i = 0; i < batch; ++i)
                check(launch_empty(stream.get()), "launch_empty");
            events.stop(stream.get());
            samples.push_back(events.seconds() / batch);
        }
        out.push_back(LaunchMeasurement{
            LaunchMethod::gpu_back_to_back,
            std::max(sim::Time::from_seconds(median(samples)), sim::Time::ps(1)), batch, ""});
    }
    // Round trip: launch, then wait for it.
    {
        std::vector<double> samples;
        const int trips = 20 * repetitions;
        for (int r = 0; r < trips; ++r) {
            const auto t0 = clock::now();
            check(launch_empty(stream.get()), "launch_empty");
            check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
            samples.push_back(std::chrono::duration<double>(clock::now() - t0).count());
        }
        out.push_back(LaunchMeasurement{
            LaunchMethod::launch_and_sync,
            std::max(sim::Time::from_seconds(median(samples)), sim::Time::ps(1)), 1, ""});
    }
    ctx.report(fmt::format("  launch: host {:.2f} us, GPU back to back {:.2f} us, round trip "
                           "{:.2f} us",
                           out[0].time.microseconds(), out[1].time.microseconds(),
                           out[2].time.microseconds()));
    return out;
}

} // namespace clustersim::calibrate::cuda
