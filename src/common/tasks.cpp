#include "common/tasks.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace common {

namespace {
std::atomic<int> g_threads{1};
}

void set_process_threads(int threads) { g_threads = std::max(1, threads); }
int process_threads() { return g_threads; }

void run_tasks(const std::vector<std::function<void()>>& tasks, int threads, const std::function<void()>& beat,
               std::chrono::milliseconds period) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;
  size_t running = 0;
  // Takes tasks until none is left (or one failed); returns whether the caller should beat.
  auto work = [&](bool main) {
    for (size_t k; (k = next.fetch_add(1)) < tasks.size();) {
      try {
        tasks[k]();
      } catch (...) {
        std::lock_guard lock(mu);
        if (!error) error = std::current_exception();
        next = tasks.size();
      }
      if (main && beat) beat();
    }
  };
  // Threads beyond the calling one: never more than there are tasks to share.
  const size_t helpers = std::min(size_t(std::max(threads, 1)) - 1, tasks.empty() ? 0 : tasks.size() - 1);
  std::vector<std::thread> pool;
  running = helpers;
  for (size_t i = 0; i < helpers; ++i)
    pool.emplace_back([&] {
      work(false);
      std::lock_guard lock(mu);
      --running;
      cv.notify_all();
    });
  work(true);
  {
    std::unique_lock lock(mu);
    while (running > 0)
      if (!cv.wait_for(lock, period, [&] { return running == 0; }) && beat) {
        lock.unlock();
        beat();
        lock.lock();
      }
  }
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace common
