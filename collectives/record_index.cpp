// The op records indexed by iteration once per run (collectives/what_if.hpp, RecordIndex): every
// post-mortem window takes its ops from here.
#include <algorithm>
#include <bit>

#include "collectives/what_if.hpp"

namespace collectives {

RecordIndex::RecordIndex(const BlameRecords& r) {
  // Members by op (record order within an op); ops by iteration (an index of the op's last
  // arriver's iterations: at most its count, or -1).
  members_ = common::group_by(r.members.size(), r.ops.size(), [&](size_t k) { return size_t(r.members[k].op); });
  int32_t hi = 0;
  lowest_ = 0;
  for (const auto& o : r.ops) lowest_ = std::min(lowest_, o.iteration), hi = std::max(hi, o.iteration);
  by_iteration_ = common::group_by(r.ops.size(), size_t(int64_t(hi) - lowest_ + 1),
                                   [&](size_t i) { return size_t(int64_t(r.ops[i].iteration) - lowest_); });
}

std::vector<uint32_t> RecordIndex::ops_in(int32_t first, int32_t end) const {
  const auto& f = by_iteration_.first;
  const int64_t slots = int64_t(f.size()) - 1;
  const int64_t a = std::clamp<int64_t>(int64_t(first) - lowest_, 0, slots), b = std::clamp<int64_t>(int64_t(end) - lowest_, 0, slots);
  std::vector<uint32_t> out;
  if (a >= b) return out;
  // Each iteration's ops are in order, their union is not: marked in a bitmap and read back in
  // order (sorting them was much of a small window's build).
  std::vector<uint64_t> bits((members_.first.size() + 63) / 64, 0);
  for (uint32_t k = f[size_t(a)]; k < f[size_t(b)]; ++k) bits[by_iteration_.ids[k] >> 6] |= 1ull << (by_iteration_.ids[k] & 63);
  out.reserve(f[size_t(b)] - f[size_t(a)]);
  for (size_t w = 0; w < bits.size(); ++w)
    for (uint64_t x = bits[w]; x; x &= x - 1) out.push_back(uint32_t(64 * w + size_t(std::countr_zero(x))));
  return out;
}

}  // namespace collectives
