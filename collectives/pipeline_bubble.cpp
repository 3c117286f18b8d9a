// The pipeline bubble across ranks (pipeline_bubble.hpp; docs/pipeline.md).
#include "collectives/pipeline_bubble.hpp"

#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>

namespace collectives {
namespace {

int64_t corrected(const PipelineInputs& in, int rank, int64_t t) {
  if (!in.clocks || rank < 0 || size_t(rank) >= in.clocks->offset_ns.size()) return t;
  return in.clocks->correct(rank, t);
}

using ByRank = std::map<int, std::vector<const FlushWindow*>>;
// Per rank its marks' corrected ends (ascending) and the marks.
struct Marks {
  std::vector<int64_t> end;
  std::vector<const P2pMark*> mark;
};
using MarksByRank = std::map<int, Marks>;

// Per pipeline, from one pass over the p2p links: the busiest link from stage 0 to stage 1 and
// from the last stage to the first (interleaved 1F1B's wrap-around; p >= 3), and the slowest
// median transfer of its links.
struct PipeLinks {
  int64_t first_ops = 0, wrap_ops = 0;
  double slowest_ns = 0;
};
std::vector<PipeLinks> links_by_pipeline(const PipelineInputs& in, const std::vector<topology::CommunicatorGroup>& pipes) {
  std::unordered_map<int, std::pair<size_t, int>> where;  // rank -> (pipeline, stage)
  for (size_t g = 0; g < pipes.size(); ++g)
    for (size_t st = 0; st < pipes[g].ranks.size(); ++st) where[pipes[g].ranks[st]] = {g, int(st)};
  std::vector<PipeLinks> out(pipes.size());
  for (const PipelineLink& l : in.links) {
    auto a = where.find(l.a), b = where.find(l.b);
    if (a == where.end() || b == where.end() || a->second.first != b->second.first) continue;
    const size_t g = a->second.first;
    const int lo = std::min(a->second.second, b->second.second), hi = std::max(a->second.second, b->second.second);
    const int p = int(pipes[g].ranks.size());
    PipeLinks& x = out[g];
    x.slowest_ns = std::max(x.slowest_ns, l.transfer_ns);
    if (lo == 0 && hi == 1) x.first_ops = std::max(x.first_ops, l.ops);
    if (p >= 3 && lo == 0 && hi == p - 1) x.wrap_ops = std::max(x.wrap_ops, l.ops);
  }
  return out;
}

// Forwards stage 0 runs before its first backward under Megatron's schedules (schedules.py, the
// public reference both 1F1B and interleaved 1F1B follow): 1F1B warms up with p - 1 forwards and
// runs one more before its first backward; interleaved warms up with 2 (p - 1) + (v - 1) p (all n
// when that is more); GPipe runs all m.
double forwards_before_backward(int p, int n, int v, bool gpipe) {
  if (gpipe) return n;
  const int warm = v == 1 ? p - 1 : 2 * (p - 1) + (v - 1) * p;
  return warm >= n ? n : warm + 1;
}

// Schedule facts from the first stages' flushes: n = m v chunk-steps, the chunk forwards of a
// flush (FlushWindow::forwards; else its compute kernels over those of one forward and one
// backward). v, and 1F1B against GPipe, from the forwards stage 0 runs before its first backward,
// which each schedule fixes (forwards_before_backward); where two fit equally, the link from the
// last stage to the first (interleaving's wrap, p >= 3) in most pipelines. Not from the ops per
// link: a grouped send/receive kernel carries both links' exchanges, and either may go unfound.
void infer_schedule(const PipelineInputs& in, const std::vector<topology::CommunicatorGroup>& pipes, const ByRank& by,
                    const std::vector<PipeLinks>& links, PipelineBubble& out) {
  std::vector<double> steps, leading;
  size_t wraps = 0;  // pipelines with a link from the last stage to the first
  for (const PipeLinks& l : links) wraps += l.wrap_ops > 0 && l.wrap_ops * 5 > l.first_ops;
  const bool wrap = wraps * 2 > links.size();
  for (const auto& g : pipes) {
    auto it = by.find(g.ranks[0]);
    if (it != by.end())
      for (const FlushWindow* w : it->second) {
        if (w->forwards > 0) steps.push_back(w->forwards);
        else if (w->fwd_kernels + w->bwd_kernels > 0) steps.push_back(double(w->kernels) / (w->fwd_kernels + w->bwd_kernels));
        leading.push_back(w->leading_fwd);
      }
  }
  const int n = int(std::max(1.0, std::round(common::median(steps))));
  const double lead = common::median(leading);
  const int p = out.pp;
  out.virtual_stages_given = in.given_virtual_stages > 0;
  out.microbatches_given = in.given_microbatches > 0;
  struct Fit {
    int v = 1;
    bool gpipe = false;
    double miss = 1e300;
  } best;
  for (int v = 1; v <= n; ++v) {
    if (n % v != 0 || (out.virtual_stages_given && v != in.given_virtual_stages)) continue;
    if (out.microbatches_given && v * in.given_microbatches != n) continue;
    if (!out.virtual_stages_given && v > 1 && p < 3) continue;  // p = 2: give --virtual-stages
    for (bool gpipe : {false, true}) {
      if (gpipe && v > 1) continue;
      const double miss = std::abs(forwards_before_backward(p, n, v, gpipe) - lead);
      // Equal fits (every schedule runs all forwards first when n is small): the wrap link, found
      // in most pipelines, says interleaved; else the simpler schedule.
      const bool better = miss < best.miss - 1e-9 || (miss < best.miss + 1e-9 && wrap && best.v == 1 && v > 1);
      if (better) best = {v, gpipe, miss};
    }
  }
  out.virtual_stages = out.virtual_stages_given ? in.given_virtual_stages : best.v;
  out.microbatches = out.microbatches_given ? in.given_microbatches : std::max(1, int(std::lround(double(n) / out.virtual_stages)));
  out.schedule = out.virtual_stages > 1 ? topology::Schedule::Interleaved
                 : best.gpipe && out.microbatches > p ? topology::Schedule::GPipe
                                                      : topology::Schedule::OneFOneB;
}

struct PipeSums {
  std::vector<double> work, bubble, p2p;  // per stage
  std::vector<int> p2p_ops;               // per stage, summed
  int flushes = 0;
  bool straggler = false;
};

// Stage 0's flushes of one pipeline, each with the window of every stage whose (corrected) middle
// lies inside its span; a flush some stage has no window for is left out.
PipeSums measure_one(const PipelineInputs& in, const topology::CommunicatorGroup& g, int index, const ByRank& by,
                     const MarksByRank& marks, std::vector<FlushStage>& rows) {
  const int p = int(g.ranks.size());
  PipeSums s{std::vector<double>(size_t(p)), std::vector<double>(size_t(p)), std::vector<double>(size_t(p)),
             std::vector<int>(size_t(p)), 0, false};
  auto it0 = by.find(g.ranks[0]);
  if (it0 == by.end()) return s;
  for (const FlushWindow* w0 : it0->second) {
    const int64_t S = corrected(in, g.ranks[0], w0->fill_start), E = corrected(in, g.ranks[0], w0->drain_end);
    // A later stage's flush: its p2p ops that end inside stage 0's span; its window runs from the
    // first of those ends (its first activation arrived) to the last (its last gradient left).
    std::vector<FlushStage> at(static_cast<size_t>(p));
    bool all = true;
    for (int st = 0; st < p && all; ++st) {
      FlushStage& r = at[size_t(st)];
      r.pipeline = index, r.flush = s.flushes, r.stage = st, r.rank = g.ranks[size_t(st)], r.iteration = w0->iteration;
      r.span_start = S, r.span_end = E;
      if (st == 0) {
        r.window_start = S, r.window_end = E, r.work_ns = w0->work_ns, r.p2p_ns = w0->p2p_ns;
        s.p2p_ops[0] += w0->p2p_ops;
        continue;
      }
      auto it = marks.find(r.rank);
      if (it == marks.end()) { all = false; break; }
      const Marks& m = it->second;
      const size_t a = size_t(std::upper_bound(m.end.begin(), m.end.end(), S) - m.end.begin());
      const size_t b = size_t(std::upper_bound(m.end.begin(), m.end.end(), E) - m.end.begin());
      if (b < a + 2) { all = false; break; }
      r.window_start = m.end[a], r.window_end = m.end[b - 1];
      r.work_ns = m.mark[b - 1]->work_ns - m.mark[a]->work_ns;
      r.p2p_ns = m.mark[b - 1]->p2p_ns - m.mark[a]->p2p_ns;
      s.p2p_ops[size_t(st)] += int(b - a);
    }
    if (!all) continue;
    for (FlushStage& r : at) {
      r.bubble_ns = double(E - S) - r.work_ns;
      s.work[size_t(r.stage)] += r.work_ns, s.bubble[size_t(r.stage)] += r.bubble_ns, s.p2p[size_t(r.stage)] += r.p2p_ns;
      rows.push_back(r);
    }
    ++s.flushes;
  }
  // A straggler slows its whole TP group (every member waits in its all-reduces): the pipelines
  // of its TP peers are the straggler's too.
  for (int r : g.ranks)
    for (int x : in.stragglers)
      s.straggler |= r == x || topology::group_of(in.layout, topology::GroupKind::TP, x).ranks ==
                                   topology::group_of(in.layout, topology::GroupKind::TP, r).ranks;
  return s;
}

// Splits the excess (bubble time above the theory) into the parts of BubblePart, in ns. In a
// pipeline without a straggler: stage imbalance as the model's excess for the median stage
// profile, p2p transfer (each p2p op of a stage costs the pipeline's slowest transfer unless its
// GPU was busy meanwhile) up to what is left, the rest unknown. The pipelines without a straggler
// are the counterfactual of those with one: a straggler's pipeline pays their excess per unit of
// work in their proportions, and the straggler the remainder.
void attribute(const PipelineInputs& in, const std::vector<topology::CommunicatorGroup>& pipes,
               const std::vector<PipeLinks>& links, const std::vector<PipeSums>& sums, PipelineBubble& out) {
  const int p = out.pp, n = out.microbatches * out.virtual_stages;
  std::vector<double> tr;
  for (const PipelineLink& l : in.links) tr.push_back(l.transfer_ns);
  out.transfer_ns = common::median(tr);
  bool any_healthy = false;
  for (const auto& s : sums) any_healthy |= s.flushes > 0 && !s.straggler;
  out.stages.assign(size_t(p), {});
  for (int st = 0; st < p; ++st) {
    std::vector<double> u;
    for (const auto& s : sums)
      if (s.flushes > 0 && (!any_healthy || !s.straggler)) u.push_back(s.work[size_t(st)] / (double(s.flushes) * n));
    out.stages[size_t(st)].stage = st;
    out.stages[size_t(st)].chunk_work_ns = common::median(u);
  }
  std::vector<double> u_hat;
  for (const auto& sb : out.stages) u_hat.push_back(sb.chunk_work_ns);
  // Per pipeline: its excess and work, and the split of a pipeline without a straggler.
  std::array<double, kBubbleParts> healthy{}, ns{};
  double healthy_work = 0, healthy_excess = 0;
  std::vector<std::pair<double, double>> straggling;  // excess, work
  for (size_t g = 0; g < sums.size(); ++g) {
    const PipeSums& s = sums[g];
    if (s.flushes == 0) continue;
    double work = 0, bubble = 0, p2p = 0;
    const double slowest = links[g].slowest_ns;
    for (int st = 0; st < p; ++st) {
      work += s.work[size_t(st)], bubble += s.bubble[size_t(st)];
      p2p += std::min(s.p2p[size_t(st)], double(s.p2p_ops[size_t(st)]) * slowest);
      if (s.straggler && std::count(in.stragglers.begin(), in.stragglers.end(), pipes[g].ranks[size_t(st)]))
        out.straggler_ranks.push_back(pipes[g].ranks[size_t(st)]);
    }
    const double excess = bubble - out.theoretical * work;
    if (s.straggler && any_healthy) {
      straggling.push_back({excess, work});
      continue;
    }
    const double imbalance = std::clamp(double(s.flushes) * topology::imbalance_excess(u_hat, n), 0.0, std::max(0.0, excess));
    p2p = std::clamp(p2p, 0.0, std::max(0.0, excess - imbalance));
    auto& to = s.straggler ? ns : healthy;  // no pipeline without a straggler: the rest is the straggler's
    to[size_t(BubblePart::StageImbalance)] += imbalance, to[size_t(BubblePart::P2pTransfer)] += p2p;
    to[size_t(s.straggler ? BubblePart::Straggler : BubblePart::Unknown)] += excess - imbalance - p2p;
    if (!s.straggler) healthy_work += work, healthy_excess += excess;
  }
  for (int i = 0; i < kBubbleParts; ++i) ns[size_t(i)] += healthy[size_t(i)];
  const double rate = healthy_work > 0 ? healthy_excess / healthy_work : 0;
  for (auto [excess, work] : straggling) {
    const double base = rate * work;
    for (int i = 0; i < kBubbleParts; ++i)
      ns[size_t(i)] += healthy_excess != 0 ? base * healthy[size_t(i)] / healthy_excess : 0;
    ns[size_t(BubblePart::Straggler)] += excess - base;
  }
  // Pipelines with a straggler that lost less than those without one (a late onset): no part.
  if (ns[size_t(BubblePart::Straggler)] < 0)
    ns[size_t(BubblePart::Unknown)] += ns[size_t(BubblePart::Straggler)], ns[size_t(BubblePart::Straggler)] = 0;
  for (int i = 0; i < kBubbleParts; ++i) out.parts[size_t(i)] = out.work_ns > 0 ? ns[size_t(i)] / out.work_ns : 0;
}

// A part is a cause when the excess is at least 5 points of the work and 15% of the promise, and
// the part at least a quarter of the excess and 1 point; largest first. Below that the bubble is
// what the schedule promises, give or take the p2p and launch overheads every pipeline pays.
void name_causes(PipelineBubble& out) {
  const double excess = out.bubble - out.theoretical;
  if (excess < std::max(0.05, 0.15 * out.theoretical)) return;
  std::vector<std::pair<double, BubblePart>> c;
  for (int i = 0; i < kBubbleParts; ++i)
    if (out.parts[size_t(i)] >= std::max(0.01, 0.25 * excess)) c.push_back({out.parts[size_t(i)], BubblePart(i)});
  std::sort(c.begin(), c.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (auto& [share, part] : c) out.causes.push_back(part);
  std::vector<double> u;
  for (const auto& s : out.stages) u.push_back(s.chunk_work_ns);
  const double med = common::median(u);
  if (std::find(out.causes.begin(), out.causes.end(), BubblePart::StageImbalance) != out.causes.end() && med > 0) {
    out.bottleneck_stage = int(std::max_element(u.begin(), u.end()) - u.begin());
    out.bottleneck_ratio = u[size_t(out.bottleneck_stage)] / med;
  }
}

}  // namespace

const char* bubble_part_name(BubblePart p) {
  switch (p) {
    case BubblePart::StageImbalance: return "stage_imbalance";
    case BubblePart::P2pTransfer: return "p2p_transfer";
    case BubblePart::Straggler: return "straggler";
    case BubblePart::WarmupCooldown: return "warmup_cooldown";
    case BubblePart::Unknown: return "unknown";
  }
  return "unknown";
}

PipelineBubble measure_pipeline(const PipelineInputs& in) {
  PipelineBubble out;
  out.pp = in.layout.pp;
  if (out.pp < 2) return out.why_not = "no pipeline parallelism (PP = 1)", out;
  ByRank by;
  for (const FlushWindow& w : in.windows)
    if (w.steady) by[w.rank].push_back(&w);
  std::vector<topology::CommunicatorGroup> pipes;
  for (auto& g : topology::communicator_groups(in.layout))
    if (g.kind == topology::GroupKind::PP) pipes.push_back(std::move(g));
  MarksByRank marks;
  for (const P2pMark& m : in.marks) marks[m.rank].mark.push_back(&m);
  for (auto& [rank, m] : marks) {
    std::sort(m.mark.begin(), m.mark.end(), [](const P2pMark* a, const P2pMark* b) { return a->end < b->end; });
    for (const P2pMark* x : m.mark) m.end.push_back(corrected(in, rank, x->end));
  }
  const std::vector<PipeLinks> links = links_by_pipeline(in, pipes);
  infer_schedule(in, pipes, by, links, out);
  out.theoretical = topology::theoretical_bubble(out.pp, out.microbatches, out.virtual_stages);
  std::vector<PipeSums> sums;
  double bubble = 0;
  for (size_t g = 0; g < pipes.size(); ++g) {
    sums.push_back(measure_one(in, pipes[g], int(g), by, marks, out.rows));
    const PipeSums& s = sums.back();
    out.flushes += s.flushes, out.pipelines += s.flushes > 0;
    for (int st = 0; st < out.pp; ++st) out.work_ns += s.work[size_t(st)], bubble += s.bubble[size_t(st)];
  }
  if (out.flushes == 0 || out.work_ns <= 0)
    return out.why_not = "no steady pipeline flush found on every stage (p2p ops between compute, repeating per iteration)", out;
  out.measured = true;
  out.bubble = bubble / out.work_ns;
  out.inflation = out.theoretical > 0 ? out.bubble / out.theoretical : 0;
  attribute(in, pipes, links, sums, out);
  for (int st = 0; st < out.pp; ++st) {
    StageBubble& sb = out.stages[size_t(st)];
    for (const auto& s : sums) sb.work_ns += s.work[size_t(st)], sb.bubble_ns += s.bubble[size_t(st)], sb.p2p_ns += s.p2p[size_t(st)];
    sb.bubble = sb.work_ns > 0 ? sb.bubble_ns / sb.work_ns : 0;
  }
  name_causes(out);
  return out;
}

}  // namespace collectives
