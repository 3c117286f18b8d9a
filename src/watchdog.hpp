// A thread that ends this process when a stretch of blocking calls (MPI_Init, parallel HDF5's
// collective calls, MPI_Finalize) makes no progress within a time limit: MPI calls have no
// timeout, and one stopped process (SIGSTOP, a frozen node) held every other one forever
// (repro N9). The process ends with one line and its armed temporaries removed (common/
// atomic_file.hpp); mpirun then ends the others. The polled waits are in mpi_transport.cpp.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace straggler {

class Watchdog {
 public:
  // Process `process` (-1: unknown yet) waits at most `limit_s` seconds for progress; process 0
  // judges first, the others get a grace so that it can name the silent one.
  Watchdog(double limit_s, int process);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void set_process(int process);
  // From now on the stretch `what` ("writing the HDF5 file ...") must show progress, within the
  // limit or, when shorter, `limit_s` seconds (> 0). Stretches do not nest: this one replaces any.
  void arm(const std::string& what, double limit_s = 0);
  void extend();  // progress: the limit starts again
  void disarm();

 private:
  void run();
  using Clock = std::chrono::steady_clock;
  double limit_s_;
  Clock::duration base_, limit_;  // the process's limit; the armed stretch's
  int process_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false, armed_ = false;
  Clock::time_point deadline_;
  std::string what_;
  std::thread thread_;
};

// Ends this process now, from any thread: `line` on stderr, armed temporaries removed, status 1.
[[noreturn]] void end_process(const std::string& line);

}  // namespace straggler
