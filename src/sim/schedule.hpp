// What each rank does (op lists) and the discrete-event timing over all ranks together.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim.hpp"

namespace sim {

// Kernels the model launches; names live in nsys_writer.cpp.
enum Kernel : uint8_t {
  kLnFwd, kGemmFwd, kFlashFwd, kElementwise, kSoftmax, kOptimizer, kLnBwd, kGemmDgrad, kGemmWgrad,
  kFlashBwd, kNcclAllReduce, kNcclSendRecv, kKernelCount,
  // Launched only by root-cause faults (small_kernels): named after every other string, and only
  // in runs that launch it, so the string ids of other runs stay as they were.
  kSmallElementwise = kKernelCount, kKernelTotal
};

// Stall: host time only (GC pause, compilation, host work after a sync), written to no table.
enum class OpType : uint8_t { IterBegin, H2D, Compute, Coll, D2H, Sync, Stall };
// How the NCCL call of a Coll op looks on the CPU (NVTX ranges).
enum class Api : uint8_t { AllReduce, Send, Recv, SendRecv };

// Streams per process: compute (and memcpy), then one per communicator. Pipeline p2p runs on one
// communicator (and stream) per link, as PyTorch does: the link to the previous stage and the
// link to the next stage are separate.
// gpipe and interleaved runs send and receive on streams of their own per direction (kPpStream:
// receive from the previous stage, kPpNextStream: send to the next; kPpPrevSend, kPpNextRecv).
constexpr int kStreamSlots = 7;
constexpr int kStreamIds[kStreamSlots] = {7, 13, 17, 21, 19, 23, 27};
enum StreamSlot : uint8_t {
  kCompute = 0, kTpStream = 1, kPpStream = 2, kDpStream = 3, kPpNextStream = 4, kPpPrevSend = 5, kPpNextRecv = 6
};

constexpr int64_t kH2DBytes = 16 << 20;
constexpr int64_t kD2HBytes = 4;

struct Op {
  // Before simulate(): cpu_end holds the CPU cost and end the GPU duration (ns).
  int64_t cpu_start = 0, cpu_end = 0;  // the API call (for Coll: the whole NCCL call incl. NVTX ranges)
  int64_t start = 0, end = 0;          // GPU interval (kernel, memcpy); Sync: unused
  int32_t key = -1, seq = -1;          // Coll: collective key (communicator or p2p link) and its issue index
  int32_t iter = 0;
  OpType type = OpType::Compute;
  uint8_t kernel = 0;
  Api api = Api::AllReduce;
  uint8_t stream = kCompute;
  bool waits_dp : 1 = false;  // optimizer: waits for the DP gradient all-reduces
  // Hang: a collective this rank launched but that never completed (a peer never joined). Its
  // NVTX ranges and launch call are written, its kernel is not (CUPTI never records it).
  bool pending : 1 = false;
  bool mid_iter : 1 = false;  // Sync: a sync inside the iteration (sync fault): it does not end the iteration
  bool drain : 1 = false;     // Stall: starts when the rank's GPU has run dry (gc_pause: the GPU idles its cost)
  // Coll (gpipe, interleaved sends): an isend; the host launches it and goes on, its kernel queues
  // on its stream and nothing waits for it but later ops of that stream and the iteration's end.
  bool async : 1 = false;
  int32_t bytes = 0;      // H2D, D2H: bytes copied
};
static_assert(sizeof(Op) <= 56, "a run holds millions of ops: keep Op small");

// Launch API row inside a Coll op's CPU interval (shared by the simulator and the writer).
inline int64_t coll_launch_end(const Op& op) { return op.cpu_end - 800; }
inline int64_t coll_launch_start(const Op& op) { return op.cpu_end - 800 - 4500; }

struct RankTrace {
  std::vector<Op> ops;                                // written ops, CPU issue order
  std::vector<std::pair<int64_t, int64_t>> iter_cpu;  // completed iterations: [begin, sync end + ~10us]
  int iterations_written = 0;
  int64_t crashed_at = -1;  // crash fault: true CPU time the process died (start of its crash iteration)
  int64_t pending_since = -1;  // hang, crash: launch of its first op that never completed (pending), or -1
};

// A group of ranks that runs matched operations: a TP/DP communicator or one p2p link of a PP group.
struct CollKey {
  int comm = -1;  // index into Simulation::comms
  std::vector<int> members;
  int64_t bytes = 0;
  double algo_factor = 1.0;  // bytes on the wire per byte of message (ring all-reduce 2(n-1)/n)
  double transfer_ns = 0;    // base transfer time incl. slow_link
};

struct CommInfo {
  std::string name, kind;
  std::vector<int> ranks;
  int64_t ops = 0;  // completed matched operations (for pp: p2p kernel pairs over all links)
};

struct Desync {
  std::string comm;
  int64_t seq = 0;
  std::vector<int> missing;
  // Crash runs only (hang rows keep their original form): members waiting in the op, the p2p link
  // (pp) with its own op index, and whether a missing member is a crashed rank (else a victim
  // blocked in another communicator).
  bool crash = false, root_cause = false;
  std::vector<int> blocked, link;
  int64_t link_seq = -1;
};

struct Simulation {
  Options opt;
  int world = 0, gpus_per_host = 0, iterations = 0;
  std::vector<RankTrace> ranks;
  std::vector<CommInfo> comms;
  std::vector<CollKey> keys;
  std::vector<int64_t> host_offset_ns;  // NTP error e_h per host
  std::vector<double> host_drift_ppm;   // clock rate error per host: file times run (1 + d) fast
  std::vector<Desync> desync;
};

// Kernels per rank per iteration of a healthy run (for --target-kernels).
int64_t kernels_per_iteration(const Options& opt);

Simulation simulate(const Options& opt);

}  // namespace sim
