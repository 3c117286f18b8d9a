#include "common/tasks.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace common {

namespace {
std::atomic<int> g_threads{2};
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
  auto fail = [&] {  // the first failure stops the rest; every thread is still joined
    std::lock_guard lock(mu);
    if (!error) error = std::current_exception();
    next = tasks.size();
  };
  auto safe_beat = [&] {
    try {
      if (beat) beat();
    } catch (...) {
      fail();
    }
  };
  // Takes tasks until none is left (or one failed).
  auto work = [&](bool main) {
    for (size_t k; (k = next.fetch_add(1)) < tasks.size();) {
      try {
        tasks[k]();
      } catch (...) {
        fail();
      }
      if (main) safe_beat();
    }
  };
  // Threads beyond the calling one: never more than there are tasks to share.
  const size_t helpers = std::min(size_t(std::max(threads, 1)) - 1, tasks.empty() ? 0 : tasks.size() - 1);
  std::vector<std::thread> pool;
  running = helpers;
  for (size_t i = 0; i < helpers; ++i) {
    try {
      pool.emplace_back([&] {
        work(false);
        std::lock_guard lock(mu);
        --running;
        cv.notify_all();
      });
    } catch (const std::system_error&) {  // no more threads to be had: fewer share the tasks
      std::lock_guard lock(mu);
      running -= helpers - i;
      break;
    }
  }
  work(true);
  {
    std::unique_lock lock(mu);
    while (running > 0)
      if (!cv.wait_for(lock, period, [&] { return running == 0; })) {
        lock.unlock();
        safe_beat();
        lock.lock();
      }
  }
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace common
