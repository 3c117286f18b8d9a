// The report's post-mortem section (issue 22): one paragraph in the user's words, then where the
// step goes (the last phase's waterfall) and what fixing each cause buys (the what-if rows).
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>

#include "analyses/what_if.hpp"

namespace straggler::analyses {
namespace {

// MFU per phase from the mfu analysis's summary value: (from_iteration, mfu, step_ms); empty
// without MFU (no model FLOPs or peak: the report then never states one).
struct MfuPhase {
  int64_t from = 0;
  double mfu = 0, step_ms = 0;
};
std::vector<MfuPhase> mfu_phases(const std::string& json) {
  std::vector<MfuPhase> out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) || !doc.is_object()) return out;
  simdjson::dom::array phases;
  if (doc["phases"].get(phases)) return out;
  for (auto p : phases) {
    MfuPhase m;
    double mfu = 0, step = 0;
    int64_t from = 0;
    if (p["mfu"].get(mfu) || p["step_ms"].get(step) || p["from_iteration"].get(from) || !(mfu > 0)) return {};
    m.from = from, m.mfu = mfu, m.step_ms = step;
    out.push_back(m);
  }
  return out;
}


// "MFU 48% -> 22% at iteration 1200: rank 17 (slow_gpu) costs 1.16 s per step; fixing it alone
// brings the step from 2.18 s to 1.02 s, MFU back to 47%."
std::string paragraph(const PostMortem& pm, const std::vector<MfuPhase>& mfu) {
  const WhatIfRow& m = pm.what_if.front();
  std::string s;
  if (mfu.size() >= 2)
    s = fmt::format("MFU {:.0f}% -> {:.0f}% at iteration {}: ", 100 * mfu.front().mfu, 100 * mfu.back().mfu, mfu.back().from);
  else if (mfu.size() == 1)
    s = fmt::format("MFU {:.0f}%: ", 100 * mfu.front().mfu);
  const double last_mfu = mfu.empty() ? 0 : mfu.back().mfu * mfu.back().step_ms / m.step_ms;  // over the replayed window
  // (the window is the last MFU phase, cut at the same change points; the ratio corrects what differs)
  // The costliest fix in the last phase's waterfall (its part of the step), with its own what-if row.
  const WaterfallRow* worst = nullptr;
  const auto last_phase = pm.last_phase();
  for (const WaterfallRow* r : last_phase)
    if ((r->part == "straggler" || r->part == "slow_link") && (!worst || r->ms > worst->ms)) worst = r;
  const WhatIfRow* fix = nullptr;
  for (const auto& r : pm.what_if)
    if (worst && (r.kind == "fix_rank" || r.kind == "fix_link") && r.change.rfind(worst->label, 0) == 0) fix = &r;
  if (!worst || !fix || worst->ms <= 0) {
    const WaterfallRow* big = nullptr;
    for (const WaterfallRow* r : last_phase)
      if (!big || r->ms > big->ms) big = r;
    s += "no straggler or slow link found";
    if (big) s += fmt::format("; most of the {} step is {} ({:.0f}%)", ms_text(m.step_ms), big->label, 100 * big->share);
    return s + ".\n";
  }
  s += fmt::format("{} costs {} per step ({:.0f}%); fixing it alone brings the step from {} to {}", worst->label,
                   ms_text(worst->ms), 100 * worst->share, ms_text(m.step_ms), ms_text(fix->step_ms));
  if (last_mfu > 0) s += fmt::format(", MFU back to {:.0f}%", 100 * last_mfu * m.step_ms / fix->step_ms);
  s += ".";
  if (const WhatIfRow* all = ideal_row(pm.what_if); all && all != fix)
    s += fmt::format(" Fixing all of them: {} ({:.2f}x).", ms_text(all->step_ms), all->speedup);
  return s + "\n";
}

}  // namespace

std::string ms_text(double v) { return std::abs(v) >= 1000 ? fmt::format("{:.2f} s", v / 1e3) : fmt::format("{:.2f} ms", v); }

double window_mfu(const std::string& mfu_json, double step_ms) {
  const auto mfu = mfu_phases(mfu_json);
  return mfu.empty() || step_ms <= 0 ? 0 : mfu.back().mfu * mfu.back().step_ms / step_ms;
}

std::string post_mortem_report(const PostMortem& pm, const std::string& mfu_json) {
  if (pm.what_if.empty()) return "";
  const WhatIfRow& m = pm.what_if.front();
  std::string s = fmt::format("\npost-mortem (iterations {}-{}): {}", m.from_iteration, m.to_iteration,
                              paragraph(pm, mfu_phases(mfu_json)));
  const int32_t last_phase = pm.waterfall.empty() ? 0 : pm.waterfall.back().phase;
  s += fmt::format("  where the step goes ({} per step; docs/waterfall.md):\n", ms_text(m.step_ms));
  for (const auto& r : pm.waterfall)
    if (r.phase == last_phase) s += fmt::format("    {:<60} {:>11}  {:5.1f}%\n", r.label, ms_text(r.ms), 100 * r.share);
  s += "  what fixing each cause buys (docs/what-if.md):\n";
  for (size_t i = 1; i < pm.what_if.size(); ++i)
    s += fmt::format("    {:<60} {:>11}  {:.2f}x\n", pm.what_if[i].change, ms_text(pm.what_if[i].step_ms), pm.what_if[i].speedup);
  return s;
}

}  // namespace straggler::analyses
