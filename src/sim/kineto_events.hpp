// Internal to the Kineto writer: the trace events of one rank, derived op by op from its op list
// (kineto_events.cpp) and formatted by kineto_writer.cpp. No event is stored: a pass asks for the
// events of an op when it gets there, so a rank's memory is two ids per op.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "kineto_writer.hpp"

namespace sim::kineto {

constexpr int64_t kUsNs = 1000;

// CUPTI callback ids (cupti_runtime_cbid.h, cupti_driver_cbid.h) of the calls written.
struct CudaCall {
  const char* name;
  int cbid;
  bool driver;  // cat "cuda_driver"
};
enum Call : uint8_t { kCallLaunch, kCallLaunchExC, kCallLaunchEx, kCallMemcpy, kCallSync, kCallGraph };
inline const CudaCall kCalls[] = {{"cudaLaunchKernel", 211, false},      {"cudaLaunchKernelExC", 430, false},
                                  {"cuLaunchKernelEx", 652, true},       {"cudaMemcpyAsync", 41, false},
                                  {"cudaStreamSynchronize", 131, false}, {"cudaGraphLaunch", 311, false}};

// Event categories as bits: each pass writes the events of some of them.
enum Kind : uint16_t {
  kCpuOp = 1, kAnnot = 2, kRuntime = 4, kFlowCpu = 8, kKernel = 16, kMemcpy = 32, kGpuAnnot = 64, kFlowGpu = 128,
  kCpuKinds = kCpuOp | kAnnot | kRuntime | kFlowCpu, kGpuKinds = kKernel | kMemcpy | kGpuAnnot | kFlowGpu
};
// What an event is: selects its name and args.
enum class W : uint8_t { Step, Loader, OptStep, Aten, C10d, Rpc, NcclAnnot, Runtime, FlowS, FlowF, Kernel, Memcpy, GpuAnnot, GpuFlow };

struct Ev {
  int64_t ts = 0, end = 0;  // true ns
  int64_t ext = 0;          // its External id (CPU ops, annotations) or the linked op's (runtime, GPU)
  uint32_t op = 0;
  int32_t aux = 0;  // Step: its number; Aten: kAten index; C10d / Rpc / NcclAnnot: kColl index; Runtime: Call
  W what = W::Aten;
  uint16_t kind = 0;
};

// The ATen / autograd ops PyTorch records around the launches, with what record_shapes writes.
struct AtenOp {
  const char* name;
  const char* dims;   // nullptr: from the bytes copied
  const char* types;
};
enum Aten : uint8_t {
  kALnF, kAMm, kAFlashF, kAGelu, kALogSoftmax, kAAdam, kALnB, kAFlashB, kAAdd, kACopy, kAItem, kADense, kACompiled,
  kACompiledBwd
};
extern const AtenOp kAten[];

// ProcessGroupNCCL's names per collective: the c10d op, record_param_comms' "Collective name"
// and the user_annotation it records around the NCCL call.
struct CollName {
  const char* c10d;
  const char* coll;
  const char* annot;
  const char* c10d_types;  // record_shapes' "Input type" of the c10d op
};
enum CollIdx : uint8_t { kCAllReduce, kCSend, kCRecv, kCCoalesced };
extern const CollName kColl[];
inline const char* const kC10dDims = "[[], [], [], []]";
inline const char* const kRpcDims = "[[], [], [], [], [], [], []]";
inline const char* const kRpcTypes = R"(["TensorList", "Scalar", "Scalar", "Scalar", "", "", ""])";
// The collective of a Coll op as "Collective name" says it (a batched send/recv pair: coalesced).
int32_t coll_index(const Op& op);

// One rank's view: its op list with the ids and time base of its trace.
struct RankCtx {
  const Simulation& sim;
  const Conventions& cv;
  const KinetoConventions& kc;
  int rank;
  const std::vector<Op>& ops;
  int64_t pid, tid, dev;
  const std::array<int, kStreamSlots>& stream;
  bool old_nccl;
  uint8_t nccl_call;
  std::vector<int32_t> head;        // CUDA graphs: the op whose cudaGraphLaunch launched it, or -1
  std::vector<uint32_t> ext_first;  // per op: its first CPU event's External id - ext_base
  std::vector<uint32_t> link;       // per op: the External id its API call (and GPU work) links to
  int64_t base;                     // baseTimeNanoseconds (relative time)

  RankCtx(const Simulation& s, const Conventions& c, const KinetoConventions& k, int r);
  int64_t unix(int64_t t) const { return kineto_unix_ns(sim, cv, rank, t); }
  int64_t corr(size_t i) const { return cv.corr(rank, i); }
  // Room for the CPU ranges around op i: half the host's gap to its neighbours, at most 2 us.
  int64_t lead(size_t i) const;
  int64_t tail(size_t i) const;
  bool gpu_work(size_t i) const;  // a kernel or copy that ran
  // The optimizer's launches (its kernels, maybe GC pauses between) form one Optimizer.step.
  bool first_optimizer(size_t i) const;
  size_t last_optimizer(size_t i) const;
  int64_t step_end(size_t iteration) const;  // a ProfilerStep lasts until the next one starts
};

// The CPU-thread events of op i in time order (outer ranges first), with their External ids.
void cpu_events(const RankCtx& rc, size_t i, std::vector<Ev>& out);
// The GPU events of op i if it ran on stream slot `slot`, in time order.
void gpu_events(const RankCtx& rc, size_t i, int slot, std::vector<Ev>& out);

}  // namespace sim::kineto
