// Items grouped by a small integer key in one pass, compressed-sparse-row style: the members of
// each op, the ops of each iteration. A counting sort keeps the items' order within a group, and
// two arrays replace a container per group (those allocations dominated under ASan and at 100k
// ranks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace common {

struct Csr {
  std::vector<uint32_t> first;  // group g holds ids[first[g], first[g + 1])
  std::vector<uint32_t> ids;
  std::span<const uint32_t> of(size_t g) const { return {ids.data() + first[g], first[g + 1] - first[g]}; }
};

// Items 0..items-1 by group_of(item) in [0, groups); an item whose group is >= groups is left out.
template <class GroupOf>
Csr group_by(size_t items, size_t groups, GroupOf group_of) {
  Csr c;
  c.first.assign(groups + 1, 0);
  for (size_t i = 0; i < items; ++i)
    if (const size_t g = group_of(i); g < groups) ++c.first[g + 1];
  for (size_t g = 0; g < groups; ++g) c.first[g + 1] += c.first[g];
  c.ids.resize(c.first.back());
  std::vector<uint32_t> fill(c.first.begin(), c.first.end() - 1);
  for (size_t i = 0; i < items; ++i)
    if (const size_t g = group_of(i); g < groups) c.ids[fill[g]++] = uint32_t(i);
  return c;
}

}  // namespace common
