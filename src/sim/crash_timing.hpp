// Crash runs' timing, shared by the nsys and Kineto writers: when each rank's capture stops and
// when its NCCL watchdog aborts (split from nsys_writer.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "conventions.hpp"
#include "schedule.hpp"

namespace sim {

// Crash runs. A rank blocked in a launch waits until the NCCL watchdog times out (60 s, as
// TORCH_NCCL timeouts are often set) and aborts its communicators; then the job is killed. The
// crashed rank's own capture ends soon after it died (nsys still writes its report).
constexpr int64_t kWatchdogNs = 60'000'000'000, kAbortNs = 4'000'000;
constexpr int64_t kWatchdogTid = 7;  // tid = pid + 7: the watchdog thread

// Whether any rank crashed (its capture ends with its process).
bool crash_run(const Simulation& sim);
// True time the watchdog starts aborting, or -1 (no crash run, or the rank is not blocked).
int64_t watchdog_at(const Simulation& sim, int rank);
// One abort per NCCL stream; a rank whose NCCL runs on its compute stream (nccl_compute, random
// conventions: no NCCL stream created) aborts each communicator (pipeline link) it used.
int watchdog_aborts(const Simulation& sim, const Conventions& cv, int rank);
// True time the capture of a rank stops in a crash run; -1: when the job is killed.
int64_t rank_stop(const Simulation& sim, const Conventions& cv, int rank);

// True time each rank's capture stops: 2 s after the job's last event (one session; a hang: the
// job is killed), or in crash runs when its process dies or the watchdog's abort is killed.
std::vector<int64_t> capture_stops(const Simulation& sim, const Conventions& cv);

}  // namespace sim
