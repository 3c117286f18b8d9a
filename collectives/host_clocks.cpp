#include "collectives/host_clocks.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "collectives/clock.hpp"
#include "ranks/sat_math.hpp"

namespace collectives {
namespace {

// Members of one collective end within a few us, the two ends of a p2p transfer within ~20 us.
constexpr int64_t kWindowNs = 50'000;
// A pile must stand this far from any other to be the clock difference, not a periodic echo of it
// (the same collective one step later on a host with regular steps), and be a quarter denser than
// any such: an echo pairs only the ops both samples hold one step apart, so it is always thinner.
constexpr int64_t kApartNs = 1'000'000;
constexpr size_t kEndsPerStream = 16, kEndsPerDomain = 512, kMinPile = 6, kTriesPerDomain = 8;

struct Domain {
  uint64_t id = 0;
  int32_t first_rank = INT32_MAX;
  std::vector<int64_t> ends;
};

std::vector<Domain> domains_of(const std::vector<StreamSummary>& streams) {
  std::map<uint64_t, Domain> by_id;
  for (const auto& s : streams) {
    if (s.clock_domain == 0) continue;  // unknown: no clock to share
    Domain& d = by_id[s.clock_domain];
    d.id = s.clock_domain, d.first_rank = std::min(d.first_rank, s.rank);
    for (size_t k = 0; k < s.first_ends.size() && k < kEndsPerStream; ++k) d.ends.push_back(s.first_ends[k]);
  }
  std::vector<Domain> out;
  for (auto& [id, d] : by_id) {
    std::sort(d.ends.begin(), d.ends.end());
    d.ends.erase(std::unique(d.ends.begin(), d.ends.end()), d.ends.end());
    if (d.ends.size() > kEndsPerDomain) {  // evenly over the capture's first ops
      std::vector<int64_t> kept;
      for (size_t i = 0; i < kEndsPerDomain; ++i) kept.push_back(d.ends[i * d.ends.size() / kEndsPerDomain]);
      d.ends = std::move(kept);
    }
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return std::tie(a.first_rank, a.id) < std::tie(b.first_rank, b.id); });
  return out;
}

// The densest window of the differences a - b (sorted) `width` wide, when clear: at least
// kMinPile, 1.25x any window kApartNs away.
std::optional<int64_t> clear_pile(const std::vector<int64_t>& d, int64_t width) {
  size_t best = 0, best_lo = 0, best_hi = 0;
  for (size_t lo = 0, hi = 0; hi < d.size(); ++hi) {
    while (d[hi] - d[lo] > width) ++lo;
    if (hi - lo + 1 > best) best = hi - lo + 1, best_lo = lo, best_hi = hi;
  }
  const int64_t at = d[best_lo + (best_hi - best_lo) / 2];
  size_t runner_up = 0;
  for (size_t lo = 0, hi = 0; hi < d.size(); ++hi) {
    while (d[hi] - d[lo] > width) ++lo;
    if (ranks::abs_diff(d[lo], at) > kApartNs && ranks::abs_diff(d[hi], at) > kApartNs) runner_up = std::max(runner_up, hi - lo + 1);
  }
  if (best < kMinPile || 4 * best < 5 * runner_up) return std::nullopt;
  return at;
}

// The clock difference of a's domain and b's: where the differences a - b within the search range
// pile up, tried from the narrowest window up to kWindowNs. Members of one collective end within
// microseconds, so a narrow window holds the true pairs and few chance ones; a wide one gathers
// chance coincidences of many streams' ends (a host of 8 ranks with regular sub-step ops piled
// 756 pairs 2.6 ms off the true difference in 50 us, 128 at the truth in 2 us). The wider ones are
// there for ends that spread more (p2p transfers, clocks drifting over the sample).
std::optional<int64_t> pile_offset_of(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> d;
  d.reserve(a.size() * b.size());
  for (int64_t x : a)
    for (int64_t y : b)
      if (const __int128 v = __int128(x) - y; v <= kMaxHostClockErrorNs && -v <= kMaxHostClockErrorNs) d.push_back(int64_t(v));
  if (d.size() < kMinPile) return std::nullopt;
  std::sort(d.begin(), d.end());
  for (int64_t width : {int64_t(2'000), int64_t(5'000), int64_t(10'000), int64_t(20'000), kWindowNs})
    if (auto at = clear_pile(d, width)) return at;
  return std::nullopt;
}

}  // namespace

