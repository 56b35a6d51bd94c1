// The MLP block of a layer with experts (layer_work_context.h): Megatron-Core's MoELayer
// with the all-gather token dispatcher (every expert local), and with the alltoall (or flex)
// dispatcher when experts are laid out apart; the shared experts; the parameters per GPU.
#include "strategies/models/layer_work_context.h"

#include "strategies/models/expert_parallel.h"

#include <vector>

namespace clustersim::strategies::models::layer_detail {

namespace {

/// The shared experts' backward (moe_backward and moe_a2a_backward): fc2's gradients, the
/// activation's, the sequence-parallel regather of fc1's input, fc1's gradients. Returns the
/// index of fc1's data-gradient GEMM.
int shared_expert_backward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& B = w.backward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t fs = m.moe_shared_expert_intermediate_size / c.t;
    const bool swiglu = m.activation == Activation::swiglu;
    B.add(c.gemm("moe.shared.fc2.dgrad", T, fs, c.h));
    B.add(c.gemm("moe.shared.fc2.wgrad", fs, c.h, T));
    B.add(c.memory(swiglu ? "moe.shared.swiglu.bwd" : "moe.shared.gelu.bwd",
                   (swiglu ? 5 : 3) * T * fs * e));
    const int i = Ctx::next(B);
    if (c.t > 1 && c.sp)
        add_collective(w, "moe.shared.fc1.regather", TpOp::all_gather, Pass::backward, T * c.h * e,
                       i - 1, i + 1, true);
    const int dgrad = B.add(c.gemm("moe.shared.fc1.dgrad", T, c.h, m.shared_fc1_out() / c.t));
    B.add(c.gemm("moe.shared.fc1.wgrad", c.h, m.shared_fc1_out() / c.t, T));
    return dgrad;
}

/// The sizes both passes of the alltoall dispatcher use, per GPU of the expert-parallel group.
struct A2aSizes {
    std::int64_t elem;    ///< bytes per element
    std::int64_t tokens;  ///< this rank's tokens (its sequence shard)
    std::int64_t local;   ///< of them, those this GPU routes (sequence-parallel shard)
    std::int64_t experts; ///< num_experts
    std::int64_t local_experts;
    std::int64_t sent;     ///< token copies dispatched
    std::int64_t computed; ///< copies the busiest GPU's experts compute
    std::int64_t per_expert;
    std::int64_t expert_ffn; ///< moe_ffn_hidden_size / etp
    std::int64_t shared_ffn; ///< shared experts' intermediate size / tp
    bool swiglu;
    std::int64_t a2a_bytes; ///< received by the busiest GPU in one all-to-all
    std::int64_t etp_bytes; ///< of one etp all-gather or reduce-scatter
    CommGroup a2a_group;    ///< where the all-to-alls run
};

/// Bytes of one dispatch or combine all-to-all as the busiest GPU sees them: with the alltoall
/// dispatcher one copy per (token, expert) it receives; with the flex dispatcher (DeepEP) one
/// per (token, destination node) over its rail across nodes, or per (token, destination GPU)
/// inside one, times the same imbalance factor.
std::int64_t a2a_bytes(const Ctx& c) {
    if (!c.cfg.flex_dispatcher)
        return c.a2a_received() * c.h * c.elem;
    const std::int64_t local = c.tokens / c.sp_div;
    const double factor =
        static_cast<double>(c.a2a_received()) / static_cast<double>(local * c.m.moe_router_topk);
    const std::int64_t bytes =
        flex_dispatch_bytes(c.m, static_cast<int>(c.ep), c.cfg.ep_nodes, local, c.dtype);
    return static_cast<std::int64_t>(static_cast<double>(bytes) * factor);
}

A2aSizes a2a_sizes(const Ctx& c) {
    const ModelSpec& m = c.m;
    const std::int64_t e = c.elem;
    const std::int64_t N = c.a2a_computed();
    return {e,
            c.tokens,
            c.tokens / c.sp_div,
            m.num_experts,
            c.local_experts(),
            c.a2a_sent(),
            N,
            c.a2a_per_expert(),
            m.moe_ffn_hidden_size / c.etp,
            m.moe_shared_expert_intermediate_size / c.t,
            m.activation == Activation::swiglu,
            a2a_bytes(c),
            N * c.h * e,
            c.cfg.flex_dispatcher && c.cfg.ep_nodes > 1 ? CommGroup::ep_rail : CommGroup::ep};
}

/// Eager kernels of `bytes` each, as one op: each kernel timed on its own.
Op eager_kernels(const Ctx& c, std::string_view name, const std::vector<std::int64_t>& bytes) {
    Op op;
    op.name = name;
    op.kind = OpKind::memory_bound;
    op.kernels = static_cast<int>(bytes.size());
    for (const std::int64_t b : bytes) {
        op.bytes += b;
        op.time += c.cm.memory_bound(b);
    }
    return op;
}

/// Whether the routed experts run TEGroupedMLP's eager path with its own kernels for fc2's bias
/// (expert_fc2_bias; the clamp's rule is clamp_apart): experts with biases, not under
/// Transformer Engine's fused grouped MLP.
bool bias_apart(const Ctx& c) {
    return !c.cfg.fusions.fused_grouped_mlp && c.m.bias;
}

/// The activation's clamp in Megatron-Core's TEGroupedMLP (megatron/core/fusions/
/// fused_bias_geglu.py, weighted_bias_quick_geglu_impl with clamp_value, at
/// NVIDIA/Megatron-LM@2edffadb528ea07e261b0c02cdc42a7bb9c3197a, Megatron-Bridge v0.4.2's): before
/// the fused activation, fc1's output of n elements (`half` = n / 2 per half) is chunked, each
/// half clamped by its own kernel (read and written) and the two concatenated again (read and
/// written). Backward: each clamp's gradient masked from its input (input and gradient read,
/// gradient written), then chunk's backward concatenates the two halves' gradients.
/// The forward then makes its glu_linear_offset a device tensor (torch.tensor(...,
/// device=input.device)), a blocking copy from pageable memory after which PyTorch synchronises
/// the stream (Op::host_sync; pytorch/pytorch aten/src/ATen/native/cuda/Copy.cu,
/// copy_kernel_cuda with non_blocking false: memcpy_and_sync, a cudaMemcpyAsync then
/// cudaStreamSynchronize).
Op expert_clamp(const Ctx& c, std::string_view name, std::int64_t half, bool backward) {
    const std::int64_t e = c.elem;
    if (backward)
        return eager_kernels(c, name, {3 * half * e, 3 * half * e, 4 * half * e});
    Op op = eager_kernels(c, name, {2 * half * e, 2 * half * e, 4 * half * e});
    op.host_sync = true;
    return op;
}

/// Whether the experts' input is padded for quantization by Transformer Engine's Fp8Padding
/// (TEGroupedMLP under fp8 or fp4: Megatron-Core's experts.py at
/// NVIDIA/Megatron-LM@2edffadb528ea07e261b0c02cdc42a7bb9c3197a, Megatron-Bridge v0.4.2's,
/// quantization_padding around linear_fc1 and quantization_unpadding after linear_fc2):
/// TE's grouped FP8 GEMMs need each expert's rows in multiples of 16, of 32 under MXFP8 and
/// NVFP4 (fp8_utils.py get_fp8_align_size), and Fp8Padding copies the tokens into a padded
/// buffer unless every expert's count is already a multiple
/// (NVIDIA/TransformerEngine@bce8162f1e278500aaa1fb804118278a7305f35d,
/// transformer_engine/pytorch/module/fp8_padding.py: "no padding needed" returns the input).
/// Routed counts are a multiple only by chance (balanced routing draws experts at random:
/// moe_utils.py RandomSTE), so the copies run. Nobody pads them but TE under the alltoall
/// and DeepEP dispatchers; the router's padding (moe_router_padding_for_quantization, which
/// no recipe here sets) and HybridEP's dispatch (pad_multiple; skip_routed_expert_padding at
/// NVIDIA/Megatron-LM@d0b3b775498a8ae6870075f1a5fc32bc260aa1b3) align them before, and
/// Transformer Engine's fused grouped MLP runs without TEGroupedMLP's padding modules.
/// torchao's recipe (tensorwise) is not Transformer Engine's.
bool pads_for_quantization(const Ctx& c) {
    return c.fp8 && c.recipe != Fp8Recipe::tensorwise && !c.cfg.hybridep &&
           !c.cfg.fusions.fused_grouped_mlp;
}

/// The padding before fc1 for `rows` routed copies of width h: fused_multi_row_padding of the
/// tokens (read, written) and of their probabilities (one element each: the router's dtype
/// under the alltoall dispatcher, fp32 under DeepEP's), two kernels. Its counterparts, each one
/// copy of the rows (read, written): Fp8Unpadding of fc2's output ("moe.experts.unpad"), and in the
/// backward the unpadding's gradient padded and the padding's unpadded (fused_multi_row_unpadding).
/// The rows added (fewer than the alignment per expert) are left out.
Op quantization_padding(const Ctx& c, std::int64_t rows) {
    const std::int64_t prob = c.cfg.flex_dispatcher ? 4 : c.elem;
    return eager_kernels(c, "moe.experts.pad", {2 * rows * c.h * c.elem, 2 * rows * prob});
}

/// The router's top-k, after which Megatron-Core's dropless token dispatchers wait for the
/// tokens per expert on the host (Op::host_sync): the alltoall dispatcher's split sizes, copied
/// to the host after the routing and waited for before the dispatch all-to-all
/// (token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess, cuda_sync_point
/// "before_ep_alltoall", or "before_finish" without expert or tensor parallelism), the
/// all-gather dispatcher's local_map.sum(dim=0).long().cpu() (at
/// NVIDIA/Megatron-LM@2edffadb528ea07e261b0c02cdc42a7bb9c3197a). The flex dispatcher waits as
/// well, before its data moves: DeepEP's dispatch, where "the CPU will wait for GPU's signal to
/// arrive" (fused_a2a.py, FusedDispatch.forward) with the received counts, and HybridEP's
/// when no token budget bounds its buffers (token_dispatcher.py, _HybridEPManager:
/// num_permuted_tokens None "will cause a CPU sync"; fused_a2a.py HybridEPDispatch, blocking
/// unless num_permuted_tokens is given; both at
/// NVIDIA/Megatron-LM@d0b3b775498a8ae6870075f1a5fc32bc260aa1b3). The budget
/// (moe_expert_rank_capacity_factor) comes only with the whole-iteration graphs, inside which
/// nothing waits.
Op router_topk(const Ctx& c, std::int64_t local) {
    const std::int64_t e = c.elem;
    Op op = c.memory("moe.router.topk",
                     local * c.m.num_experts * (e + 4 + 8 + 4) + local * c.m.moe_router_topk * 12);
    op.host_sync = true;
    return op;
}

/// fc2's bias in Megatron-Core's TEGroupedMLP (experts.py, _apply_bias, at the same commit):
/// linear_fc2 returns its per-expert biases apart (skip_bias_add, TEGroupedLinear's
/// return_bias), and the output of the L local experts (`rows` copies of `h` each, `per`
/// per expert) is split per expert and each gets t + b * p, p the router's probabilities:
/// a [per, h] product, then the sum, in the promoted dtype, the experts' results concatenated
/// and cast back to the output's dtype. The probabilities are the router's logits' dtype
/// (router.py: router_dtype = input.dtype without moe_router_dtype; TE's
/// fused_topk_with_score_function writes probs in the logits' dtype), 16-bit under the alltoall
/// dispatcher; the flex dispatcher upcasts them to fp32 for HybridEP and DeepEP
/// (token_dispatcher.py, "only supports float32 probs"), so b * p and the sum are fp32 there,
/// with a cast back. Backward through autograd: the cast's gradient; per expert the sum's
/// gradient cast to the 16-bit output's dtype (fp32 only), the product's two gradients, each
/// a product (read, written) and a reduction (the bias over rows, the probability over h);
/// split's backward concatenates the 16-bit gradients.
Op expert_fc2_bias(const Ctx& c, std::string_view name, std::int64_t local, std::int64_t per,
                   std::int64_t rows, std::int64_t h, bool backward) {
    const std::int64_t e = c.elem;
    const std::int64_t q = c.cfg.flex_dispatcher ? std::max<std::int64_t>(e, 4) : e;
    const bool cast = q != e;
    std::vector<std::int64_t> k;
    if (backward) {
        if (cast)
            k.push_back(rows * h * (e + q));
        for (std::int64_t i = 0; i < local; ++i) {
            if (cast)
                k.push_back(per * h * (q + e));
            for (const std::int64_t b :
                 {2 * per * h * q, per * h * q, 2 * per * h * q, per * h * q})
                k.push_back(b);
        }
        k.push_back(2 * rows * h * e);
    } else {
        for (std::int64_t i = 0; i < local; ++i) {
            k.push_back(per * h * q);
            k.push_back(per * h * (e + 2 * q));
        }
        k.push_back(2 * rows * h * q);
        if (cast)
            k.push_back(rows * h * (q + e));
    }
    return eager_kernels(c, name, k);
}

} // namespace

