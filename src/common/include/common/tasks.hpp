// Independent pieces of one process's own work spread over the cores it has to itself: the
// post-mortem's windows beside root blame. Under `mpirun -n 2` on 2 cores each process has one
// (the tasks run in turn); alone on the machine the process has them all.
#pragma once
#include <chrono>
#include <functional>
#include <vector>

namespace common {

// The threads this process may use for its own work (a profile read overlapping two table scans,
// the post-mortem's windows): the cores it has to itself. The driver sets it from its CPU affinity
// shared among the job's processes on the machine, so that processes that each start threads do
// not oversubscribe the cores. Default 2.
void set_process_threads(int threads);
int process_threads();

// Runs every task once, on up to `threads` threads (the calling one among them), earlier tasks
// first. `beat` runs on the calling thread only: after each task it ran and every `period` while
// it waits for the others (a heartbeat to the other processes: MPI calls stay on one thread). The
// first exception a task threw is rethrown once every thread has stopped.
void run_tasks(const std::vector<std::function<void()>>& tasks, int threads, const std::function<void()>& beat = {},
               std::chrono::milliseconds period = std::chrono::milliseconds(100));

}  // namespace common
