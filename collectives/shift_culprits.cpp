#include "shift_culprits.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/stats.hpp"

namespace collectives {

namespace {
double median_of(const std::vector<double>& v, size_t from, size_t to) {
  std::vector<double> s(v.begin() + long(from), v.begin() + long(to));
  return common::median(s);
}
}  // namespace

namespace {

// The ranks that shifted at iteration index `at` (see the header); none when most did.
std::vector<ShiftCulprit> culprits_at(const std::vector<std::vector<double>>& own, size_t at, size_t common,
                                      double job_shift, double mean_step, const std::vector<uint8_t>& taken,
                                      const ShiftOptions& opt) {
  const size_t n = own.size();
  std::vector<double> base(n, 0), shift(n, 0);
  for (size_t r = 0; r < n; ++r) {
    base[r] = median_of(own[r], 1, at);
    shift[r] = median_of(own[r], at, common) - base[r];
  }
  // The ranks that did not change are the reference: the lower half of the shifts (a whole host
  // can be half the job, and then the median of all shifts sits between the two groups and its MAD
  // spans them).
  std::vector<double> low(shift);
  std::sort(low.begin(), low.end());
  low.resize((n + 1) / 2);
  const double med = common::median(low);
  const double spread = std::max(common::mad_sigma(low, med), opt.spread_floor * mean_step);
  std::vector<ShiftCulprit> found;
  for (size_t r = 0; r < n; ++r) {
    const double z = spread > 0 ? (shift[r] - med) / spread : 0;
    if (taken[r] || z < opt.z || shift[r] < opt.of_job * job_shift || shift[r] < opt.min_share * mean_step) continue;
    size_t miss = 0;  // iterations after the change where it did not hold
    for (size_t i = at; i < common; ++i) miss += own[r][i] - base[r] < opt.hold * shift[r];
    if (miss * 4 > common - at) continue;
    bool prompt = true;  // holding in the two iterations from the change on
    for (size_t i = at; i < std::min(at + 2, common); ++i) prompt = prompt && own[r][i] - base[r] >= opt.hold * shift[r];
    found.push_back({r, at, 0, z, prompt});
  }
  if (found.size() * 2 > n) found.clear();  // most ranks moved: the job's own change, not some ranks'
  return found;
}

}  // namespace

std::vector<ShiftCulprit> shift_culprits(const std::vector<std::vector<double>>& own, const std::vector<double>& job_step_ms,
                                         size_t common, const std::vector<size_t>& change_at, const ShiftOptions& opt) {
  std::vector<ShiftCulprit> out;
  const size_t n = own.size();
  if (n < 3 || common < 3 || job_step_ms.size() < common) return out;
  for (const auto& o : own)
    if (o.size() < common) return out;
  double mean_step = 0;
  for (size_t i = 1; i < common; ++i) mean_step += job_step_ms[i] / double(common - 1);
  std::vector<uint8_t> taken(n, 0);
  for (size_t k = 0; k < change_at.size(); ++k) {
    const size_t at = change_at[k];
    if (at < 1 + opt.min_before || at >= common) continue;
    const double job_shift = median_of(job_step_ms, at, common) - median_of(job_step_ms, 1, at);
    if (job_shift <= 0) continue;  // a speed-up names nobody
    // The job's step may shift an iteration before the ranks' own time does (work launched in one
    // step runs in the next): the change, else the iteration after it.
    auto found = culprits_at(own, at, common, job_shift, mean_step, taken, opt);
    if (found.empty() && at + 1 < common) found = culprits_at(own, at + 1, common, job_shift, mean_step, taken, opt);
    for (auto& f : found) f.change = k, taken[f.rank_index] = 1, out.push_back(f);
  }
  return out;
}

// Every shift of the job's step time gets an explanation: the stragglers among the ranks that
// changed there, a slow link, or, explicitly, a job that slowed down as a whole.
void explain_change_points(Verdict& v) {
  for (auto& cp : v.change_points) {
    std::vector<int> named;
    for (const auto& s : v.stragglers)
      if (std::count(cp.culprit_ranks.begin(), cp.culprit_ranks.end(), s.rank)) named.push_back(s.rank);
    std::sort(named.begin(), named.end());
    if (!named.empty())
      cp.explanation = fmt::format("straggler{} {}", named.size() == 1 ? "" : "s", fmt::join(named, ", "));
    else if (!v.slow_links.empty())
      cp.explanation = "slow link";
    else if (!cp.culprit_ranks.empty() && !v.stragglers.empty())
      cp.explanation = "ranks that changed are not stragglers; see the stragglers named above";
    else if (!cp.culprit_ranks.empty())
      cp.explanation = "the ranks that changed stay within their peers' spread: no rank stands out";
    else
      cp.explanation = "the job as a whole slowed down (no rank stands out)";
    if (cp.iterations_after > 0 && cp.iterations_after < 3)
      cp.explanation += fmt::format(" (judged on the {} iteration{} after it, the capture's last)", cp.iterations_after,
                                    cp.iterations_after == 1 ? "" : "s");
  }
}

}  // namespace collectives
