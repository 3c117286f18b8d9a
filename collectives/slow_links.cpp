#include "slow_links.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "collectives/communicators.hpp"
#include "common/stats.hpp"

namespace collectives {

using common::median;

namespace {

// Like communicators: same family, or every two-member SendRecv link for pipeline p2p, and the same
// number of hosts (NVLink inside a host is not a slow NIC). Links a layout completed are left out:
// their ops are a biased sample (communicators.hpp, kThinLinkFamily).
std::map<std::pair<uint64_t, size_t>, std::vector<const CommEvidence*>> like_groups(const std::vector<CommEvidence>& comms) {
  std::map<std::pair<uint64_t, size_t>, std::vector<const CommEvidence*>> groups;
  for (const auto& c : comms) {
    const bool p2p = c.type == CollectiveType::SendRecv && c.ranks.size() == 2;
    if (p2p && c.family == kThinLinkFamily) continue;
    groups[{p2p ? 0 : c.family, c.hosts.size()}].push_back(&c);
  }
  return groups;
}

// The faster half's median (lower quartile), so that a link slowing half of a small group still
// stands out.
double lower_half_median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return median(std::vector<double>(t.begin(), t.begin() + long((t.size() + 1) / 2)));
}

// The hosts every slow communicator spans (else those most of them span): a ring is as slow as its
// slowest hop, so a link is only narrowed down as far as the communicators allow.
SlowLink link_of(const std::vector<const CommEvidence*>& slow, const std::vector<double>& ratios) {
  std::map<std::string, size_t> seen;
  for (const auto* c : slow)
    for (const auto& h : c->hosts)
      if (!h.empty()) seen[h]++;  // "": a profile that names no host (PyTorch traces); never a host
  SlowLink link;
  for (const auto& [h, n] : seen)
    if (n == slow.size()) link.hosts.push_back(h);
  if (link.hosts.empty())
    for (const auto& [h, n] : seen)
      if (2 * n > slow.size()) link.hosts.push_back(h);
  for (const auto* c : slow) link.communicators.push_back(c->name);
  link.collective = collective_name(slow.front()->type);
  link.slowdown = median(ratios);
  return link;
}

// Whether `ratio` (per iteration; NaN: no op there) turns slow at k: at or over `bar` from k on (at
// least two iterations with ops, three in four of them slow, k itself slow) after running under it
// (three in four). The median ratio from k in `after`.
bool slow_at(const std::vector<double>& ratio, double bar, size_t k, double& after) {
  if (k >= ratio.size() || !(ratio[k] >= bar)) return false;  // the onset itself is slow
  size_t n_after = 0, slow_after = 0, n_before = 0, slow_before = 0;
  std::vector<double> r;
  for (size_t i = 1; i < ratio.size(); ++i) {
    if (!std::isfinite(ratio[i])) continue;
    const bool slow = ratio[i] >= bar;
    if (i < k) ++n_before, slow_before += slow;
    else ++n_after, slow_after += slow, r.push_back(ratio[i]);
  }
  if (n_before == 0 || n_after < 2 || slow_before * 4 > n_before || slow_after * 4 < n_after * 3) return false;
  after = median(r);
  return true;
}

// The first iteration k >= 2 at which `ratio` turns slow (slow_at); SIZE_MAX when none.
size_t slow_from(const std::vector<double>& ratio, double bar, double& after) {
  for (size_t k = 2; k < ratio.size(); ++k)
    if (slow_at(ratio, bar, k, after)) return k;
  return SIZE_MAX;
}

// Per iteration, each member's transfer over the like's lower half in that iteration (NaN: none).
std::vector<std::vector<double>> like_ratios(const std::vector<const CommEvidence*>& members) {
  size_t iters = 0;
  for (const auto* c : members) iters = std::max(iters, c->transfer_by_iteration.size());
  std::vector<double> base(iters, std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 1; i < iters; ++i) {
    std::vector<double> t;
    for (const auto* c : members)
      if (i < c->transfer_by_iteration.size() && std::isfinite(c->transfer_by_iteration[i])) t.push_back(c->transfer_by_iteration[i]);
    if (t.size() >= 2) base[i] = lower_half_median(t);
  }
  std::vector<std::vector<double>> out;
  for (const auto* c : members) {
    std::vector<double> ratio(iters, std::numeric_limits<double>::quiet_NaN());
    for (size_t i = 1; i < c->transfer_by_iteration.size(); ++i)
      if (base[i] > 0) ratio[i] = c->transfer_by_iteration[i] / base[i];
    out.push_back(std::move(ratio));
  }
  return out;
}

// The first k at which `series` turns slow (slow_at) against its own iterations before k (the
// median of those with ops), not against a like: for a like that moved as one. Quadratic in the
// iterations: like_slow_link runs it on each like's median first, and on the members only where
// that moved.
size_t own_slow_from(const std::vector<double>& series, double bar, double& after) {
  std::vector<double> before, ratio(series.size(), std::numeric_limits<double>::quiet_NaN());
  for (size_t k = 3; k + 1 < series.size(); ++k) {
    before.clear();
    for (size_t i = 1; i < k; ++i)
      if (std::isfinite(series[i])) before.push_back(series[i]);
    if (before.size() < 2 || median(before) <= 0) continue;
    const double base = median(before);
    for (size_t i = 1; i < series.size(); ++i) ratio[i] = series[i] / base;
    if (slow_at(ratio, bar, k, after)) return k;
  }
  return SIZE_MAX;
}

// Per iteration, the median transfer of a like's members (NaN: under two have ops there).
std::vector<double> like_median(const std::vector<const CommEvidence*>& members) {
  size_t iters = 0;
  for (const auto* c : members) iters = std::max(iters, c->transfer_by_iteration.size());
  std::vector<double> out(iters, std::numeric_limits<double>::quiet_NaN()), t;
  for (size_t i = 1; i < iters; ++i) {
    t.clear();
    for (const auto* c : members)
      if (i < c->transfer_by_iteration.size() && std::isfinite(c->transfer_by_iteration[i])) t.push_back(c->transfer_by_iteration[i]);
    if (t.size() >= 2) out[i] = median(t);
  }
  return out;
}

int64_t number_of(size_t k, const std::vector<int64_t>& numbers) { return k < numbers.size() ? numbers[k] : int64_t(k); }

// A like that turned slow as one (every pipeline link through one slow NIC or switch: a host that
// is a whole stage) leaves none to compare with: its communicators against their own iterations
// before, when more than the share a like-relative link may have did so together. The what-if then
// fixes their transfers by that factor from the onset on (SlowLink::own_slowdown).
void like_slow_link(const std::vector<const CommEvidence*>& members, const VerdictOptions& opt,
                    const std::set<std::string>& named, const std::vector<int64_t>& numbers, Verdict& v) {
  double after = 0;
  // More than half of a like turning slow moves its median: where that did not move, none did.
  if (own_slow_from(like_median(members), opt.slow_link_ratio, after) == SIZE_MAX) return;
  std::vector<const CommEvidence*> slow;
  std::vector<double> ratios;
  std::vector<size_t> onsets;
  for (const auto* c : members) {
    if (named.count(c->name)) continue;
    if (const size_t k = own_slow_from(c->transfer_by_iteration, opt.slow_link_ratio, after); k != SIZE_MAX)
      slow.push_back(c), ratios.push_back(after), onsets.push_back(k);
  }
  if (slow.size() < 2 || double(slow.size()) <= opt.slow_link_max_share * double(members.size())) return;
  SlowLink link = link_of(slow, ratios);
  std::sort(onsets.begin(), onsets.end());
  link.onset_iteration = number_of(onsets[onsets.size() / 2], numbers);
  link.own_slowdown = link.slowdown;
  v.slow_links.push_back(std::move(link));
}

// Communicators of one like group that turned slow late: against the like's lower half in each
// iteration, when a minority of the like did.
void late_slow_links(const std::vector<const CommEvidence*>& members, const std::vector<std::vector<double>>& ratio,
                     const VerdictOptions& opt, const std::set<std::string>& named, const std::vector<int64_t>& numbers, Verdict& v) {
  std::vector<const CommEvidence*> slow;
  std::vector<double> ratios;
  std::vector<size_t> onsets;
  for (size_t m = 0; m < members.size(); ++m) {
    if (named.count(members[m]->name)) continue;
    double after = 0;
    if (const size_t k = slow_from(ratio[m], opt.slow_link_ratio, after); k != SIZE_MAX)
      slow.push_back(members[m]), ratios.push_back(after), onsets.push_back(k);
  }
  if (double(slow.size()) > opt.slow_link_max_share * double(members.size())) return;  // half slow is the norm
  if (slow.empty()) return like_slow_link(members, opt, named, numbers, v);
  SlowLink link = link_of(slow, ratios);
  std::sort(onsets.begin(), onsets.end());
  link.onset_iteration = number_of(onsets[onsets.size() / 2], numbers);
  v.slow_links.push_back(std::move(link));
}

// A link slow over most of the capture may still have started after its first iterations: dated
// where most of its communicators turned slow against their like (-1 when they were slow from the
// first steady iteration).
void date_link(SlowLink& link, const std::vector<const CommEvidence*>& members, const std::vector<std::vector<double>>& ratio,
               const VerdictOptions& opt, const std::vector<int64_t>& numbers) {
  std::vector<size_t> onsets;
  for (size_t m = 0; m < members.size(); ++m) {
    if (std::find(link.communicators.begin(), link.communicators.end(), members[m]->name) == link.communicators.end()) continue;
    double after = 0;
    if (const size_t k = slow_from(ratio[m], opt.slow_link_ratio, after); k != SIZE_MAX) onsets.push_back(k);
  }
  if (onsets.size() * 2 <= link.communicators.size()) return;
  std::sort(onsets.begin(), onsets.end());
  link.onset_iteration = number_of(onsets[onsets.size() / 2], numbers);
}

}  // namespace

