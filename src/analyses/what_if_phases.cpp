// The post-mortem's arithmetic on process 0 (docs/what-if.md, docs/waterfall.md): the steady
// iterations cut into phases at the job's change points, each phase replayed with every change
// (collectives/what_if.hpp), and its step split into the waterfall's parts.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include "analyses/what_if.hpp"
#include "collectives/problems.hpp"
#include "collectives/what_if.hpp"
#include "common/stats.hpp"
#include "common/text.hpp"
#include "cross_rank.hpp"

namespace straggler::analyses {
namespace {

namespace c = collectives;

using Window = PostMortemWindow;

// The steady iterations every rank has, cut at each job change point that leaves two or more
// iterations before it and one or more after it (a rise in the capture's last iteration is a
// change point of its own: verdict.cpp; its phase is what it cost).
std::vector<Window> phases_of(const CrossRankResults& x) {
  size_t common = x.step_ms.empty() ? 0 : SIZE_MAX;
  for (const auto& s : x.step_ms) common = std::min(common, s.size());
  common = std::min(common, x.verdict.job_step_ms.size());
  const auto* numbers = x.iteration_number.empty() ? nullptr : &x.iteration_number.front();
  if (numbers) common = std::min(common, numbers->size());
  const int32_t first = common >= 3 ? 1 : 0, end = int32_t(common);
  if (end <= first) return {};
  std::vector<int32_t> cuts{first};
  for (const auto& cp : x.verdict.change_points)
    for (int32_t i = cuts.back() + 2; numbers && i + 1 <= end; ++i)
      if ((*numbers)[size_t(i)] >= cp.iteration) {
        cuts.push_back(i);
        break;
      }
  // A straggler's or a slow link's onset starts a phase too, where no change point of the job's step marks it (an
  // onset in the first steady iterations has no baseline to find one against): its cost is measured
  // from when it began, not diluted by the steps before. One step before it may be a phase.
  std::vector<int64_t> onsets;  // a slow link's too
  for (const auto& s : x.verdict.stragglers) onsets.push_back(s.onset_iteration);
  for (const auto& l : x.verdict.slow_links) onsets.push_back(l.onset_iteration);
  for (const int64_t onset : onsets) {
    if (onset < 0 || !numbers) continue;
    int32_t i = first;
    while (i < end && (*numbers)[size_t(i)] < onset) ++i;
    if (i + 2 > end || std::find(cuts.begin(), cuts.end(), i) != cuts.end()) continue;
    const auto next = std::upper_bound(cuts.begin(), cuts.end(), i);
    if (i - *(next - 1) < 1) continue;
    // A rise in the capture's last iteration, one after the onset: the onset starts the phase
    // (the step it began in ran slower too; the job's step shows it an iteration late).
    if (next != cuts.end() && *next - i == 1 && *next + 2 > end) *next = i;
    else if (next == cuts.end() || *next - i >= 2) cuts.insert(next, i);
  }
  cuts.push_back(end);
  std::vector<Window> out;
  for (size_t p = 0; p + 1 < cuts.size(); ++p) {
    Window w{cuts[p], cuts[p + 1]};
    for (int32_t i = w.first; i < w.end; ++i) w.step_ms += x.verdict.job_step_ms[size_t(i)] / double(w.end - w.first);
    if (numbers) w.from_number = (*numbers)[size_t(w.first)], w.to_number = (*numbers)[size_t(w.end - 1)];
    out.push_back(w);
  }
  return out;
}

c::WhatIfInputs inputs_of(const CrossRankResults& x, const c::BlameRecords& rec, const c::RecordIndex& index, const Window& w,
                          const std::vector<double>& work) {
  c::WhatIfInputs in;
  in.work = work;
  in.records = &rec, in.index = &index;
  for (const auto& cs : x.comms) {
    in.comm_family.push_back(cs.family), in.comm_p2p.push_back(cs.p2p);
    in.comm_data_parallel.push_back(cs.id.kind == topology::GroupKind::DP);
    in.comm_shared.push_back(cs.p2p && cs.shared);
  }
  const auto& layout = x.layout.layout;
  int world = 0;
  for (const auto& cs : x.comms)
    for (int32_t r : cs.ranks) world = std::max(world, r + 1);
  in.role.assign(size_t(world), 0);
  for (int r = 0; layout && r < world && r < layout->world(); ++r) in.role[size_t(r)] = layout->pp_rank(r);
  in.first_iteration = w.first, in.end_iteration = w.end;
  return in;
}


// The median healthy rank (not a straggler) per step over the phase: compute (step - idle -
// exposed communication), idle, and its waits in pipeline p2p ops (from the op records).
struct Reference {
  double compute_ms = 0, idle_ms = 0, p2p_wait_ms = 0;
};
Reference reference_of(const CrossRankResults& x, const c::BlameRecords& rec, const c::RecordIndex& index, const Window& w) {
  std::vector<int32_t> flagged;
  for (const auto& s : x.verdict.stragglers) flagged.push_back(s.rank);
  std::sort(flagged.begin(), flagged.end());
  auto healthy = [&](int32_t r) { return !std::binary_search(flagged.begin(), flagged.end(), r); };
  Reference ref;
  const double n = double(w.end - w.first);
  for (int32_t i = w.first; i < w.end; ++i) {
    std::vector<double> compute, idle;
    for (size_t k = 0; k < x.evidence_ranks.size(); ++k) {
      if (!healthy(x.evidence_ranks[k]) || size_t(i) >= x.step_ms[k].size()) continue;
      const double step = x.step_ms[k][size_t(i)];
      const double idle_i = size_t(i) < x.idle_ms[k].size() ? x.idle_ms[k][size_t(i)] : 0;
      const double comm_i = size_t(i) < x.comm_ms[k].size() ? x.comm_ms[k][size_t(i)] : 0;
      compute.push_back(step - idle_i - comm_i), idle.push_back(idle_i);
    }
    ref.compute_ms += common::median(compute) / n, ref.idle_ms += common::median(idle) / n;
  }
  std::map<int32_t, double> p2p_wait;  // rank -> ns over the phase
  for (uint32_t o : index.ops_in(w.first, w.end)) {
    if (rec.ops[o].comm >= x.comms.size() || !x.comms[rec.ops[o].comm].p2p) continue;
    for (uint32_t k : index.members_of(o))
      if (healthy(rec.members[k].rank)) p2p_wait[rec.members[k].rank] += double(std::max<int64_t>(rec.members[k].wait, 0));
  }
  std::vector<double> waits;
  for (int32_t r : x.evidence_ranks)
    if (healthy(r)) waits.push_back(p2p_wait.count(r) ? p2p_wait[r] / 1e6 / n : 0.0);
  ref.p2p_wait_ms = common::median(waits);
  return ref;
}

// A straggler found slow against its own iterations before the onset is fixed by that factor where
// no healthy peer of its role is left (WhatIfChange::own_scale).
double own_scale_of(const c::Straggler& s) { return s.own_slowdown > 1 ? 1.0 / s.own_slowdown : 1.0; }

// The iteration index of an iteration number (0 where unknown: every iteration from the start).
int32_t index_of(const CrossRankResults& x, int64_t number) {
  if (number < 0 || x.iteration_number.empty()) return 0;
  const auto& n = x.iteration_number.front();
  return int32_t(std::lower_bound(n.begin(), n.end(), number) - n.begin());
}

// One phase replayed with every change: its what-if rows and its waterfall.
struct PhaseReplay {
  const CrossRankResults& x;
  const Window& w;
  const c::WhatIfReplay& replay;
  double base = 0;
  bool rows_too = true;  // false: only what the waterfall needs (one iteration's)
  const std::function<void()>& progress;
  std::vector<WhatIfRow> rows;
  WaterfallInput fall;

