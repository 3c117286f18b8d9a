// The true pipeline bubble of a generated run, as docs/pipeline.md defines the measured one: per
// pipeline (the PP stages of one TP rank of one DP replica) and complete steady iteration, the
// flush span runs from stage 0's first microbatch kernel start to its last microbatch kernel end
// (true time); a stage's bubble is the span less its work (the union of its microbatch compute
// kernels and TP all-reduces: not p2p, DP buckets or the optimizer).
#include "bubble_truth.hpp"

#include <algorithm>
#include <climits>

namespace sim {
namespace {

bool is_work(const Simulation& sim, const Op& op) {
  if (op.type == OpType::Compute) return op.kernel != kOptimizer;
  return op.type == OpType::Coll && !op.pending && sim.comms[sim.keys[op.key].comm].kind == "tp";
}

// Per iteration, [first start, last end] and union length of a rank's work: one pass over its ops.
struct Work {
  int64_t lo = INT64_MAX, hi = INT64_MIN, busy = 0;
};
std::vector<Work> work_of(const Simulation& sim, int rank, int iterations) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> iv(size_t(std::max(iterations, 0)));
  for (const Op& op : sim.ranks[rank].ops)
    if (op.iter >= 0 && op.iter < iterations && is_work(sim, op)) iv[size_t(op.iter)].push_back({op.start, op.end});
  std::vector<Work> out(iv.size());
  for (size_t it = 0; it < iv.size(); ++it) {
    auto& v = iv[it];
    std::sort(v.begin(), v.end());
    Work& w = out[it];
    int64_t cur_lo = 0, cur_hi = INT64_MIN;
    for (auto [a, b] : v) {
      w.lo = std::min(w.lo, a), w.hi = std::max(w.hi, b);
      if (a > cur_hi) {
        if (cur_hi > INT64_MIN) w.busy += cur_hi - cur_lo;
        cur_lo = a, cur_hi = b;
      } else {
        cur_hi = std::max(cur_hi, b);
      }
    }
    if (cur_hi > INT64_MIN) w.busy += cur_hi - cur_lo;
  }
  return out;
}

}  // namespace

BubbleTruth bubble_truth(const Simulation& sim) {
  const auto& L = sim.opt.layout;
  BubbleTruth t;
  t.theoretical = double(L.pp - 1) / (double(sim.opt.virtual_stages) * sim.opt.microbatches);
  if (L.pp < 2) return t;
  std::vector<double> bubble(L.pp, 0.0), work(L.pp, 0.0);
  for (const auto& g : topology::communicator_groups(L)) {
    if (g.kind != topology::GroupKind::PP) continue;
    int complete = INT_MAX;
    for (int r : g.ranks) complete = std::min(complete, sim.ranks[r].iterations_written);
    std::vector<std::vector<Work>> works;
    for (int r : g.ranks) works.push_back(work_of(sim, r, complete));
    for (int it = 1; it < complete; ++it) {  // iteration 0 warms up
      const Work& w0 = works[0][size_t(it)];
      for (size_t s = 0; s < g.ranks.size(); ++s) {
        const Work& w = works[s][size_t(it)];
        bubble[s] += double(w0.hi - w0.lo - w.busy);
        work[s] += double(w.busy);
      }
    }
    t.iterations = std::max(t.iterations, complete - 1);
  }
  double b = 0, w = 0;
  for (int s = 0; s < L.pp; ++s) {
    t.per_stage.push_back(work[s] > 0 ? bubble[s] / work[s] : 0.0);
    b += bubble[s], w += work[s];
  }
  t.measured = w > 0 ? b / w : 0.0;
  return t;
}

}  // namespace sim