void find_slow_links(const std::vector<CommEvidence>& comms, const VerdictOptions& opt, Verdict& v,
                     std::map<int, double>& rank_link_ratio, std::map<int, std::set<std::string>>& rank_slow_comms,
                     const std::vector<int64_t>& numbers) {
  const auto groups = like_groups(comms);
  std::map<std::pair<uint64_t, size_t>, std::vector<std::vector<double>>> per_iteration;  // like_ratios, once per group
  for (const auto& [key, members] : groups)
    if (members.size() >= 2) per_iteration[key] = like_ratios(members);
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    std::vector<double> t;
    for (const auto* c : members) t.push_back(c->median_transfer_ns);
    const double base = lower_half_median(t);
    std::vector<const CommEvidence*> slow;
    std::vector<double> ratios;
    for (const auto* c : members) {
      const double ratio = base > 0 ? c->median_transfer_ns / base : 1.0;
      for (int r : c->ranks) {
        rank_link_ratio[r] = std::max(rank_link_ratio[r], ratio);
        if (ratio >= opt.slow_link_ratio) rank_slow_comms[r].insert(c->name);
      }
      if (ratio >= opt.slow_link_ratio) slow.push_back(c), ratios.push_back(ratio);
    }
    if (slow.empty() || double(slow.size()) > opt.slow_link_max_share * double(members.size())) continue;  // half slow is the norm, not a link
    v.slow_links.push_back(link_of(slow, ratios));
    date_link(v.slow_links.back(), members, per_iteration.at(key), opt, numbers);
  }
  std::set<std::string> named;
  for (const auto& l : v.slow_links) named.insert(l.communicators.begin(), l.communicators.end());
  for (const auto& [key, members] : groups)
    if (members.size() >= 2) late_slow_links(members, per_iteration.at(key), opt, named, numbers, v);
  // One link seen by several groups (all-reduce and p2p over a host's NIC) is one row: rows that
  // share hosts merge into the hosts they share.
  auto& L = v.slow_links;
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < L.size() && !merged; ++i)
      for (size_t j = i + 1; j < L.size() && !merged; ++j) {
        std::vector<std::string> both;
        std::set_intersection(L[i].hosts.begin(), L[i].hosts.end(), L[j].hosts.begin(), L[j].hosts.end(),
                              std::back_inserter(both));
        if (both.empty()) continue;
        L[i].hosts = both;
        L[i].communicators.insert(L[i].communicators.end(), L[j].communicators.begin(), L[j].communicators.end());
        if (L[j].slowdown > L[i].slowdown) L[i].slowdown = L[j].slowdown, L[i].collective = L[j].collective;
        if (L[j].onset_iteration < 0 || (L[i].onset_iteration >= 0 && L[j].onset_iteration < L[i].onset_iteration))
          L[i].onset_iteration = L[j].onset_iteration;  // the earlier start (-1: throughout) of the two
        L.erase(L.begin() + long(j)), merged = true;
      }
  }
}

std::string slow_link_evidence(const SlowLink& l) {
  if (l.own_slowdown > 0)
    return fmt::format("{} transfers {:.2f}x slower than their own before iteration {} (every link of their like turned "
                       "slow together)", l.collective, l.own_slowdown, l.onset_iteration);
  return fmt::format("{} transfers {:.2f}x slower than their like", l.collective, l.slowdown);
}

bool explained_by_slow_links(const std::vector<SlowLink>& links, const std::set<std::string>& slow_comms) {
  for (const auto& name : slow_comms) {
    bool listed = false;
    for (const auto& l : links) listed |= std::find(l.communicators.begin(), l.communicators.end(), name) != l.communicators.end();
    if (!listed) return false;
  }
  return !slow_comms.empty();
}

}  // namespace collectives
