// The what-if replay's tables (what_if.cpp): dense ids of its keys, counting-sort groups, the
// medians of kept samples, a hinted search. Internal to the collectives library.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace collectives::what_if_detail {

// Where a rank is in the step: family (role folded in for peers), op position, end of a p2p link
// (collectives: 0).
struct Key {
  uint64_t family = 0;
  uint32_t seq = 0, end = 0;
  bool operator==(const Key&) const = default;
};

// Dense ids of keys in order of first appearance (open addressing, at most half full). Items are
// grouped by a hash of their key and a counting sort on the id, not by sorting them all on tuple
// keys and searching each one's range (that dominated a build): a median needs only its group.
class KeyIds {
 public:
  uint32_t operator()(const Key& k) {
    if (!keys_.empty() && keys_[last_] == k) return last_;  // an op's members often share their key
    if (2 * keys_.size() + 2 > slots_.size()) grow();
    const size_t s = slot(k);
    if (!slots_[s]) keys_.push_back(k), slots_[s] = uint32_t(keys_.size());
    return last_ = slots_[s] - 1;
  }
  size_t size() const { return keys_.size(); }

 private:
  std::vector<Key> keys_;
  std::vector<uint32_t> slots_;  // id + 1, or 0
  uint32_t last_ = 0;            // the id last asked for
  size_t slot(const Key& k) const {  // where k is, or the empty slot it goes to
    const uint64_t h = (k.family ^ ((uint64_t(k.seq) << 32 | k.end) * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
    size_t s = size_t(h ^ (h >> 31)) & (slots_.size() - 1);
    while (slots_[s] && !(keys_[slots_[s] - 1] == k)) s = (s + 1) & (slots_.size() - 1);
    return s;
  }
  void grow() {
    slots_.assign(std::max<size_t>(64, 2 * slots_.size()), 0);
    for (uint32_t id = 0; id < keys_.size(); ++id) slots_[slot(keys_[id])] = id + 1;
  }
};

// A counting sort's offsets: group g of the kept items goes to [first[g], first[g + 1]).
template <class GroupOf, class Keep>
inline std::vector<uint32_t> group_offsets(size_t items, size_t groups, GroupOf group_of, Keep keep) {
  std::vector<uint32_t> first(groups + 1, 0);
  for (size_t i = 0; i < items; ++i) first[group_of(i) + 1] += keep(i) ? 1 : 0;
  for (size_t g = 0; g < groups; ++g) first[g + 1] += first[g];
  return first;
}
constexpr auto kAll = [](size_t) { return true; };  // every item kept

struct Sample {  // a peer's gap, or a like's transfer
  double value;
  uint32_t of;  // the peer's rank, the like's communicator
};

// The median of the kept values (the mean of the two middle ones for an even count; `none` when
// nothing is kept), by selection in `buf`: the order statistics a sorted range gives, found only
// in the few groups a change needs instead of sorting every group at each build.
template <class Keep>
inline double kept_median(std::span<const Sample> v, Keep keep, double none, std::vector<double>& buf) {
  buf.clear();
  for (const auto& x : v)
    if (keep(x.of)) buf.push_back(x.value);
  if (buf.empty()) return none;
  const size_t lo = (buf.size() - 1) / 2, hi = buf.size() / 2;
  std::nth_element(buf.begin(), buf.begin() + long(hi), buf.end());
  const double a = lo == hi ? buf[hi] : *std::max_element(buf.begin(), buf.begin() + long(hi));
  return 0.5 * (a + buf[hi]);
}

inline std::span<const Sample> group(const std::vector<Sample>& v, const std::vector<uint32_t>& first, uint32_t g) {
  return {v.data() + first[g], first[g + 1] - first[g]};
}

// The first of a[lo, hi) (sorted) not below x, searched outward from `hint` by doubling steps: a
// rank's ops end nearly in the order it reached them, so the answer is at or near the last one.
inline size_t lower_bound_from(const double* a, size_t lo, size_t hi, size_t hint, double x) {
  size_t l = hint, r = hint, step = 1;  // the answer is in [l, r]
  if (hint < hi && a[hint] < x) {
    l = r = hint + 1;
    for (; r < hi && a[r] < x; step *= 2) l = r + 1, r = std::min(hi, r + step);
  } else {
    for (; l > lo && a[l - 1] >= x; step *= 2) r = l - 1, l = l - 1 - lo > step ? l - 1 - step : lo;
  }
  return size_t(std::lower_bound(a + l, a + r, x) - a);
}

}  // namespace collectives::what_if_detail
