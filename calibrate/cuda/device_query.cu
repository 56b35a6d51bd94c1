#include "calibrate/cuda/device_query.h"

#include <cuda_runtime.h>

namespace clustersim::calibrate::cuda {
namespace {
__global__ void write_value(int* out, int value) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *out = value;
}
} // namespace

std::vector<DeviceInfo> visible_devices() {
    std::vector<DeviceInfo> devices;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError(); // clear the sticky "no device" error
        return devices;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
            continue;
        devices.push_back(DeviceInfo{i, prop.name, prop.multiProcessorCount,
                                     static_cast<long long>(prop.totalGlobalMem),
                                     prop.major * 10 + prop.minor});
    }
    return devices;
}

bool smoke_test(int device) {
    if (cudaSetDevice(device) != cudaSuccess)
        return false;
    int* d = nullptr;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess)
        return false;
    write_value<<<1, 32>>>(d, 42);
    int h = 0;
    const bool ok = cudaGetLastError() == cudaSuccess &&
                    cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess &&
                    h == 42;
    cudaFree(d);
    return ok;
}

} // namespace clustersim::calibrate::cuda
