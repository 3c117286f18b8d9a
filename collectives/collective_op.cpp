#include "collectives/collective_op.hpp"

#include <algorithm>
#include <tuple>
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
    op.launch = k.launch[i] == ranks::kNoTime ? op.start : tl.utc_epoch_ns + k.launch[i];
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
  if (tl.pending_nccl.empty() || ops.empty() || its.empty()) return out;
  // Ops per iteration: those starting within the last full iteration (between the starts of the
  // last two; with one iteration, within it). Counting by kernel start over a whole period gives
  // the same count as by issue even when the GPU runs behind the host.
  const int64_t lo = tl.utc_epoch_ns + its[its.size() >= 2 ? its.size() - 2 : 0].start;
  const int64_t hi = its.size() >= 2 ? tl.utc_epoch_ns + its.back().start : tl.utc_epoch_ns + its.back().end + 1;
  size_t period = 0;
  for (const auto& op : ops) period += op.start >= lo && op.start < hi;
  if (period == 0) return out;
  // Issue order: by launch call (ties by start).
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(ops[a].launch, ops[a].start) < std::tie(ops[b].launch, ops[b].start);
  });
  std::unordered_map<int32_t, uint32_t> count;
  for (const auto& op : ops) count[op.stream] = std::max(count[op.stream], op.seq + 1);
  auto pend = tl.pending_nccl;
  std::sort(pend.begin(), pend.end(), [](auto& a, auto& b) { return a.launch < b.launch; });
  size_t earlier = 0;  // pending launches before this one
  for (const auto& p : pend) {
    const int64_t at = tl.utc_epoch_ns + p.launch;
    // Issue position: completed ops launched before it, and the pending launches before it.
    const size_t pos = size_t(std::partition_point(order.begin(), order.end(), [&](size_t i) { return ops[i].launch < at; }) -
                              order.begin()) + earlier++;
    if (tl.capture_end - p.launch < min_age_ns) continue;
    if (pos < period) continue;  // nothing tells which communicator it was
    const int32_t stream = ops[order[pos - period]].stream;
    out.push_back({stream, count[stream]++, at});
  }
  return out;
}

}  // namespace collectives
