#pragma once
/// \file
/// Internal to the PyTorch profiler trace reader (calibrate/kineto.cpp): what an op's recorded
/// inputs say of its kernels' work (OpShapes: a GEMM's shape and layout, attention's and
/// memory-bound kernels' FLOPs and bytes), PyTorch's type names, and the GEMM points, one median
/// per shape. No other module includes it.

#include "calibrate/kineto_events.h"
#include "calibrate/measurements.h"
#include "hardware/dtype.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::calibrate::kineto_detail {

inline bool contains(std::string_view s, std::string_view what) {
    return s.find(what) != std::string_view::npos;
}
inline bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}
/// ASCII lower case.
std::string lower(std::string_view s);

/// PyTorch's C++ type names in "Input type" to bytes and model dtypes.
struct TorchType {
    std::int64_t bytes = 0;
    std::optional<hardware::Dtype> dtype;
};
TorchType torch_type(std::string_view t);
/// c10 ScalarType names in the NCCL args ("BFloat16", "Float").
std::int64_t scalar_type_bytes(std::string_view t);
/// Where SDPA's is_causal sits among an op's inputs (PyTorch's native_functions.yaml); -1 none.
int causal_index(std::string_view op);

/// A GEMM op's instance: its shape and layout, and its kernels' time summed.
struct GemmInstance {
    std::int64_t m, n, k;
    hardware::Dtype dtype;
    std::string layout;
    std::int64_t ns;
    std::size_t first;
};

/// An op's recorded inputs: their shapes and, read from them, a GEMM's, attention's or
/// memory-bound kernel's work.
class OpShapes {
public:
    OpShapes(const Parsed& p, const Event& op);
    /// The shapes and the dtype (the first input's that has one) onto `k`.
    void describe(KernelMeasurement& k) const;
    /// A GEMM's FLOPs: mm(a[M,K], b[K,N]); addmm(bias, a, b); linear(x[..., K], w[N, K]).
    /// Returns its instance (shape and cuBLAS layout) when the shape is known.
    std::optional<GemmInstance> gemm(KernelMeasurement& k) const;
    /// Attention's FLOPs: SDPA's q [B, H, S, D], k [B, H, Skv, D] (backward: grad_out first),
    /// or bmm / baddbmm's.
    void attention(KernelMeasurement& k) const;
    /// A memory-bound kernel's bytes: its inputs' sizes.
    void memory(KernelMeasurement& k) const;

private:
    std::int64_t dim(std::size_t in, std::size_t at) const {
        return in < dims_.size() && at < dims_[in].size() ? std::max<std::int64_t>(dims_[in][at], 0)
                                                          : 0;
    }
    std::size_t rank(std::size_t in) const { return in < dims_.size() ? dims_[in].size() : 0; }

    const Parsed& p_;
    const Event& op_;
    const Dims& dims_;
    std::vector<TorchType> types_;
};

/// GEMMs: per shape, the median over op calls of the op's kernels' time.
std::vector<GemmMeasurement> gemm_medians(const std::map<int, GemmInstance>& gemm_by_op,
                                          const std::string& name);

} // namespace clustersim::calibrate::kineto_detail
