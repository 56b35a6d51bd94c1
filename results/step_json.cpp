// A training step's record (results/step_json.h): the JSON of `run --format json` and of the
// Python module's run(), and the short texts in it.
#include "results/step_json.h"

#include "base/text.h"
#include "base/units.h"
#include "results/uncertainty.h"

#include <fmt/format.h>

namespace clustersim::results {

using strategies::parallel::ExperimentSpec;
using strategies::parallel::StepResult;

std::string_view fidelity_name(const StepResult& r) {
    return strategies::collectives::to_string(
        strategies::collectives::FidelityChoice{r.fidelity, r.flow_symmetry});
}

std::string symmetry_note(const StepResult& r) {
    if (!r.flow_symmetry)
        return fmt::format("off (flow-full): every flow simulated, {} flows on {} GPUs", r.flows,
                           r.flow_gpus.size());
    return fmt::format("the communication of {} GPUs simulated ({} flows); {} more GPUs' flows "
                       "({}) left to identical representatives, exact (--fidelity flow-full "
                       "simulates them)",
                       r.flow_gpus.size(), r.flows, r.represented_gpus.size(), r.represented_flows);
}

std::string describe_recompute(const strategies::parallel::RecomputePlan& r) {
    std::vector<std::string> parts;
    auto add = [&](int n, const char* what) {
        if (n > 0)
            parts.push_back(std::to_string(n) + " " + what);
    };
    add(r.full, "full");
    add(r.selective, "selective");
    add(r.none, "none");
    return parts.empty() ? "no layers" : base::join(parts, " + ");
}

std::string recompute_plan_text(const StepResult& r) {
    std::vector<std::string> stages;
    for (const auto& m : r.memory)
        stages.push_back("stage " + std::to_string(m.stage) + ": " +
                         describe_recompute(m.recompute));
    return (r.automatic_recompute ? "auto: " : "") + base::join(stages, ", ");
}

std::string oom_fix_text(const std::optional<strategies::parallel::OomSuggestion>& fix) {
    if (!fix)
        return "";
    if (fix->recompute)
        return "fits with recompute: " + std::string(to_string(*fix->recompute));
    if (fix->zero)
        return "fits with zero: " + std::to_string(*fix->zero);
    return "no recompute or ZeRO setting fits; use more GPUs for tensor or pipeline parallelism";
}

std::string simulated_note(const StepResult& r) {
    return "one GPU per pipeline rank (tensor-parallel rank 0 of data-parallel replica 0): " +
           std::to_string(r.simulated_gpus.size()) + " of " + std::to_string(r.gpus) +
           " GPUs; tensor-parallel peers and data-parallel replicas do the same work";
}

nlohmann::ordered_json straggler_json(const strategies::parallel::StragglerBand& b) {
    nlohmann::ordered_json j = {{"gpu_speed_spread", b.spread},
                                {"slowdown", b.slowdown},
                                {"slowdown_p05", b.slowdown_p05},
                                {"slowdown_p95", b.slowdown_p95},
                                {"sync_jitter_s", b.sync_jitter_s},
                                {"synchronisations", b.synchronisations},
                                {"sync_wait_s", b.sync_wait_s},
                                {"network_flow_spread", b.network_spread},
                                {"network_flows", b.network_flows},
                                {"network_slowdown", b.network_slowdown},
                                {"network_slowdown_p05", b.network_slowdown_p05},
                                {"network_slowdown_p95", b.network_slowdown_p95}};
    if (b.step_time_p95_s > 0) {
        j["step_time_p05_s"] = b.step_time_p05_s;
        j["step_time_p95_s"] = b.step_time_p95_s;
    }
    return j;
}

nlohmann::ordered_json step_json(const ExperimentSpec& e, const StepResult& r) {
    nlohmann::ordered_json j;
    j["experiment"] = e.name;
    j["fidelity"] = strategies::collectives::to_string(r.fidelity);
    j["gpus"] = r.gpus;
    j["parallel"] = {{"tp", r.tp},
                     {"pp", r.pp},
                     {"dp", r.dp},
                     {"cp", e.parallel.cp},
                     {"schedule", r.schedule},
                     {"virtual_stages", r.virtual_stages},
                     {"micro_batches", r.micro_batches}};
    // An uneven split: the transformer layers of each model stage, in layer order.
    if (!strategies::parallel::uniform_split(e.stage_layers))
        j["parallel"]["stage_layers"] = e.stage_layers;
    // How tensor parallelism runs (framework.tensor_parallel), where there is any.
    if (r.tp > 1)
        j["parallel"]["tensor_parallel"] = e.framework.dtensor_tp ? "dtensor" : "megatron";
    j["step_time_s"] = r.step_time_s;
    j["step_time_band"] = band_json(e.provenance.uncertainty, PredictionKind::step, r.step_time_s);
    j["straggler"] = straggler_json(r.straggler);
    // Which parts of the model the hardware file calibrated (only for a calibrated file: a step
    // without a band may still run on fitted collectives).
    if (!e.provenance.calibration.empty())
        j["calibrated"] = calibrated_json(e.provenance);
    j["tokens_per_s"] = r.tokens_per_s;
    j["mfu"] = r.mfu;
    j["mfu_causal"] = r.mfu_causal;
    j["bubble_fraction"] = r.bubble_fraction;
    j["ideal_bubble_fraction"] = r.ideal_bubble_fraction;
    const auto& b = r.breakdown;
    j["breakdown"] = {{"stage", r.critical_rank},
                      {"compute_s", b.compute_s},
                      {"recompute_s", b.recompute_s},
                      {"host_s", b.host_s},
                      {"tp_comm_exposed_s", b.tp_comm_exposed_s},
                      {"pp_bubble_s", b.pp_bubble_s},
                      {"pp_comm_exposed_s", b.pp_comm_exposed_s},
                      {"dp_comm_exposed_s", b.dp_comm_exposed_s},
                      {"optimizer_s", b.optimizer_s}};
    if (e.parallel.expert_layout() && e.model.is_moe()) {
        j["parallel"]["ep"] = r.ep;
        j["parallel"]["etp"] = r.etp;
        j["parallel"]["expert_dp"] = r.expert_dp;
        j["breakdown"]["ep_comm_exposed_s"] = b.ep_comm_exposed_s;
    }
    // Of compute_s and recompute_s; listed where communication ran beside the kernels.
    if (b.overlap_slowdown_s > 0)
        j["breakdown"]["overlap_slowdown_s"] = b.overlap_slowdown_s;
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const auto& m : r.memory) {
        stages.push_back({{"stage", m.stage},
                          {"peak_bytes", m.peak_bytes},
                          {"reserved_bytes", m.reserved_bytes},
                          {"device_bytes", m.device_bytes},
                          {"weights_bytes", m.weights_bytes},
                          {"grads_bytes", m.grads_bytes},
                          {"optimizer_bytes", m.optimizer_bytes},
                          {"activations_bytes", m.activations_bytes},
                          {"gathered_bytes", m.gathered_bytes},
                          {"runtime_bytes", m.runtime_bytes},
                          {"recompute", describe_recompute(m.recompute)}});
    }
    j["memory"] = {{"peak_bytes_max", r.peak_bytes_max},
                   {"peak_reserved_bytes_max", r.peak_reserved_bytes_max},
                   {"device_bytes_max", r.device_bytes_max},
                   {"capacity_bytes", r.capacity_bytes},
                   {"per_stage", stages}};
    if (r.tight_headroom)
        j["memory"]["tight_headroom_stage"] = *r.tight_headroom;
    j["oom"] = r.oom.has_value();
    if (r.oom)
        j["oom_detail"] = {{"stage", r.oom->stage},
                           {"excess_bytes", r.oom->excess_bytes},
                           {"fix", oom_fix_text(r.oom_fix)}};
    j["recompute_plan"] = recompute_plan_text(r);
    j["simulated_gpus"] = r.simulated_gpus;
    j["simulated"] = simulated_note(r);
    if (r.fidelity == strategies::parallel::Fidelity::flow)
        j["flow"] = {{"fidelity", fidelity_name(r)},
                     {"symmetry", r.flow_symmetry},
                     {"simulated_gpus", r.flow_gpus},
                     {"represented_gpus", r.represented_gpus},
                     {"flows", r.flows},
                     {"represented_flows", r.represented_flows},
                     {"note", symmetry_note(r)}};
    return j;
}

} // namespace clustersim::results
