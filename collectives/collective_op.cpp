#include "collectives/collective_op.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ranks/intervals.hpp"
#include "ranks/sat_math.hpp"

namespace collectives {

using ranks::sat_add;
using ranks::sat_sub;

std::vector<CollectiveOp> extract_ops(const ranks::RankTimeline& tl, const std::vector<ranks::Iteration>& its,
                                      int rank) {
  const auto& k = tl.kernels;
  std::unordered_map<uint32_t, NcclKernelInfo> by_name;
  std::unordered_map<int32_t, uint32_t> next_seq;
  std::vector<CollectiveOp> out;
  const auto compute = ranks::compute_intervals(k);
  size_t it = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    if (!k.is_nccl[i]) continue;
    auto [info, fresh] = by_name.try_emplace(k.name[i]);
    if (fresh) info->second = classify_nccl_kernel(tl.names.str(k.name[i])).value_or(NcclKernelInfo{});
    CollectiveOp op;
    // Wall clock: within 2^62 of 0 for in-contract times; saturating all the same.
    op.start = sat_add(tl.utc_epoch_ns, k.start[i]);
    op.end = sat_add(tl.utc_epoch_ns, k.end[i]);
    op.launch = k.launch[i] == ranks::kNoTime ? op.start : sat_add(tl.utc_epoch_ns, k.launch[i]);
    op.rank = rank;
    op.stream = k.stream[i];
    op.seq = next_seq[k.stream[i]]++;
    op.type = info->second.type;
    op.dtype = info->second.dtype;
    if (k.nccl_api[i] != ranks::kNoName) {
      // The call names the collective where the kernel does not (Generic), and an all-to-all that
      // NCCL runs as send/recv kernels (PyTorch's "nccl:all_to_all" around SendRecv kernels).
      const CollectiveType call = collective_of_api(classify_call_name(tl.names.str(k.nccl_api[i])));
      if (op.type == CollectiveType::Generic || op.type == CollectiveType::Unknown ||
          (op.type == CollectiveType::SendRecv && call == CollectiveType::AllToAll))
        op.type = call;
    }
    // Iteration of the op: the last iteration starting at or before the kernel (kernels are sorted).
    while (it < its.size() && its[it].start <= k.start[i]) ++it;
    op.iteration = int32_t(it) - 1;
    if (!k.nccl_bytes.empty()) op.bytes = k.nccl_bytes[i];
    if (!k.nccl_comm.empty()) op.comm = k.nccl_comm[i];
    if (k.end[i] > k.start[i] && !compute.empty()) {
      const double share = ranks::covered(compute, k.start[i], k.end[i]) / ranks::diff_d(k.end[i], k.start[i]);
      op.overlap = uint8_t(std::lround(255.0 * std::clamp(share, 0.0, 1.0)));
    }
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

// The earlier position j (0 < j < n = seq.size()) whose preceding sequence matches the one before
// n the longest (latest j on ties), among those ok(j) accepts; SIZE_MAX when none matches.
template <class Ok>
size_t best_context(const std::vector<int32_t>& seq, Ok ok) {
  const size_t n = seq.size();
  const auto z = z_array(std::vector<int32_t>(seq.rbegin(), seq.rend()));  // z on the reversed history
  size_t best = SIZE_MAX, best_len = 0;
  for (size_t j = 1; j < n; ++j) {  // context before j: seq[0..j), reversed starts at n - j
    const size_t len = std::min(z[n - j], j);
    if (len > 0 && len >= best_len && ok(j)) best = j, best_len = len;
  }
  return best;
}

// pending_ops without NCCL NVTX ranges: see collective_op.hpp.
std::vector<PendingOp> inferred_pending_ops(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                                            int64_t min_age_ns) {
  std::vector<PendingOp> out;
  const auto& k = tl.kernels;
  // Launches in time order; an unknown launch time has no place in the issue sequence.
  std::vector<ranks::RankTimeline::UnfinishedLaunch> unfinished;
  for (const auto& u : tl.unfinished_launches)
    if (u.launch != ranks::kNoTime) unfinished.push_back(u);
  std::stable_sort(unfinished.begin(), unfinished.end(), [](auto& a, auto& b) { return a.launch < b.launch; });
  if (unfinished.empty() || ops.empty() || k.size() == 0 ||
      sat_sub(tl.capture_end, unfinished.front().launch) < min_age_ns)
    return out;
  // A rank blocked in a collective soon runs out of GPU work (its next steps depend on it): its
  // last kernel ended long before the capture did. A GPU busy to the end is not stuck.
  if (sat_sub(tl.capture_end, *std::max_element(k.end.begin(), k.end.end())) < min_age_ns) return out;
  std::vector<uint32_t> issued;  // completed kernels with a launch call, in issue order
  for (size_t i = 0; i < k.size(); ++i)
    if (k.launch[i] != ranks::kNoTime) issued.push_back(uint32_t(i));
  std::stable_sort(issued.begin(), issued.end(), [&](uint32_t a, uint32_t b) { return k.launch[a] < k.launch[b]; });
  // Tokens: (kernel name, stream), a process's own ids.
  std::unordered_map<uint64_t, int32_t> token_of;
  std::vector<int32_t> token_stream;
  std::vector<uint8_t> token_nccl;
  auto token = [&](uint32_t i) {
    const uint64_t key = uint64_t(k.name[i]) << 32 | uint32_t(k.stream[i]);
    auto [it, fresh] = token_of.try_emplace(key, int32_t(token_stream.size()));
    if (fresh) token_stream.push_back(k.stream[i]), token_nccl.push_back(k.is_nccl[i]);
    return it->second;
  };
  std::unordered_map<int32_t, uint32_t> count;
  std::unordered_map<int32_t, int64_t> last_launch;  // latest launch of a completed op per stream
  for (const auto& op : ops) {
    count[op.stream] = std::max(count[op.stream], op.seq + 1);
    auto [it, fresh] = last_launch.try_emplace(op.stream, op.launch);
    if (!fresh) it->second = std::max(it->second, op.launch);
  }
  std::vector<int32_t> seq;  // tokens in issue order, unfinished launches included once placed
  seq.reserve(issued.size() + unfinished.size());
  std::unordered_set<int32_t> blocked;
  size_t next = 0, back = 0;  // back: how far back the matching position lies (0: none found)
  int searches = 8;           // the context search is linear in the history: bound the repeats
  for (const auto& u : unfinished) {
    if (sat_sub(tl.capture_end, u.launch) < min_age_ns) break;  // time order: the rest are younger
    bool resumed = false;  // completed launches came between this one and the previous
    for (; next < issued.size() && k.launch[issued[next]] < u.launch; ++next) seq.push_back(token(issued[next])), resumed = true;
    const size_t n = seq.size();
    // Consecutive unfinished launches keep the alignment; after completed ones it is searched anew.
    if ((resumed || back == 0) && searches > 0) {
      --searches;
      const size_t j = best_context(seq, [](size_t) { return true; });
      back = j == SIZE_MAX ? 0 : n - j;
    }
    const int32_t t = back > 0 && back <= n ? seq[n - back] : -1;  // bounds: 0 <= n - back < n
    seq.push_back(t);
    if (t < 0 || !token_nccl[size_t(t)]) continue;  // a compute kernel's place (or none known)
    const int32_t s = token_stream[size_t(t)];
    const int64_t at = sat_add(tl.utc_epoch_ns, u.launch);
    // A stream runs its kernels in order: a later launch on it completed, so this one was a
    // lost record, not a stuck kernel.
    if (auto it = last_launch.find(s); it != last_launch.end() && it->second > at) continue;
    // NCCL launches through one call per version (cuLaunchKernelEx from 2.19; cudaLaunchKernel,
    // cudaLaunchKernelExC or cudaLaunchCooperativeKernel before): a call this process never
    // launched an NCCL kernel with was not NCCL's. Only a veto: compute kernels use these calls too.
    const auto& apis = tl.nccl_launch_apis;
    if (!apis.empty() && std::find(apis.begin(), apis.end(), u.api) == apis.end()) continue;
    if (blocked.insert(s).second) out.push_back({s, count[s], at});  // one blocked op per stream
  }
  return out;
}
}  // namespace

std::vector<PendingOp> pending_ops(const ranks::RankTimeline& tl, const std::vector<CollectiveOp>& ops,
                                   const std::vector<ranks::Iteration>& its, int64_t min_age_ns) {
  std::vector<PendingOp> out;
  if (tl.pending_nccl.empty()) return inferred_pending_ops(tl, ops, min_age_ns);
  if (ops.empty()) return out;
  // Ops per iteration, when iterations are known: those starting within the last full iteration
  // (between the starts of the last two; with one iteration, within it). Counting by kernel start
  // over a whole period gives the same count as by issue even when the GPU runs behind the host.
  size_t period = 0;
  if (!its.empty()) {
    const int64_t lo = sat_add(tl.utc_epoch_ns, its[its.size() >= 2 ? its.size() - 2 : 0].start);
    const int64_t hi = sat_add(tl.utc_epoch_ns, its.size() >= 2 ? its.back().start : sat_add(its.back().end, 1));
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
  std::vector<ranks::RankTimeline::PendingNccl> pend;  // an unknown launch time has no issue position
  for (const auto& p : tl.pending_nccl)
    if (p.launch != ranks::kNoTime) pend.push_back(p);
  std::stable_sort(pend.begin(), pend.end(), [](auto& a, auto& b) { return a.launch < b.launch; });
  // Completed NCCL kernels whose launch record was lost (correlationId NULL, renumbered, split
  // over pids: repro D1) leave their launch call looking pending. A kernel starting at or after a
  // pending launch may be that launch's: one such kernel explains one launch, which is then a
  // lost link, not a stuck collective.
  std::vector<int64_t> unlinked;
  for (size_t i = 0; i < tl.kernels.size(); ++i)
    if (tl.kernels.is_nccl[i] && tl.kernels.launch[i] == ranks::kNoTime)
      unlinked.push_back(sat_add(tl.utc_epoch_ns, tl.kernels.start[i]));
  std::sort(unlinked.begin(), unlinked.end());
  size_t next_unlinked = 0;
  size_t next = 0;  // completed ops (in issue order) already in `stream`
  // Launches in time order: once one is too young (a capture cut mid-collective) so are the rest.
  // Past the first few per stream nothing is read (one blocked op per stream): bound the work.
  constexpr size_t kMaxPlaced = 256;
  size_t placed = 0;
  for (const auto& p : pend) {
    if (sat_sub(tl.capture_end, p.launch) < min_age_ns || placed++ >= kMaxPlaced) break;
    const int64_t at = sat_add(tl.utc_epoch_ns, p.launch);
    while (next_unlinked < unlinked.size() && unlinked[next_unlinked] < at) ++next_unlinked;
    if (next_unlinked < unlinked.size()) {  // launches ascend: a kernel skipped here started too early for the rest
      ++next_unlinked;
      continue;
    }
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
                                              : collective_of_api(classify_call_name(tl.names.str(p.api)));
    size_t best = SIZE_MAX;
    // Bounds: stream and type hold n entries; n - period < n, and best_context returns j < n.
    if (period > 0 && n >= period && compatible(type[n - period], want)) best = n - period;
    else best = best_context(stream, [&](size_t j) { return compatible(type[j], want); });
    // Nothing tells which communicator it was: keep its issue slot, report nothing.
    const int32_t s = best == SIZE_MAX ? ranks::kNoStream : stream[best];
    stream.push_back(s), type.push_back(want);
    if (best == SIZE_MAX) continue;
    out.push_back({s, count[s]++, at});
  }
  return out;
}

}  // namespace collectives
