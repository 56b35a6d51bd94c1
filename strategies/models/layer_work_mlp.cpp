// The dense MLP block of a transformer layer (fc1, activation, fc2 with their
// tensor-parallel collectives) and the lecture's MLP layer (layer_work_context.h).
#include "strategies/models/layer_work_context.h"

namespace clustersim::strategies::models::layer_detail {

void dense_mlp_forward(const Ctx& c, const LayerShape& s, LayerWork& w, int ln2) {
    const std::int64_t e = s.e;
    const std::int64_t T = s.T;
    const std::int64_t f = s.f;
    const std::int64_t comm = s.comm;
    const bool swiglu = s.swiglu;
    const bool tp = s.tp;
    PassWork& F = w.forward;
    const int fc1 = F.add(c.gemm("mlp.fc1", T, s.fc1_n, c.h));
    if (tp && c.sp)
        add_collective(w, "mlp.all_gather", TpOp::all_gather, Pass::forward, comm, ln2, fc1);
    F.add(s.swiglu_eager
              ? eager_swiglu(c, "mlp.swiglu", T * f)
              : c.memory(swiglu ? "mlp.swiglu" : "mlp.gelu", (swiglu ? 3 : 2) * T * f * e));
    const int fc2 = F.add(c.gemm("mlp.fc2", T, c.h, f));
    if (tp)
        add_collective(w, c.sp ? "mlp.reduce_scatter" : "mlp.all_reduce", s.exit_op, Pass::forward,
                       comm, fc2, fc2 + 1);
}

void dense_mlp_backward(const Ctx& c, const LayerShape& s, LayerWork& w) {
    const std::int64_t e = s.e;
    const std::int64_t T = s.T;
    const std::int64_t f = s.f;
    const std::int64_t fc1_n = s.fc1_n;
    const std::int64_t comm = s.comm;
    const bool swiglu = s.swiglu;
    const bool tp = s.tp;
    PassWork& B = w.backward;
    int i = Ctx::next(B);
    if (tp && c.sp) // backward of the reduce-scatter
        add_collective(w, "mlp.grad_all_gather", TpOp::all_gather, Pass::backward, comm, i - 1, i);
    B.add(c.gemm("mlp.fc2.dgrad", T, f, c.h));
    B.add(c.gemm("mlp.fc2.wgrad", f, c.h, T));
    B.add(s.swiglu_eager
              ? eager_swiglu_backward(c, "mlp.swiglu.bwd", T * f)
              : c.memory(swiglu ? "mlp.swiglu.bwd" : "mlp.gelu.bwd", (swiglu ? 5 : 3) * T * f * e));
    i = Ctx::next(B);
    if (tp && c.sp && !c.cfg.dtensor_tp)
        add_collective(w, "mlp.fc1.regather", TpOp::all_gather, Pass::backward, comm, i - 1, i + 1,
                       true);
    B.add(c.gemm("mlp.fc1.dgrad", T, c.h, fc1_n));
    B.add(c.gemm("mlp.fc1.wgrad", c.h, fc1_n, T));
    if (tp)
        add_collective(w, c.sp ? "mlp.fc1.grad_reduce_scatter" : "mlp.fc1.grad_all_reduce",
                       s.exit_op, Pass::backward, comm, c.cfg.dtensor_tp ? i + 1 : i, i + 2);
}

LayerWork mlp_layer(const Ctx& c) {
    LayerWork w;
    const std::int64_t e = c.elem;
    const std::int64_t rows = c.b;
    const std::int64_t n = c.h / c.t;
    const bool tp = c.t > 1;
    const std::int64_t gathered = rows * c.h * e;
    PassWork& F = w.forward;
    F.add(c.gemm("mlp.linear", rows, n, c.h));
    const int gelu = F.add(c.memory("mlp.gelu", 2 * rows * n * e));
    if (tp) // every rank needs the whole activation for the next layer
        add_collective(w, "mlp.all_gather", TpOp::all_gather, Pass::forward, gathered, gelu,
                       gelu + 1);
    PassWork& B = w.backward;
    B.add(c.memory("mlp.gelu.bwd", 3 * rows * n * e));
    const int dgrad = B.add(c.gemm("mlp.linear.dgrad", rows, c.h, n));
    B.add(c.gemm("mlp.linear.wgrad", c.h, n, rows));
    if (tp) // each rank's dgrad is a partial sum over its columns of W
        add_collective(w, "mlp.grad_all_reduce", TpOp::all_reduce, Pass::backward, gathered, dgrad,
                       B.ops.count());
    const std::int64_t input = rows * c.h * e;
    const std::int64_t gelu_input = rows * n * e;
    if (c.cfg.recompute == Recompute::full) {
        for (const Op& op : F.ops)
            w.recompute.add(op);
        if (tp)
            add_collective(w, "mlp.all_gather", TpOp::all_gather, Pass::recompute, gathered, gelu,
                           gelu + 1);
        w.activation_bytes = input;
        w.recomputed_activation_bytes = gelu_input;
    } else {
        w.activation_bytes = input + gelu_input;
    }
    w.parameters = layer_parameters_per_rank(c.m, c.cfg.tp);
    return w;
}

} // namespace clustersim::strategies::models::layer_detail
