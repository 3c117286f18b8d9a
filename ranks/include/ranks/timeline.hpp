// RankTimeline: one rank's GPU profile, normalized from any input format.
// Columns (struct of vectors), names interned; times are ns on the rank's own clock
// (utc_epoch_ns + t is the host's wall clock, only NTP-accurate across hosts).
// A reader fills the raw facts only; the columns marked "annotation" are filled afterwards by a
// format-independent pass (collectives::annotate_nccl), so no reader knows what NCCL is.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ranks {

// Interned strings: analyses compare ids, never text.
class StringTable {
 public:
  StringTable() = default;
  // The index holds views into the strings: a copy must index its own strings, not the
  // original's (a copied table kept views into a freed original: repro D3).
  StringTable(const StringTable& o) : strings_(o.strings_) { reindex(); }
  StringTable& operator=(const StringTable& o) {
    if (this != &o) strings_ = o.strings_, reindex();
    return *this;
  }
  // A moved deque keeps its elements (and their addresses): the views stay valid.
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;

  uint32_t intern(std::string_view s);
  const std::string& str(uint32_t id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  void reindex() {
    index_.clear();
    for (uint32_t i = 0; i < strings_.size(); ++i) index_.emplace(strings_[i], i);
  }
  std::deque<std::string> strings_;                      // deque: element addresses stay valid
  std::unordered_map<std::string_view, uint32_t> index_;  // views into strings_
};

inline constexpr uint32_t kNoName = UINT32_MAX;
inline constexpr uint32_t kUnnamedDomain = UINT32_MAX - 1;  // NvtxColumns::domain
inline constexpr int64_t kNoTime = INT64_MIN;
// Never the stream of a row: readers saturate stream ids into (kNoStream, INT32_MAX], so the
// analyses may use it for "no stream known" (a sentinel no input value can equal).
inline constexpr int32_t kNoStream = INT32_MIN;

// The time contract, kept by the readers (rows that break it are dropped with one counted
// warning; a file with nothing left is rejected) so that analyses need no overflow checks on
// single steps: every time in a RankTimeline (every start, end, launch, capture_start/end, the
// launch of pending_nccl and unfinished_launches) and utc_epoch_ns lie in [-kTimeLimit,
// kTimeLimit], and end >= start in every row. kNoTime (an absent launch) is the only exception.
// Hence the sum or difference of two such values fits int64 (|a +- b| <= 2^62); sums over many
// rows and clock-corrected wall clocks do not (see sat_math.hpp).
inline constexpr int64_t kTimeLimit = int64_t(1) << 61;
constexpr bool in_time_range(int64_t t) { return t >= -kTimeLimit && t <= kTimeLimit; }

// Whether a kernel is NCCL's: NCCL names all its kernels nccl... (ncclDevKernel_, ncclKernel_).
// Defined here, below the readers, so that the timeline's own passes and collectives::is_nccl_kernel
// use one rule.
inline bool is_nccl_kernel_name(std::string_view name) { return name.substr(0, 4) == "nccl"; }

// GPU kernels, sorted by start.
struct KernelColumns {
  std::vector<int64_t> start, end;
  std::vector<int32_t> stream;       // never kNoStream
  std::vector<uint32_t> name;        // StringTable id of the short name
  std::vector<int64_t> launch;       // start of the CUDA API call that launched it, or kNoTime
  std::vector<uint32_t> launch_tid;  // thread of that call (0 when unknown)
  std::vector<uint32_t> launch_dur;  // its duration in ns (capped at 2^32 - 1)
  // Collective metadata the profile attaches to the kernel itself (the PyTorch profiler's kernel
  // args since 2024: Collective name, In/Out msg nelems, dtype, Process Group Name/Ranks), raw
  // facts; all three empty when no kernel of the file has any. meta_call: the framework's name of
  // the call ("nccl:allreduce"), kNoName where unknown; meta_bytes: one rank's message size (-1:
  // unknown); meta_comm: an id of the process group, equal on its members (0: unknown).
  std::vector<uint32_t> meta_call;
  std::vector<int64_t> meta_bytes;
  std::vector<uint64_t> meta_comm;
  std::vector<uint32_t> nccl_api;    // annotation: NCCL API range (ncclAllReduce, ...) that issued it, or kNoName
  // annotation, where that range has NCCL's payload (else empty): its message size (-1: unknown)
  // and communicator id (0: unknown).
  std::vector<int64_t> nccl_bytes;
  std::vector<uint64_t> nccl_comm;
  std::vector<uint8_t> is_nccl;      // annotation: 1 for NCCL communication kernels
  size_t size() const { return start.size(); }
};

enum class CopyKind : uint8_t { HtoD = 1, DtoH = 2, DtoD = 8, PtoP = 10, Memset = 100, Other = 255 };

// Memcpy and memset activity, sorted by start.
struct CopyColumns {
  std::vector<int64_t> start, end;
  std::vector<int64_t> bytes;
  std::vector<int32_t> stream;
  std::vector<CopyKind> kind;
  size_t size() const { return start.size(); }
};

// ModuleLoad: loading device code (cuLibraryLoadData, cuModuleLoad*, cuLinkComplete): a one-time
// cost of JIT compilation or lazy loading.
enum class ApiKind : uint8_t { Launch, Sync, Memcpy, ModuleLoad, Other };

// CUDA runtime/driver calls that matter to the analyses (launches are not kept per call:
// their count is in launches_total), sorted by start.
struct ApiColumns {
  std::vector<int64_t> start, end;
  std::vector<uint32_t> name;
  std::vector<ApiKind> kind;
  size_t size() const { return start.size(); }
};

// Closed NVTX ranges, sorted by start.
struct NvtxColumns {
  std::vector<int64_t> start, end;
  std::vector<uint32_t> name;
  std::vector<uint32_t> domain;      // name of the range's domain; kNoName: the default domain,
                                     // kUnnamedDomain: another domain whose name is not in the file
  std::vector<uint32_t> tid;
  std::vector<uint8_t> nccl_domain;  // annotation: 1 when in NCCL's domain
  // NCCL's NVTX payload of the range (readers/nvtx_payload.hpp), where the export has one: all
  // three empty when no range of the process has a payload; else -1 / 0 / -1 where unknown.
  std::vector<int64_t> payload_bytes;  // message size of one rank's buffer
  std::vector<uint64_t> payload_comm;  // NCCL communicator id (commHash), identical on its members
  std::vector<int32_t> payload_peer;   // Send / Recv: the peer's rank in the communicator
  size_t size() const { return start.size(); }
};

// Where a timeline came from: format (a reader's name), its version and schema ("" if none).
struct ProfileSource {
  std::string format, version, schema;
};

struct RankTimeline {
  // Identity.
  int rank = -1;            // global training rank; -1 until assigned
  // The rank the file's content claims (the PyTorch profiler's distributedInfo.rank), -1: none.
  // A raw fact: rank_assignment.hpp decides (it outranks the file name).
  int claimed_rank = -1;
  int claimed_world = -1;  // the job's size the content claims (distributedInfo.world_size), -1: none
  std::string file;         // profile path as given
  std::string host;         // TARGET_INFO_SYSTEM_ENV Hostname ("" if absent)
  int device = -1;          // CUDA ordinal seen by the process
  std::string gpu_name;     // the driver's name of its GPU (TARGET_INFO_GPU), "" when the export has none
  // Its GPU's PCI bus location ("0000:45:00.0"; "uuid:..." where only the UUID is known), "" when
  // the export does not say: the ordinal is per process, this is the physical GPU.
  std::string gpu_bus;
  // Its GPU's index on the host where the launcher's CUDA_VISIBLE_DEVICES says (a one-process
  // file; the entry for `device`), -1: unknown. Orders a host's ranks when nothing else names them.
  int host_gpu = -1;
  int64_t pid = -1;
  ProfileSource source;          // the format and version of the file it was read from
  int64_t utc_epoch_ns = 0;     // wall clock at t = 0 (0 if unknown)
  int64_t capture_start = 0, capture_end = 0;  // extent of all events of this rank (ns, own clock)

