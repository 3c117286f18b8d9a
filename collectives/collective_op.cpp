#include "collectives/collective_op.hpp"

#include <algorithm>
#include <unordered_map>

namespace collectives {

std::vector<CollectiveOp> extract_ops(const ranks::RankTimeline& tl, const std::vector<ranks::Iteration>& its,
                                      int rank) {
  const auto& k = tl.kernels;
  std::unordered_map<uint32_t, NcclKernelInfo> by_name;
  std::unordered_map<int32_t, uint32_t> next_seq;
  std::vector<CollectiveOp> out;
  size_t it = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    if (!k.is_nccl[i]) continue;
    auto [info, fresh] = by_name.try_emplace(k.name[i]);
    if (fresh) info->second = classify_nccl_kernel(tl.names.str(k.name[i])).value_or(NcclKernelInfo{});
    CollectiveOp op;
    op.start = tl.utc_epoch_ns + k.start[i];
    op.end = tl.utc_epoch_ns + k.end[i];
    op.rank = rank;
    op.stream = k.stream[i];
    op.seq = next_seq[k.stream[i]]++;
    op.type = info->second.type;
    op.dtype = info->second.dtype;
    if ((op.type == CollectiveType::Generic || op.type == CollectiveType::Unknown) && k.nccl_api[i] != ranks::kNoName)
      op.type = collective_of_api(classify_nccl_api(tl.names.str(k.nccl_api[i])));
    // Iteration of the op: the last iteration starting at or before the kernel (kernels are sorted).
    while (it < its.size() && its[it].start <= k.start[i]) ++it;
    op.iteration = int32_t(it) - 1;
    out.push_back(op);
  }
  return out;
}

std::vector<PendingOp> pending_ops(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                                   const std::vector<ranks::Iteration>& its, int64_t min_age_ns) {
  std::vector<PendingOp> out;
  if (tl.pending_nccl.empty() || ops.empty()) return out;
  // Issue order of the last complete iteration (by kernel start: one launch thread issues them).
  std::vector<int32_t> order;
  int64_t after = INT64_MIN;
  if (!its.empty()) {
    const int64_t lo = tl.utc_epoch_ns + its.back().start, hi = tl.utc_epoch_ns + its.back().end;
    for (const auto& op : ops)
      if (op.start >= lo && op.start <= hi) order.push_back(op.stream);
    after = hi;
  }
  std::unordered_map<int32_t, uint32_t> done_since, count;
  for (const auto& op : ops) {
    count[op.stream] = std::max(count[op.stream], op.seq + 1);
    if (op.start > after) done_since[op.stream]++;
  }
  auto pend = tl.pending_nccl;
  std::sort(pend.begin(), pend.end(), [](auto& a, auto& b) { return a.launch < b.launch; });
  size_t cursor = 0;
  for (const auto& p : pend) {
    if (tl.capture_end - p.launch < min_age_ns) continue;
    int32_t stream = -1;
    for (; cursor < order.size(); ++cursor) {
      auto& d = done_since[order[cursor]];
      if (d > 0) {
        --d;
        continue;
      }
      stream = order[cursor++];
      break;
    }
    if (stream < 0) continue;  // nothing tells which communicator it was
    out.push_back({stream, count[stream]++});
  }
  return out;
}

}  // namespace collectives
