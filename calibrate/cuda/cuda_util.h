#pragma once
/// \file
/// Host-side helpers of the CUDA runners: every CUDA, NCCL and cuBLAS return code goes
/// through `check`, which throws a DeviceFailure naming the call and where it was made;
/// buffers, streams and events are owned by small RAII types; times are taken as the median
/// of repeated batches timed with CUDA events.

#include "calibrate/runner.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <functional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate::cuda {

void check(cudaError_t status, std::string_view call,
           std::source_location where = std::source_location::current());
void check(ncclResult_t status, std::string_view call,
           std::source_location where = std::source_location::current());
void check(cublasStatus_t status, std::string_view call,
           std::source_location where = std::source_location::current());

/// Device memory on one GPU.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(int device, std::size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* get() const { return ptr_; }
    char* bytes() const { return static_cast<char*>(ptr_); }
    std::size_t size() const { return size_; }

private:
    int device_ = 0;
    void* ptr_ = nullptr;
    std::size_t size_ = 0;
};

/// Pinned host memory.
class HostBuffer {
public:
    explicit HostBuffer(std::size_t bytes);
    ~HostBuffer();
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;
    void* get() const { return ptr_; }

private:
    void* ptr_ = nullptr;
};

/// A non-blocking stream on one GPU.
class Stream {
public:
    explicit Stream(int device);
    ~Stream();
    Stream(Stream&& other) noexcept;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream& operator=(Stream&&) = delete;
    cudaStream_t get() const { return stream_; }
    int device() const { return device_; }

private:
    int device_ = 0;
    cudaStream_t stream_ = nullptr;
};

/// A pair of timing events on one GPU.
class EventPair {
public:
    explicit EventPair(int device);
    ~EventPair();
    EventPair(EventPair&& other) noexcept;
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;
    EventPair& operator=(EventPair&&) = delete;
    void start(cudaStream_t stream);
    void stop(cudaStream_t stream);
    /// Waits for the stop event; seconds between the two.
    double seconds();

private:
    int device_ = 0;
    cudaEvent_t start_ = nullptr;
    cudaEvent_t stop_ = nullptr;
};

/// How long to measure each point.
struct Timing {
    int warmup = 5;                  ///< untimed runs first
    int repetitions = 20;            ///< timed batches; the median is kept
    double min_batch_seconds = 2e-3; ///< a batch repeats the work until it lasts this long
    int max_batch = 1000;            ///< ... but at most this many times
};

/// Times `work` (which enqueues one unit of work on the streams of `streams`): warm-up, then
/// a one-run estimate to size the batches, then `repetitions` batches each timed by events on
/// every stream; a batch's time per unit is the slowest stream's; returns the median over
/// batches, in seconds.
double time_median(const Timing& timing, const std::vector<const Stream*>& streams,
                   const std::function<void()>& work);

double median(std::vector<double> values);

/// Bytes free on the GPU now.
std::size_t free_memory(int device);

/// "1 GiB", "512 KiB", "8 B".
std::string format_size(std::size_t bytes);

} // namespace clustersim::calibrate::cuda