  StringTable names;
  KernelColumns kernels;
  CopyColumns copies;
  ApiColumns api;
  NvtxColumns nvtx;
  int64_t launches_total = 0;   // kernel launch API calls seen
  // Kernel launch calls (host callbacks excepted) with no kernel record, in time order: CUPTI
  // writes the record when the kernel completes, so these never completed in the capture.
  struct UnmatchedLaunch {
    int64_t start = 0, end = 0;
    uint32_t tid = 0;
    uint32_t call = kNoName;  // cuLaunchKernelEx, cudaLaunchKernel_v7000, ...
  };
  std::vector<UnmatchedLaunch> unmatched_launches;
  // The launch calls that launched each kernel name (distinct pairs (kernel name, call); a few).
  std::vector<std::pair<uint32_t, uint32_t>> launch_calls;

  // Annotations (collectives::annotate_nccl):
  // Set by the pass once it has filled every annotation column; compute_metrics refuses a timeline
  // without it (the annotation columns would be missing or stale).
  bool nccl_annotated = false;
  // NCCL kernels that were launched (inside an NCCL API range, or the first launch after a range
  // that holds none) but never completed in the capture: a rank blocked in a collective that some
  // peer never joined (hang).
  struct PendingNccl {
    int64_t launch = 0;
    uint32_t api = kNoName;
  };
  std::vector<PendingNccl> pending_nccl;
  // The other kernel launch calls (runtime/driver rows) with no kernel record, which no NCCL range
  // labels: collectives::pending_ops infers from the launch sequence whether one was NCCL's (used
  // when pending_nccl is empty: NCCL_NVTX_DISABLE=1, NVTX not traced, ranges that miss the launch).
  struct UnfinishedLaunch {
    int64_t launch = 0;
    uint32_t api = kNoName;  // name of the launch call (cuLaunchKernelEx, cudaLaunchKernel_v7000, ...)
  };
  std::vector<UnfinishedLaunch> unfinished_launches;
  std::vector<uint32_t> nccl_launch_apis;  // launch calls that issued this process's completed NCCL kernels
  // Launch call rows a reader dropped as recorded twice (it links them by correlation id); said in
  // one line with the other duplicate rows sort_timeline drops.
  int64_t duplicate_launches = 0;
  // Why this process cannot be analysed though its file can ("" when it can): rank assignment
  // leaves it out with this reason (rank_assignment.hpp), as it does a stray process.
  std::string unusable;
  std::vector<std::string> warnings;  // recoverable oddities, reported once per file
};

}  // namespace ranks
