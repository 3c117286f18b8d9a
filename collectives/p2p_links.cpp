#include "p2p_links.hpp"

#include "collectives/replay.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>

#include "candidate_pairs.hpp"
#include "ranks/sat_math.hpp"

namespace collectives {
namespace {

// Ends of untrusted profiles may lie anywhere in int64: differences are taken in 128 bits or saturated.
using ranks::abs_diff;
using ranks::sat_sub;

struct Cand {
  size_t a = 0, b = 0;
  int64_t offset = 0;  // end(a) - end(b)
  int64_t spread = 0;  // median distance of the coinciding differences from the offset
  size_t count = 0;
  double share = 0;    // the larger share of one side's overlapping ops that coincide
  std::vector<uint8_t> used_a, used_b;
};

// Ops of `e` that fall within the time span of `other` shifted by `off`.
size_t overlapping(const std::vector<int64_t>& e, const std::vector<int64_t>& other, int64_t off, int64_t window_ns) {
  if (other.empty()) return 0;
  const auto [lo, hi] = std::minmax_element(other.begin(), other.end());
  size_t n = 0;
  for (int64_t x : e) {
    const __int128 shifted = __int128(x) - off;
    n += shifted >= __int128(*lo) - window_ns && shifted <= __int128(*hi) + window_ns;
  }
  return n;
}

// The differences d = end(a) - end(b) within `max_off`, bucketed (`nb` buckets, each wider than
// the window: a window of width p2p_window_ns lies in two adjacent ones). The densest such window (the first
// in ascending d among equals, as a scan of all differences sorted would find it) is the offset of
// a true peer; only bucket pairs that could beat the best so far are sorted (a pair of streams
// holds ~4,000 differences, the densest window a few dozen).
struct D {
  int64_t d;
  uint32_t i, j;
  uint32_t bucket;
};
std::vector<D> densest_window(const std::vector<D>& ds, size_t nb, int64_t window_ns) {
  std::vector<uint32_t> first(nb + 1, 0);
  for (const auto& x : ds) ++first[x.bucket + 1];
  for (size_t b = 0; b < nb; ++b) first[b + 1] += first[b];
  std::vector<D> by(ds.size());
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  for (const auto& x : ds) by[fill[x.bucket]++] = x;
  std::vector<D> two, best;
  size_t best_n = 0;
  for (size_t b = 0; b < nb; ++b) {  // windows ending in bucket b start in b - 1 or b
    const size_t from = first[b > 0 ? b - 1 : 0], to = first[b + 1];
    if (to - first[b] == 0 || to - from <= best_n) continue;
    two.assign(by.begin() + long(from), by.begin() + long(to));
    std::sort(two.begin(), two.end(), [](auto& x, auto& y) { return x.d < y.d; });
    const size_t mine = first[b] - from;  // elements of bucket b - 1 come first
    for (size_t lo = 0, hi = 0; hi < two.size(); ++hi) {
      while (sat_sub(two[hi].d, two[lo].d) > window_ns) ++lo;
      if (hi >= mine && hi - lo + 1 > best_n) best_n = hi - lo + 1, best.assign(two.begin() + long(lo), two.begin() + long(hi) + 1);
    }
  }
  return best;
}

std::optional<Cand> coincide(const StreamSummary& a, const StreamSummary& b, int64_t max_off, const CommunicatorOptions& opt) {
  // Buckets of d + max_off by a multiplication, not a division per difference; a bucket at least
  // the window's width plus one (rounding is far below a nanosecond at these magnitudes).
  max_off = std::clamp<int64_t>(max_off, 0, int64_t(1) << 60);
  // At most 64k buckets, wider ones where the offsets allowed are many windows wide.
  const double per = std::min(1.0 / double(std::max<int64_t>(opt.p2p_window_ns, 0) + 2), 65534.0 / double(2 * max_off + 1));
  const size_t nb = size_t(double(2 * max_off) * per) + 2;
  std::vector<D> ds;
  ds.reserve(a.first_ends.size() * b.first_ends.size());
  auto add = [&](int64_t d, uint32_t i, uint32_t j) {  // |d| <= max_off
    ds.push_back({d, i, j, uint32_t(std::min(double(nb - 1), double(d + max_off) * per))});
  };
  for (uint32_t i = 0; i < a.first_ends.size(); ++i)
    for (uint32_t j = 0; j < b.first_ends.size(); ++j)
      if (const __int128 d = __int128(a.first_ends[i]) - b.first_ends[j]; d <= max_off && -d <= max_off) add(int64_t(d), i, j);
  if (ds.size() < opt.p2p_min_ops) return std::nullopt;
  std::vector<D> in = densest_window(ds, nb, opt.p2p_window_ns);
  const int64_t mode = in[(in.size() - 1) / 2].d;
  // Closest to the offset first; equals in a fixed order (the pairing below depends on it).
  std::sort(in.begin(), in.end(), [&](auto& x, auto& y) {
    return std::make_tuple(abs_diff(x.d, mode), x.d, x.i, x.j) < std::make_tuple(abs_diff(y.d, mode), y.d, y.i, y.j);
  });
  Cand c;
  c.used_a.assign(a.first_ends.size(), 0), c.used_b.assign(b.first_ends.size(), 0);
  std::vector<int64_t> dist;
  for (const auto& p : in)  // one peer op each, closest to the offset first
    if (!c.used_a[p.i] && !c.used_b[p.j]) c.used_a[p.i] = c.used_b[p.j] = 1, dist.push_back(abs_diff(p.d, mode)), ++c.count;
  std::nth_element(dist.begin(), dist.begin() + long(dist.size() / 2), dist.end());
  c.offset = mode, c.spread = dist[dist.size() / 2];
  const size_t oa = overlapping(a.first_ends, b.first_ends, mode, opt.p2p_window_ns),
               ob = overlapping(b.first_ends, a.first_ends, -mode, opt.p2p_window_ns);
  c.share = std::max(oa ? double(c.count) / double(oa) : 0.0, ob ? double(c.count) / double(ob) : 0.0);
  if (c.count < opt.p2p_min_ops || int64_t(c.count) * 100 < int64_t(std::min(oa, ob)) * opt.p2p_min_percent) return std::nullopt;
  return c;
}

// A candidate as it crosses processes (the ops it pairs as bits: a fingerprint holds at most 64).
struct CandWire {
  uint64_t k = 0;  // index in the batch tested
  int64_t offset = 0, spread = 0;
  uint64_t count = 0;
  double share = 0;
  uint64_t used_a = 0, used_b = 0;
};
static_assert(StreamSummary::kFingerprint <= 64);

// Candidate links: pairs of streams whose ops coincide; `fallback` holds pairs of co-members of a
// collective communicator (pipeline peers never share a TP or DP group).
//
// Comparing every pair is quadratic in the ranks. A job's pipelines repeat one pattern, so the
// rank distances of a few seed streams' best peers (found by a full search) say where to look for
// everyone else's; streams left with no candidate there get the full search. Among many streams a
// seed first tries those that share a bucket of its end intervals with it (a send and its receive
// end together: candidate_pairs.hpp), and everyone only when none of those is good (a stream
// serving two peers interleaves their ops); and only distances two seeds agree on are tried (a
// chance coincidence of one seed's ends would have every stream tried at its distance). Each batch
// of tests is spread over the processes; results keep the batch's order, whatever the split.
class CandidateSearch {
 public:
  CandidateSearch(const std::vector<const StreamSummary*>& s, const std::vector<Communicator>& collectives,
                  const CommunicatorOptions& opt, const WorkSplit& split, std::vector<Cand>& cands, std::vector<Cand>& fallback)
      : s_(s), opt_(opt), split_(split), cands_(cands), fallback_(fallback), by_buckets_(s.size() > opt.exact_family_streams) {
    for (size_t g = 0; g < collectives.size(); ++g)
      for (const auto& m : collectives[g].members) groups_of_[m.rank].insert(g);
    for (size_t i = 0; i < s.size(); ++i) of_rank_[s[i]->rank].push_back(i);
  }
  void run() {
    const std::set<int32_t> distances = seed_distances();
    std::vector<std::pair<size_t, size_t>> batch;
    for (size_t i = 0; i < s_.size(); ++i)
      for (int32_t d : distances)
        for (int32_t r : {s_[i]->rank - d, s_[i]->rank + d}) at_rank(i, r, batch);
    test(batch);
    by_multiples();
    std::vector<uint8_t> has(s_.size(), 0);
    for (const auto& c : cands_) has[c.a] = has[c.b] = 1;
    batch.clear();
    for (size_t i = 0; i < s_.size(); ++i)
      if (!has[i])
        for (size_t j = 0; j < s_.size(); ++j) batch.push_back({i, j});
    test(batch);
  }

