// The first and last pipeline stages' extra work (layer_work.h): the embedding lookup and
// its reduction, the final norm, the LM head over the padded vocabulary and the cross entropy.
#include "strategies/models/layer_work_context.h"

namespace clustersim::strategies::models {

using namespace layer_detail;

LayerWork embedding_work(const ModelSpec& m, const LayerConfig& cfg, const ComputeModel& cm) {
    check_config(m, cfg);
    LayerWork w;
    if (!m.is_transformer())
        return w;
    const Ctx c(m, cfg, cm);
    const std::int64_t e = c.elem;
    const std::int64_t T = c.tokens;
    const std::int64_t sharded = T * c.h / c.sp_div;
    const std::int64_t vocab_local = padded_vocab(m, cfg.tp) / c.t;
    const bool learned = m.position_embedding == PositionEmbedding::learned;
    const bool drop = m.dropout > 0;
    PassWork& F = w.forward;
    // Vocabulary-parallel lookup: each rank gathers the rows of its vocabulary shard (zeros
    // elsewhere); the partial embeddings are summed across the tensor-parallel ranks.
    const int lookup = F.add(c.memory("embedding.lookup", 2 * T * c.h * e));
    if (c.t > 1)
        add_collective(w, c.sp ? "embedding.reduce_scatter" : "embedding.all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::forward, T * c.h * e,
                       lookup, lookup + 1);
    if (learned)
        F.add(c.memory("embedding.position_add", 3 * sharded * e));
    // Token-type embeddings (BERT's segments): one more lookup added to the sum.
    const bool token_types = m.type_vocab_size > 0;
    if (token_types)
        F.add(c.memory("embedding.token_type_add", 3 * sharded * e));
    // A classification model is BERT's post-norm encoder: its one norm outside the layers is
    // the embeddings' LayerNorm (Hugging Face's BertEmbeddings: LayerNorm then dropout), which
    // keeps its input, in fp32 under autocast (layer_norm is on autocast's fp32 list) as the
    // embeddings are.
    const bool embedding_norm = m.head == ModelHead::classification;
    const std::int64_t norm_e = cfg.autocast ? 4 : e;
    if (embedding_norm)
        F.add(c.memory("embedding.layernorm", 2 * sharded * norm_e));
    if (drop)
        F.add(c.memory("embedding.dropout", sharded * (2 * e + 1)));
    PassWork& B = w.backward;
    if (drop)
        B.add(c.memory("embedding.dropout.bwd", sharded * (2 * e + 1)));
    if (embedding_norm)
        B.add(c.memory("embedding.layernorm.bwd", 4 * sharded * norm_e));
    const int grad = Ctx::next(B);
    if (c.t > 1 && c.sp)
        add_collective(w, "embedding.grad_all_gather", TpOp::all_gather, Pass::backward,
                       T * c.h * e, grad - 1, grad);
    // A dense gradient of the local vocabulary rows, accumulated into the fp32 main gradient.
    B.add(c.memory("embedding.wgrad", T * c.h * e + vocab_local * c.h * e));
    B.add(c.memory("embedding.grad_accumulate", vocab_local * c.h * (e + 8)));
    if (learned)
        B.add(c.memory("embedding.position_wgrad", sharded * e + std::int64_t{m.seq} * c.h * 8));
    // The dropout mask (1 byte per element), and the norm's input.
    w.activation_bytes = (drop ? sharded : 0) + (embedding_norm ? sharded * norm_e : 0);
    w.parameters = vocab_local * c.h + (learned ? std::int64_t{m.seq} * c.h : 0) +
                   std::int64_t{m.type_vocab_size} * c.h +
                   (embedding_norm ? 2 * std::int64_t{c.h} : 0);
    freeze_lora(cfg, w, true);
    return w;
}

namespace {

/// What the cross-entropy over this rank's [T, V/t] logits (`tokens` T) holds from the forward
/// to the backward (beside the final norm's), what its backward allocates at once, and what
/// the caching allocator keeps unused then; `e` the 16-bit dtype's bytes (4: fp32 training).
void loss_memory(const LayerConfig& cfg, bool loss_parallel, std::int64_t tokens,
                 std::int64_t vocab_local, std::int64_t e, LayerWork& w) {
    constexpr std::int64_t fp32 = 4;
    const std::int64_t logits = tokens * vocab_local;
    const std::int64_t norm = w.activation_bytes - logits * fp32;
    switch (cfg.cross_entropy) {
    case CrossEntropy::fused:
        // vocab_parallel_cross_entropy keeps the fp32 softmax (the logits' fp32 copy, exp'd and
        // normalised in place) and writes its gradient into it (backward: grad_input =
        // softmax, in place; megatron/core/tensor_parallel/cross_entropy.py).
        return;
    case CrossEntropy::eager:
        // cross_entropy(pred.flatten(0, 1).float(), labels) (torchtitan's train.py at 9dec370,
        // its loss_fn; `del pred` before loss.backward()): the fp32 copy feeds log_softmax,
        // whose fp32 output autograd saves (LogSoftmaxBackward keeps `result`) and nll_loss
        // reads; the copy is freed with the forward. The backward's first two nodes each
        // allocate a gradient of the fp32 logits while the saved output lives: nll_loss's
        // (zeros_like(self), then the targets' -1 scattered: torch/_decomp/decompositions.py
        // _nll_loss_backward, aten/src/ATen/native/LossNLL.cpp) and log_softmax's
        // (_log_softmax_backward_data: a new grad_input) - 12 bytes per logit at once. The
        // 16-bit logits, freed by `del pred`, leave their block cached (the allocator's
        // free_block); every request until then asks for 4 bytes per logit, which it cannot
        // serve (get_free_block takes a block at least the request's size), so it stays
        // reserved at the peak. In fp32 training `.float()` returns the logits themselves, and
        // nll_loss's gradient reuses their block.
        // Under loss_parallel (torchtitan with tensor parallelism: the logits vocabulary-
        // sharded DTensors) one handler runs both backwards
        // (torch/distributed/tensor/parallel/loss.py, _nll_loss_and_log_softmax_backward:
        // `grad_input = torch.zeros_like(x)`, then `(grad_input + torch.exp(x)) *
        // grad_output`): the zeros, exp(x) and their sum live at once beside the saved output,
        // then the product replaces exp(x) - 16 bytes per logit.
        w.recomputed_activation_bytes = (loss_parallel ? 3 : 2) * logits * fp32;
        w.cached_bytes = e < fp32 ? logits * e : 0;
        return;
    case CrossEntropy::compiled:
        // torch.compile(cross_entropy_loss) (torchtitan's build_cross_entropy_loss, from
        // bbb1b61, 2025-04-02): Inductor's partition saves the 16-bit logits and the per-token
        // max and log-sum-exp (fp32) and recomputes the softmax in one fused backward kernel,
        // which writes the logits' gradient in their dtype; no fp32 copy of the logits exists.
        w.activation_bytes = norm + logits * e + 2 * fp32 * tokens;
        w.recomputed_activation_bytes = logits * e;
        return;
    case CrossEntropy::compiled_fp32:
        // torchtune (meta-pytorch/torchtune@1814feb17): TransformerDecoder.forward returns
        // `self.output(h).float()`, and training.compile_loss compiles the loss module around
        // it: the compiled graph's input, the fp32 logits, is what its backward saves (with the
        // per-token log-sum-exp), and it writes an fp32 gradient of them (ToCopyBackward then
        // casts it to 16-bit). The 16-bit logits, freed by the upcast, stay cached as in eager.
        w.activation_bytes = norm + logits * fp32 + 2 * fp32 * tokens;
        w.recomputed_activation_bytes = logits * fp32;
        w.cached_bytes = e < fp32 ? logits * e : 0;
        return;
    case CrossEntropy::chunked: {
        // torchtune's CEWithChunkedOutputLoss (torchtune/modules/loss/ce_chunked_output_loss.py
        // at 1814feb17): the model returns the output layer's 16-bit logits of
        // cross_entropy_chunks slices of the tokens (TransformerDecoder.chunked_output), and
        // compute_cross_entropy upcasts each slice and takes its loss, one slice at a time.
        // The autograd engine runs the slices' loss backwards (created after every output
        // layer, so higher sequence numbers) one after the other before any output-layer
        // backward: one slice's gradients at a time beside what the slices keep.
        const std::int64_t slice =
            (logits + cfg.cross_entropy_chunks - 1) / std::max(1, cfg.cross_entropy_chunks);
        if (cfg.compile) {
            // compute_cross_entropy compiled (training.compile_loss): Inductor saves each
            // slice's 16-bit logits and its per-token max and log-sum-exp, and its backward
            // writes the slice's gradient in one kernel in their dtype.
            w.activation_bytes = norm + logits * e + 2 * fp32 * tokens;
            w.recomputed_activation_bytes = slice * e;
        } else {
            // Eager: each slice's fp32 log_softmax output saved (the fp32 copy freed with the
            // slice's forward); its backward allocates the slice's two fp32 gradients
            // (nll_loss's and log_softmax's) and then the 16-bit one.
            w.activation_bytes = norm + logits * fp32;
            w.recomputed_activation_bytes = slice * (2 * fp32 + e);
            w.cached_bytes = e < fp32 ? logits * e : 0;
        }
        return;
    }
    }
}

} // namespace

namespace {

/// A classification head (ModelHead::classification) as Hugging Face's
/// BertForSequenceClassification runs it (src/transformers/models/bert/modeling_bert.py,
/// BertPooler and BertForSequenceClassification.forward, at huggingface/transformers@
/// 004ad5f50b627b59bf0d581c31bc0052b6cfd40b): `hidden_states[:, 0]`, dense h -> h, tanh,
/// dropout, the classifier h -> num_labels and CrossEntropyLoss over the labels, per sample.
/// The pooler's linear saves its input, a view of the last layer's output, which keeps that
/// whole [s, b, h] tensor alive; under autocast it saves its 16-bit copy of the b x h slice.
/// Replicated on every tensor-parallel rank, as the layers' norms are.
LayerWork classification_head_work(const Ctx& c) {
    const ModelSpec& m = c.m;
    LayerWork w;
    const std::int64_t e = c.elem;
    const std::int64_t rows = c.b;
    const std::int64_t labels = m.num_labels;
    PassWork& F = w.forward;
    F.add(c.gemm("pooler.dense", rows, c.h, c.h));
    F.add(c.memory("pooler.tanh", 2 * rows * c.h * e));
    if (m.dropout > 0)
        F.add(c.memory("classifier.dropout", rows * c.h * (2 * e + 1)));
    F.add(c.gemm("classifier", rows, labels, c.h));
    F.add(c.memory("classifier.loss", 4 * rows * labels * 4));
    PassWork& B = w.backward;
    B.add(c.memory("classifier.loss.bwd", 4 * rows * labels * 4));
    B.add(c.gemm("classifier.dgrad", rows, c.h, labels));
    B.add(c.gemm("classifier.wgrad", c.h, labels, rows));
    B.add(c.memory("pooler.tanh.bwd", 3 * rows * c.h * e));
    B.add(c.gemm("pooler.dgrad", rows, c.h, c.h));
    B.add(c.gemm("pooler.wgrad", c.h, c.h, rows));
    const std::int64_t pooler_input = c.cfg.autocast ? rows * c.h * e : c.tokens * c.h * e;
    // The pooler's input, tanh's output, the dropout's mask, the classifier's input, the
    // logits' fp32 log-softmax.
    w.activation_bytes =
        pooler_input + rows * c.h * (2 * e + (m.dropout > 0 ? 1 : 0)) + 4 * rows * labels;
    w.parameters = c.h * c.h + c.h + (c.h + 1) * labels;
    return w;
}

} // namespace

LayerWork head_work(const ModelSpec& m, const LayerConfig& cfg, const ComputeModel& cm) {
    check_config(m, cfg);
    const Ctx c(m, cfg, cm);
    LayerWork w;
    const std::int64_t e = c.elem;
    if (!m.is_transformer()) {
        // mean(x^2) over the gathered output: a reduction, and its gradient 2x/n.
        const std::int64_t x = c.b * c.h * e;
        w.forward.add(c.memory("loss", x));
        w.backward.add(c.memory("loss.bwd", 2 * x));
        w.activation_bytes = x;
        return w;
    }
    if (m.head == ModelHead::classification) {
        w = classification_head_work(c);
        freeze_lora(cfg, w, false);
        return w;
    }
    const std::int64_t T = c.tokens;
    const std::int64_t sharded = T * c.h / c.sp_div;
    const std::int64_t vocab_local = padded_vocab(m, cfg.tp) / c.t;
    const std::int64_t comm = T * c.h * e;
    const bool tp = c.t > 1;
    PassWork& F = w.forward;
    const int norm = F.add(c.memory("final_layernorm", 2 * sharded * e));
    const int head = F.add(c.gemm("lm_head", T, vocab_local, c.h));
    if (tp && c.sp)
        add_collective(w, "lm_head.all_gather", TpOp::all_gather, Pass::forward, comm, norm, head);
    // Megatron's vocab_parallel_cross_entropy, kernel by kernel: it is not fused, and every
    // step is a pass over the fp32 logits [T, V/t]: the cast of the 16-bit logits to fp32, the
    // max over the vocabulary (all-reduced), its subtraction, the target logit picked per
    // token (all-reduced), exp, the sum of exponentials (all-reduced), and the division that
    // leaves the softmax kept for the backward; then the loss per token and its masked mean.
    // Per logit 38 bytes forward (6 + 4 + 8 + 8 + 4 + 8) and 14 backward (the gradient
    // scaled in place, 8, and cast back to 16-bit, 6); the token-sized kernels are small.
    const std::int64_t logits = T * vocab_local;
    const std::int64_t fp32 = 4;
    const bool cast = e != fp32; // fp32 training has no casts
    if (cast)
        F.add(c.memory("cross_entropy.to_fp32", logits * (e + fp32)));
    const int max = F.add(c.memory("cross_entropy.max", logits * fp32));
    if (tp)
        add_collective(w, "cross_entropy.all_reduce", TpOp::all_reduce, Pass::forward, fp32 * T,
                       max, max + 1);
    F.add(c.memory("cross_entropy.subtract_max", 2 * logits * fp32));
    const int target = F.add(c.memory("cross_entropy.target_logit", 4 * T * fp32));
    F.add(c.memory("cross_entropy.exp", 2 * logits * fp32));
    const int sum = F.add(c.memory("cross_entropy.sum", logits * fp32));
    const int softmax = F.add(c.memory("cross_entropy.softmax", 2 * logits * fp32));
    if (tp) {
        add_collective(w, "cross_entropy.all_reduce", TpOp::all_reduce, Pass::forward, fp32 * T,
                       target, softmax + 1); // the target logit, needed by the loss
        add_collective(w, "cross_entropy.all_reduce", TpOp::all_reduce, Pass::forward, fp32 * T,
                       sum, softmax); // the sum of exponentials
    }
    F.add(c.memory("cross_entropy.loss", 4 * T * fp32));
    PassWork& B = w.backward;
    B.add(c.memory("cross_entropy.bwd.target", 4 * T * fp32));
    B.add(c.memory("cross_entropy.bwd.scale", 2 * logits * fp32));
    if (cast)
        B.add(c.memory("cross_entropy.bwd.to_16bit", logits * (fp32 + e)));
    const int dgrad = Ctx::next(B);
    if (tp && c.sp && !c.cfg.dtensor_tp)
        add_collective(w, "lm_head.regather", TpOp::all_gather, Pass::backward, comm, dgrad - 1,
                       dgrad + 1, true);
    B.add(c.gemm("lm_head.dgrad", T, c.h, vocab_local));
    B.add(c.gemm("lm_head.wgrad", c.h, vocab_local, T));
    if (tp)
        add_collective(w, c.sp ? "lm_head.grad_reduce_scatter" : "lm_head.grad_all_reduce",
                       c.sp ? TpOp::reduce_scatter : TpOp::all_reduce, Pass::backward, comm,
                       c.cfg.dtensor_tp ? dgrad + 1 : dgrad, dgrad + 2);
    B.add(c.memory("final_layernorm.bwd", 4 * sharded * e));
    // Korthikanti et al. 2022, section 4.3: 4 s b h / t (1 + v / h) with sequence parallelism.
    // Under DTensor the output layer (ColwiseParallel, input_layouts Shard(1)) saves the
    // gathered input for its weight gradient, as the blocks' column-parallel linears do.
    const std::int64_t head_input = c.cfg.dtensor_tp ? T * c.h : sharded;
    // Under fp8_output_proj Transformer Engine's Linear keeps its input's quantized copy.
    const std::int64_t head_saved = c.cfg.fp8_output_proj ? c.saved(head_input) : head_input * e;
    w.activation_bytes = sharded * e + head_saved + logits * fp32;
    loss_memory(cfg, tp && c.cfg.dtensor_tp, T, vocab_local, e, w);
    w.parameters = vocab_local * c.h + (m.norm == Norm::layernorm ? 2 * c.h : c.h);
    w.shares_embedding_weights = m.tied_embeddings;
    freeze_lora(cfg, w, false);
    return w;
}

} // namespace clustersim::strategies::models
