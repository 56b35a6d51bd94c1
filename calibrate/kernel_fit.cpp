#include "calibrate/kernel_fit.h"

#include "base/error.h"
#include "calibrate/predict.h"
#include "hardware/compute_model.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

namespace clustersim::calibrate {

namespace {
bool contains(std::string_view s, std::string_view what) {
    return s.find(what) != std::string_view::npos;
}

const std::vector<std::int64_t>* shape(const KernelMeasurement& k, std::size_t i) {
    return i < k.shapes.size() ? &k.shapes[i] : nullptr;
}

bool is_sdpa(const std::string& op) {
    return contains(op, "scaled_dot_product") || contains(op, "flash_attention") ||
           contains(op, "efficient_attention");
}
} // namespace

std::optional<KernelGemmShape> kernel_gemm_shape(const KernelMeasurement& k) {
    KernelGemmShape g;
    const std::string& op = k.op;
    if (op == "aten::linear") {
        const auto* x = shape(k, 0);
        const auto* w = shape(k, 1);
        if (x == nullptr || w == nullptr || x->size() < 2 || w->size() != 2)
            return std::nullopt;
        g.m = 1;
        for (std::size_t i = 0; i + 1 < x->size(); ++i)
            g.m *= (*x)[i];
        g.k = x->back();
        g.n = (*w)[0];
    } else if (op == "aten::mm" || op == "aten::matmul" || op == "aten::addmm" ||
               op == "aten::_addmm_activation") {
        const std::size_t a = op == "aten::addmm" || op == "aten::_addmm_activation" ? 1 : 0;
        const auto* x = shape(k, a);
        const auto* y = shape(k, a + 1);
        if (x == nullptr || y == nullptr || x->size() != 2 || y->size() != 2)
            return std::nullopt;
        g.m = (*x)[0];
        g.k = (*x)[1];
        g.n = (*y)[1];
    } else if (op == "aten::bmm" || op == "aten::baddbmm") {
        const std::size_t a = op == "aten::baddbmm" ? 1 : 0;
        const auto* x = shape(k, a);
        const auto* y = shape(k, a + 1);
        if (x == nullptr || y == nullptr || x->size() != 3 || y->size() != 3)
            return std::nullopt;
        g.batch = (*x)[0];
        g.m = (*x)[1];
        g.k = (*x)[2];
        g.n = (*y)[2];
    } else {
        return std::nullopt;
    }
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
        return std::nullopt;
    return g;
}

std::optional<double> predict_kernel_seconds(const strategies::parallel::Platform& platform,
                                             const KernelMeasurement& k) {
    const hardware::ComputeModel cm(platform.cluster);
    switch (k.kernel_class) {
    case KernelClass::gemm: {
        const auto g = kernel_gemm_shape(k);
        if (!g || !k.dtype)
            return std::nullopt;
        return cm.gemm_seconds(g->m, g->n, g->k, *k.dtype, g->batch);
    }
    case KernelClass::attention: {
        if (!k.dtype)
            return std::nullopt;
        if (is_sdpa(k.op)) {
            const bool backward = contains(k.op, "backward");
            const auto* q = shape(k, backward ? 1 : 0);
            if (q == nullptr || q->size() != 4)
                return std::nullopt;
            const std::int64_t bh = (*q)[0] * (*q)[1], s = (*q)[2], d = (*q)[3];
            if (bh <= 0 || s <= 0 || d <= 0)
                return std::nullopt;
            const double causal_flops =
                hardware::ComputeModel::fused_attention_flops(bh, s, d, true, backward);
            const double full_flops =
                hardware::ComputeModel::fused_attention_flops(bh, s, d, false, backward);
            const bool causal = std::abs(k.flops - causal_flops) < std::abs(k.flops - full_flops);
            // An FP8 attention kernel on a GPU whose file gives no measured FP8 rate has no
            // prediction to compare (the model refuses it): the row is skipped, as rows of
            // other unpredictable kernels are.
            if (hardware::is_quantized(*k.dtype) &&
                !cm.fp8_attention_measured(hardware::AttentionScaling::per_tensor))
                return std::nullopt;
            return cm.fused_attention_seconds(bh, s, d, *k.dtype, causal, backward);
        }
        const auto g = kernel_gemm_shape(k);
        if (!g)
            return std::nullopt;
        return cm.gemm_seconds(g->m, g->n, g->k, *k.dtype, g->batch);
    }
    case KernelClass::elementwise:
        if (k.bytes <= 0)
            return std::nullopt;
        return cm.memory_bound_seconds(2 * k.bytes);
    case KernelClass::collective:
    case KernelClass::copy:
    case KernelClass::other:
        return std::nullopt;
    }
    return std::nullopt;
}

KernelFit fit_kernel_classes(const strategies::parallel::Platform& platform,
                             const MeasurementFile& fit, const std::string& name) {
    KernelFit r;
    std::map<KernelClass, int> unpredicted;
    for (int c = 0; c < kKernelClassCount; ++c)
        r.classes[static_cast<std::size_t>(c)].kernel_class = static_cast<KernelClass>(c);
    for (const auto& k : fit.kernels) {
        const auto p = predict_kernel_seconds(platform, k);
        if (!p || !(*p > 0)) {
            ++unpredicted[k.kernel_class];
            continue;
        }
        auto& c = r.classes[static_cast<std::size_t>(k.kernel_class)];
        ++c.groups;
        c.measured_s += k.time.seconds();
        c.predicted_s += *p * static_cast<double>(k.calls);
    }
    int fitted = 0;
    for (auto& c : r.classes) {
        if (c.groups == 0)
            continue;
        c.factor = c.measured_s / c.predicted_s;
        c.fitted = true;
        c.origin = fmt::format("{}: {} kernel groups, {:.3f} ms measured, {:.3f} ms predicted",
                               name, c.groups, c.measured_s * 1e3, c.predicted_s * 1e3);
        ++fitted;
    }
    if (fitted == 0)
        throw InputError(name + ": no kernel groups the model predicts (GEMMs, attention, "
                                "elementwise with shapes): import a PyTorch profiler trace "
                                "recorded with record_shapes=True");
    for (const auto& [cls, n] : unpredicted)
        r.notes.push_back(
            fmt::format("{}: {} {} kernel groups not predicted ({})", name, n, to_string(cls),
                        cls == KernelClass::collective ? "NCCL: validated from sweeps"
                        : cls == KernelClass::copy     ? "copies: no model here"
                        : cls == KernelClass::other    ? "no op launched them"
                                                       : "shapes, dtype or bytes missing"));
    const auto& fw = platform.framework;
    const auto& g = r.classes[static_cast<std::size_t>(KernelClass::gemm)];
    const auto& a = r.classes[static_cast<std::size_t>(KernelClass::attention)];
    const auto& e = r.classes[static_cast<std::size_t>(KernelClass::elementwise)];
    r.gemm_efficiency = g.fitted || a.fitted
                            ? (g.predicted_s + a.predicted_s) / (g.measured_s + a.measured_s)
                            : fw.gemm_efficiency;
    r.memory_efficiency = e.fitted ? e.predicted_s / e.measured_s : fw.memory_efficiency;
    return r;
}

KernelValidation validate_kernel_classes(const strategies::parallel::Platform& platform,
                                         const KernelFit& fit, const MeasurementFile& holdout,
                                         const std::string& name) {
    KernelValidation v;
    std::array<KernelClassCheck, kKernelClassCount> checks{};
    for (int c = 0; c < kKernelClassCount; ++c)
        checks[static_cast<std::size_t>(c)].name =
            std::string(to_string(static_cast<KernelClass>(c)));
    for (const auto& k : holdout.kernels) {
        const auto& f = fit.classes[static_cast<std::size_t>(k.kernel_class)];
        const auto p = predict_kernel_seconds(platform, k);
        if (!p || !f.fitted)
            continue;
        auto& c = checks[static_cast<std::size_t>(k.kernel_class)];
        ++c.groups;
        c.measured_s += k.time.seconds();
        c.unfitted_s += *p * static_cast<double>(k.calls);
        c.predicted_s += *p * static_cast<double>(k.calls) * f.factor;
    }
    for (const auto& c : checks)
        if (c.groups > 0)
            v.classes.push_back(c);
    strategies::parallel::Platform fitted = platform;
    fitted.framework.gemm_efficiency = fit.gemm_efficiency;
    fitted.framework.memory_efficiency = fit.memory_efficiency;
    for (std::size_t i = 0; i < holdout.steps.size(); ++i) {
        const auto& s = holdout.steps[i];
        KernelClassCheck c;
        c.name = s.source.empty() ? fmt::format("{}: steps[{}]", name, i) : s.source;
        c.groups = 1;
        c.measured_s = s.time.seconds();
        try {
            c.unfitted_s = predict_step(platform, s);
            c.predicted_s = predict_step(fitted, s);
        } catch (const InputError& e) {
            v.notes.push_back(
                fmt::format("{}: not predicted: {}", c.name, e.message_for(s.source)));
            continue;
        }
        v.steps.push_back(c);
    }
    if (v.classes.empty())
        v.notes.push_back(name + ": no held-out kernel group of a fitted class");
    return v;
}

} // namespace clustersim::calibrate