 private:
  const std::vector<const StreamSummary*>& s_;
  const CommunicatorOptions& opt_;
  const WorkSplit& split_;
  std::vector<Cand>&cands_, &fallback_;
  const bool by_buckets_;  // else every pair, as always
  std::map<int32_t, std::set<size_t>> groups_of_;  // rank -> collective communicators it is in
  std::map<int32_t, std::vector<size_t>> of_rank_;
  // Pairs already tested: a hash set of the pairs tried, which grow with the streams times the
  // distances tried (a bit per possible pair was 1 GB at 64k ranks; a std::set took 48 bytes a pair).
  std::unordered_set<uint64_t> tried_;

  bool co_members(int32_t x, int32_t y) {
    const auto& gx = groups_of_[x];
    for (size_t g : groups_of_[y])
      if (gx.count(g)) return true;
    return false;
  }
  void at_rank(size_t i, int32_t r, std::vector<std::pair<size_t, size_t>>& batch) const {
    if (auto it = of_rank_.find(r); it != of_rank_.end())
      for (size_t j : it->second) batch.push_back({i, j});
  }
  // Tests the pairs not tried yet, in order; the candidates found join cands_ / fallback_ in that order.
  void test(const std::vector<std::pair<size_t, size_t>>& batch) {
    std::vector<std::pair<size_t, size_t>> todo;
    for (auto [i, j] : batch) {
      if (i > j) std::swap(i, j);
      if (i != j && s_[i]->rank != s_[j]->rank && tried_.insert(uint64_t(i) << 32 | uint64_t(j)).second) todo.push_back({i, j});
    }
    std::vector<CandWire> mine;
    for (size_t k = 0; k < todo.size(); ++k) {
      if (!split_.mine(k)) continue;
      const auto [i, j] = todo[k];
      const bool same_host = s_[i]->clock_domain != 0 && s_[i]->clock_domain == s_[j]->clock_domain;
      const auto c = coincide(*s_[i], *s_[j], same_host ? opt_.same_host_ns : opt_.max_clock_error_ns, opt_);
      if (!c) continue;
      CandWire w{k, c->offset, c->spread, c->count, c->share, 0, 0};
      for (size_t x = 0; x < c->used_a.size(); ++x) w.used_a |= uint64_t(c->used_a[x] != 0) << x;
      for (size_t x = 0; x < c->used_b.size(); ++x) w.used_b |= uint64_t(c->used_b[x] != 0) << x;
      mine.push_back(w);
    }
    auto all = split_.gather(mine);
    std::sort(all.begin(), all.end(), [](const CandWire& x, const CandWire& y) { return x.k < y.k; });
    for (const auto& w : all) {
      const auto [i, j] = todo.at(w.k);
      Cand c{i, j, w.offset, w.spread, size_t(w.count), w.share, {}, {}};
      c.used_a.resize(s_[i]->first_ends.size()), c.used_b.resize(s_[j]->first_ends.size());
      for (size_t x = 0; x < c.used_a.size() && x < 64; ++x) c.used_a[x] = uint8_t(w.used_a >> x & 1);
      for (size_t x = 0; x < c.used_b.size() && x < 64; ++x) c.used_b[x] = uint8_t(w.used_b >> x & 1);
      (co_members(s_[i]->rank, s_[j]->rank) ? fallback_ : cands_).push_back(std::move(c));
    }
  }
  std::set<int32_t> seed_distances();
  void by_multiples();

