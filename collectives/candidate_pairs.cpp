#include "candidate_pairs.hpp"

#include <algorithm>
#include <tuple>

namespace collectives {
namespace {

constexpr size_t kBand = 6;  // consecutive intervals per band: distinct groups rarely agree on all

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The interval b - a in 128 bits (ends may lie anywhere in int64), clamped to half of int64.
int64_t clamped_interval(int64_t b, int64_t a) {
  const __int128 d = __int128(b) - a;
  return d > INT64_MAX / 2 ? INT64_MAX / 2 : d < INT64_MIN / 2 ? INT64_MIN / 2 : int64_t(d);
}

// Floor division (intervals of untrusted profiles may be negative).
int64_t cell_of(int64_t v, int64_t cell) { return v >= 0 ? v / cell : -((-(v + 1)) / cell) - 1; }

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> candidate_pairs(const std::vector<const std::vector<int64_t>*>& ends,
                                                           int64_t cell_ns, size_t wide_bucket,
                                                           const std::vector<uint8_t>* only) {
  auto wanted = [&](uint32_t a, uint32_t b) { return !only || (a < only->size() && (*only)[a]) || (b < only->size() && (*only)[b]); };
  cell_ns = std::max<int64_t>(cell_ns, 1);
  // Within a bucket, streams in order of the band's span (its first to its last end): members end
  // together, so theirs agree to the ends' noise, and a crowded bucket's nearest neighbours in
  // that order are the stream's likeliest partners, whatever the streams' order.
  struct Key {
    uint64_t hash;
    int64_t span;
    uint32_t stream;
    bool operator<(const Key& o) const { return std::tie(hash, span, stream) < std::tie(o.hash, o.span, o.stream); }
  };
  std::vector<Key> keys;
  std::vector<uint32_t> few;  // fewer than 3 ends
  for (uint32_t s = 0; s < ends.size(); ++s) {
    const auto& e = *ends[s];
    if (e.size() < 3) {
      few.push_back(s);
      continue;
    }
    for (size_t band = 0; 1 + (band + 1) * kBand <= e.size(); ++band)
      for (uint64_t grid = 0; grid < 2; ++grid) {
        const int64_t offset = int64_t(mix(band) % uint64_t(cell_ns)) + int64_t(grid) * (cell_ns / 2);
        uint64_t h = mix(band * 2 + grid);
        int64_t span = 0;
        for (size_t k = 1 + band * kBand; k <= (band + 1) * kBand; ++k) {
          const int64_t v = clamped_interval(e[k], e[k - 1]);
          h = mix(h ^ uint64_t(cell_of(v + offset, cell_ns)));
          span += v / int64_t(kBand);  // the mean interval: no overflow
        }
        keys.push_back({h, span, s});
      }
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  size_t unique = 0;  // out[0, unique) sorted and unique: one group's pairs recur in every band
  auto dedupe = [&] {
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    unique = out.size();
  };
  for (size_t lo = 0, hi = 0; lo < keys.size(); lo = hi) {
    while (hi < keys.size() && keys[hi].hash == keys[lo].hash) ++hi;
    for (size_t a = lo; a < hi; ++a)
      for (size_t b = a + 1; b < hi && b <= a + wide_bucket; ++b)
        if (wanted(keys[a].stream, keys[b].stream)) out.push_back({std::min(keys[a].stream, keys[b].stream), std::max(keys[a].stream, keys[b].stream)});
    if (out.size() > 2 * unique + (size_t(1) << 20)) dedupe();  // bounded: at most ~3x the distinct pairs
  }
  for (uint32_t s : few)
    for (uint32_t t = 0; t < ends.size(); ++t)
      if (t != s && wanted(s, t)) out.push_back({std::min(s, t), std::max(s, t)});
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace collectives
