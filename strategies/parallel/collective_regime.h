#pragma once
/// \file
/// Whether a collective's predicted time is latency-bound or bandwidth-bound, decided by the
/// model that predicts it rather than by a size tuned to data. NCCL's tuning model
/// (NVIDIA/nccl src/graph/tuning.cc) prices each algorithm and protocol as a latency plus
/// bytes over a bandwidth, `t(n) = alpha + beta n` (Hockney's alpha-beta model, Thakur,
/// Rabenseifner and Gropp 2005); the regimes meet at the size where the two terms are equal,
/// `alpha = beta n`, that is where `t(n) = 2 alpha`. The closed form of the algorithm and
/// protocol the collective runs with gives both: alpha is its time for the smallest buffer the
/// collective can move (one element per rank), and a collective whose time is at most twice
/// that is latency-bound. The boundary therefore moves with the hardware file's latencies and
/// bandwidths, the GPU count, the operation and the protocol NCCL would pick.
///
/// The calibrated uncertainty bands are kept per regime (provenance.h's RegimeBand): residuals
/// of small messages, dominated by launch and synchronisation costs, spread differently from
/// those of large ones.

#include "strategies/collectives/collective.h"
#include "strategies/collectives/communicator.h"
#include "strategies/parallel/provenance.h"

#include <optional>

namespace clustersim::strategies::parallel {

/// The regime of `c` on `comm` run with `choice`'s algorithm and protocol (analytic closed
/// forms, whatever fidelity timed it); nullopt when the closed form cannot price the smallest
/// buffer of that algorithm and protocol.
std::optional<MessageRegime> message_regime(const collectives::Communicator& comm,
                                            const collectives::Collective& c,
                                            const collectives::Choice& choice);

} // namespace clustersim::strategies::parallel
