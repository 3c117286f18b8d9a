#include "watchdog.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "common/atomic_file.hpp"
#include "common/text.hpp"

namespace straggler {

void end_process(const std::string& line) {
  common::remove_armed_temps();
  const std::string l = "straggler-scan: " + common::printable(line) + "\n";
  (void)!::write(2, l.data(), l.size());
  std::_Exit(1);  // a thread stuck inside MPI cannot be unwound
}

Watchdog::Watchdog(double limit_s, int process) : limit_s_(limit_s), process_(process) {
  set_process(process);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::set_process(int process) {
  std::lock_guard lk(m_);
  process_ = process;
  const double s = process == 0 ? limit_s_ : limit_s_ + std::max(10.0, limit_s_ / 10);
  base_ = limit_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

void Watchdog::arm(const std::string& what, double limit_s) {
  std::lock_guard lk(m_);
  limit_ = base_;
  if (limit_s > 0 && limit_s < limit_s_)  // the grace of the processes other than 0 stays
    limit_ -= std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s_ - limit_s));
  armed_ = true, what_ = what, deadline_ = Clock::now() + limit_;
  cv_.notify_all();
}

void Watchdog::extend() {
  std::lock_guard lk(m_);
  if (armed_) deadline_ = Clock::now() + limit_;
}

void Watchdog::disarm() {
  std::lock_guard lk(m_);
  armed_ = false;
}

void Watchdog::run() {
  std::unique_lock lk(m_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lk);
      continue;
    }
    cv_.wait_until(lk, deadline_);
    if (armed_ && !stop_ && Clock::now() >= deadline_) {
      const std::string who = process_ == 0 ? "" : "process " + std::to_string(process_) + ": ";
      const bool why_given = what_.find('(') != std::string::npos;
      end_process(who + "no progress " + what_ + " for " +
                  std::to_string(int64_t(std::chrono::duration<double>(limit_).count())) + " s" +
                  (why_given ? "" : " (a process stopped or froze, or the file system hangs)") + "; giving up (--timeout)");
    }
  }
}

}  // namespace straggler
