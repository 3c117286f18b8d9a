#include "collectives/nccl_annotate.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "collectives/nccl_kernel.hpp"
#include "ranks/profile_reader.hpp"

namespace collectives {
namespace {

using ranks::kNoName;
using ranks::RankTimeline;

struct NcclRange {
  int64_t start, end;
  uint32_t name;
  NcclApi api;
  size_t index;        // in tl.nvtx
  int64_t reach = 0;   // the latest end of this range and every one before it on the thread
};
using RangesByThread = std::unordered_map<uint32_t, std::vector<NcclRange>>;

void mark_kernels(RankTimeline& tl) {
  auto& k = tl.kernels;
  std::vector<int8_t> nccl_of_name(tl.names.size(), -1);
  k.is_nccl.resize(k.size());
  for (size_t i = 0; i < k.size(); ++i) {
    int8_t& v = nccl_of_name[k.name[i]];
    if (v < 0) v = is_nccl_kernel(tl.names.str(k.name[i])) ? 1 : 0;
    k.is_nccl[i] = uint8_t(v);
  }
  k.nccl_api.assign(k.size(), kNoName);
}

// Marks nvtx.nccl_domain and returns the NCCL ranges per thread, sorted by start.
RangesByThread mark_ranges(RankTimeline& tl) {
  auto& n = tl.nvtx;
  uint32_t nccl_name = kNoName;
  for (uint32_t i = 0; i < tl.names.size(); ++i)
    if (tl.names.str(i) == "NCCL") nccl_name = i;
  RangesByThread out;
  n.nccl_domain.assign(n.size(), 0);
  for (size_t i = 0; i < n.size(); ++i) {
    const NcclApi api = classify_nccl_api(tl.names.str(n.name[i]));
    const bool nccl = n.domain[i] == ranks::kUnnamedDomain ? api != NcclApi::None
                                                            : n.domain[i] != kNoName && n.domain[i] == nccl_name;
    if (!nccl) continue;
    n.nccl_domain[i] = 1;
    out[n.tid[i]].push_back({n.start[i], n.end[i], n.name[i], api, i});
  }
  // Without NCCL's own ranges (the PyTorch profiler records none), PyTorch's "nccl:<op>" ranges
  // around each collective call stand in: ProcessGroupNCCL opens one on the calling thread before
  // it enqueues the kernel (record_function in its collective path), so it holds the launch.
  if (out.empty())
    for (size_t i = 0; i < n.size(); ++i)
      if (const std::string& name = tl.names.str(n.name[i]); classify_torch_nccl_range(name))
        out[n.tid[i]].push_back({n.start[i], n.end[i], n.name[i], classify_call_name(name), i});
  for (auto& [tid, v] : out) {
    std::stable_sort(v.begin(), v.end(), [](const NcclRange& a, const NcclRange& b) { return a.start < b.start; });
    for (size_t i = 0; i < v.size(); ++i) v[i].reach = i ? std::max(v[i - 1].reach, v[i].end) : v[i].end;
  }
  return out;
}

// For a group's ncclGroupEnd, the last collective call inside ncclGroupStart/End stands for it.
const NcclRange* call_of_range(const std::vector<NcclRange>& v, std::vector<NcclRange>::const_iterator r) {
  if (r->api != NcclApi::GroupEnd && r->api != NcclApi::GroupStart) return &*r;
  for (auto q = r; q != v.begin();) {  // walk back through the group
    --q;
    if (q->api == NcclApi::GroupStart) break;
    if (collective_of_api(q->api) != CollectiveType::Unknown) return &*q;
  }
  return &*r;
}

// Every launch call's start per thread, sorted: which launches lie between a range and a launch.
// Built on first use: only a launch that no range holds needs it.
class LaunchesByThread {
 public:
  explicit LaunchesByThread(const RankTimeline& tl) : tl_(tl) {}
  const std::vector<int64_t>* of(uint32_t tid) const {
    if (!by_) {
      by_.emplace();
      const auto& k = tl_.kernels;
      for (size_t i = 0; i < k.size(); ++i)
        if (k.launch[i] != ranks::kNoTime) (*by_)[k.launch_tid[i]].push_back(k.launch[i]);
      for (const auto& u : tl_.unmatched_launches) (*by_)[u.tid].push_back(u.start);
      for (auto& [t, v] : *by_) std::sort(v.begin(), v.end());
    }
    auto it = by_->find(tid);
    return it == by_->end() ? nullptr : &it->second;
  }

