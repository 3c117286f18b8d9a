// Work items to workers, the costliest first to the least loaded (LPT: within 4/3 of the best
// split): profiles to processes by size, post-mortem windows to processes by replay cost. The
// same answer on every process for the same costs.
#pragma once
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace common {

// `load`: what each worker already has (empty: nothing).
template <class Cost>
std::vector<int> largest_first(const std::vector<Cost>& cost, int workers, std::vector<Cost> load = {}) {
  std::vector<size_t> order(cost.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  load.resize(size_t(std::max(workers, 1)), Cost{});
  std::vector<int> owner(cost.size(), 0);
  for (size_t k : order) {
    const size_t w = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    owner[k] = int(w), load[w] += cost[k];
  }
  return owner;
}

}  // namespace common