bool ends_meet(const std::vector<int64_t>& mine, const std::vector<int64_t>& sample, const std::vector<int64_t>& all) {
  const auto pile = pile_offset_of(mine, sample);
  if (!pile || all.empty()) return false;
  // The pile is a window of tens of microseconds: the difference is the median of each end's
  // nearest meeting within it, then counted within kTightSpreadNs of that.
  auto nearest = [&](int64_t x) {  // main end nearest to x, as its difference from x
    const auto it = std::lower_bound(all.begin(), all.end(), x);
    int64_t d = it != all.end() ? ranks::sat_sub(*it, x) : INT64_MAX;
    if (it != all.begin() && ranks::abs_diff(*(it - 1), x) < ranks::sat_abs(d)) d = ranks::sat_sub(*(it - 1), x);
    return d;
  };
  std::vector<int64_t> near;
  for (int64_t e : mine)
    if (const int64_t d = nearest(ranks::sat_sub(e, *pile)); ranks::sat_abs(d) <= 3 * int64_t(kTightSpreadNs)) near.push_back(d);
  if (near.empty()) return false;
  std::nth_element(near.begin(), near.begin() + long(near.size() / 2), near.end());
  const int64_t at = ranks::sat_sub(*pile, near[near.size() / 2]);
  size_t within = 0, met = 0;
  for (int64_t e : mine) {
    const int64_t x = ranks::sat_sub(e, at);
    if (x < all.front() || x > all.back()) continue;  // beyond the ends they sent
    ++within;
    met += ranks::sat_abs(nearest(x)) <= int64_t(kTightSpreadNs);
  }
  return within > 0 && 4 * met >= 3 * within;
}

bool hosts_look_misaligned(const std::vector<StreamSummary>& streams, const std::vector<Communicator>& comms,
                           int64_t ntp_ns) {
  std::map<std::pair<int32_t, int32_t>, const StreamSummary*> stream_of;  // (rank, stream)
  std::map<uint64_t, uint64_t> parent;
  for (const auto& s : streams)
    if (s.clock_domain != 0) stream_of[{s.rank, s.stream}] = &s, parent[s.clock_domain] = s.clock_domain;
  if (parent.size() < 2) return false;
  auto find = [&](uint64_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::set<std::pair<uint64_t, uint64_t>> checked;  // domain pairs already checked
  for (const auto& c : comms) {
    std::vector<const StreamSummary*> ms;
    for (const auto& m : c.members)
      if (auto it = stream_of.find({m.rank, m.stream}); it != stream_of.end()) ms.push_back(it->second);
    for (size_t i = 1; i < ms.size(); ++i) parent[find(ms[i]->clock_domain)] = find(ms[0]->clock_domain);
    if (!c.p2p) {
      // Members of a collective end together op by op: their k-th ends differ by the clocks'
      // difference, which NTP keeps within ms (one member pair per pair of hosts).
      for (size_t i = 1; i < ms.size(); ++i) {
        if (ms[i]->clock_domain == ms[0]->clock_domain) continue;
        if (!checked.insert(std::minmax(ms[0]->clock_domain, ms[i]->clock_domain)).second) continue;
        std::vector<int64_t> d;
        for (size_t k = 0; k < std::min(ms[0]->first_ends.size(), ms[i]->first_ends.size()); ++k)
          d.push_back(ranks::sat_sub(ms[0]->first_ends[k], ms[i]->first_ends[k]));
        if (d.empty()) continue;
        std::nth_element(d.begin(), d.begin() + long(d.size() / 2), d.end());
        if (ranks::sat_abs(d[d.size() / 2]) > ntp_ns) return true;
      }
      continue;
    }
    if (ms.size() != 2 || ms[0]->clock_domain == ms[1]->clock_domain) continue;
    if (ranks::sat_abs(c.link_offset_ns) > ntp_ns) return true;
    // A link across hosts is found within the NTP bound only: searched without it, its two
    // streams' ends must pile up at the same offset, else it was a chance match of a host whose
    // clock is further off (one link per pair of hosts: a host's clock moves all its links).
    if (!checked.insert(std::minmax(ms[0]->clock_domain, ms[1]->clock_domain)).second) continue;
    const auto pile = pile_offset_of(ms[0]->first_ends, ms[1]->first_ends);
    if (!pile || ranks::abs_diff(*pile, c.link_offset_ns) > kWindowNs) return true;
  }
  const uint64_t root = find(parent.begin()->first);
  return std::any_of(parent.begin(), parent.end(), [&](auto& p) { return find(p.first) != root; });
}

std::map<uint64_t, int64_t> coarse_domain_offsets(const std::vector<StreamSummary>& streams, int64_t ntp_ns) {
  const std::vector<Domain> doms = domains_of(streams);
  std::map<uint64_t, int64_t> offset;
  if (doms.size() < 2) return {};
  std::vector<size_t> aligned{0};  // into doms; the reference is the lowest rank's domain
  std::vector<int64_t> off(doms.size(), 0);
  std::vector<char> done(doms.size(), 0);
  done[0] = 1;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t d = 1; d < doms.size(); ++d) {
      if (done[d]) continue;
      // The reference, then the domains aligned last (the frontier: hosts tied to d are reached
      // through hosts tied to the reference); each try sorts up to 512 x 512 differences.
      for (size_t t = 0; t < aligned.size() && t < kTriesPerDomain; ++t) {
        const size_t a = t == 0 ? aligned[0] : aligned[aligned.size() - t];
        if (auto o = pile_offset_of(doms[d].ends, doms[a].ends)) {
          off[d] = ranks::sat_add(*o, off[a]), done[d] = 1, progress = true;
          aligned.push_back(d);
          break;
        }
      }
    }
  }
  for (size_t d = 0; d < doms.size(); ++d)
    if (done[d] && ranks::sat_abs(off[d]) > ntp_ns) offset[doms[d].id] = off[d];
  return offset;
}

}  // namespace collectives
