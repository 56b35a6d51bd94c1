#include "explore/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

namespace clustersim::explore {

namespace {

/// Runs `body` on `threads` threads and waits for them all.
template <class Body>
void on_threads(std::size_t threads, Body& body) {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t)
        pool.emplace_back(std::ref(body));
    for (auto& t : pool)
        t.join();
}

} // namespace

void run_pool(const std::vector<std::int64_t>& indices, int jobs,
              const std::function<std::string(std::int64_t)>& work, OrderedSink& sink) {
    const std::size_t n = indices.size();
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto worker = [&] {
        while (!stop) {
            const std::size_t i = next.fetch_add(1);
            if (i >= n)
                return;
            try {
                sink.submit(indices[i], work(indices[i]));
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error)
                    error = std::current_exception();
                stop = true;
            }
        }
    };
    const std::size_t threads =
        std::min<std::size_t>(static_cast<std::size_t>(std::max(1, jobs)), n);
    if (threads <= 1) {
        worker();
    } else {
        on_threads(threads, worker);
    }
    if (error)
        std::rethrow_exception(error);
}

void run_pool(const std::vector<std::int64_t>& indices, int jobs,
              const std::function<std::string(std::int64_t)>& work,
              const std::function<std::int64_t(std::int64_t)>& weigh, std::int64_t floor,
              OrderedSink& sink) {
    const std::size_t threads =
        std::min<std::size_t>(static_cast<std::size_t>(std::max(1, jobs)), indices.size());
    if (threads <= 1) {
        run_pool(indices, 1, work, sink); // one job at a time anyway
        return;
    }
    const std::size_t n = indices.size();
    std::exception_ptr error;
    std::mutex mutex; // guards error, and everything of the second pass below

    // First every job weighed, side by side (reading a configuration costs microseconds, its
    // simulation up to milliseconds), so that the bound is known before anything runs.
    std::vector<std::int64_t> weight(n, 0);
    {
        std::atomic<std::size_t> next{0};
        std::atomic<bool> failed{false};
        auto weigher = [&] {
            for (std::size_t i; !failed && (i = next.fetch_add(1)) < n;) {
                try {
                    weight[i] = std::max<std::int64_t>(0, weigh(indices[i]));
                } catch (...) {
                    std::lock_guard<std::mutex> lock(mutex);
                    if (!error)
                        error = std::current_exception();
                    failed = true;
                }
            }
        };
        on_threads(threads, weigher);
        if (error)
            std::rethrow_exception(error);
    }
    const std::int64_t largest = *std::max_element(weight.begin(), weight.end());
    // Every thread may hold a typical (median) job: only jobs far above the typical are kept
    // from running beside others. Without that term a sweep whose jobs are all alike and over
    // half the largest would run one job at a time, whatever --jobs says.
    std::vector<std::int64_t> sorted = weight;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n / 2),
                     sorted.end());
    const std::int64_t typical = sorted[n / 2];
    const std::int64_t bound =
        std::max({floor, largest + largest / 10, static_cast<std::int64_t>(threads) * typical});

    std::condition_variable finished;
    std::size_t next = 0;
    std::set<std::size_t> waiting; ///< positions of jobs that did not fit when their turn came
    // Jobs of over half the bound run beside small ones only, so they start ahead of their
    // turn, one at a time, while there are small ones to run beside them (left to their turn,
    // those at the end of a sweep would run one after the other, the other threads idle); their
    // rows wait in the sink, a row each.
    std::vector<std::size_t> big;
    for (std::size_t i = 0; i < n; ++i) {
        if (2 * weight[i] > bound)
            big.push_back(i);
    }
    std::size_t next_big = 0;
    std::vector<char> started(n, 0);
    int big_running = 0;
    std::int64_t in_flight = 0;
    int running = 0;
    bool stop = false;
    auto fits = [&](std::size_t i) { return running == 0 || in_flight + weight[i] <= bound; };
    auto worker = [&] {
        std::unique_lock<std::mutex> lock(mutex);
        for (;;) {
            if (stop)
                return;
            // The earliest waiting job that fits now, else the earliest big one not started if
            // none runs, else the next in order that fits (those that do not wait); a thread
            // with none waits for a job to finish.
            std::size_t i = n;
            for (auto it = waiting.begin(); it != waiting.end(); ++it) {
                if (fits(*it)) {
                    i = *it;
                    waiting.erase(it);
                    break;
                }
            }
            while (next_big < big.size() && started[big[next_big]])
                ++next_big;
            if (i == n && big_running == 0 && next_big < big.size() && fits(big[next_big])) {
                i = big[next_big];
                waiting.erase(i); // when its turn has come already
            }
            while (i == n && next < n) {
                if (!started[next]) {
                    if (fits(next))
                        i = next;
                    else
                        waiting.insert(next);
                }
                ++next;
            }
            if (i == n) {
                if (waiting.empty() && next_big == big.size())
                    return; // nothing left to start
                finished.wait(lock);
                continue;
            }
            started[i] = 1;
            const bool is_big = 2 * weight[i] > bound;
            big_running += is_big ? 1 : 0;
            in_flight += weight[i];
            ++running;
            lock.unlock();
            std::exception_ptr failed;
            try {
                sink.submit(indices[i], work(indices[i]));
            } catch (...) {
                failed = std::current_exception();
            }
            lock.lock();
            in_flight -= weight[i];
            --running;
            big_running -= is_big ? 1 : 0;
            if (failed && !error) {
                error = failed;
                stop = true;
            }
            finished.notify_all();
        }
    };
    on_threads(threads, worker);
    if (error)
        std::rethrow_exception(error);
}

int default_jobs() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

} // namespace clustersim::explore
