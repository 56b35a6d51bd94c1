// The environment of a calibration run: which GPUs, which driver and libraries, when, where.
#include "calibrate/cuda/runners.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <regex>
#include <unistd.h>

namespace clustersim::calibrate::cuda {

int device_count() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError(); // clear the sticky "no device" error
        return 0;
    }
    return count;
}

std::string why_no_device() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        return cudaGetErrorString(status);
    }
    return count == 0 ? "the driver reports no device" : "";
}

namespace {
/// The NVIDIA kernel driver's version, from /proc (Linux); "" elsewhere. NVML would say the
/// same, but linking it would make the binary fail to start on machines without a driver.
std::string kernel_driver_version() {
    std::ifstream in("/proc/driver/nvidia/version");
    std::string line;
    if (!in || !std::getline(in, line))
        return "";
    static const std::regex version(R"(Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?))");
    std::smatch m;
    return std::regex_search(line, m, version) ? m[1].str() : "";
}

std::string cuda_version_text(int v) {
    return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

std::string utc_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}
} // namespace

Environment environment(const std::vector<int>& devices, std::vector<std::string>& warnings) {
    Environment e;
    e.device_count = static_cast<int>(devices.size());
    for (int d : devices) {
        cudaDeviceProp prop{};
        check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
        if (e.device == "unknown")
            e.device = prop.name;
        else if (e.device != prop.name)
            warnings.push_back(fmt::format("GPU {} is a {}, GPU 0 a {}: the file records GPU 0's "
                                           "name; use --gpus to measure identical GPUs only",
                                           d, prop.name, e.device));
    }
    e.driver_version = kernel_driver_version();
    int runtime = 0;
    int driver = 0;
    check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
    e.cuda_version = fmt::format("runtime {}, driver API {}", cuda_version_text(runtime),
                                 cuda_version_text(driver));
    int nccl = 0;
    check(ncclGetVersion(&nccl), "ncclGetVersion");
    // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
    e.nccl_version = fmt::format("{}.{}.{}", nccl / 10000, nccl / 100 % 100, nccl % 100);
    const std::size_t lt = cublasLtGetVersion();
    e.cublas_version = fmt::format("{}.{}.{}", lt / 10000, lt / 100 % 100, lt % 100);
    e.date = utc_now();
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0)
        e.host = host;
    return e;
}

} // namespace clustersim::calibrate::cuda
