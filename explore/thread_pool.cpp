#include "explore/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace clustersim::explore {

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
        std::vector<std::thread> pool;
        for (std::size_t t = 0; t < threads; ++t)
            pool.emplace_back(worker);
        for (auto& t : pool)
            t.join();
    }
    if (error)
        std::rethrow_exception(error);
}

int default_jobs() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
}

} // namespace clustersim::explore