 private:
  const RankTimeline& tl_;
  mutable std::optional<std::unordered_map<uint32_t, std::vector<int64_t>>> by_;
};

// The collective API call that issued a kernel launched at [ls, le] on a thread: the innermost
// NCCL range around the launch. NCCL does not promise the launch lies inside its API range (a
// call may only enqueue; the launch follows when the call or its group returns), so a range that
// holds no launch of its own owns the thread's first launch after it, when nothing else was
// launched on the thread in between. A range that holds a launch owns only that one: the launch
// after it (a compute kernel waiting on the collective) is not NCCL's.
const NcclRange* range_of_launch(const RangesByThread& ranges, const LaunchesByThread& launches, uint32_t tid,
                                 int64_t ls, int64_t le) {
  auto it = ranges.find(tid);
  if (it == ranges.end()) return nullptr;
  const auto& v = it->second;
  auto ub = std::upper_bound(v.begin(), v.end(), ls, [](int64_t t, const NcclRange& r) { return t < r.start; });
  // Back from the last range starting by the launch: the first that holds it is the innermost;
  // else the latest-ending one that ended by the launch. `reach` ends the walk once no earlier
  // range can hold it or end later than the one found.
  auto before = v.end();
  for (auto r = ub; r != v.begin();) {
    --r;
    if (r->end >= le) return call_of_range(v, r);
    if (r->end <= ls && (before == v.end() || r->end > before->end)) before = r;
    if (r->reach < le && before != v.end() && r->reach <= before->end) break;
  }
  if (before == v.end()) return nullptr;
  if (const auto* l = launches.of(tid)) {  // any launch in [range start, ls) other than this one: not its range
    auto lo = std::lower_bound(l->begin(), l->end(), before->start);
    if (lo != l->end() && *lo < ls) return nullptr;
  }
  return call_of_range(v, before);
}
uint32_t api_of_launch(const RangesByThread& ranges, const LaunchesByThread& launches, uint32_t tid, int64_t ls,
                       int64_t le) {
  const NcclRange* r = range_of_launch(ranges, launches, tid, ls, le);
  return r ? r->name : kNoName;
}

// Each NCCL kernel's API range, and its payload's message size and communicator id where the
// export has them (kernels get the columns only then).
void link_launches(RankTimeline& tl, const RangesByThread& ranges, const LaunchesByThread& launches) {
  auto& k = tl.kernels;
  const auto& n = tl.nvtx;
  const bool payloads = !n.payload_bytes.empty();
  const bool meta = k.meta_call.size() == k.size() && k.meta_bytes.size() == k.size() && k.meta_comm.size() == k.size() &&
                    k.size() > 0;
  k.nccl_bytes.assign(payloads || meta ? k.size() : 0, -1), k.nccl_comm.assign(payloads || meta ? k.size() : 0, 0);
  for (size_t i = 0; i < k.size(); ++i) {
    if (!k.is_nccl[i]) continue;
    const NcclRange* r = k.launch[i] == ranks::kNoTime
                             ? nullptr
                             : range_of_launch(ranges, launches, k.launch_tid[i], k.launch[i], k.launch[i] + k.launch_dur[i]);
    if (r) k.nccl_api[i] = r->name;
    if (r && payloads) k.nccl_bytes[i] = n.payload_bytes[r->index], k.nccl_comm[i] = n.payload_comm[r->index];
    if (meta) {  // the kernel's own metadata, where the profile has it, is the surer source
      if (k.nccl_api[i] == kNoName) k.nccl_api[i] = k.meta_call[i];
      if (k.meta_bytes[i] >= 0) k.nccl_bytes[i] = k.meta_bytes[i];
      if (k.meta_comm[i] != 0) k.nccl_comm[i] = k.meta_comm[i];
    }
  }
  tl.nccl_launch_apis.clear();
  for (const auto& [kernel, call] : tl.launch_calls)
    if (is_nccl_kernel(tl.names.str(kernel)) &&
        std::find(tl.nccl_launch_apis.begin(), tl.nccl_launch_apis.end(), call) == tl.nccl_launch_apis.end())
      tl.nccl_launch_apis.push_back(call);
}

void classify_unmatched(RankTimeline& tl, const RangesByThread& ranges, const LaunchesByThread& launches) {
  tl.pending_nccl.clear(), tl.unfinished_launches.clear();
  // A launch no NCCL range owns may still be NCCL's: nothing promises NCCL's ranges are traced
  // around every call (NCCL_NVTX_DISABLE, an NVTX filter, a version that opens them elsewhere).
  // Those launches go to the sequence inference, used when no range-owned launch is pending.
  for (const auto& u : tl.unmatched_launches) {
    if (const uint32_t api = api_of_launch(ranges, launches, u.tid, u.start, u.end); api != kNoName)
      tl.pending_nccl.push_back({u.start, api});
    else if (tl.names.str(u.call).find("HostFunc") == std::string::npos)  // callbacks have no kernel
      tl.unfinished_launches.push_back({u.start, u.call});
  }
  // No launch matched a kernel (kernel correlationIds NULL): no sequence to place them in.
  const auto& launch = tl.kernels.launch;
  if (std::none_of(launch.begin(), launch.end(), [](int64_t t) { return t != ranks::kNoTime; }))
    tl.unfinished_launches.clear();
}

}  // namespace

void annotate_nccl(RankTimeline& tl) {
  mark_kernels(tl);
  const RangesByThread ranges = mark_ranges(tl);
  const LaunchesByThread launches(tl);
  link_launches(tl, ranges, launches);
  classify_unmatched(tl, ranges, launches);
  tl.nccl_annotated = true;
}

std::vector<RankTimeline> read_annotated(const std::string& path) {
  auto timelines = ranks::read_profile(path);
  for (auto& tl : timelines) annotate_nccl(tl);
  return timelines;
}

}  // namespace collectives
