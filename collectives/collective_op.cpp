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

namespace {
// Ops of the kernel family an NCCL API call may launch: all-to-all, gather and scatter run as
// SendRecv kernels; Generic and Unknown say nothing.
bool compatible(CollectiveType op, CollectiveType api) {
  auto p2p = [](CollectiveType t) {
    return t == CollectiveType::SendRecv || t == CollectiveType::AllToAll || t == CollectiveType::Gather ||
           t == CollectiveType::Scatter;
  };
  auto vague = [](CollectiveType t) { return t == CollectiveType::Generic || t == CollectiveType::Unknown; };
  return op == api || vague(op) || vague(api) || (p2p(op) && p2p(api));
}

// z[i]: length of the longest common prefix of v and v[i..] (z[0] = v.size()).
std::vector<size_t> z_array(const std::vector<int32_t>& v) {
  const size_t n = v.size();
  std::vector<size_t> z(n, 0);
  if (n) z[0] = n;
  for (size_t i = 1, l = 0, r = 0; i < n; ++i) {
    if (i < r) z[i] = std::min(r - i, z[i - l]);
    while (i + z[i] < n && v[z[i]] == v[i + z[i]]) ++z[i];
    if (i + z[i] > r) l = i, r = i + z[i];
  }
  return z;
}
}  // namespace

std::vector<PendingOp> pending_ops(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                                   const std::vector<ranks::Iteration>& its, int64_t min_age_ns) {
  std::vector<PendingOp> out;
  if (tl.pending_nccl.empty() || ops.empty()) return out;
  // Ops per iteration, when iterations are known: those starting within the last full iteration
  // (between the starts of the last two; with one iteration, within it). Counting by kernel start
  // over a whole period gives the same count as by issue even when the GPU runs behind the host.
  size_t period = 0;
  if (!its.empty()) {
    const int64_t lo = tl.utc_epoch_ns + its[its.size() >= 2 ? its.size() - 2 : 0].start;
    const int64_t hi = its.size() >= 2 ? tl.utc_epoch_ns + its.back().start : tl.utc_epoch_ns + its.back().end + 1;
    for (const auto& op : ops) period += op.start >= lo && op.start < hi;
  }
  // Issue order: by launch call (ties by start).
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(ops[a].launch, ops[a].start) < std::tie(ops[b].launch, ops[b].start);
  });
  std::vector<int32_t> stream;  // streams in issue order, pending launches included once placed
  std::vector<CollectiveType> type;
  std::unordered_map<int32_t, uint32_t> count;
  for (const auto& op : ops) count[op.stream] = std::max(count[op.stream], op.seq + 1);
  auto pend = tl.pending_nccl;
  std::sort(pend.begin(), pend.end(), [](auto& a, auto& b) { return a.launch < b.launch; });
  size_t next = 0;  // completed ops (in issue order) already in `stream`
  // Launches in time order: once one is too young (a capture cut mid-collective) so are the rest.
  // Past the first few per stream nothing is read (one blocked op per stream): bound the work.
  constexpr size_t kMaxPlaced = 256;
  size_t placed = 0;
  for (const auto& p : pend) {
    if (tl.capture_end - p.launch < min_age_ns || placed++ >= kMaxPlaced) break;
    const int64_t at = tl.utc_epoch_ns + p.launch;
    for (; next < order.size() && ops[order[next]].launch < at; ++next)
      stream.push_back(ops[order[next]].stream), type.push_back(ops[order[next]].type);
    // The issue position N = stream.size(). With iterations, its stream is that of position
    // N - period (one iteration earlier). Without (no step markers and too few repetitions to
    // infer them, as when a job dies in its first iterations), that of the earlier position j
    // whose preceding issue sequence matches the one before N the longest (latest j on ties): one
    // iteration back when the job repeats. Only a rank's own stream ids are compared, so any
    // numbering works. This fallback fails only at the start of the second iteration, where the
    // first op (j = 0) has no context to match.
    const size_t n = stream.size();
    const auto want = p.api == ranks::kNoName ? CollectiveType::Unknown
                                              : collective_of_api(classify_nccl_api(tl.names.str(p.api)));
    size_t best = SIZE_MAX;
    if (period > 0 && n >= period && compatible(type[n - period], want)) {
      best = n - period;
    } else {
      std::vector<int32_t> rev(stream.rbegin(), stream.rend());  // z on the reversed history
      const auto z = z_array(rev);
      size_t best_len = 0;
      for (size_t j = 1; j < n; ++j) {  // context before j: stream[0..j), reversed starts at n - j
        const size_t len = std::min(z[n - j], j);
        if (len > 0 && len >= best_len && compatible(type[j], want)) best = j, best_len = len;
      }
    }
    // Nothing tells which communicator it was: keep its issue slot, report nothing.
    const int32_t s = best == SIZE_MAX ? INT32_MIN : stream[best];
    stream.push_back(s), type.push_back(want);
    if (best == SIZE_MAX) continue;
    out.push_back({s, count[s]++, at});
  }
  return out;
}

}  // namespace collectives