  double step_of(double makespan) const { return base > 0 ? w.step_ms * makespan / base : w.step_ms; }
  double step_with(const c::WhatIfChange& ch) const {
    const double ms = step_of(replay.replay(ch));
    if (progress) progress();
    return ms;
  }
  void add(std::string change, std::string kind, std::vector<int32_t> ranks, double step_ms) {
    WhatIfRow r;
    r.change = std::move(change), r.kind = std::move(kind), r.ranks = std::move(ranks);
    r.step_ms = step_ms;
    r.speedup = r.step_ms > 0 ? w.step_ms / r.step_ms : 1;
    r.from_iteration = w.from_number, r.to_iteration = w.to_number;
    rows.push_back(std::move(r));
  }
  void run();
};

void PhaseReplay::run() {
  add("as measured", "measured", {}, w.step_ms);
  c::WhatIfChange all;
  constexpr size_t kMaxRankRows = 16;  // a row each for the first 16 stragglers (blame order); all below
  for (size_t si = 0; si < x.verdict.stragglers.size(); ++si) {
    const auto& s = x.verdict.stragglers[si];
    c::WhatIfChange one;
    one.ranks = {s.rank}, one.own_scale = {own_scale_of(s)};
    if (s.cause == c::Cause::SlowLink) one.links = {s.rank};
    const bool row = all.ranks.size() < kMaxRankRows;
    all.ranks.push_back(s.rank), all.own_scale.push_back(own_scale_of(s)), all.links.insert(all.links.end(), one.links.begin(), one.links.end());
    if (!row) continue;
    const std::string label = fmt::format("rank {} ({})", s.rank, c::cause_name(s.cause));
    add(label + " at its peers' median", "fix_rank", {s.rank}, step_with(one));
    fall.fixes.push_back({"straggler", label, {s.rank}, rows.back().step_ms, int32_t(si)});
  }
  // Stragglers sharing a host are one problem (collectives/problems.hpp): what fixing all of them buys.
  for (const auto& g : c::group_stragglers(x.verdict)) {
    if (!rows_too) break;  // one iteration's window: only the waterfall, which prices ranks
    c::WhatIfChange whole;
    for (size_t si : g.members) {
      const auto& s = x.verdict.stragglers[si];
      whole.ranks.push_back(s.rank), whole.own_scale.push_back(own_scale_of(s));
      if (s.cause == c::Cause::SlowLink) whole.links.push_back(s.rank);
    }
    add(fmt::format("{} (ranks {}) at their peers' median", common::printable(g.host), fmt::join(whole.ranks, ", ")),
        "fix_problem", whole.ranks, step_with(whole));
  }
  for (size_t li = 0; li < x.verdict.slow_links.size(); ++li) {  // the link at its like's transfer time
    const auto& link = x.verdict.slow_links[li];
    c::WhatIfChange l;
    const int32_t from = index_of(x, link.onset_iteration);
    for (size_t ci = 0; ci < x.comms.size(); ++ci)
      if (std::find(link.communicators.begin(), link.communicators.end(), x.comms[ci].name) != link.communicators.end()) {
        l.comms.push_back(uint32_t(ci));
        l.comm_scale.push_back(link.own_slowdown > 1 ? 1.0 / link.own_slowdown : 1.0), l.comm_scale_from.push_back(from);
      }
    if (l.comms.empty()) continue;
    all.comms.insert(all.comms.end(), l.comms.begin(), l.comms.end());
    all.comm_scale.insert(all.comm_scale.end(), l.comm_scale.begin(), l.comm_scale.end());
    all.comm_scale_from.insert(all.comm_scale_from.end(), l.comm_scale_from.begin(), l.comm_scale_from.end());
    const std::string label = "slow link (" + common::printable(fmt::format("{}", fmt::join(link.hosts, ", "))) + ")";
    add(label + " at its like's speed", "fix_link", {}, step_with(l));
    fall.fixes.push_back({"slow_link", label, {}, rows.back().step_ms, int32_t(li)});
  }
  const bool any_fix = !all.ranks.empty() || !all.comms.empty();
  // One straggler and no link: fixing all is fixing it, replayed just above.
  const bool only_one = all.ranks.size() == 1 && all.comms.empty() && !fall.fixes.empty();
  fall.fixed_ms = !any_fix ? w.step_ms : only_one ? fall.fixes.back().step_ms : step_with(all);
  if (rows_too && all.ranks.size() + (all.comms.empty() ? 0 : 1) > 1) {
    add(all.comms.empty() ? fmt::format("ranks {} at their peers' median", fmt::join(all.ranks, ", "))
                          : "every straggler and slow link fixed",
        "fix_all", all.ranks, fall.fixed_ms);
  }
  if (rows_too && replay.stages() > 1) {
    c::WhatIfChange b;
    b.balance_stages = true;
    add("pipeline stages balanced", "balance_stages", {}, step_with(b));
  }
  all.hide_communication = true;
  if (rows_too || !any_fix) {
    c::WhatIfChange h;
    h.hide_communication = true;
    add("exposed communication hidden", "hide_communication", {}, step_with(h));
  }
  fall.fixed_hidden_ms = any_fix ? step_with(all) : rows.back().step_ms;
}

}  // namespace

WindowResult replay_window(const CrossRankResults& x, const c::BlameRecords& rec, const c::RecordIndex& index,
                           const PostMortemWindow& w, const std::vector<double>& work, const std::function<void()>& progress) {
  WindowResult out;
  const c::WhatIfReplay replay(inputs_of(x, rec, index, w, work));
  // Changes are measured against the replay unchanged (it differs from the measured makespan
  // only where a stream's next op was recorded a hair before its previous one ended).
  PhaseReplay pr{x, w, replay, replay.replay_unchanged_ns(), !w.iteration, progress, {}, {}};
  if (replay.ops() == 0 || pr.base <= 0) return out;
  pr.run();
  const Reference ref = reference_of(x, rec, index, w);
  pr.fall.phase = w.phase, pr.fall.from_iteration = w.from_number, pr.fall.to_iteration = w.to_number;
  pr.fall.step_ms = w.step_ms, pr.fall.compute_ms = ref.compute_ms, pr.fall.idle_ms = ref.idle_ms;
  pr.fall.p2p_wait_ms = replay.stages() > 1 ? ref.p2p_wait_ms : -1;
  out.waterfall = waterfall(pr.fall);
  if (!w.iteration) out.what_if = std::move(pr.rows);
  return out;
}

std::vector<PostMortemWindow> post_mortem_windows(const CrossRankResults& x) {
  std::vector<PostMortemWindow> out;
  const auto phases = phases_of(x);
  const auto* numbers = x.iteration_number.empty() ? nullptr : &x.iteration_number.front();
  for (size_t p = 0; p < phases.size(); ++p) {
    PostMortemWindow w = phases[p];
    w.phase = int32_t(p);
    out.push_back(w);
    for (int32_t i = w.first; numbers && i < w.end; ++i) {  // and each of its iterations
      const int64_t n = (*numbers)[size_t(i)];
      out.push_back({i, i + 1, n, n, x.verdict.job_step_ms[size_t(i)], int32_t(p), true});
    }
  }
  return out;
}

PostMortem assemble_post_mortem(const std::vector<PostMortemWindow>& windows, std::vector<WindowResult>&& results) {
  PostMortem out;
  int32_t last_phase = -1;
  for (const auto& w : windows) last_phase = std::max(last_phase, w.phase);
  for (size_t k = 0; k < windows.size() && k < results.size(); ++k) {
    auto& r = results[k];
    auto& fall = windows[k].iteration ? out.iterations : out.waterfall;
    fall.insert(fall.end(), r.waterfall.begin(), r.waterfall.end());
    if (!windows[k].iteration && windows[k].phase == last_phase) out.what_if = std::move(r.what_if);  // the state the run ended in
  }
  return out;
}

PostMortem post_mortem(const CrossRankResults& x, const std::vector<double>& work, const std::function<void()>& progress) {
  if (!x.op_records) return {};
  const auto windows = post_mortem_windows(x);
  const c::RecordIndex index(*x.op_records);
  std::vector<WindowResult> results;
  for (const auto& w : windows) results.push_back(replay_window(x, *x.op_records, index, w, work, progress));
  return assemble_post_mortem(windows, std::move(results));
}

}  // namespace straggler::analyses
