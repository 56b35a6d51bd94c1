#pragma once
/// \file
/// The split of a sweep among processes (`sweep --mpi`): which configurations each rank
/// simulates, the plan rank 0 sends to the others (the configurations already done, or the
/// error that stops every rank), and the batches of rows the other ranks send back. The
/// transport itself (MPI) is the app's; this is the part that decides who does what, so it can
/// be tested without MPI. Configurations are dealt round-robin over the ones left to do, so
/// every rank gets neighbours in the grid of similar cost and rank 0's ordered output advances
/// evenly.

#include <cstdint>
#include <set>
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

} // namespace clustersim::explore
