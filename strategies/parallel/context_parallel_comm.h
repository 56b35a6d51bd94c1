#pragma once
/// \file
/// The communication of context parallelism in a step (strategies/models/context_parallel.h
/// has the work): where the CP ranks sit and what their exchanges cost on the topology.
///
/// Placement: Megatron-Core numbers ranks in the order tp-cp-ep-dp-pp
/// (megatron/core/parallel_state.py, initialize_model_parallel(order="tp-cp-ep-dp-pp")):
/// tensor-parallel ranks fastest, then context-parallel ones, so a CP group sits inside a node
/// when tp x cp <= GPUs per node and its ring crosses nodes otherwise (gpu_of in step_plan.h).

#include "strategies/collectives/communicator_cache.h"
#include "strategies/models/context_parallel.h"
#include "strategies/models/layer_work.h"
#include "strategies/parallel/experiment.h"

#include <memory>

namespace clustersim::strategies::parallel {

/// Exposed seconds of one layer's context-parallel communication per pass, per micro-batch.
struct CpExposure {
    double forward = 0;
    double backward = 0;
    /// What the ring's exchanges cost the attention steps they run beside, per layer and
    /// micro-batch (overlap_interference.h: the send/recv kernel's CTAs and HBM traffic): part
    /// of compute, not of the exposed communication.
    double forward_slowdown = 0;
    double backward_slowdown = 0;
};

/// The exposed communication of `layer` (its attention ops give the shape) under the
/// experiment's cp and cp_comm_type on `topology`: p2p as the ring's steps against the
/// attention steps they overlap (models::cp_ring_exposure; the slowest hop of the ring sets
/// the pace: the one across nodes when the group spans nodes); all_gather as its collectives
/// on the CP group, not overlapped (forward: all-gather K and V; backward: again, then
/// reduce-scatter dK and dV). `gemm_efficiency` is the framework's factor on the attention
/// kernels. Zero for cp = 1.
CpExposure cp_exposure(const ExperimentSpec& e, const models::LayerWork& layer,
                       const hardware::ComputeModel& cm, double gemm_efficiency,
                       const hardware::Topology& topology,
                       collectives::CommunicatorCache* communicators);

} // namespace clustersim::strategies::parallel
