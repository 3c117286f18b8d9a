#include "analyses/waterfall.hpp"

#include <algorithm>

namespace straggler::analyses {

std::vector<WaterfallRow> waterfall(const WaterfallInput& in) {
  std::vector<WaterfallRow> out;
  auto add = [&](std::string part, std::string label, std::vector<int32_t> ranks, double ms, int32_t item = -1) {
    WaterfallRow r;
    r.phase = in.phase, r.from_iteration = in.from_iteration, r.to_iteration = in.to_iteration, r.step_ms = in.step_ms;
    r.part = std::move(part), r.label = std::move(label), r.ranks = std::move(ranks), r.ms = ms;
    r.item = item;
    r.share = in.step_ms > 0 ? ms / in.step_ms : 0;
    out.push_back(std::move(r));
  };
  // What fixing them together saves, shared out by what each saves alone (fixes overlap: two
  // stragglers on one critical path save less together than apart, or more).
  const double together = in.fixes.empty() ? 0 : in.step_ms - in.fixed_ms;
  double alone = 0;
  for (const auto& f : in.fixes) alone += std::max(0.0, in.step_ms - f.step_ms);
  for (const auto& f : in.fixes) {
    const double saves = std::max(0.0, in.step_ms - f.step_ms);
    add(f.part, f.label, f.ranks, together * (alone > 0 ? saves / alone : 1.0 / double(in.fixes.size())), f.item);
    out.back().alone_ms = saves;
  }
  const double base = in.fixes.empty() ? in.step_ms : in.fixed_ms;
  add("exposed_communication", "exposed communication (transfers)", {}, base - in.fixed_hidden_ms);
  add("compute", "compute (the median healthy rank)", {}, in.compute_ms);
  add("idle", "host and launch idle", {}, in.idle_ms);
  double left = in.fixed_hidden_ms - in.compute_ms - in.idle_ms;
  if (in.p2p_wait_ms >= 0) {
    const double bubble = std::clamp(in.p2p_wait_ms, 0.0, std::max(left, 0.0));
    add("pipeline_bubble", "pipeline bubble (p2p waits)", {}, bubble);
    left -= bubble;
  }
  add("waiting", "waiting and the rest", {}, left);
  return out;
}

}  // namespace straggler::analyses
