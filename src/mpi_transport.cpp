// The MPI transport. MPI collectives have no timeout: one stopped process (SIGSTOP, a frozen node)
// kept the whole job in MPI forever (repro N9). So every collective here is nonblocking and waited
// for in a loop that also keeps the processes informed of each other, on a duplicate communicator
// (no liveness message can match an analysis exchange):
//  - each process tells process 0 that it lives (an empty ALIVE message) at most every `beat_`
//    seconds while it waits or works (alive()), and process 0 tells every other process the same;
//  - process 0, while it waits, names a process it has not heard from for the timeout and ends the
//    job (MPI_Abort); the others end it when process 0 itself has been silent that long.
// Parallel HDF5 blocks inside HDF5's own MPI calls, and MPI_Init and MPI_Finalize block too: a
// watchdog thread (watchdog.hpp) covers those stretches. The message counts are settled in
// finish(), before MPI_Finalize.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "common/atomic_file.hpp"
#include "common/text.hpp"
#include "timings.hpp"
#include "transport.hpp"
#include "watchdog.hpp"

namespace straggler {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTagAlive = 7;

std::vector<std::string> split(const std::vector<char>& all, const std::vector<int>& sizes) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (int s : sizes) {
    out.emplace_back(all.data() + pos, size_t(s));
    pos += size_t(s);
  }
  return out;
}

// MPI counts are int: callers keep each exchange under 2 GiB (records go in rounds).
int count_of(size_t n) {
  if (n > size_t(INT_MAX)) throw std::runtime_error("exchange: a record blob over 2 GiB");
  return int(n);
}

std::vector<int> displacements(const std::vector<int>& sizes, size_t* total) {
  std::vector<int> d(sizes.size());
  int64_t sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) d[i] = count_of(size_t(sum)), sum += sizes[i];
  *total = size_t(count_of(size_t(sum)));
  return d;
}

