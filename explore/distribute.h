#pragma once
/// \file
/// The split of a sweep among processes (`sweep --mpi`): which configurations each rank
/// simulates, the plan rank 0 sends to the others (the configurations already done, or the
/// error that stops every rank), and the batches of rows the other ranks send back. The
/// transport itself (MPI) is the app's; this is the part that decides who does what, so it can
/// be tested without MPI: the rank loops below talk to a `Transport`, which the app implements
/// with MPI and the tests with queues between threads. Configurations are dealt round-robin over
/// the ones left to do, so every rank gets neighbours in the grid of similar cost and rank 0's
/// ordered output advances evenly.

#include "explore/ordered_sink.h"

#include <cstdint>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace clustersim::explore {

/// The configurations of `todo` that `rank` of `ranks` simulates: every ranks-th, from the
/// rank-th.
std::vector<std::int64_t> rank_share(const std::vector<std::int64_t>& todo, int rank, int ranks);

/// The plan rank 0 broadcasts: the configurations already done...
std::string encode_plan(const std::set<std::int64_t>& done);
/// ...or the message of the error that stops the sweep.
std::string encode_plan_error(const std::string& message);

/// A plan read back: the error message (empty when none) and the configurations done.
struct Plan {
    std::string error;
    std::set<std::int64_t> done;
};
Plan decode_plan(const std::string& text);

/// Rows joined into one message (one per line, no trailing newline).
std::string join_rows(const std::vector<std::string>& rows);
/// A message split back into its rows, each with its configuration number (its first field).
std::vector<std::pair<std::int64_t, std::string>> split_rows(const std::string& text);

/// What the ranks of a sweep say to each other, and the transport that carries it. Only the
/// thread that calls `run_worker` / `run_root` uses the transport (MPI_THREAD_FUNNELED).
enum class MessageTag : int { rows = 1, done = 2, error = 3 };

class Transport {
public:
    virtual ~Transport() = default;
    /// Sends `text` to rank 0.
    virtual void send_to_root(const std::string& text, MessageTag tag) const = 0;
    /// A message waiting from any rank: true with its text, source and tag; false when none
    /// waits (`wait`: block until one comes).
    virtual bool receive(std::string& text, int& source, MessageTag& tag, bool wait) const = 0;
};

/// A worker rank failed; rank 0 stops the sweep with its message.
class RankFailure : public std::runtime_error {
public:
    RankFailure(int rank, const std::string& message)
        : std::runtime_error(message)
        , rank_(rank) {}
    int rank() const { return rank_; }

private:
    int rank_;
};

using Work = std::function<std::string(std::int64_t)>;

/// A worker rank (not 0): simulates `mine` on `jobs` threads and ships the finished rows to
/// rank 0 in batches as they come, then `done`. An exception of a job is shipped as `error`
/// (its message) and rethrown.
void run_worker(const std::vector<std::int64_t>& mine, int jobs, const Work& work,
                const Transport& transport);

/// Rank 0: simulates `mine` on `jobs` threads while it receives the rows of the other
/// `ranks - 1` ranks, every row going to `sink` (which puts them in order). Returns when every
/// rank said `done`; throws RankFailure when one said `error`, and rethrows an exception of
/// its own jobs.
void run_root(const std::vector<std::int64_t>& mine, int jobs, const Work& work, int ranks,
              const Transport& transport, OrderedSink& sink);

} // namespace clustersim::explore