/// The MLP block of a layer with experts, forward, after the second norm (op `ln2`), as
/// Megatron-Core's MoELayer runs it without expert parallelism (the all-gather token
/// dispatcher): the router on this rank's tokens (a GEMM to the expert logits, then softmax and
/// top-k in fp32), the tokens gathered over the tensor-parallel ranks (sequence parallelism),
/// permuted into expert order (one copy per routed expert), a grouped GEMM per expert matrix
/// over the local experts (each with its share of the tokens and 1/t of its columns), the
/// combine (unpermute: the copies weighted by their probabilities and summed per token), the
/// shared experts as a dense MLP on the same tokens, and the partial sums reduced over the
/// tensor-parallel ranks as after a dense MLP.
void moe_forward(const Ctx& c, LayerWork& w, int ln2) {
    const ModelSpec& m = c.m;
    PassWork& F = w.forward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t local = T / c.sp_div;
    const std::int64_t E = m.num_experts;
    const std::int64_t N = c.tokens_per_expert() * E;
    const std::int64_t fe = m.moe_ffn_hidden_size / c.t;
    const std::int64_t fs = m.moe_shared_expert_intermediate_size / c.t;
    const bool swiglu = m.activation == Activation::swiglu;
    const std::int64_t comm = T * c.h * e;
    F.add(c.gemm("moe.router", local, E, c.h));
    // Logits cast to fp32, softmax read and written, top-k read: the indices and
    // probabilities written are k per token.
    const int topk = F.add(router_topk(c, local));
    (void)ln2;
    const int permute = F.add(c.memory("moe.permute", T * c.h * e + N * c.h * e));
    if (c.t > 1 && c.sp)
        add_collective(w, "moe.all_gather", TpOp::all_gather, Pass::forward, comm, topk, permute);
    if (pads_for_quantization(c))
        F.add(quantization_padding(c, N));
    F.add(c.gemm("moe.experts.fc1", c.tokens_per_expert(), m.expert_fc1_out() / c.t, c.h, E));
    if (clamp_apart(c))
        F.add(expert_clamp(c, "moe.experts.clamp", N * fe, false));
    F.add(c.memory(swiglu ? "moe.experts.swiglu" : "moe.experts.gelu",
                   (swiglu ? 3 : 2) * N * fe * e));
    F.add(c.gemm("moe.experts.fc2", c.tokens_per_expert(), c.h, fe, E));
    if (bias_apart(c))
        F.add(expert_fc2_bias(c, "moe.experts.fc2_bias", E, c.tokens_per_expert(), N, c.h, false));
    if (pads_for_quantization(c))
        F.add(c.memory("moe.experts.unpad", 2 * N * c.h * e));
    int last = F.add(c.memory("moe.unpermute", N * c.h * e + N * 4 + T * c.h * e));
    if (fs > 0) {
        F.add(c.gemm("moe.shared.fc1", T, m.shared_fc1_out() / c.t, c.h));
        F.add(c.memory(swiglu ? "moe.shared.swiglu" : "moe.shared.gelu",
                       (swiglu ? 3 : 2) * T * fs * e));
        F.add(c.gemm("moe.shared.fc2", T, c.h, fs));
        last = F.add(c.memory("moe.shared.add", 3 * T * c.h * e));
    }
    if (c.t > 1)
        add_collective(w, c.sp ? "moe.reduce_scatter" : "moe.all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::forward, comm, last,
                       last + 1);
}

