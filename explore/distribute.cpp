#include "explore/distribute.h"

#include "explore/thread_pool.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

namespace clustersim::explore {

std::vector<std::int64_t> rank_share(const std::vector<std::int64_t>& todo, int rank, int ranks) {
    std::vector<std::int64_t> mine;
    for (std::size_t i = 0; i < todo.size(); ++i) {
        if (static_cast<int>(i % static_cast<std::size_t>(ranks)) == rank)
            mine.push_back(todo[i]);
    }
    return mine;
}

std::string encode_plan(const std::set<std::int64_t>& done) {
    std::string plan = "ok\n";
    for (std::int64_t d : done)
        plan += std::to_string(d) + "\n";
    return plan;
}

std::string encode_plan_error(const std::string& message) {
    return "error\n" + message;
}

Plan decode_plan(const std::string& text) {
    Plan p;
    if (text.rfind("error\n", 0) == 0) {
        p.error = text.substr(6);
        return p;
    }
    std::istringstream in(text.substr(3));
    for (std::string line; std::getline(in, line);)
        p.done.insert(std::stoll(line));
    return p;
}

std::string join_rows(const std::vector<std::string>& rows) {
    std::string text;
    for (const auto& row : rows)
        text += row + "\n";
    if (!text.empty())
        text.pop_back();
    return text;
}

std::vector<std::pair<std::int64_t, std::string>> split_rows(const std::string& text) {
    std::vector<std::pair<std::int64_t, std::string>> rows;
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos)
            nl = text.size();
        std::string row = text.substr(pos, nl - pos);
        const std::int64_t index = std::stoll(row.substr(0, row.find(',')));
        rows.emplace_back(index, std::move(row));
        pos = nl + 1;
    }
    return rows;
}

namespace {

/// Runs the pool on a thread of its own, so that the calling thread stays free for the
/// transport; `finished` turns true when the pool is done, and `error` holds what it threw.
class BackgroundPool {
public:
    BackgroundPool(const std::vector<std::int64_t>& indices, int jobs, const Work& work,
                   OrderedSink& sink)
        : thread_([this, &indices, jobs, &work, &sink] {
            try {
                run_pool(indices, jobs, work, sink);
            } catch (...) {
                error_ = std::current_exception();
            }
            finished_ = true;
        }) {}
    ~BackgroundPool() {
        if (thread_.joinable())
            thread_.join();
    }
    BackgroundPool(const BackgroundPool&) = delete;
    BackgroundPool& operator=(const BackgroundPool&) = delete;

    bool finished() const { return finished_; }
    /// Waits for the pool; its exception, if any (null otherwise).
    std::exception_ptr join() {
        thread_.join();
        return error_;
    }

private:
    std::atomic<bool> finished_{false};
    std::exception_ptr error_;
    std::thread thread_;
};

std::string message_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "internal error";
    }
}

} // namespace

void run_worker(const std::vector<std::int64_t>& mine, int jobs, const Work& work,
                const Transport& transport) {
    std::mutex outbox_mutex;
    std::vector<std::string> outbox;
    OrderedSink sink(mine, [&](std::int64_t, const std::string& row) {
        std::lock_guard<std::mutex> lock(outbox_mutex);
        outbox.push_back(row);
    });
    BackgroundPool pool(mine, jobs, work, sink);
    for (;;) {
        const bool last = pool.finished();
        std::vector<std::string> batch;
        {
            std::lock_guard<std::mutex> lock(outbox_mutex);
            batch.swap(outbox);
        }
        if (!batch.empty())
            transport.send_to_root(join_rows(batch), MessageTag::rows);
        if (last)
            break;
        // Batches every few milliseconds: one message per row would cost more than the row.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (const std::exception_ptr error = pool.join()) {
        transport.send_to_root(message_of(error), MessageTag::error);
        std::rethrow_exception(error);
    }
    transport.send_to_root("", MessageTag::done);
}

void run_root(const std::vector<std::int64_t>& mine, int jobs, const Work& work, int ranks,
              const Transport& transport, OrderedSink& sink) {
    // When a worker fails, rank 0's own jobs stop at the next configuration (the pool stops at
    // the first exception) rather than finishing a share whose sweep is lost anyway.
    std::atomic<bool> stop{false};
    struct Stopped {};
    const Work stoppable = [&](std::int64_t index) {
        if (stop)
            throw Stopped{};
        return work(index);
    };
    BackgroundPool pool(mine, jobs, stoppable, sink);
    int done_ranks = 0;
    while (done_ranks < ranks - 1) {
        std::string text;
        int source = 0;
        MessageTag tag = MessageTag::done;
        // Poll while our own pool runs (its rows are emitted from its threads); block after.
        if (!transport.receive(text, source, tag, pool.finished())) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            continue;
        }
        switch (tag) {
        case MessageTag::rows:
            for (auto& [index, row] : split_rows(text))
                sink.submit(index, std::move(row));
            break;
        case MessageTag::done:
            ++done_ranks;
            break;
        case MessageTag::error:
            stop = true;
            pool.join();
            throw RankFailure(source, text);
        }
    }
    if (const std::exception_ptr error = pool.join())
        std::rethrow_exception(error);
}

} // namespace clustersim::explore
