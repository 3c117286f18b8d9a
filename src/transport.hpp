// The communication between the processes of one analysis, behind one small interface: a local
// implementation (one process, no MPI at all: run alone, straggler-scan pays no MPI start-up) and
// an MPI one (under mpirun). The analysis is one code path over either.
//
// Every call is collective (but alive() and blocking()): all processes make the same calls in the
// same order. Blobs are compact byte records (result rows, per-op records), never raw events.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "watchdog.hpp"

namespace straggler {

class Transport {
 public:
  enum class Op { Sum, Max, Min };

  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool root() const { return rank() == 0; }
  // Processes of this job on this process's machine (they share its cores).
  virtual int local_processes() const { return 1; }

  // Every process gets every process's blob, in process order.
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  // to_each[i] goes to process i; returns the blobs received, in source process order.
  virtual std::vector<std::string> alltoall(const std::vector<std::string>& to_each) = 0;
  // Only `root` gets the blobs (the others get an empty vector).
  virtual std::vector<std::string> gather(const std::string& mine, int root) = 0;
  // root's blob on every process.
  virtual std::string broadcast(const std::string& blob, int root) = 0;
  // Element-wise reduction over all processes, in place (every process passes the same length).
  virtual void allreduce(std::span<double> v, Op op) = 0;
  virtual void allreduce(std::span<int64_t> v, Op op) = 0;
  virtual void allreduce(std::span<uint64_t> v, Op op) = 0;
  virtual void barrier() = 0;

  template <class T>
  T reduce(T v, Op op) {
    allreduce(std::span<T>(&v, 1), op);
    return v;
  }

  // For parallel I/O (HDF5's MPI-IO driver): the MPI communicator, or nullptr when there is none.
  virtual const MPI_Comm* mpi_comm() const { return nullptr; }

  // Bounds in time (mpi_transport.cpp): no process waits forever for a stopped or frozen one.
  // Long local work (between profiles, between HDF5 datasets) calls alive(): under MPI the others
  // hear that this process lives, and a blocking stretch's watchdog gets more time. Cheap.
  virtual void alive() {}
  // A stretch of blocking collective calls the transport cannot poll itself (parallel HDF5): while
  // the guard lives, a watchdog ends the job when alive() is not called within the timeout (or
  // `limit_s` when shorter and > 0). Guards do not nest: a new one replaces the stretch.
  class Blocking {
   public:
    virtual ~Blocking() = default;
  };
  virtual std::unique_ptr<Blocking> blocking(const std::string& what, double limit_s = 0) {
    (void)what, (void)limit_s;
    return nullptr;
  }
  // Ends the whole job now, from this process alone, with one line and the temporaries removed
  // (exit status 1): for a failure that may have left the others waiting where this process
  // cannot reach them. One process alone just exits.
  [[noreturn]] virtual void abort_job(const std::string& line);
  // Collective, after the last exchange and before MPI_Finalize: settles the liveness messages;
  // the transport is destroyed after MPI_Finalize (a watchdog bounds that too).
  virtual void finish() {}
};

// One process: every collective returns its own contribution.
std::unique_ptr<Transport> local_transport();
// All processes of comm (MPI is initialised by the caller and outlives the transport). A process
// that hears nothing from another for `timeout_s` seconds while it waits ends the job with one line
// naming the silent process (MPI_Abort, exit status 1); 0 waits forever.
// `watchdog` (optional) is the one that bounded MPI_Init; it bounds the transport's blocking
// stretches and MPI_Finalize (the transport is destroyed after it).
std::unique_ptr<Transport> mpi_transport(MPI_Comm comm, double timeout_s = 0, std::unique_ptr<Watchdog> watchdog = nullptr);

// Whether this process was started by an MPI launcher (mpirun/mpiexec of Open MPI, MPICH or
// Intel MPI; srun with PMI/PMIx), from the variables those launchers set. Alone, straggler-scan
// runs on the local transport and never initialises MPI.
bool started_by_mpi_launcher();
// The launcher's rank of this process (0 when alone or unknown): who prints before MPI is up.
int launcher_rank();

}  // namespace straggler