/// Its backward, in reverse: the shared experts, the combine, the experts' data and weight
/// gradients, the permutation (a scatter-add of the copies' gradients per token), whose
/// partial sums are reduced over the tensor-parallel ranks while the router's top-k and GEMM
/// backward run on the local tokens.
void moe_backward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& B = w.backward;
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t local = T / c.sp_div;
    const std::int64_t E = m.num_experts;
    const std::int64_t M = c.tokens_per_expert();
    const std::int64_t N = M * E;
    const std::int64_t fe = m.moe_ffn_hidden_size / c.t;
    const std::int64_t fs = m.moe_shared_expert_intermediate_size / c.t;
    const bool swiglu = m.activation == Activation::swiglu;
    const std::int64_t comm = T * c.h * e;
    const int i = Ctx::next(B);
    if (c.t > 1 && c.sp) // backward of the reduce-scatter
        add_collective(w, "moe.grad_all_gather", TpOp::all_gather, Pass::backward, comm, i - 1, i);
    if (fs > 0)
        shared_expert_backward(c, w);
    // The copies' gradients (weighted by the probabilities) and the probabilities' gradients
    // (a dot product of each copy's output with its incoming gradient).
    B.add(c.memory("moe.unpermute.bwd", T * c.h * e + 2 * N * c.h * e + N * 4));
    if (pads_for_quantization(c))
        B.add(c.memory("moe.experts.unpad.bwd", 2 * N * c.h * e));
    if (bias_apart(c))
        B.add(expert_fc2_bias(c, "moe.experts.fc2_bias.bwd", E, M, N, c.h, true));
    B.add(c.gemm("moe.experts.fc2.dgrad", M, fe, c.h, E));
    B.add(c.gemm("moe.experts.fc2.wgrad", fe, c.h, M, E));
    B.add(c.memory(swiglu ? "moe.experts.swiglu.bwd" : "moe.experts.gelu.bwd",
                   (swiglu ? 5 : 3) * N * fe * e));
    if (clamp_apart(c))
        B.add(expert_clamp(c, "moe.experts.clamp.bwd", N * fe, true));
    B.add(c.gemm("moe.experts.fc1.dgrad", M, c.h, m.expert_fc1_out() / c.t, E));
    B.add(c.gemm("moe.experts.fc1.wgrad", c.h, m.expert_fc1_out() / c.t, M, E));
    if (pads_for_quantization(c))
        B.add(c.memory("moe.experts.pad.bwd", 2 * N * c.h * e));
    const int scatter = B.add(c.memory("moe.permute.bwd", N * c.h * e + 2 * T * c.h * e));
    B.add(
        c.memory("moe.router.topk.bwd", local * E * (4 + 4 + e) + local * m.moe_router_topk * 12));
    B.add(c.gemm("moe.router.dgrad", local, c.h, E));
    B.add(c.gemm("moe.router.wgrad", c.h, E, local));
    if (c.t > 1)
        add_collective(w, c.sp ? "moe.grad_reduce_scatter" : "moe.grad_all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, comm,
                       scatter, Ctx::next(B));
}

