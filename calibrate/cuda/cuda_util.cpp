#include "calibrate/cuda/cuda_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace clustersim::calibrate::cuda {
namespace {
[[noreturn]] void fail(std::string_view call, std::string_view what, std::source_location where) {
    std::string file = where.file_name();
    const auto pos = file.find("calibrate/");
    if (pos != std::string::npos)
        file = file.substr(pos);
    throw DeviceFailure(fmt::format("{} failed: {} ({}:{})", call, what, file, where.line()));
}
} // namespace

void check(cudaError_t status, std::string_view call, std::source_location where) {
    if (status != cudaSuccess)
        fail(call, cudaGetErrorString(status), where);
}
void check(ncclResult_t status, std::string_view call, std::source_location where) {
    if (status != ncclSuccess)
        fail(call, ncclGetErrorString(status), where);
}
void check(cublasStatus_t status, std::string_view call, std::source_location where) {
    if (status != CUBLAS_STATUS_SUCCESS)
        fail(call, cublasLtGetStatusString(status), where);
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes)
    : device_(device)
    , size_(bytes) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaMalloc(&ptr_, bytes == 0 ? 16 : bytes), "cudaMalloc");
}
DeviceBuffer::~DeviceBuffer() {
    if (ptr_ != nullptr) {
        // Errors while releasing are ignored: a destructor must not throw, and a failed
        // free after a failure elsewhere adds nothing.
        (void)cudaSetDevice(device_);
        (void)cudaFree(ptr_);
    }
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(other.device_)
    , ptr_(std::exchange(other.ptr_, nullptr))
    , size_(std::exchange(other.size_, 0)) {
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
        if (ptr_ != nullptr) {
            (void)cudaSetDevice(device_);
            (void)cudaFree(ptr_);
        }
        device_ = other.device_;
        ptr_ = std::exchange(other.ptr_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

HostBuffer::HostBuffer(std::size_t bytes) {
    check(cudaMallocHost(&ptr_, bytes), "cudaMallocHost");
}
HostBuffer::~HostBuffer() {
    if (ptr_ != nullptr)
        (void)cudaFreeHost(ptr_);
}

Stream::Stream(int device)
    : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}
Stream::~Stream() {
    if (stream_ != nullptr) {
        (void)cudaSetDevice(device_);
        (void)cudaStreamDestroy(stream_);
    }
}
Stream::Stream(Stream&& other) noexcept
    : device_(other.device_)
    , stream_(std::exchange(other.stream_, nullptr)) {
}

EventPair::EventPair(int device)
    : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
}
EventPair::~EventPair() {
    (void)cudaSetDevice(device_);
    if (start_ != nullptr)
        (void)cudaEventDestroy(start_);
    if (stop_ != nullptr)
        (void)cudaEventDestroy(stop_);
}
EventPair::EventPair(EventPair&& other) noexcept
    : device_(other.device_)
    , start_(std::exchange(other.start_, nullptr))
    , stop_(std::exchange(other.stop_, nullptr)) {
}
void EventPair::start(cudaStream_t stream) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaEventRecord(start_, stream), "cudaEventRecord");
}
void EventPair::stop(cudaStream_t stream) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaEventRecord(stop_, stream), "cudaEventRecord");
}
double EventPair::seconds() {
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
}

double median(std::vector<double> values) {
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double time_median(const Timing& timing, const std::vector<const Stream*>& streams,
                   const std::function<void()>& work) {
    std::vector<EventPair> events;
    events.reserve(streams.size());
    for (const auto* s : streams)
        events.emplace_back(s->device());
    auto batch = [&](int runs) {
        for (std::size_t i = 0; i < streams.size(); ++i)
            events[i].start(streams[i]->get());
        for (int r = 0; r < runs; ++r)
            work();
        for (std::size_t i = 0; i < streams.size(); ++i)
            events[i].stop(streams[i]->get());
        double slowest = 0;
        for (auto& e : events)
            slowest = std::max(slowest, e.seconds());
        return slowest / runs;
    };
    for (int i = 0; i < timing.warmup; ++i)
        work();
    const double estimate = batch(1);
    int runs = 1;
    if (estimate > 0 && estimate < timing.min_batch_seconds)
        runs = static_cast<int>(
            std::min<double>(timing.max_batch, std::ceil(timing.min_batch_seconds / estimate)));
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(timing.repetitions));
    for (int r = 0; r < timing.repetitions; ++r)
        samples.push_back(batch(runs));
    return median(samples);
}

std::size_t free_memory(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    std::size_t free = 0;
    std::size_t total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return free;
}

std::string format_size(std::size_t bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    std::size_t v = bytes;
    while (u < 4 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        ++u;
    }
    return fmt::format("{} {}", v, units[u]);
}

} // namespace clustersim::calibrate::cuda
