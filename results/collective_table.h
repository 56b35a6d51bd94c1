#pragma once
/// \file
/// A size sweep of one collective as `clustersim collective` runs it and `clustersim.collective()`
/// in Python returns it: the request in the command's terms (names and sizes as text, checked
/// here with the command's flag names in the errors), the cluster and communicator it runs on,
/// the predicted rows, and their JSON record (`collective --format json`). The command renders
/// the same rows as nccl-tests' table or CSV.

#include "strategies/collectives/communicator.h"
#include "strategies/collectives/flow_estimate.h"
#include "strategies/collectives/flow_runner.h"
#include "strategies/parallel/platform.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustersim::results {

/// What to sweep, as the command line gives it.
struct CollectiveRequest {
    std::string hardware;             ///< preset name or hardware file
    int gpus = 0;                     ///< 0: one node of the preset (or the file's `nodes`)
    std::string slice;                ///< a TPU slice's shape ("4x4x8"); empty: none given
    std::string op;                   ///< all_reduce, all_gather, ...
    std::optional<std::string> bytes; ///< one size ("100MiB"); none: the range below
    std::string min_bytes = "8";      ///< smallest size of the range
    std::string max_bytes = "1GiB";   ///< largest size of the range
    int factor = 2;                   ///< each size of the range is the last times this
    std::string algo = "auto";
    std::string protocol = "auto";
    std::string fidelity = "analytic";
    std::string dtype = "fp32";
    int root = 0;
    /// Flow fidelity refuses a size whose simulation would take at least this many CPU
    /// seconds (strategies/collectives/flow_estimate.h); 0: no bound.
    double max_seconds = strategies::collectives::kDefaultFlowMaxSeconds;
};

/// One predicted size.
struct CollectiveRow {
    std::int64_t bytes = 0;
    strategies::collectives::Choice choice;
    sim::Time time;
    /// Latency- or bandwidth-bound (strategies/parallel/collective_regime.h); selects its band.
    std::optional<strategies::parallel::MessageRegime> regime;
};

/// What simulating one size in flow fidelity would take (`collective --estimate`), counted from
/// its schedule without making a flow.
struct CollectiveEstimate {
    std::int64_t bytes = 0;
    strategies::collectives::Choice choice;
    strategies::collectives::FlowFootprint footprint;
    double heap_bytes = 0;  ///< what the flows would hold at most (flow_bytes)
    double cpu_seconds = 0; ///< what they would take at least (flow_seconds)
};

/// A request checked and its cluster built; rows() predicts every size.
class CollectiveSweep {
public:
    /// Checks the names, the root and the algorithm against the cluster; throws InputError
    /// naming the flag (`--op`, `--algo`, `--root`, ...) of the command.
    explicit CollectiveSweep(const CollectiveRequest& request);
    ~CollectiveSweep();

    const CollectiveRequest& request() const { return request_; }
    const strategies::parallel::Platform& platform() const { return platform_; }
    const strategies::collectives::Communicator& communicator() const { return *comm_; }
    /// The collective of every row (op, algorithm, protocol, dtype, root), without its size.
    const strategies::collectives::Collective& collective() const { return base_; }
    strategies::collectives::Fidelity fidelity() const { return fidelity_; }
    /// The fidelity as the command names it: analytic, flow (identical flows folded by
    /// symmetry, exact) or flow-full (every flow simulated).
    std::string_view fidelity_name() const;

    /// The sizes: `bytes`, or min_bytes, min_bytes x factor, ... up to max_bytes, each rounded
    /// as nccl-tests rounds it. Throws InputError for a size that is not one or rounds to
    /// nothing.
    std::vector<std::int64_t> sizes() const;
    /// Every size predicted, in order.
    std::vector<CollectiveRow> rows() const;
    /// Every size's flow simulation estimated, in order, none run.
    std::vector<CollectiveEstimate> estimates() const;

private:
    /// The collective at `bytes`, refused (naming the flag) past what the simulator can time.
    strategies::collectives::Collective sized(std::int64_t bytes) const;

    CollectiveRequest request_;
    strategies::parallel::Platform platform_;
    std::unique_ptr<hardware::Topology> topology_;
    std::unique_ptr<strategies::collectives::Communicator> comm_;
    strategies::collectives::Collective base_;
    strategies::collectives::Fidelity fidelity_{};
    strategies::collectives::FlowOptions flow_options_;
};

/// nccl-tests' bandwidths of a row on `gpus` GPUs: algbw = bytes / time and busbw = algbw x
/// the op's bus factor, in GB/s (10^9 bytes).
double algbw_gbps(const CollectiveRow& row);
double busbw_gbps(const CollectiveRow& row, strategies::collectives::Op op, int gpus);

/// The rows as `collective --format json` prints them: an array of {op, algo, protocol, gpus,
/// bytes, count, dtype, root, fidelity, time_us, algbw_gbps, busbw_gbps, time_band}.
nlohmann::ordered_json collective_json(const CollectiveSweep& sweep,
                                       const std::vector<CollectiveRow>& rows);

} // namespace clustersim::results
