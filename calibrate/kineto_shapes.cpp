#include "calibrate/kineto_shapes.h"

#include "hardware/compute_model.h"

#include <fmt/format.h>

#include <tuple>

namespace clustersim::calibrate::kineto_detail {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

TorchType torch_type(std::string_view t) {
    using hardware::Dtype;
    if (t == "float")
        return {4, Dtype::fp32};
    if (t == "c10::Half")
        return {2, Dtype::fp16};
    if (t == "c10::BFloat16")
        return {2, Dtype::bf16};
    if (t == "double")
        return {8, Dtype::fp64};
    if (starts_with(t, "c10::Float8_"))
        return {1, Dtype::fp8};
    if (t == "long int" || t == "long" || t == "int64_t")
        return {8, std::nullopt};
    if (t == "int")
        return {4, std::nullopt};
    if (t == "short int")
        return {2, std::nullopt};
    if (t == "bool" || t == "unsigned char" || t == "signed char")
        return {1, std::nullopt};
    if (t == "c10::complex<float>")
        return {8, std::nullopt};
    return {0, std::nullopt};
}

std::int64_t scalar_type_bytes(std::string_view t) {
    const std::string l = lower(t);
    if (l == "float" || l == "int" || l == "float32")
        return 4;
    if (l == "half" || l == "bfloat16" || l == "short")
        return 2;
    if (l == "double" || l == "long" || l == "complexfloat")
        return 8;
    if (l == "byte" || l == "char" || l == "bool" || starts_with(l, "float8"))
        return 1;
    return 0;
}

int causal_index(std::string_view op) {
    if (op == "aten::scaled_dot_product_attention")
        return 5;
    if (op == "aten::_scaled_dot_product_flash_attention")
        return 4;
    if (op == "aten::_scaled_dot_product_efficient_attention")
        return 6;
    if (op == "aten::_scaled_dot_product_cudnn_attention")
        return 6;
    if (op == "aten::_scaled_dot_product_flash_attention_backward" ||
        op == "aten::_scaled_dot_product_efficient_attention_backward")
        return 11;
    return -1;
}

OpShapes::OpShapes(const Parsed& p, const Event& op)
    : p_(p)
    , op_(op)
    , dims_(p.dims[static_cast<std::size_t>(op.dims)]) {
    if (op.types >= 0)
        for (int t : p.string_lists[static_cast<std::size_t>(op.types)])
            types_.push_back(t >= 0 ? torch_type(p.names[static_cast<std::size_t>(t)])
                                    : TorchType{});
}

void OpShapes::describe(KernelMeasurement& k) const {
    for (const auto& d : dims_) {
        std::vector<std::int64_t> s;
        for (auto x : d)
            s.push_back(std::max<std::int64_t>(x, 0));
        k.shapes.push_back(std::move(s));
    }
    for (const auto& t : types_)
        if (t.dtype) {
            k.dtype = t.dtype;
            break;
        }
}

std::optional<GemmInstance> OpShapes::gemm(KernelMeasurement& k) const {
    const std::size_t ia = k.op == "aten::addmm" || k.op == "aten::_addmm_activation" ? 1 : 0;
    std::int64_t m = 0, n = 0, kk = 0;
    if (k.op == "aten::linear" && rank(0) >= 2 && rank(1) == 2) {
        m = 1;
        for (std::size_t x = 0; x + 1 < rank(0); ++x)
            m *= dim(0, x);
        kk = dim(0, rank(0) - 1);
        n = dim(1, 0);
    } else if (rank(ia) == 2 && rank(ia + 1) == 2) {
        m = dim(ia, 0);
        kk = dim(ia, 1);
        n = dim(ia + 1, 1);
    }
    if (m <= 0 || n <= 0 || kk <= 0)
        return std::nullopt;
    k.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(kk);
    // cuBLAS sees C^T = B^T A^T (column-major): its A is torch's b.
    std::string layout = "NN";
    if (op_.strides >= 0 && k.op != "aten::linear") {
        const Dims& st = p_.dims[static_cast<std::size_t>(op_.strides)];
        auto op_of = [&](std::size_t in) {
            return in < st.size() && st[in].size() == 2 && st[in][1] != 1 ? 'T' : 'N';
        };
        layout = {op_of(ia + 1), op_of(ia)};
    } else if (k.op == "aten::linear")
        layout = "TN";
    if (!k.dtype)
        return std::nullopt;
    return GemmInstance{n, m, kk, *k.dtype, layout, 0, 0};
}

void OpShapes::attention(KernelMeasurement& k) const {
    const bool sdpa_op = contains(k.op, "scaled_dot_product") ||
                         contains(k.op, "flash_attention") || contains(k.op, "efficient_attention");
    const bool backward = contains(k.op, "backward");
    if (sdpa_op) {
        const std::size_t q = backward ? 1 : 0;
        if (rank(q) != 4 || rank(q + 1) != 4)
            return;
        const std::int64_t bh = dim(q, 0) * dim(q, 1), s = dim(q, 2), skv = dim(q + 1, 2),
                           d = dim(q, 3);
        bool causal = false;
        const int ci = causal_index(k.op);
        if (ci >= 0 && op_.concrete >= 0) {
            const auto& c = p_.string_lists[static_cast<std::size_t>(op_.concrete)];
            causal = static_cast<std::size_t>(ci) < c.size() && c[ci] >= 0 &&
                     p_.names[static_cast<std::size_t>(c[ci])] == "True";
        }
        if (s == skv)
            k.flops = hardware::ComputeModel::fused_attention_flops(bh, s, d, causal, backward);
        else
            k.flops = 4.0 * static_cast<double>(bh) * static_cast<double>(s) *
                      static_cast<double>(skv) * static_cast<double>(d) * (backward ? 2.5 : 1.0);
    } else if (rank(k.op == "aten::baddbmm" ? 1 : 0) == 3) {
        const std::size_t ia = k.op == "aten::baddbmm" ? 1 : 0;
        k.flops = 2.0 * static_cast<double>(dim(ia, 0)) * static_cast<double>(dim(ia, 1)) *
                  static_cast<double>(dim(ia, 2)) * static_cast<double>(dim(ia + 1, 2));
    }
}

void OpShapes::memory(KernelMeasurement& k) const {
    auto numel = [](const std::vector<std::int64_t>& d) -> std::optional<double> {
        double n = 1;
        for (auto x : d) {
            if (x < 0)
                return std::nullopt;
            n *= static_cast<double>(x);
        }
        return n;
    };
    double bytes = 0;
    for (std::size_t x = 0; x < dims_.size() && x < types_.size(); ++x) {
        const auto n = numel(dims_[x]);
        if (n && types_[x].bytes > 0 && !dims_[x].empty())
            bytes += *n * static_cast<double>(types_[x].bytes);
    }
    if (bytes >= 1 && bytes < 1e15)
        k.bytes = static_cast<std::int64_t>(bytes);
}

std::vector<GemmMeasurement> gemm_medians(const std::map<int, GemmInstance>& gemm_by_op,
                                          const std::string& name) {
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, std::string>,
             std::pair<std::vector<std::int64_t>, std::size_t>>
        by_shape;
    for (const auto& [op, g] : gemm_by_op) {
        (void)op;
        if (g.ns <= 0)
            continue;
        auto& v = by_shape[{g.m, g.n, g.k, static_cast<int>(g.dtype), g.layout}];
        if (v.first.empty())
            v.second = g.first;
        v.first.push_back(g.ns);
    }
    std::vector<GemmMeasurement> out;
    for (auto& [key, v] : by_shape) {
        auto& times = v.first;
        std::sort(times.begin(), times.end());
        const std::size_t n = times.size();
        const std::int64_t median =
            n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
        GemmMeasurement g;
        g.m = std::get<0>(key);
        g.n = std::get<1>(key);
        g.k = std::get<2>(key);
        g.dtype = static_cast<hardware::Dtype>(std::get<3>(key));
        g.layout = std::get<4>(key);
        g.library = "torch";
        g.time = sim::Time::ns(std::max<std::int64_t>(median, 1));
        g.source = fmt::format("{}: {} calls", name, n);
        out.push_back(g);
    }
    return out;
}

} // namespace clustersim::calibrate::kineto_detail
