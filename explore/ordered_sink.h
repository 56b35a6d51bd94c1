#pragma once
/// \file
/// The reorder buffer that makes a sweep's output independent of its threads and ranks:
/// threads (and MPI ranks) finish configurations out of order, and the sink holds a finished
/// row until every row before it in the given order has been emitted. The CSV is therefore the
/// same bytes whatever the parallelism, and always a prefix of the final file.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace clustersim::explore {

/// Rows delivered out of order, emitted in configuration order. `emit` is called under the
/// sink's lock, by whichever thread completes the next row.
class OrderedSink {
public:
    OrderedSink(std::vector<std::int64_t> order,
                std::function<void(std::int64_t, const std::string&)> emit);
    /// Hands in the row of configuration `index` (which must be in the order list).
    void submit(std::int64_t index, std::string row);
    std::int64_t emitted() const;
    std::int64_t total() const { return static_cast<std::int64_t>(order_.size()); }
    /// Rows waiting for an earlier one (the reorder buffer's size).
    std::size_t pending() const;

private:
    std::vector<std::int64_t> order_;
    std::function<void(std::int64_t, const std::string&)> emit_;
    mutable std::mutex mutex_;
    std::map<std::int64_t, std::string> waiting_;
    std::size_t next_ = 0;
};

} // namespace clustersim::explore