namespace {
/// HybridEP's copy of a rank's `rows` tokens (and their fp32 probabilities) into its RDMA
/// buffer before a dispatch that leaves the NVLink domain (deepseek-ai/DeepEP@34152ae28f80bcc3
/// ee38d7a12cb2ad87cfd4ea72, csrc/hybrid_ep/executor/executor.cu, Executor::
/// dispatch_preprocess: cudaMemcpyAsync of the input when num_of_nodes > 1).
Op hybridep_input_copy(const Ctx& c, std::int64_t rows) {
    return c.memory("moe.hybridep.input_copy", 2 * rows * c.h * c.elem + 2 * rows * 4);
}
} // namespace

/// The MLP block of a layer with experts laid out apart (ep > 1 or etp != tp), forward, as
/// Megatron-Core's MoELayer runs it with the alltoall token dispatcher
/// (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher): the router
/// on this GPU's tokens (its sequence shard), the copies permuted into expert order, the
/// dispatch all-to-all over the expert-parallel group, the received copies gathered over the
/// expert tensor-parallel group (etp > 1) and sorted by local expert (more than one local
/// expert), the grouped GEMMs of the num_experts / ep local experts with 1/etp of their
/// columns, and the way back: unsorted, reduce-scattered over etp, the combine all-to-all, the
/// weighted sum per token. The busiest GPU sets the pace: its experts compute
/// moe_load_imbalance times the mean, and every all-to-all is timed at the volume it receives
/// (its port is the most loaded). The collectives run on the compute stream in Megatron
/// (nothing overlaps them): the next kernel waits. The shared experts follow as a
/// tensor-parallel dense MLP on the same tokens. Under HybridEP Megatron runs no permutation,
/// sort or weighted sum of its own (token_dispatcher.py, _HybridEPManager: "Permute tokens for
/// communication, perform all-to-all communication, and permute tokens for experts in single
/// step", its get_permuted_hidden_states_by_experts returning the dispatched tokens as they
/// are, at NVIDIA/Megatron-LM@d0b3b775498a8ae6870075f1a5fc32bc260aa1b3), but HybridEP does,
/// in kernels of its own: unfused (moe_permute_fusion_into_hybridep, False by default and in
/// every recipe here), dispatch_with_permute runs its permute kernel after the dispatch kernel,
/// reading the received tokens from its NVLink buffer and writing one row per (token, local
/// expert), padded, with its probability, and combine_with_unpermute its unpermute kernel
/// before the combine kernel, summing each token's rows back into the buffer
/// (deepseek-ai/DeepEP@34152ae28f80bcc3ee38d7a12cb2ad87cfd4ea72, csrc/hybrid_ep/executor/
/// executor.cu: Executor::dispatch_postprocess, "Standalone permute", and
/// combine_preprocess); across NVLink domains the dispatch first copies its input into the RDMA
/// buffer (hybridep_input_copy). DeepEP's dispatch sends the tokens unpermuted and Megatron
/// permutes the received ones by expert (_DeepepManager), costed here as the alltoall
/// dispatcher's permutation and sort.
void moe_a2a_forward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& F = w.forward;
    const auto [e, T, local, E, L, sent, N, M, fe, fs, swiglu, a2a_bytes, etp_bytes, group] =
        a2a_sizes(c);
    F.add(c.gemm("moe.router", local, E, c.h));
    const int topk = F.add(router_topk(c, local));
    // HybridEP's dispatch permutes the tokens itself (LayerConfig::hybridep), across nodes
    // after copying them into its RDMA buffer (hybridep_input_copy).
    const bool hybridep = c.cfg.hybridep;
    const int permute = hybridep
                            ? (c.cfg.ep_nodes > 1 ? F.add(hybridep_input_copy(c, local)) : topk)
                            : F.add(c.memory("moe.permute", local * c.h * e + sent * c.h * e));
    int next = Ctx::next(F);
    if (c.ep > 1)
        add_group_collective(w, "moe.dispatch", TpOp::all_to_all, group, Pass::forward, a2a_bytes,
                             permute, next);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_all_gather", TpOp::all_gather, CommGroup::etp,
                             Pass::forward, etp_bytes, permute, next);
    if (hybridep)
        F.add(c.memory("moe.hybridep.permute", 2 * N * c.h * e + N * 4));
    else if (L > 1)
        F.add(c.memory("moe.sort_chunks", 2 * N * c.h * e));
    if (pads_for_quantization(c))
        F.add(quantization_padding(c, N));
    F.add(c.gemm("moe.experts.fc1", M, m.expert_fc1_out() / c.etp, c.h, L));
    if (clamp_apart(c))
        F.add(expert_clamp(c, "moe.experts.clamp", N * fe, false));
    F.add(c.memory(swiglu ? "moe.experts.swiglu" : "moe.experts.gelu",
                   (swiglu ? 3 : 2) * N * fe * e));
    int last = F.add(c.gemm("moe.experts.fc2", M, c.h, fe, L));
    if (bias_apart(c))
        last = F.add(expert_fc2_bias(c, "moe.experts.fc2_bias", L, M, N, c.h, false));
    if (pads_for_quantization(c))
        last = F.add(c.memory("moe.experts.unpad", 2 * N * c.h * e));
    if (hybridep)
        last = F.add(c.memory("moe.hybridep.unpermute", N * c.h * e + N * 4 + sent * c.h * e));
    else if (L > 1)
        last = F.add(c.memory("moe.unsort_chunks", 2 * N * c.h * e));
    next = Ctx::next(F);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_reduce_scatter", TpOp::reduce_scatter, CommGroup::etp,
                             Pass::forward, etp_bytes, last, next);
    if (c.ep > 1)
        add_group_collective(w, "moe.combine", TpOp::all_to_all, group, Pass::forward, a2a_bytes,
                             last, next);
    const int unpermute =
        hybridep ? Ctx::next(F) - 1
                 : F.add(c.memory("moe.unpermute", sent * c.h * e + sent * 4 + local * c.h * e));
    if (fs > 0) {
        const std::int64_t comm = T * c.h * e;
        const int fc1 = F.add(c.gemm("moe.shared.fc1", T, m.shared_fc1_out() / c.t, c.h));
        if (c.t > 1 && c.sp)
            add_collective(w, "moe.shared.all_gather", TpOp::all_gather, Pass::forward, comm,
                           unpermute, fc1);
        F.add(c.memory(swiglu ? "moe.shared.swiglu" : "moe.shared.gelu",
                       (swiglu ? 3 : 2) * T * fs * e));
        const int fc2 = F.add(c.gemm("moe.shared.fc2", T, c.h, fs));
        if (c.t > 1)
            add_collective(w, c.sp ? "moe.shared.reduce_scatter" : "moe.shared.all_reduce",
                           c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::forward, comm, fc2,
                           fc2 + 1);
        F.add(c.memory("moe.shared.add", 3 * local * c.h * e));
    }
}