MPI_Op mpi_op(Transport::Op op) {
  return op == Transport::Op::Sum ? MPI_SUM : op == Transport::Op::Max ? MPI_MAX : MPI_MIN;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Where the analysis was when something went silent: the last stage --timings recorded.
std::string where() {
  const std::string& s = timings().last_stage();
  return s.empty() ? "at the start" : "after '" + s + "'";
}

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, double timeout_s, std::unique_ptr<Watchdog> watchdog)
      : comm_(comm), timeout_s_(timeout_s) {
    MPI_Comm_rank(comm, &me_);
    MPI_Comm_size(comm, &n_);
    MPI_Comm node;  // the processes that share this machine's memory (and cores)
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me_, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_size(node, &local_);
      MPI_Comm_free(&node);
    }
    if (timeout_s_ <= 0 || n_ < 2) return;
    if (!watchdog) watchdog = std::make_unique<Watchdog>(timeout_s_, me_);
    watchdog->set_process(me_);
    watchdog->arm("starting");
    MPI_Comm_dup(comm, &ctrl_);
    timeout_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
    beat_ = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::clamp(timeout_s_ / 8, 0.05, 5.0)));
    last_seen_.assign(size_t(n_), Clock::now());
    sent_.assign(size_t(n_), 0), received_.assign(size_t(n_), 0);
    hosts_ = allgather(common::host_name());  // blocking: no watchdog_ yet, the one armed bounds it
    watchdog->disarm();
    watchdog_ = std::move(watchdog);
  }
  int rank() const override { return me_; }
  int size() const override { return n_; }
  int local_processes() const override { return local_; }
  const MPI_Comm* mpi_comm() const override { return &comm_; }

  std::vector<std::string> allgather(const std::string& mine) override {
    int my = count_of(mine.size());
    std::vector<int> sizes(static_cast<size_t>(n_));
    run(MPI_Iallgather(&my, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_, &req_));
    size_t total = 0;
    auto displ = displacements(sizes, &total);
    std::vector<char> all(total + 1);
    run(MPI_Iallgatherv(mine.data(), my, MPI_CHAR, all.data(), sizes.data(), displ.data(), MPI_CHAR, comm_, &req_),
        all.size() + mine.size());
    return split(all, sizes);
  }

  std::vector<std::string> alltoall(const std::vector<std::string>& to_each) override {
    std::vector<int> send_sizes(static_cast<size_t>(n_)), recv_sizes(static_cast<size_t>(n_));
    for (int i = 0; i < n_; ++i) send_sizes[size_t(i)] = count_of(to_each.at(size_t(i)).size());
    run(MPI_Ialltoall(send_sizes.data(), 1, MPI_INT, recv_sizes.data(), 1, MPI_INT, comm_, &req_));
    size_t send_total = 0, recv_total = 0;
    auto sdispl = displacements(send_sizes, &send_total), rdispl = displacements(recv_sizes, &recv_total);
    std::vector<char> send(send_total + 1), recv(recv_total + 1);
    for (int i = 0; i < n_; ++i)
      std::copy(to_each[size_t(i)].begin(), to_each[size_t(i)].end(), send.begin() + sdispl[size_t(i)]);
    run(MPI_Ialltoallv(send.data(), send_sizes.data(), sdispl.data(), MPI_CHAR, recv.data(), recv_sizes.data(),
                       rdispl.data(), MPI_CHAR, comm_, &req_),
        send_total + recv_total);
    return split(recv, recv_sizes);
  }

  std::vector<std::string> gather(const std::string& mine, int root) override {
    int my = count_of(mine.size());
    std::vector<int> sizes(static_cast<size_t>(n_));
    run(MPI_Igather(&my, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm_, &req_));
    size_t total = 0;
    std::vector<int> displ = me_ == root ? displacements(sizes, &total) : std::vector<int>(static_cast<size_t>(n_));
    std::vector<char> all(total + 1);
    run(MPI_Igatherv(mine.data(), my, MPI_CHAR, all.data(), sizes.data(), displ.data(), MPI_CHAR, root, comm_, &req_),
        total + mine.size());
    return me_ == root ? split(all, sizes) : std::vector<std::string>{};
  }

  std::string broadcast(const std::string& blob, int root) override {
    uint64_t n = blob.size();
    run(MPI_Ibcast(&n, 1, MPI_UINT64_T, root, comm_, &req_));
    std::string out = me_ == root ? blob : std::string(size_t(n), '\0');
    run(MPI_Ibcast(out.data(), count_of(size_t(n)), MPI_CHAR, root, comm_, &req_), size_t(n));
    return out;
  }

  void allreduce(std::span<double> v, Op op) override { reduce(v.data(), v.size(), MPI_DOUBLE, op); }
  void allreduce(std::span<int64_t> v, Op op) override { reduce(v.data(), v.size(), MPI_INT64_T, op); }
  void allreduce(std::span<uint64_t> v, Op op) override { reduce(v.data(), v.size(), MPI_UINT64_T, op); }
  void barrier() override { run(MPI_Ibarrier(comm_, &req_)); }

  [[noreturn]] void abort_job(const std::string& line) override {
    // Process 0 says it when it can: the others wait a moment (it ends them), so that a failure
    // seen everywhere is one line; a process 0 stuck elsewhere leaves the saying to them.
    if (!root()) std::this_thread::sleep_for(std::chrono::seconds(3));
    common::remove_armed_temps();
    std::cerr << "straggler-scan: " << (root() ? "" : "process " + std::to_string(me_) + ": ")
              << common::printable(line) << std::endl;
    MPI_Abort(comm_, 1);
    std::_Exit(1);  // not reached
  }

  void alive() override {
    if (!watchdog_ || finished_) return;
    watchdog_->extend();
    const auto now = Clock::now();
    if (now - last_beat_ >= beat_) service(now);
  }

  std::unique_ptr<Blocking> blocking(const std::string& what, double limit_s) override {
    if (!watchdog_ || finished_) return nullptr;
    struct Guard final : Blocking {
      explicit Guard(Watchdog& w) : w(w) {}
      ~Guard() override { w.disarm(); }
      Watchdog& w;
    };
    watchdog_->arm(what, limit_s);
    return std::make_unique<Guard>(*watchdog_);
  }

  void finish() override {
    if (!watchdog_) return;
    // Every liveness message sent is received before MPI_Finalize (none may stay pending): the
    // counts are exchanged (no more are sent from here on), then the rest received.
    quiet_ = true;
    std::vector<int64_t> sent = sent_, expect(size_t(n_), 0);
    run(MPI_Ialltoall(sent.data(), 1, MPI_INT64_T, expect.data(), 1, MPI_INT64_T, comm_, &req_));
    // From here on nothing is polled: the watchdog bounds the rest, MPI_Finalize included (a
    // process stopped now would hold it forever), until the transport is destroyed.
    watchdog_->arm("ending the run (MPI_Finalize)");
    for (int p = 0; p < n_; ++p)
      for (; received_[size_t(p)] < expect[size_t(p)]; ++received_[size_t(p)])
        MPI_Recv(nullptr, 0, MPI_CHAR, p, kTagAlive, ctrl_, MPI_STATUS_IGNORE);
    MPI_Comm_free(&ctrl_);
    finished_ = true;
  }

 private:
  void reduce(void* data, size_t n, MPI_Datatype type, Op op) {
    if (n > 0) run(MPI_Iallreduce(MPI_IN_PLACE, data, count_of(n), type, mpi_op(op), comm_, &req_));
  }

  // Waits for the request just started, bounded in time (see the top of the file). `bytes`: what
  // it moves here. A nonblocking collective only advances inside MPI calls, so while a transfer
  // of that size may still be flowing the wait keeps testing and only yields the core (shared
  // memory moves it in small fragments: with sleeps between tests 46 MB took 1 s); then it backs
  // off into sleeps, the waiting of a process ahead of a slower one.
  void run(int started, size_t bytes = 0) {
    if (started != MPI_SUCCESS) throw std::runtime_error("MPI: a collective could not be started");
    if (!watchdog_ || finished_) {
      MPI_Wait(&req_, MPI_STATUS_IGNORE);
      return;
    }
    int done = 0;
    auto next_look = Clock::now();
    const auto flowing = Clock::now() + std::chrono::microseconds(int64_t(bytes / 200));  // at >= 200 MB/s
    for (unsigned spin = 0;; ++spin) {
      MPI_Test(&req_, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (const auto now = Clock::now(); now >= next_look) {
        service(now);
        judge(now);
        next_look = now + std::chrono::milliseconds(20);
      }
      // Spin briefly (most waits are short), then sleep: oversubscribed processes share cores.
      if (bytes && Clock::now() < flowing) {
        std::this_thread::yield();
        spin = 0;
      } else if (spin > 64) {
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(2000u, 10u * (spin - 64))));
      }
    }
  }

  // Liveness messages in (counted, for finish) and, once per beat, out.
  void service(Clock::time_point now) {
    for (int flag = 1; flag;) {
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kTagAlive, ctrl_, &flag, &st);
      if (!flag) break;
      MPI_Recv(nullptr, 0, MPI_CHAR, st.MPI_SOURCE, kTagAlive, ctrl_, MPI_STATUS_IGNORE);
      ++received_[size_t(st.MPI_SOURCE)];
      last_seen_[size_t(st.MPI_SOURCE)] = now;
    }
    if (quiet_ || now - last_beat_ < beat_) return;
    last_beat_ = now;
    static char none = 0;
    for (int p = root() ? 1 : 0; p < (root() ? n_ : 1); ++p) {
      MPI_Request r;
      MPI_Isend(&none, 0, MPI_CHAR, p, kTagAlive, ctrl_, &r);
      MPI_Request_free(&r);  // empty: nothing to keep; finish() receives every one
      ++sent_[size_t(p)];
    }
  }

  // Process 0 names whoever has been silent for the timeout; the others watch process 0 only.
  void judge(Clock::time_point now) {
    for (int p = 0; p < n_; ++p) {
      if (p == me_ || (!root() && p != 0) || now - last_seen_[size_t(p)] <= timeout_) continue;
      const std::string line = (root() ? "" : "process " + std::to_string(me_) + ": ") + "process " +
                               std::to_string(p) + " (" + hosts_[size_t(p)] + ") has given no sign of life for " +
                               std::to_string(int64_t(seconds(now - last_seen_[size_t(p)]))) + " s " + where() +
                               " (stopped, frozen or hung); ending the job (--timeout " +
                               std::to_string(int64_t(timeout_s_)) + ")";
      common::remove_armed_temps();
      std::cerr << "straggler-scan: " << common::printable(line) << std::endl;
      MPI_Abort(comm_, 1);
    }
  }

  MPI_Comm comm_, ctrl_ = MPI_COMM_NULL;
  MPI_Request req_ = MPI_REQUEST_NULL;
  int me_ = 0, n_ = 1, local_ = 1;
  bool quiet_ = false;     // finish(): no more liveness messages out
  bool finished_ = false;  // finish() done: no more exchanges
  double timeout_s_ = 0;
  Clock::duration timeout_{}, beat_{};
  Clock::time_point last_beat_{};
  std::vector<Clock::time_point> last_seen_;
  std::vector<int64_t> sent_, received_;
  std::vector<std::string> hosts_;
  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Transport> mpi_transport(MPI_Comm comm, double timeout_s, std::unique_ptr<Watchdog> watchdog) {
  return std::make_unique<MpiTransport>(comm, timeout_s, std::move(watchdog));
}

}  // namespace straggler
