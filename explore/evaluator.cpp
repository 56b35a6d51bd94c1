#include "explore/evaluator.h"

#include "base/error.h"
#include "explore/ordered_sink.h"
#include "explore/thread_pool.h"
#include "strategies/parallel/pipeline_schedule.h"

#include <cctype>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace clustersim::explore {

namespace sp = strategies::parallel;

struct Evaluator::Slot {
    std::once_flag once;
    std::unique_ptr<sp::StepSimulator> simulator;
};

void keep_freed_memory() {
    static std::once_flag once;
    std::call_once(once, [] {
#if defined(__GLIBC__)
        // A step of a long pipeline allocates and frees megabytes (a pass record per
        // micro-batch and stage). glibc's defaults give memory above 128 KiB back to the system
        // on free and fault it in again on the next configuration: in a sweep of Turing-530B
        // that kernel work took more time than the simulations (perf: page faults 30% of the
        // samples; 16 s of system time in 44 s). Keep freed memory in the process instead:
        // blocks up to 32 MiB (glibc's largest mmap threshold) from the heap, the heap's top
        // trimmed only above 1 GiB, grown 64 MiB at a time.
        // Not M_ARENA_MAX 1 (one arena for every thread, so that what a thread frees is
        // reused by the others): it cut the Turing sweep's --jobs 2 peak from +51% to +5% of
        // --jobs 1, but every malloc then takes one lock: --jobs 2 ran a 180-configuration
        // GPT-3 sweep at 0.48x of one thread, the Turing sweep at 1.55x (1.82x without it).
        // These settings act where glibc's malloc is the allocator: the tests (the sanitizer
        // build has ASan's own). The `clustersim` executable and the benchmarks are linked with
        // jemalloc, one arena behind per-thread caches (app/allocator.cpp), and glibc's settings
        // are then unused.
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        mallopt(M_TOP_PAD, 64 << 20);
#endif
    });
}

Evaluator::Evaluator(const ExperimentVariants& variants, EvalOptions options)
    : variants_(variants)
    , options_(options) {
    keep_freed_memory();
}

Evaluator::~Evaluator() = default;

Settings Evaluator::with_gpus(const Settings& overrides) const {
    if (options_.gpus <= 0)
        return overrides;
    Settings s;
    s.reserve(overrides.size() + 1);
    s.emplace_back("gpus", std::to_string(options_.gpus));
    s.insert(s.end(), overrides.begin(), overrides.end());
    return s;
}

ExperimentSpec Evaluator::unvalidated(const Settings& overrides) const {
    ExperimentSpec e = variants_.read(with_gpus(overrides));
    if (options_.derive_dp)
        e.parallel.dp = 0;
    if (options_.max_memory > 0) {
        // The bound replaces what the device reports too: the step fits in it.
        e.cluster.node.gpu.hbm_bytes = options_.max_memory;
        e.cluster.node.gpu.hbm_reported_bytes = 0;
    }
    return e;
}

ExperimentSpec Evaluator::experiment(const Settings& overrides) const {
    ExperimentSpec e = unvalidated(overrides);
    sp::validate_experiment(e);
    return e;
}

const sp::StepSimulator& Evaluator::simulator(const Settings& overrides,
                                              const ExperimentSpec& e) const {
    // The cluster depends only on the keys that re-read the hardware (and the model, which
    // does not matter here but keeps the key simple).
    Settings key;
    for (const auto& kv : with_gpus(overrides)) {
        if (sp::is_heavy_key(kv.first))
            key.push_back(kv);
    }
    std::shared_ptr<Slot> slot;
    {
        std::shared_lock<std::shared_mutex> lock(mutex_); // every configuration: side by side
        auto it = simulators_.find(key);
        if (it != simulators_.end())
            slot = it->second;
    }
    if (!slot) {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        auto& s = simulators_[key];
        if (!s)
            s = std::make_shared<Slot>();
        slot = s;
    }
    std::call_once(slot->once,
                   [&] { slot->simulator = std::make_unique<sp::StepSimulator>(e.cluster); });
    return *slot->simulator;
}

std::int64_t step_scratch_bytes(const ExperimentSpec& e) {
    constexpr std::int64_t kBytesPerPass = 48; // evaluator.h: measured
    const auto& p = e.parallel;
    // A forward and a backward per micro-batch and model stage; the zero-bubble schedules
    // split the backward in two.
    const bool split = p.schedule == sp::PipelineSchedule::zb_h1 ||
                       p.schedule == sp::PipelineSchedule::zb_v ||
                       p.schedule == sp::PipelineSchedule::dualpipe;
    const std::int64_t stages =
        std::int64_t{p.pp} * sp::chunks_per_rank(p.schedule, p.virtual_stages);
    return kBytesPerPass * std::int64_t{e.micro_batches()} * stages * (split ? 3 : 2);
}

std::int64_t Evaluator::scratch(const Settings& overrides) const {
    try {
        ExperimentSpec e = unvalidated(overrides);
        return sp::experiment_error(e) ? 0 : step_scratch_bytes(e);
    } catch (const InputError&) {
        return 0;
    }
}

Outcome Evaluator::evaluate(const Settings& overrides) const {
    Outcome o;
    try {
        ExperimentSpec e = unvalidated(overrides);
        // An invalid configuration is common in a sweep: its reason returned, not thrown.
        if (const auto error = sp::experiment_error(e)) {
            o.reason = error->message_for(variants_.path());
            return o;
        }
        sp::StepOptions so;
        so.fidelity = options_.fidelity;
        so.flow_symmetry = options_.flow_symmetry;
        so.oom_advice = false; // a sweep reports OOM; searching a fix would cost 5 more steps
        o.result = simulator(overrides, e).simulate(e, so);
        o.valid = true;
        o.gpus = e.gpus;
        o.tp = e.parallel.tp;
        o.pp = e.parallel.pp;
        o.dp = e.parallel.dp;
        o.cp = e.parallel.cp;
        o.micro_batch = e.training.micro_batch;
        o.micro_batches = e.micro_batches();
        o.virtual_stages = e.parallel.virtual_stages;
        o.zero = e.parallel.zero;
        o.schedule = e.parallel.schedule;
        o.recompute = e.parallel.recompute;
    } catch (const InputError& err) {
        o.valid = false;
        o.reason = err.message_for(variants_.path());
    }
    return o;
}

std::vector<Outcome> evaluate_all(const Evaluator& evaluator, const std::vector<Settings>& configs,
                                  int jobs) {
    std::vector<Outcome> out(configs.size());
    std::vector<std::int64_t> indices(configs.size());
    for (std::size_t i = 0; i < configs.size(); ++i)
        indices[i] = static_cast<std::int64_t>(i);
    OrderedSink sink(indices, [](std::int64_t, const std::string&) {});
    run_pool(
        indices, jobs,
        [&](std::int64_t i) {
            out[static_cast<std::size_t>(i)] =
                evaluator.evaluate(configs[static_cast<std::size_t>(i)]);
            return std::string();
        },
        sink);
    return out;
}

} // namespace clustersim::explore
