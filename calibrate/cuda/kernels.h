#pragma once
/// \file
/// The few kernels the runners need, behind plain host functions so that the runners' host
/// code is ordinary C++ (compiled with the project's warnings) and only kernels.cu goes
/// through nvcc. Every function returns the launch's cudaError_t; none synchronizes.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace clustersim::calibrate::cuda {

/// Element types the kernels read and write.
enum class ElementType { f32, f16, bf16, f8e4m3 };

/// Bytes per element.
std::size_t element_size(ElementType t);

/// What a correctness check expects at element i of a buffer, in terms of the fill pattern
/// p(rank, j) (small integers, so every sum of up to 64 of them is exact in fp16 and bf16).
struct CheckSpec {
    enum Mode {
        sum,        ///< sum over ranks r < nranks of p(r, offset + i)
        from_rank,  ///< p(root, offset + i)
        gathered,   ///< p(i / block, i % block): block b came from rank b
        all_to_all, ///< p(i / block, rank * block + i % block)
    };
    Mode mode = sum;
    int nranks = 1;
    int rank = 0;
    int root = 0;
    std::size_t block = 1;
    std::size_t offset = 0;
};

/// Writes p(rank, offset + i) to elements [0, count).
cudaError_t fill_pattern(void* buffer, std::size_t count, ElementType type, int rank,
                         std::size_t offset, cudaStream_t stream);
/// Writes pseudo-random values in [-1, 1) (a hash of the index and seed): GEMM inputs.
cudaError_t fill_random(void* buffer, std::size_t count, ElementType type, unsigned seed,
                        cudaStream_t stream);
/// Adds to *wrong (device memory) the number of elements of [0, count) that differ from
/// what `spec` expects.
cudaError_t count_wrong(const void* buffer, std::size_t count, ElementType type,
                        const CheckSpec& spec, unsigned long long* wrong, cudaStream_t stream);

/// An empty kernel: what launch overhead is measured with.
cudaError_t launch_empty(cudaStream_t stream);
/// A kernel that waits `nanoseconds` on the GPU's global timer, so that the host can queue
/// work behind it.
cudaError_t launch_spin(unsigned long long nanoseconds, cudaStream_t stream);
/// Arithmetic on `blocks` blocks for `nanoseconds`: brings an idle GPU up to its working
/// clocks before anything is timed. `sink` (device memory, one float) is never written in
/// practice; it keeps the compiler from removing the arithmetic.
cudaError_t launch_busy(unsigned long long nanoseconds, int blocks, float* sink,
                        cudaStream_t stream);
/// Copies `bytes` (a multiple of 16, both pointers 16-byte aligned) with 16-byte loads and
/// stores over `blocks` blocks: the HBM copy kernel.
cudaError_t launch_copy(void* dst, const void* src, std::size_t bytes, int blocks,
                        cudaStream_t stream);

} // namespace clustersim::calibrate::cuda
