// The sweep's rank protocol without MPI: a root and workers on threads of one process, joined by
// a queue that carries what MPI would. Every configuration's row reaches the root's sink once,
// in order, whatever the number of ranks; a worker's error stops the root with that worker's
// rank and message.
#include "explore/distribute.h"
#include "explore/ordered_sink.h"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace clustersim::explore;

namespace {

/// Messages to rank 0 from every rank, as MPI_Send / MPI_Probe would carry them.
class Mailbox {
public:
    void post(int source, MessageTag tag, const std::string& text) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.emplace_back(source, tag, text);
        }
        ready_.notify_one();
    }
    bool take(std::string& text, int& source, MessageTag& tag, bool wait) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (wait)
            ready_.wait(lock, [&] { return !queue_.empty(); });
        if (queue_.empty())
            return false;
        std::tie(source, tag, text) = queue_.front();
        queue_.pop_front();
        return true;
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::tuple<int, MessageTag, std::string>> queue_;
};

class QueueTransport : public Transport {
public:
    QueueTransport(Mailbox& box, int rank)
        : box_(box)
        , rank_(rank) {}
    void send_to_root(const std::string& text, MessageTag tag) const override {
        box_.post(rank_, tag, text);
    }
    bool receive(std::string& text, int& source, MessageTag& tag, bool wait) const override {
        return box_.take(text, source, tag, wait);
    }

private:
    Mailbox& box_;
    int rank_;
};

std::string row_of(std::int64_t index) {
    return std::to_string(index) + ",row of " + std::to_string(index);
}

/// Runs a sweep of `configs` configurations on `ranks` ranks of 2 threads each; the rows rank
/// 0's sink emits, in emission order. `failing` (>= 0): the configuration whose job throws.
std::vector<std::string> sweep(std::int64_t configs, int ranks, std::int64_t failing = -1) {
    std::vector<std::int64_t> todo;
    for (std::int64_t i = 0; i < configs; ++i)
        todo.push_back(i);
    const Work work = [&](std::int64_t i) {
        if (i == failing)
            throw std::runtime_error("configuration " + std::to_string(i) + " failed");
        return row_of(i);
    };
    Mailbox box;
    std::vector<std::thread> workers;
    for (int r = 1; r < ranks; ++r) {
        workers.emplace_back([&, r] {
            try {
                run_worker(rank_share(todo, r, ranks), 2, work, QueueTransport(box, r));
            } catch (const std::runtime_error&) {
                // The worker rethrows after telling rank 0, as the app's rank would exit.
            }
        });
    }
    std::vector<std::string> emitted;
    OrderedSink sink(todo, [&](std::int64_t, const std::string& row) { emitted.push_back(row); });
    try {
        run_root(rank_share(todo, 0, ranks), 2, work, ranks, QueueTransport(box, 0), sink);
    } catch (...) {
        for (auto& t : workers)
            t.join();
        throw;
    }
    for (auto& t : workers)
        t.join();
    return emitted;
}

} // namespace

TEST_CASE("explore: every rank's rows reach rank 0 once, in configuration order",
          "[explore][distribute]") {
    for (int ranks : {2, 3, 5}) {
        const auto rows = sweep(1000, ranks);
        REQUIRE(rows.size() == 1000);
        for (std::int64_t i = 0; i < 1000; ++i)
            CHECK(rows[static_cast<std::size_t>(i)] == row_of(i));
    }
    // More ranks than configurations: the idle ranks say done and nothing else.
    CHECK(sweep(2, 4) == std::vector<std::string>{row_of(0), row_of(1)});
}

TEST_CASE("explore: a worker's error stops rank 0 with that rank and message",
          "[explore][distribute]") {
    // Configuration 7 of 30 on 3 ranks belongs to rank 1 (7 = 3 x 2 + 1).
    try {
        (void)sweep(30, 3, 7);
        FAIL("the sweep should have stopped");
    } catch (const RankFailure& e) {
        CHECK(e.rank() == 1);
        CHECK(std::string(e.what()) == "configuration 7 failed");
    }
    // Rank 0's own error is its own, not a RankFailure.
    CHECK_THROWS_MATCHES(sweep(30, 3, 6), std::runtime_error,
                         Catch::Matchers::Message("configuration 6 failed"));
}
