#include "calibrate/cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace clustersim::calibrate::cuda {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::size_t count) {
    const std::size_t blocks = (count + kThreads - 1) / kThreads;
    // A grid-stride loop covers the rest; 65535 blocks keep every GPU busy.
    return static_cast<unsigned>(blocks < 65535 ? (blocks == 0 ? 1 : blocks) : 65535);
}

/// The fill pattern: small integers in [-4, 4], different for each rank and index.
__device__ float pattern(int rank, std::size_t i) {
    return static_cast<float>(
        static_cast<int>((i * 3 + static_cast<std::size_t>(rank) * 5 + 1) % 9) - 4);
}

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
    return v;
}
template <>
__device__ __half from_float<__half>(float v) {
    return __float2half(v);
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) {
    return __nv_fp8_e4m3(v);
}

template <typename T>
__device__ float to_float(T v);
template <>
__device__ float to_float<float>(float v) {
    return v;
}
template <>
__device__ float to_float<__half>(__half v) {
    return __half2float(v);
}
template <>
__device__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <>
__device__ float to_float<__nv_fp8_e4m3>(__nv_fp8_e4m3 v) {
    return static_cast<float>(v);
}

template <typename T>
__global__ void fill_pattern_kernel(T* buffer, std::size_t count, int rank, std::size_t offset) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride)
        buffer[i] = from_float<T>(pattern(rank, offset + i));
}

template <typename T>
__global__ void fill_random_kernel(T* buffer, std::size_t count, unsigned seed) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride) {
        // splitmix-style hash of (index, seed) to [-1, 1).
        std::uint64_t z = i + 0x9e3779b97f4a7c15ULL * (seed + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        const float u = static_cast<float>(z >> 40) / static_cast<float>(1ULL << 24);
        buffer[i] = from_float<T>(2.0f * u - 1.0f);
    }
}

__device__ float expected(const CheckSpec& s, std::size_t i) {
    switch (s.mode) {
    case CheckSpec::sum: {
        float total = 0;
        for (int r = 0; r < s.nranks; ++r)
            total += pattern(r, s.offset + i);
        return total;
    }
    case CheckSpec::from_rank:
        return pattern(s.root, s.offset + i);
    case CheckSpec::gathered:
        return pattern(static_cast<int>(i / s.block), i % s.block);
    case CheckSpec::all_to_all:
        return pattern(static_cast<int>(i / s.block),
                       static_cast<std::size_t>(s.rank) * s.block + i % s.block);
    }
    return 0;
}

template <typename T>
__global__ void count_wrong_kernel(const T* buffer, std::size_t count, CheckSpec spec,
                                   unsigned long long* wrong) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    unsigned long long mine = 0;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride) {
        // Sums of small integers are exact in every type used, so equality is the test.
        if (!(to_float<T>(buffer[i]) == expected(spec, i)))
            ++mine;
    }
    if (mine > 0)
        atomicAdd(wrong, mine);
}

__global__ void empty_kernel() {
}

__global__ void spin_kernel(unsigned long long nanoseconds) {
    unsigned long long start = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    unsigned long long now = start;
    while (now - start < nanoseconds)
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

__global__ void busy_kernel(unsigned long long nanoseconds, float* sink) {
    unsigned long long start = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    unsigned long long now = start;
    float a = static_cast<float>(threadIdx.x) * 1e-3f, b = 1.0001f;
    while (now - start < nanoseconds) {
        for (int i = 0; i < 256; ++i)
            a = fmaf(a, b, 1e-7f);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    }
    if (a == 12345.0f) // never true in practice; keeps the arithmetic from being removed
        *sink = a;
}

__global__ void copy_kernel(uint4* dst, const uint4* src, std::size_t count) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride)
        dst[i] = src[i];
}

template <typename F>
cudaError_t dispatch(ElementType type, F&& f) {
    switch (type) {
    case ElementType::f32:
        return f(float{});
    case ElementType::f16:
        return f(__half{});
    case ElementType::bf16:
        return f(__nv_bfloat16{});
    case ElementType::f8e4m3:
        return f(__nv_fp8_e4m3{});
    }
    return cudaErrorInvalidValue;
}

} // namespace

std::size_t element_size(ElementType t) {
    switch (t) {
    case ElementType::f32:
        return 4;
    case ElementType::f16:
    case ElementType::bf16:
        return 2;
    case ElementType::f8e4m3:
        return 1;
    }
    return 0;
}

cudaError_t fill_pattern(void* buffer, std::size_t count, ElementType type, int rank,
                         std::size_t offset, cudaStream_t stream) {
    if (count == 0)
        return cudaSuccess;
    return dispatch(type, [&](auto tag) {
        using T = decltype(tag);
        fill_pattern_kernel<T><<<grid_for(count), kThreads, 0, stream>>>(static_cast<T*>(buffer),
                                                                         count, rank, offset);
        return cudaGetLastError();
    });
}

cudaError_t fill_random(void* buffer, std::size_t count, ElementType type, unsigned seed,
                        cudaStream_t stream) {
    if (count == 0)
        return cudaSuccess;
    return dispatch(type, [&](auto tag) {
        using T = decltype(tag);
        fill_random_kernel<T>
            <<<grid_for(count), kThreads, 0, stream>>>(static_cast<T*>(buffer), count, seed);
        return cudaGetLastError();
    });
}

cudaError_t count_wrong(const void* buffer, std::size_t count, ElementType type,
                        const CheckSpec& spec, unsigned long long* wrong, cudaStream_t stream) {
    if (count == 0)
        return cudaSuccess;
    return dispatch(type, [&](auto tag) {
        using T = decltype(tag);
        count_wrong_kernel<T><<<grid_for(count), kThreads, 0, stream>>>(
            static_cast<const T*>(buffer), count, spec, wrong);
        return cudaGetLastError();
    });
}

cudaError_t launch_empty(cudaStream_t stream) {
    empty_kernel<<<1, 1, 0, stream>>>();
    return cudaGetLastError();
}

cudaError_t launch_spin(unsigned long long nanoseconds, cudaStream_t stream) {
    spin_kernel<<<1, 1, 0, stream>>>(nanoseconds);
    return cudaGetLastError();
}

cudaError_t launch_busy(unsigned long long nanoseconds, int blocks, float* sink,
                        cudaStream_t stream) {
    const unsigned grid = blocks > 0 ? static_cast<unsigned>(blocks) : 1u;
    busy_kernel<<<grid, kThreads, 0, stream>>>(nanoseconds, sink);
    return cudaGetLastError();
}

cudaError_t launch_copy(void* dst, const void* src, std::size_t bytes, int blocks,
                        cudaStream_t stream) {
    if (bytes % sizeof(uint4) != 0 || reinterpret_cast<std::uintptr_t>(dst) % sizeof(uint4) != 0 ||
        reinterpret_cast<std::uintptr_t>(src) % sizeof(uint4) != 0)
        return cudaErrorInvalidValue;
    const unsigned grid = blocks > 0 ? static_cast<unsigned>(blocks) : 1u;
    copy_kernel<<<grid, kThreads, 0, stream>>>(
        static_cast<uint4*>(dst), static_cast<const uint4*>(src), bytes / sizeof(uint4));
    return cudaGetLastError();
}

} // namespace clustersim::calibrate::cuda
