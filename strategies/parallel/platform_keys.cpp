#include "strategies/parallel/platform_keys.h"

#include "hardware/hardware_keys.h"
#include "strategies/parallel/framework_profile.h"

namespace clustersim::strategies::parallel {

using config::field;
using config::Key;
using config::KeyType;

namespace {

/// The costs of scale (straggler.h): the spreads whose expected maximum over N grows the step.
const std::vector<Key<FrameworkSpec>>& scale_cost_keys() {
    using F = FrameworkSpec;
    static const std::vector<Key<F>> keys{
        {{.name = "gpu_speed_spread",
          .type = KeyType::number,
          .fallback = "0",
          .meaning = "the relative standard deviation of one GPU's sustained compute rate "
                     "around the median GPU's across the cluster, in [0, 0.5): a step of N "
                     "GPUs computes at the pace of the slowest, slower by this times the "
                     "expected maximum of N standard normals (0: every GPU alike)",
          .lands = "FrameworkSpec::gpu_speed_spread",
          .example = "0.015"}},
        {{.name = "sync_jitter",
          .type = KeyType::time,
          .fallback = "0",
          .meaning = "the standard deviation of one rank's delay (OS noise, the host's launch "
                     "path) after a point where its host waited for its GPU: each such "
                     "synchronisation waits for the latest rank of its group, this times the "
                     "expected maximum of the group's standard normals (the step's end over all "
                     "GPUs; Megatron's non-interleaved pipeline exchanges over both stages)",
          .lands = "FrameworkSpec::sync_jitter",
          .example = "20us"},
         field<&F::sync_jitter>},
        {{.name = "network_flow_spread",
          .type = KeyType::number,
          .fallback = "0",
          .meaning = "the relative standard deviation of one inter-node flow's transfer time "
                     "around the median flow's under other jobs' traffic on a shared fabric, in "
                     "[0, 0.5): a step waits for every rank's collectives, so those across nodes "
                     "run at the pace of the slowest of the job's flows, one per GPU, slower by "
                     "this times the expected maximum of N standard normals (0: every flow at "
                     "the fabric's bandwidth)",
          .lands = "FrameworkSpec::network_flow_spread",
          .example = "0.02"}},
    };
    return keys;
}

} // namespace

// check-function-size: a table (one declaration per key, no logic between them).
const std::vector<Key<FrameworkSpec>>& framework_keys() {
    using F = FrameworkSpec;
    static const std::vector<Key<F>> keys = [] {
        std::vector<Key<F>> k{
            // First: the profile's bundle, which the keys below (read after it) override.
            {{.name = "profile",
              .type = KeyType::choice,
              .fallback = "none (each behaviour as its key says)",
              .choices = {framework_profile_names().begin(), framework_profile_names().end()},
              .meaning =
                  "the training stack by name, which sets batch_on_every_stage, "
                  "pipeline_tp_gather, fp32_grad_reduce, grad_accumulation and "
                  "pipeline_engine together (framework_profile.h: megatron-core, megatron-lm "
                  "of 2021-22, megatron-deepspeed); a key written in the framework: section "
                  "keeps its value under it; an experiment's training.framework chooses "
                  "another stack, all five behaviours with it",
              .lands = "FrameworkSpec::profile and the behaviours it sets",
              .example = "megatron-deepspeed"},
             +[](F& f, std::string_view name) {
                 apply_profile(f, *parse_framework_profile(name));
             }},
            {{.name = "host_overhead",
              .type = KeyType::time,
              .fallback = "0",
              .meaning = "host time to issue one kernel (Python, dispatch, the launch call): small "
                         "models are host-bound",
              .lands = "FrameworkSpec::host_overhead"},
             field<&F::host_overhead>},
            {{.name = "gemm_efficiency",
              .type = KeyType::number,
              .fallback = "1",
              .meaning = "the fraction of the microbenchmark rate GEMMs reach inside training, in "
                         "[0.01, 1]",
              .lands = "FrameworkSpec::gemm_efficiency"}},
            {{.name = "memory_efficiency",
              .type = KeyType::number,
              .fallback = "1",
              .meaning = "the same for memory-bound kernels, in [0.01, 1]",
              .lands = "FrameworkSpec::memory_efficiency"}},
            {{.name = "p2p_overhead",
              .type = KeyType::time,
              .fallback = "0",
              .meaning = "a pipeline send/receive's cost beyond its transfer (the call, handshake "
                         "and synchronisation)",
              .lands = "FrameworkSpec::p2p_overhead"},
             field<&F::p2p_overhead>},
            {{.name = "microbatch_overhead",
              .type = KeyType::time,
              .fallback = "0",
              .meaning = "host time per micro-batch and stage outside the layers, the GPU idle "
                         "(get_batch, the loss; transformers only)",
              .lands = "FrameworkSpec::microbatch_overhead"},
             field<&F::microbatch_overhead>},
            {{.name = "batch_on_every_stage",
              .type = KeyType::boolean,
              .fallback = "true",
              .meaning = "every stage and chunk pays microbatch_overhead (Megatron-LM before "
                         "October 2023); false: the chunks with the embedding or the loss",
              .lands = "FrameworkSpec::batch_on_every_stage"},
             field<&F::batch_on_every_stage>},
            {{.name = "pipeline_tp_gather",
              .type = KeyType::boolean,
              .fallback = "false",
              .mirrors = "--scatter-gather-tensors-in-pipeline",
              .meaning = "pipeline tensors sent as 1/tp each and all-gathered by the receiver, "
                         "exposed (Megatron-LM 2021; analytic fidelity)",
              .lands = "FrameworkSpec::pipeline_tp_gather"},
             field<&F::pipeline_tp_gather>},
            {{.name = "align_param_gather",
              .type = KeyType::boolean,
              .fallback = "false",
              .mirrors = "DistributedDataParallelConfig.align_param_gather",
              .meaning = "the interleaved schedule issues each chunk's whole overlapped parameter "
                         "gather at once; false: one bucket in flight (Megatron-Core 0.8)",
              .lands = "FrameworkSpec::align_param_gather"},
             field<&F::align_param_gather>},
            {{.name = "collective_overhead",
              .type = KeyType::time,
              .fallback = "0",
              .meaning = "extra host time to issue a tensor-parallel collective",
              .lands = "FrameworkSpec::collective_overhead"},
             field<&F::collective_overhead>},
            {{.name = "fp32_grad_reduce",
              .type = KeyType::boolean,
              .fallback = "true",
              .mirrors = "--accumulate-allreduce-grads-in-fp32",
              .meaning = "data-parallel gradients reduced in 32-bit; false: in the 16-bit dtype",
              .lands = "FrameworkSpec::fp32_grad_reduce"},
             field<&F::fp32_grad_reduce>},
            {{.name = "tensor_parallel",
              .type = KeyType::choice,
              .fallback = "megatron",
              .choices = {"megatron", "dtensor"},
              .meaning = "tensor parallelism as Megatron's linear layers, or PyTorch's DTensor "
                         "(torchtitan)",
              .lands = "FrameworkSpec::dtensor_tp"},
             +[](F& f, std::string_view t) { f.dtensor_tp = t == "dtensor"; }},
            {{.name = "grad_accumulation",
              .type = KeyType::choice,
              .fallback = "fused",
              .choices = {"fused", "unfused", "deepspeed"},
              .mirrors = "--no-gradient-accumulation-fusion",
              .meaning =
                  "how weight gradients add up over micro-batches: fused into the wgrad GEMM "
                  "(Megatron-Core); unfused, an add kernel per parameter tensor and "
                  "micro-batch (autograd's into a 16-bit grad, Megatron-LM's main_grad hook "
                  "in fp32); deepspeed, as unfused under fp16 or ZeRO and BF16_Optimizer's "
                  "cast and add into fp32 under bf16 without ZeRO",
              .lands = "FrameworkSpec::grad_accumulation"},
             +[](F& f, std::string_view g) {
                 f.grad_accumulation = g == "fused"     ? GradAccumulation::fused
                                       : g == "unfused" ? GradAccumulation::unfused
                                                        : GradAccumulation::deepspeed;
             }},
            {{.name = "pipeline_engine",
              .type = KeyType::choice,
              .fallback = "megatron",
              .choices = {"megatron", "deepspeed"},
              .meaning = "the pipeline's runtime: Megatron's schedules, or DeepSpeed's "
                         "PipelineEngine (1F1B only, gradients reduced after the last backward, "
                         "the sender's partitioned output gathered again before each backward)",
              .lands = "FrameworkSpec::deepspeed_pipeline"},
             +[](F& f, std::string_view e) { f.deepspeed_pipeline = e == "deepspeed"; }},
            {{.name = "runtime_memory",
              .type = KeyType::bytes,
              .fallback = "0",
              .min = 0,
              .meaning = "GPU memory the stack takes outside PyTorch's caching allocator (the CUDA "
                         "context, NCCL's buffers): in nvidia-smi's 'used', not in "
                         "torch.cuda.max_memory_reserved",
              .lands = "FrameworkSpec::runtime_memory"},
             field<&F::runtime_memory>},
            {{.name = "context_memory",
              .type = KeyType::bytes,
              .fallback = "0 (runtime_memory)",
              .min = 0,
              .meaning = "a single process's memory outside the allocator on one GPU, which runs "
                         "no NCCL communicator: the CUDA context and the kernels loaded with it "
                         "(what nvidia-smi shows after a first tensor on the GPU); used instead of "
                         "runtime_memory by one-GPU runs",
              .lands = "FrameworkSpec::context_memory"},
             field<&F::context_memory>},
            {{.name = "allocator_fragmentation",
              .type = KeyType::number,
              .fallback = "0",
              .meaning = "the share of the memory a step allocates and frees (activations, "
                         "transients, ZeRO-3's gathered parameters) that the caching allocator "
                         "holds beyond the live tensors at the peak, in [0, 1): a measured run's "
                         "max_memory_reserved / max_memory_allocated tells it",
              .lands = "FrameworkSpec::allocator_fragmentation",
              .example = "0.05"}},
        };
        k.insert(k.end(), scale_cost_keys().begin(), scale_cost_keys().end());
        return k;
    }();
    return keys;
}

const std::vector<Key<CalibrationRecord>>& calibration_record_keys() {
    using R = CalibrationRecord;
    static const std::vector<Key<R>> keys{
        {{.name = "key",
          .type = KeyType::text,
          .required = true,
          .meaning = "the dotted key the record describes",
          .lands = "CalibrationRecord::key"},
         field<&R::key>},
        {{.name = "value",
          .type = KeyType::text,
          .required = true,
          .meaning = "its value as written",
          .lands = "CalibrationRecord::value"},
         field<&R::value>},
        {{.name = "method",
          .type = KeyType::text,
          .fallback = "none",
          .meaning = "the fit's method",
          .lands = "CalibrationRecord::method"},
         field<&R::method>},
        {{.name = "files",
          .type = KeyType::list,
          .fallback = "none",
          .meaning = "the measurement files",
          .lands = "CalibrationRecord::files"}},
        {{.name = "points",
          .fallback = "0",
          .min = 0,
          .max = 1 << 30,
          .meaning = "measured points the fit used",
          .lands = "CalibrationRecord::points"},
         field<&R::points>},
        {{.name = "mean_abs_error_pct",
          .type = KeyType::number,
          .fallback = "0",
          .number_min = 0,
          .meaning = "mean |predicted / measured - 1| after the fit, percent",
          .lands = "CalibrationRecord::mean_abs_error"}},
        {{.name = "max_abs_error_pct",
          .type = KeyType::number,
          .fallback = "0",
          .number_min = 0,
          .meaning = "the largest, percent",
          .lands = "CalibrationRecord::max_abs_error"}},
    };
    return keys;
}

const std::vector<Key<Uncertainty>>& uncertainty_keys() {
    using U = Uncertainty;
    static const std::vector<Key<U>> keys{
        {{.name = "basis",
          .type = KeyType::choice,
          .fallback = "none",
          .choices = {"held-out", "in-sample"},
          .meaning = "what the residuals were measured on",
          .lands = "Uncertainty::basis"},
         +[](U& u, std::string_view b) { u.basis = std::string(b); }},
        {{.name = "collectives",
          .type = KeyType::section,
          .meaning = "residuals of collectives",
          .lands = "Uncertainty::collectives"}},
        {{.name = "gemms",
          .type = KeyType::section,
          .meaning = "residuals of GEMMs",
          .lands = "Uncertainty::gemms"}},
        {{.name = "steps",
          .type = KeyType::section,
          .meaning = "residuals of training steps",
          .lands = "Uncertainty::steps"}},
        {{.name = "collective_bands",
          .type = KeyType::list,
          .fallback = "none (collectives' band serves every size)",
          .meaning = "residuals of collectives by regime and GPU count",
          .lands = "Uncertainty::collective_bands"}},
    };
    return keys;
}

const std::vector<Key<ResidualBand>>& band_keys() {
    using B = ResidualBand;
    // Residuals are measured / predicted - 1: above -1 (a measured time is positive).
    static const std::vector<Key<B>> keys{
        {{.name = "points",
          .required = true,
          .min = 1,
          .max = 1 << 30,
          .meaning = "residuals the band is over",
          .lands = "ResidualBand::points"},
         field<&B::points>},
        {{.name = "p10",
          .type = KeyType::number,
          .required = true,
          .number_min = -0.999999,
          .meaning = "10th percentile of measured / predicted - 1",
          .lands = "ResidualBand::p10"},
         field<&B::p10>},
        {{.name = "p50",
          .type = KeyType::number,
          .required = true,
          .number_min = -0.999999,
          .meaning = "the median",
          .lands = "ResidualBand::p50"},
         field<&B::p50>},
        {{.name = "p90",
          .type = KeyType::number,
          .required = true,
          .number_min = -0.999999,
          .meaning = "90th percentile (p10 <= p50 <= p90)",
          .lands = "ResidualBand::p90"},
         field<&B::p90>},
    };
    return keys;
}

const std::vector<Key<RegimeBand>>& regime_band_keys() {
    using R = RegimeBand;
    // The band's own keys as band_keys() declares them, read into R::band.
    static const std::vector<Key<R>> keys = [] {
        std::vector<Key<R>> k{
            {{.name = "regime",
              .type = KeyType::choice,
              .required = true,
              .choices = {"latency", "bandwidth"},
              .meaning = "latency: predicted time at most twice its latency term "
                         "(strategies/parallel/collective_regime.h)",
              .lands = "RegimeBand::regime"},
             +[](R& r, std::string_view v) { r.regime = *parse_regime(v); }},
            {{.name = "gpus",
              .required = true,
              .min = 1,
              .max = 1 << 24,
              .meaning = "the GPU count of the collectives",
              .lands = "RegimeBand::gpus"},
             field<&R::gpus>},
        };
        for (const auto& b : band_keys()) {
            config::KeyInfo info = b.info;
            info.lands = info.name == "points" ? "RegimeBand::band.points"
                         : info.name == "p10"  ? "RegimeBand::band.p10"
                         : info.name == "p50"  ? "RegimeBand::band.p50"
                                               : "RegimeBand::band.p90";
            k.push_back({info});
        }
        return k;
    }();
    return keys;
}

const std::vector<config::KeySection>& hardware_sections() {
    static const std::vector<config::KeySection> sections = [] {
        std::vector<config::KeySection> s = hardware::hardware_key_sections();
        s.push_back(
            config::section_of("framework",
                               "The training stack's costs and settings (framework_spec.h), "
                               "calibrated from measured steps.",
                               framework_keys()));
        s.push_back(config::section_of("calibration[]",
                                       "Each record of the list: where a calibrated value came "
                                       "from (calibrate fit writes them).",
                                       calibration_record_keys()));
        s.push_back(config::section_of(
            "uncertainty", "Validation residuals of the calibrated model.", uncertainty_keys()));
        s.push_back(config::section_of(
            "uncertainty.<kind>", "One kind's band (collectives, gemms, steps).", band_keys()));
        s.push_back(config::section_of("uncertainty.collective_bands[]",
                                       "Each record of the list: the band of the collectives of "
                                       "one regime on one GPU count (calibrate fit writes them).",
                                       regime_band_keys()));
        return s;
    }();
    return sections;
}

} // namespace clustersim::strategies::parallel