 public:
  // Each of `streams` against every stream (pairs not tried yet).
  void everyone(const std::vector<size_t>& streams) {
    std::vector<std::pair<size_t, size_t>> batch;
    for (size_t i : streams)
      for (size_t j = 0; j < s_.size(); ++j) batch.push_back({i, j});
    test(batch);
  }
};

// The rank distances of the seeds' best peers.
std::set<int32_t> CandidateSearch::seed_distances() {
  const size_t seeds = std::min<size_t>(s_.size(), 8);
  std::vector<size_t> seed_of(s_.size(), SIZE_MAX);
  for (size_t k = 0; k < seeds; ++k) seed_of[k * s_.size() / seeds] = k;
  std::vector<std::vector<std::pair<size_t, size_t>>> mates(seeds);
  if (by_buckets_) {
    std::vector<const std::vector<int64_t>*> ends;
    for (const auto* x : s_) ends.push_back(&x->first_ends);
    std::vector<uint8_t> is_seed(s_.size(), 0);
    for (size_t i = 0; i < s_.size(); ++i) is_seed[i] = seed_of[i] != SIZE_MAX;
    for (const auto& [a, b] : candidate_pairs(ends, opt_.coherence_ns, 64, &is_seed)) {
      if (seed_of[a] != SIZE_MAX) mates[seed_of[a]].push_back({a, b});
      if (seed_of[b] != SIZE_MAX) mates[seed_of[b]].push_back({b, a});
    }
  }
  std::map<int32_t, int> seen_at;  // distance -> seeds whose best peers are there
  for (size_t k = 0; k < seeds; ++k) {
    const size_t i = k * s_.size() / seeds, before = cands_.size();
    test(mates[k]);
    const bool good_mate = by_buckets_ && std::any_of(cands_.begin() + long(before), cands_.end(), [](const Cand& c) { return c.share >= 0.5; });
    if (!good_mate) {
      std::vector<std::pair<size_t, size_t>> all;
      for (size_t j = 0; j < s_.size(); ++j) all.push_back({i, j});
      test(all);
    }
    std::vector<const Cand*> mine;
    for (size_t c = before; c < cands_.size(); ++c) mine.push_back(&cands_[c]);
    std::sort(mine.begin(), mine.end(), [](auto* x, auto* y) { return std::tie(y->share, x->spread) < std::tie(x->share, y->spread); });
    for (size_t m = 0; m < std::min<size_t>(2, mine.size()); ++m) ++seen_at[std::abs(s_[mine[m]->a]->rank - s_[mine[m]->b]->rank)];
  }
  std::set<int32_t> distances;
  for (const auto& [dist, seeds_seen] : seen_at)
    if (!by_buckets_ || seeds_seen >= 2) distances.insert(dist);
  if (distances.empty())
    for (const auto& [dist, seeds_seen] : seen_at) distances.insert(dist);
  return distances;
}

// A stream with no good candidate there (none, or a chance coincidence) tries multiples of those
// distances: interleaved 1F1B's wrap-around link joins the last stage to the first, p - 1 stages
// away. Only multiples of the commonest good distance (adjacent stages): they keep the TP and DP
// position, so lock-stepped peers of other pipelines are not tried.
void CandidateSearch::by_multiples() {
  std::vector<uint8_t> good(s_.size(), 0);
  std::map<int32_t, int64_t> good_at;
  for (const auto& c : cands_)
    if (c.share >= 0.5) good[c.a] = good[c.b] = 1, ++good_at[std::abs(s_[c.a]->rank - s_[c.b]->rank)];
  int32_t d = 0;
  for (int64_t most = 0; auto [dist, n] : good_at)
    if (n > most) d = dist, most = n;
  const int32_t top = of_rank_.empty() ? 0 : of_rank_.rbegin()->first;
  std::vector<std::pair<size_t, size_t>> batch;
  for (size_t i = 0; i < s_.size(); ++i)
    if (!good[i])
      for (int32_t k = 2; d > 0 && int64_t(k) * d <= top; ++k)
        for (int32_t r : {s_[i]->rank - k * d, s_[i]->rank + k * d}) at_rank(i, r, batch);
  test(batch);
}

// Links from the candidates, best first, each op to one peer.
std::vector<Communicator> accept_links(const std::vector<const StreamSummary*>& s, std::vector<Cand>& cands,
                                       std::vector<Cand>& fallback, const CommunicatorOptions& opt) {
  // Best first: the largest share (10% steps), then the tightest, then the most ops.
  auto order = [](std::vector<Cand>& v) {
    std::sort(v.begin(), v.end(), [](auto& x, auto& y) {
      const int64_t sx = int64_t(x.share * 10 + 0.5), sy = int64_t(y.share * 10 + 0.5);
      return std::make_tuple(-sx, x.spread, -int64_t(x.count), x.a, x.b) <
             std::make_tuple(-sy, y.spread, -int64_t(y.count), y.a, y.b);
    });
  };
  order(cands), order(fallback);
  std::vector<std::vector<uint8_t>> taken(s.size());
  for (size_t i = 0; i < s.size(); ++i) taken[i].assign(s[i]->first_ends.size(), 0);
  std::vector<int> links_of(s.size(), 0);
  std::vector<std::pair<size_t, size_t>> ends;
  std::vector<Communicator> out;
  auto accept = [&](const Cand& c) {
    size_t clash = 0;  // each op has one peer: ops already on another link count against
    for (size_t k = 0; k < c.used_a.size(); ++k) clash += c.used_a[k] && taken[c.a][k];
    for (size_t k = 0; k < c.used_b.size(); ++k) clash += c.used_b[k] && taken[c.b][k];
    if (int64_t(clash) * 100 > int64_t(c.count) * opt.p2p_max_clash_percent) return;
    for (size_t k = 0; k < c.used_a.size(); ++k) taken[c.a][k] |= c.used_a[k];
    for (size_t k = 0; k < c.used_b.size(); ++k) taken[c.b][k] |= c.used_b[k];
    Communicator l;
    l.p2p = true, l.type = s[c.a]->first_type;
    const auto *x = s[c.a], *y = s[c.b];
    l.link_offset_ns = c.offset;
    if (x->rank > y->rank) std::swap(x, y), l.link_offset_ns = -c.offset;
    l.link_tolerance_ns = std::clamp<int64_t>(opt.link_tolerance_spreads * c.spread + opt.link_tolerance_base_ns,
                                              opt.link_tolerance_min_ns, opt.link_tolerance_max_ns);
    l.members = {{x->rank, x->stream, x->ops}, {y->rank, y->stream, y->ops}};
    out.push_back(std::move(l));
    ends.push_back({x == s[c.a] ? c.a : c.b, x == s[c.a] ? c.b : c.a});
    links_of[c.a]++, links_of[c.b]++;
  };
  for (const auto& c : cands) accept(c);
  for (const auto& c : fallback)
    if (!links_of[c.a] && !links_of[c.b]) accept(c);
  // A stream with one peer is that link's whole sequence (NCCL orders a communicator's ops): its
  // ops pair by position. Only a stream serving two peers needs its ops matched by their ends.
  for (size_t k = 0; k < out.size(); ++k) out[k].shared = links_of[ends[k].first] > 1 || links_of[ends[k].second] > 1;
  return out;
}

}  // namespace

std::vector<Communicator> p2p_links(const std::vector<const StreamSummary*>& s, const std::vector<Communicator>& collectives,
                                    const CommunicatorOptions& opt, const WorkSplit& split) {
  std::vector<Cand> cands, fallback;
  CandidateSearch search(s, collectives, opt, split, cands, fallback);
  search.run();
  auto out = accept_links(s, cands, fallback, opt);
  // A stream left with no link whose only candidates were chance coincidences with lock-stepped
  // streams of other pipelines (good enough to skip the search of everyone, refused as clashing)
  // was never tried against its true peer where rank numbers say nothing of the topology (files
  // named report1..N): it is tried against every stream now, and the links accepted again. A few
  // such streams are chance; many are no pipeline, and are left (the search is quadratic in them).
  std::set<std::pair<int32_t, int32_t>> linked;
  for (const auto& c : out)
    for (const auto& m : c.members) linked.insert({m.rank, m.stream});
  std::vector<size_t> orphans;
  for (size_t i = 0; i < s.size(); ++i)
    if (!linked.count({s[i]->rank, s[i]->stream})) orphans.push_back(i);
  if (orphans.empty() || orphans.size() > std::max<size_t>(8, s.size() / 8)) return out;
  search.everyone(orphans);
  return accept_links(s, cands, fallback, opt);
}

size_t complete_links(const std::vector<const StreamSummary*>& s, const topology::ParallelLayout& l, std::vector<Communicator>& comms,
                      const CommunicatorOptions& opt) {
  if (l.pp < 2) return 0;
  std::map<int32_t, std::vector<const StreamSummary*>> of_rank;
  for (const auto* x : s) of_rank[x->rank].push_back(x);
  auto is_wrap = [&](const Communicator& c) {
    return c.p2p && c.members.size() == 2 && l.pp > 2 &&
           std::abs(l.pp_rank(c.members[0].rank) - l.pp_rank(c.members[1].rank)) == l.pp - 1;
  };
  // Interleaving runs the same schedule on every pipeline: a wrap link in at most half of them is
  // a chance coincidence of ends (GPipe's last stage and first can end together), not a ring.
  const size_t wraps = size_t(std::count_if(comms.begin(), comms.end(), is_wrap));
  const bool wrap = wraps * 2 > size_t(l.tp) * size_t(l.dp);
  size_t dropped = 0;
  if (!wrap && wraps > 0)
    comms.erase(std::remove_if(comms.begin(), comms.end(), is_wrap), comms.end()), dropped = wraps;
  std::set<std::pair<int32_t, int32_t>> have;
  for (const auto& c : comms)
    if (c.p2p && c.members.size() == 2) have.insert({c.members[0].rank, c.members[1].rank});
  CommunicatorOptions loose = opt;
  loose.p2p_min_percent = opt.p2p_min_percent / 2;
  for (int t = 0; t < l.tp; ++t)
    for (int d = 0; d < l.dp; ++d)
      for (int st = 0; st < l.pp; ++st) {
        const int nx = st + 1 < l.pp ? st + 1 : (wrap ? 0 : -1);
        if (nx < 0 || (nx == 0 && st == 1)) continue;  // p = 2: one pair
        int32_t a = l.rank_of(t, d, st), b = l.rank_of(t, d, nx);
        if (a > b) std::swap(a, b);
        if (have.count({a, b}) || !of_rank.count(a) || !of_rank.count(b)) continue;
        std::optional<Cand> best;  // the streams of the two ranks that coincide best
        const StreamSummary *ba = nullptr, *bb = nullptr;
        for (const auto* x : of_rank[a])
          for (const auto* y : of_rank[b]) {
            const bool same_host = x->clock_domain != 0 && x->clock_domain == y->clock_domain;
            auto c = coincide(*x, *y, same_host ? opt.same_host_ns : opt.max_clock_error_ns, loose);
            if (c && (!best || c->count > best->count)) best = std::move(c), ba = x, bb = y;
          }
        if (!best) continue;
        Communicator link;
        link.p2p = true, link.type = ba->first_type, link.link_offset_ns = best->offset;
        link.link_tolerance_ns = std::clamp<int64_t>(opt.link_tolerance_spreads * best->spread + opt.link_tolerance_base_ns,
                                                     opt.link_tolerance_min_ns, opt.link_tolerance_max_ns);
        link.members = {{ba->rank, ba->stream, ba->ops}, {bb->rank, bb->stream, bb->ops}};
        link.family = kThinLinkFamily;
        comms.push_back(std::move(link));
        have.insert({a, b});
      }
  return dropped;
}

void mark_shared_links(std::vector<Communicator>& comms) {
  std::map<std::pair<int32_t, int32_t>, int> links_of;  // (rank, stream) -> links it serves
  for (const auto& c : comms)
    if (c.p2p)
      for (const auto& m : c.members) ++links_of[{m.rank, m.stream}];
  for (auto& c : comms)
    if (c.p2p) {
      c.shared = false;
      for (const auto& m : c.members) c.shared |= links_of[{m.rank, m.stream}] > 1;
    }
}

}  // namespace collectives