/// Its backward, in reverse: the shared experts (their input gradient reduced over the
/// tensor-parallel ranks while the routed experts run), the weighted sum, the combine's
/// all-to-all reversed (copies' gradients back to the experts' GPUs) and the etp all-gather of
/// the reduce-scatter, the experts' data and weight gradients, then the etp reduce-scatter and
/// the dispatch's all-to-all reversed, the permutation's scatter-add and the router.
void moe_a2a_backward(const Ctx& c, LayerWork& w) {
    const ModelSpec& m = c.m;
    PassWork& B = w.backward;
    const auto [e, T, local, E, L, sent, N, M, fe, fs, swiglu, a2a_bytes, etp_bytes, group] =
        a2a_sizes(c);
    const std::int64_t comm = T * c.h * e;
    int shared_dgrad = -1;
    if (fs > 0) {
        const int i = Ctx::next(B);
        if (c.t > 1 && c.sp) // backward of the reduce-scatter
            add_collective(w, "moe.shared.grad_all_gather", TpOp::all_gather, Pass::backward, comm,
                           i - 1, i);
        shared_dgrad = shared_expert_backward(c, w);
    }
    const bool hybridep = c.cfg.hybridep;
    // The combine's backward is HybridEP's dispatch (fused_a2a.py, HybridEPCombine.backward:
    // dispatch_with_permute), the dispatch's its combine.
    const int unpermute =
        hybridep
            ? (c.cfg.ep_nodes > 1 ? B.add(hybridep_input_copy(c, local)) : Ctx::next(B) - 1)
            : B.add(c.memory("moe.unpermute.bwd", local * c.h * e + 2 * sent * c.h * e + sent * 4));
    int next = Ctx::next(B);
    if (c.ep > 1)
        add_group_collective(w, "moe.combine.bwd", TpOp::all_to_all, group, Pass::backward,
                             a2a_bytes, unpermute, next);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_grad_all_gather", TpOp::all_gather, CommGroup::etp,
                             Pass::backward, etp_bytes, unpermute, next);
    if (hybridep)
        B.add(c.memory("moe.hybridep.permute.bwd", 2 * N * c.h * e));
    else if (L > 1)
        B.add(c.memory("moe.unsort_chunks.bwd", 2 * N * c.h * e));
    if (pads_for_quantization(c))
        B.add(c.memory("moe.experts.unpad.bwd", 2 * N * c.h * e));
    if (bias_apart(c))
        B.add(expert_fc2_bias(c, "moe.experts.fc2_bias.bwd", L, M, N, c.h, true));
    B.add(c.gemm("moe.experts.fc2.dgrad", M, fe, c.h, L));
    B.add(c.gemm("moe.experts.fc2.wgrad", fe, c.h, M, L));
    B.add(c.memory(swiglu ? "moe.experts.swiglu.bwd" : "moe.experts.gelu.bwd",
                   (swiglu ? 5 : 3) * N * fe * e));
    if (clamp_apart(c))
        B.add(expert_clamp(c, "moe.experts.clamp.bwd", N * fe, true));
    B.add(c.gemm("moe.experts.fc1.dgrad", M, c.h, m.expert_fc1_out() / c.etp, L));
    int last = B.add(c.gemm("moe.experts.fc1.wgrad", c.h, m.expert_fc1_out() / c.etp, M, L));
    if (pads_for_quantization(c))
        last = B.add(c.memory("moe.experts.pad.bwd", 2 * N * c.h * e));
    if (hybridep)
        last = B.add(c.memory("moe.hybridep.unpermute.bwd", N * c.h * e + sent * c.h * e));
    else if (L > 1)
        last = B.add(c.memory("moe.sort_chunks.bwd", 2 * N * c.h * e));
    next = Ctx::next(B);
    if (c.etp > 1)
        add_group_collective(w, "moe.etp_grad_reduce_scatter", TpOp::reduce_scatter, CommGroup::etp,
                             Pass::backward, etp_bytes, last, next);
    if (c.ep > 1)
        add_group_collective(w, "moe.dispatch.bwd", TpOp::all_to_all, group, Pass::backward,
                             a2a_bytes, last, next);
    if (!hybridep)
        B.add(c.memory("moe.permute.bwd", sent * c.h * e + 2 * local * c.h * e));
    B.add(
        c.memory("moe.router.topk.bwd", local * E * (4 + 4 + e) + local * m.moe_router_topk * 12));
    B.add(c.gemm("moe.router.dgrad", local, c.h, E));
    B.add(c.gemm("moe.router.wgrad", c.h, E, local));
    if (shared_dgrad >= 0 && c.t > 1)
        add_collective(
            w, c.sp ? "moe.shared.fc1.grad_reduce_scatter" : "moe.shared.fc1.grad_all_reduce",
            c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, comm, shared_dgrad,
            Ctx::next(B));
}

/// Parameters of a layer with experts laid out apart on one GPU: attention, norms, router and
/// shared experts as without expert parallelism (split over tp; the router replicated), and the
/// num_experts / ep local experts split over etp. Returns {all, routed experts'}.
std::pair<std::int64_t, std::int64_t> moe_a2a_parameters(const Ctx& c) {
    const ModelSpec& m = c.m;
    const std::int64_t experts =
        routed_expert_parameters_per_rank(m, c.cfg.ep, c.cfg.etp > 0 ? c.cfg.etp : c.cfg.tp);
    // Everything but the routed experts: attention, norms, router and shared experts, as a
    // layer with every expert on this rank holds them (no routed expert: num_experts 0 there
    // would drop the router too, so take them out of the whole instead).
    ModelSpec no_routed = m;
    no_routed.moe_router_topk = 0;
    const std::int64_t dense = moe_layer_parameters_per_rank(no_routed, c.cfg.tp, true);
    return {dense + experts, experts};
}

bool clamp_apart(const Ctx& c) {
    return !c.cfg.fusions.fused_grouped_mlp && c.m.activation_func_clamp_value > 0;
}

} // namespace clustersim::strategies::models::layer_detail
