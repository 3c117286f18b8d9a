#include "collectives/what_if.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <tuple>

#include "common/stats.hpp"
#include "what_if_model.hpp"

namespace collectives {

void WhatIfReplay::Model::build(const WhatIfInputs& in) {
  role = in.role, data_parallel = in.comm_data_parallel, shared = in.comm_shared;
  add_ops(in);
  order_links();
  KeyIds peer_ids;
  for (size_t e = 0; e < entries.size(); ++e) entries[e].peers = peer_ids(peer_key(e));
  peer_groups = peer_ids.size();
  link_entries();
  sort_topologically();
  build_tables(in);
  compile();
}

// The window's ops (and the lead-in iteration's) and their members, in record order.
void WhatIfReplay::Model::add_ops(const WhatIfInputs& in) {
  const auto& rec = *in.records;
  std::optional<RecordIndex> own;
  const RecordIndex& index = in.index ? *in.index : own.emplace(rec);
  const auto ids = index.ops_in(in.first_iteration == INT32_MIN ? INT32_MIN : in.first_iteration - 1, in.end_iteration);
  size_t members = 0;
  for (uint32_t i : ids) members += index.members_of(i).size();
  ops.reserve(ids.size()), entries.reserve(members);
  std::vector<uint32_t> last_op_of;  // by rank
  for (uint32_t i : ids) {
    const auto& o = rec.ops[i];
    if (o.last < 0) continue;  // no last arriver: nothing to replay
    OpNode op;
    op.last = double(o.last_arrival), op.transfer = double(std::max<int64_t>(o.transfer, 0));
    op.comm = o.comm, op.seq = o.seq, op.window = o.iteration >= in.first_iteration, op.first = uint32_t(entries.size());
    op.p2p = op.comm < in.comm_p2p.size() && in.comm_p2p[op.comm], op.iteration = o.iteration;
    op.family = op.comm < in.comm_family.size() ? in.comm_family[op.comm] : op.comm;
    comms = std::max<size_t>(comms, size_t(op.comm) + 1);
    for (uint32_t k : index.members_of(i)) {
      const auto& m = rec.members[k];
      if (m.rank < 0) continue;
      if (size_t(m.rank) >= last_op_of.size()) last_op_of.resize(size_t(m.rank) + 1, kNone), ranks = last_op_of.size();
      repeats = repeats || last_op_of[size_t(m.rank)] == ops.size();
      last_op_of[size_t(m.rank)] = uint32_t(ops.size());
      Entry e;
      e.rank = m.rank, e.op = uint32_t(ops.size()), e.arrival = double(m.arrival), e.launch = m.launch, e.window = op.window;
      entries.push_back(e);
    }
    op.count = uint32_t(entries.size()) - op.first;
    ops.push_back(op);
  }
}

// Kahn's algorithm over entries (ids [0, E)) and op ends (E + op). Edges follow measured time, so
// there is no cycle unless zero-length ties make one; nodes left over go last, in time order.
// An entry's out-edges (to its op, to its next on the stream) are implicit; only an op's (to the
// entries waiting for it) are listed. Nodes are freed in the order a full edge list gave (by id).
void WhatIfReplay::Model::sort_topologically() {
  const size_t E = entries.size(), N = E + ops.size();
  std::vector<uint32_t> indeg(N, 0), next(E, kNone), first(ops.size() + 1, 0), waiting;
  auto each_wait = [&](auto&& wait) {  // (op, entry waiting for its end), by entry
    for (uint32_t e = 0; e < E; ++e) {
      for (uint32_t d = entries[e].dep_first; d < entries[e].dep_first + entries[e].dep_count; ++d) wait(deps[d], e);
      if (entries[e].ready_op != kNone) wait(entries[e].ready_op, e);
    }
  };
  each_wait([&](uint32_t o, uint32_t e) { ++first[o + 1], ++indeg[e]; });
  for (size_t o = 0; o < ops.size(); ++o) first[o + 1] += first[o], indeg[E + o] = ops[o].count;
  waiting.resize(first.back());
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  each_wait([&](uint32_t o, uint32_t e) { waiting[fill[o]++] = e; });
  for (uint32_t e = 0; e < E; ++e)
    if (entries[e].prev != kNone) next[entries[e].prev] = e, ++indeg[e];
  order.reserve(N);
  for (uint32_t n = 0; n < N; ++n)
    if (!indeg[n]) order.push_back(n);
  auto free_one = [&](uint32_t n) {
    if (--indeg[n] == 0) order.push_back(n);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t n = order[i];
    if (n >= E) {
      for (uint32_t k = first[n - E]; k < first[n - E + 1]; ++k) free_one(waiting[k]);
    } else if (next[n] != kNone && next[n] < n) {
      free_one(next[n]), free_one(uint32_t(E + entries[n].op));
    } else {
      free_one(uint32_t(E + entries[n].op));
      if (next[n] != kNone) free_one(next[n]);
    }
  }
  if (order.size() < N) {
    auto time = [&](uint32_t n) { return n < E ? entries[n].arrival : ops[n - E].end(); };
    std::vector<uint32_t> rest;
    for (uint32_t n = 0; n < N; ++n)
      if (indeg[n]) rest.push_back(n);
    std::sort(rest.begin(), rest.end(), [&](uint32_t a, uint32_t b) { return time(a) < time(b); });
    order.insert(order.end(), rest.begin(), rest.end());
  }
}

// The order as steps (then neither it nor deps is needed).
void WhatIfReplay::Model::compile() {
  const size_t E = entries.size();
  std::vector<uint32_t> step_of(order.size());
  for (uint32_t p = 0; p < order.size(); ++p) step_of[order[p]] = p;
  steps.reserve(order.size()), preds.reserve(E + deps.size() + E);
  for (const uint32_t n : order) {
    Step s;
    s.node = n;
    if (n >= E) {
      const OpNode& op = ops[n - E];
      for (uint32_t i = op.first; i < op.first + op.count; ++i) preds.push_back(step_of[i]);
      s.value = op.transfer, s.who = op.comm, s.kind = uint8_t(kOpStep | (op.window ? kWindowStep : 0));
    } else {
      const Entry& en = entries[n];
      if (en.prev != kNone) preds.push_back(step_of[en.prev]);
      for (uint32_t d = en.dep_first; d < en.dep_first + en.dep_count; ++d) preds.push_back(step_of[E + deps[d]]);
      if (en.ready_op != kNone) readies.emplace_back(step_of[E + en.ready_op], en.lead);
      s.value = en.fixed ? en.arrival : en.gap, s.who = uint32_t(en.rank);
      s.kind = uint8_t((en.fixed ? kFixedStep : 0) | (en.window ? kWindowStep : 0) | (en.ready_op != kNone ? kReadyStep : 0));
    }
    s.preds_end = uint32_t(preds.size());
    steps.push_back(s);
  }
  std::vector<uint32_t>().swap(order), std::vector<uint32_t>().swap(deps);
}

// Each entry's role peers: the gaps of the entries with its peer key (fixed ones left out, but
// given their key's group). Each op's like: the ops of its family and position. Each stage's work,
// and each rank's scale when the stages are balanced.
void WhatIfReplay::Model::build_tables(const WhatIfInputs& in) {
  KeyIds like_ids;
  peer_first = group_offsets(entries.size(), peer_groups, [&](size_t e) { return entries[e].peers; },
                             [&](size_t e) { return !entries[e].fixed; });
  peer_gaps.resize(peer_first.back()), peer_leads.resize(peer_first.back());
  std::vector<uint32_t> fill(peer_first.begin(), peer_first.end() - 1);
  for (const auto& e : entries)
    if (!e.fixed) {
      peer_leads[fill[e.peers]] = {e.lead, e.ready_op != kNone ? uint32_t(e.rank) : kNone};
      peer_gaps[fill[e.peers]++] = {e.gap, uint32_t(e.rank)};
    }
  // The family of the op's first member's op: its own (an op without members, never seen, takes
  // the next op's, as it always did).
  for (auto& op : ops)
    op.like = like_ids({op.count || op.first >= entries.size() ? op.family : ops[entries[op.first].op].family, op.seq, 0});
  like_first = group_offsets(ops.size(), like_ids.size(), [&](size_t o) { return ops[o].like; }, kAll);
  likes.resize(ops.size());
  fill.assign(like_first.begin(), like_first.end() - 1);
  for (const auto& op : ops) likes[fill[op.like]++] = {op.transfer, op.comm};
  std::vector<double> work_of_rank(ranks, 0.0);  // summed in entry order
  std::vector<uint8_t> seen(ranks, 0);
  for (const auto& e : entries) work_of_rank[size_t(e.rank)] += e.gap, seen[size_t(e.rank)] = 1;
  // Compute time where given for every rank replayed (gaps hold idle time and waits on other
  // streams too), else the gaps.
  bool given = true;
  for (size_t r = 0; r < ranks; ++r) given = given && (!seen[r] || (r < in.work.size() && in.work[r] > 0));
  std::map<int32_t, std::vector<double>> by_stage;
  for (size_t r = 0; r < ranks; ++r)
    if (seen[r]) by_stage[role_of(int32_t(r))].push_back(given ? in.work[r] : work_of_rank[r]);
  for (auto& [s, v] : by_stage) stage_work[s] = common::median(v);
  double mean_work = 0;
  for (const auto& [s, w] : stage_work) mean_work += w / double(stage_work.size());
  stage_scale.assign(ranks, 1.0);
  for (size_t r = 0; r < ranks; ++r) {
    const auto it = stage_work.find(role_of(int32_t(r)));
    if (it != stage_work.end() && it->second > 0) stage_scale[r] = mean_work / it->second;
  }
  start = 1e300;
  double end = -1e300, lead_end = -1e300;
  for (const auto& e : entries)
    if (e.window) start = std::min(start, e.arrival);
  for (const auto& o : ops) (o.window ? end : lead_end) = std::max(o.window ? end : lead_end, o.end());
  if (lead_end > -1e300) start = lead_end;  // see run: from the lead-in's last end
  makespan = end > start ? end - start : 0;
}

// An op's end: the last (replayed) arrival plus its transfer; where a member's own link or the
// op's communicator is fixed, at most the median transfer of its like (the same position on the
// family's other communicators) leaving out the communicators being fixed (a slow link's own are
// no measure of a healthy one: two slow of four would put the median halfway) and, for a rank's
// own slow link, the op's own communicator too; the op's own transfer when no like is left.
double WhatIfReplay::Model::op_end(const Step& s, const double* t, const uint32_t* pred, const Run& run) const {
  const OpNode& op = ops[s.node - entries.size()];
  double last = -1e300, transfer = s.value;
  bool by_rank = false;  // a member's own link is slow
  for (uint32_t i = 0; i < op.count; ++i) last = std::max(last, t[pred[i]]);
  for (uint32_t i = op.first; run.any_link && i < op.first + op.count; ++i)
    by_rank = by_rank || run.link[size_t(entries[i].rank)];
  if (run.change && run.change->hide_communication) transfer = 0;
  if (by_rank || run.comm[s.who]) {
    const auto kept = [&](uint32_t comm) { return !(by_rank && comm == op.comm) && !run.comm[comm]; };
    // No like left (the whole like is being fixed): its own transfer, scaled where the change says.
    const double own = run.comm[s.who] && op.iteration >= run.comm_scale_from[s.who] ? op.transfer * run.comm_scale[s.who]
                                                                                      : op.transfer;
    transfer = std::min(transfer, kept_median(group(likes, like_first, op.like), kept, own, run.buf));
  }
  return last + transfer;
}

double WhatIfReplay::Model::run(const WhatIfChange* change) const {
  Run r;
  r.change = change, r.fixed.assign(ranks, 0), r.link.assign(ranks, 0), r.comm.assign(comms, 0);
  r.scale.assign(ranks, 1.0);
  if (change) {  // ranks and communicators not replayed have nothing to change
    for (size_t j = 0; j < change->ranks.size(); ++j) {
      const int32_t k = change->ranks[j];
      if (k < 0 || size_t(k) >= ranks) continue;
      r.fixed[size_t(k)] = 1, r.any_fixed = true;
      if (j < change->own_scale.size() && change->own_scale[j] > 0) r.scale[size_t(k)] = std::min(change->own_scale[j], 1.0);
    }
    for (int32_t k : change->links)
      if (k >= 0 && size_t(k) < ranks) r.link[size_t(k)] = 1, r.any_link = true;
    r.comm_scale.assign(comms, 1.0), r.comm_scale_from.assign(comms, 0);
    for (size_t j = 0; j < change->comms.size(); ++j) {
      const uint32_t c = change->comms[j];
      if (c >= comms) continue;
      r.comm[c] = 1;
      if (j < change->comm_scale.size() && change->comm_scale[j] > 0) r.comm_scale[c] = std::min(change->comm_scale[j], 1.0);
      if (j < change->comm_scale_from.size()) r.comm_scale_from[c] = change->comm_scale_from[j];
    }
  }
  const bool balance = change && change->balance_stages;
  std::vector<double> t(steps.size(), 0);  // by step
  // The window's span: from the job's end of the lead-in iteration (its last op end) to its end of
  // the window's last, as a step is from one iteration's end to the next's; where there is no
  // lead-in, from the window's first arrival. The first arrival would count the pipeline's skew
  // (stage 0's start to the last stage's end) beside the steps, which a fix of a slow stage
  // shrinks once, not per step.
  double first = 1e300, end = -1e300, lead_end = -1e300;
  size_t ready_k = 0;                   // the next of readies
  for (uint32_t p = 0, from = 0; p < steps.size(); from = steps[p++].preds_end) {
    const Step& s = steps[p];
    if (s.kind & kOpStep) {
      t[p] = op_end(s, t.data(), preds.data() + from, r);
      if (s.kind & kWindowStep) end = std::max(end, t[p]);
      else lead_end = std::max(lead_end, t[p]);
      continue;
    }
    if (s.kind & kFixedStep) {
      t[p] = s.value;
      if (s.kind & kWindowStep) first = std::min(first, t[p]);
      continue;
    }
    double ready = -1e300, gap = s.value;  // the latest of the prev, the deps and the ready op (+ lead)
    for (uint32_t i = from; i < s.preds_end; ++i) ready = std::max(ready, t[preds[i]]);
    if (s.kind & kReadyStep) {
      // A fixed rank's compute before the launch is at its peers' median too (the lead is its work).
      double lead = readies[ready_k].second;
      if (r.any_fixed && r.fixed[s.who]) {
        const auto kept = [&](uint32_t rank) { return rank != kNone && !r.fixed[rank]; };
        lead = std::min(lead, kept_median(group(peer_leads, peer_first, entries[s.node].peers), kept,
                                          lead * r.scale[s.who], r.buf));
      }
      ready = std::max(ready, t[readies[ready_k].first] + lead), ++ready_k;
    }
    // At its role peers' median at the same point (the fixed ranks left out; where no peer has that
    // point, its own gap, scaled by its own slowdown where the change gives one), never slower than
    // it was: a peer's gap may be measured from another dependency than the rank's own (the order
    // of near-simultaneous events differs).
    if (r.any_fixed && r.fixed[s.who]) {
      const Entry& en = entries[s.node];
      const auto kept = [&](uint32_t rank) { return !r.fixed[rank]; };
      gap = std::min(gap, kept_median(group(peer_gaps, peer_first, en.peers), kept, en.gap * r.scale[s.who], r.buf));
    }
    if (balance) gap *= stage_scale[s.who];
    t[p] = ready + gap;
    if (s.kind & kWindowStep) first = std::min(first, t[p]);
  }
  if (lead_end > -1e300) first = lead_end;
  return end > first ? end - first : 0;
}

WhatIfReplay::WhatIfReplay(const WhatIfInputs& in) : m_(std::make_unique<Model>()) {
  if (in.records) m_->build(in);
}
WhatIfReplay::~WhatIfReplay() = default;
size_t WhatIfReplay::ops() const {
  return size_t(std::count_if(m_->ops.begin(), m_->ops.end(), [](const OpNode& o) { return o.window; }));
}
int WhatIfReplay::stages() const { return int(m_->stage_work.size()); }
double WhatIfReplay::makespan_ns() const { return m_->makespan; }
double WhatIfReplay::replay_unchanged_ns() const { return m_->run(nullptr); }
double WhatIfReplay::replay(const WhatIfChange& change) const { return m_->run(&change); }

}  // namespace collectives
